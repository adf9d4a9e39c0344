"""The key statistics job (spark/streambed_spark/keys.py) on a small generated data set: every figure
against the same events counted by hand in Python (model/keystats.statistics_of_counts), the JSON-only
fallback, a plan's count of a replayed data set, and the command's refusals (one line, exit status 2,
before Spark starts)."""

from collections import Counter
from pathlib import Path

import pytest

from streambed import cli
from streambed import dataset as ds
from streambed.errors import UserError
from streambed.model import keystats

pytest.importorskip("pyspark")

from streambed_spark import keys, lake, nexmark  # noqa: E402

EVENTS = 8_000


@pytest.fixture(scope="module")
def dataset(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("keylake")
    d, _ = lake.generate(spark, nexmark.StreamSpec(events=EVENTS, seed=11, rate=1000.0), root, "k8000",
                         chunk_events=EVENTS, partitions=2)
    return d


def counted_by_hand(spark, d: ds.DataSet, op: keystats.KeyedOperator) -> dict[tuple, int]:
    """Per-key records of ``op``, counted in Python from the events' rows (the filters applied by Spark,
    the counting not)."""
    events = spark.read.parquet(str(d.path / "parquet"))
    counts: Counter = Counter()
    for side in op.sides:
        rows = events.where(f"event_type = {ds.KINDS.index(side.kind)}").select(f"{side.kind}.*")
        if side.where:
            rows = rows.where(side.where)
        for r in rows.select(*side.columns).collect():
            counts[tuple(r)] += 1
    return dict(counts)


@pytest.mark.parametrize("query", ["q5", "q3", "q18", "q8"])
def test_the_job_counts_what_a_hand_count_of_the_events_gives(spark, dataset, query):
    ops = keystats.keyed_operators(query)
    result = keys.run(spark, dataset, query, ops)
    assert result.query == query and result.events == EVENTS and result.seconds > 0
    for op, got in zip(ops, result.operators):
        counts = counted_by_hand(spark, dataset, op)
        hashed = all(isinstance(v, int) for k in counts for v in k)
        want = keystats.statistics_of_counts(op.operator, op.key, counts, hashed=hashed)
        assert got.operator == op.operator
        assert (got.records, got.distinct_keys, got.sum_squares) == (want.records, want.distinct_keys, want.sum_squares)
        assert got.top_counts == want.top_counts
        assert (got.key_groups, got.key_hashes) == (want.key_groups, want.key_hashes)
        if hashed:
            assert got.records > 0 and keystats.busiest_task_share(got, 8) == keystats.busiest_task_share(want, 8)


def test_q5s_auctions_are_skewed_as_nexmarks_hot_auctions_make_them(spark, dataset):
    (s,) = keys.run(spark, dataset, "q5", keystats.keyed_operators("q5")).operators
    assert s.records == dataset.kinds["bid"]
    # Nexmark sends half of the bids to a hot auction: the heaviest key holds far more than 1/keys
    assert s.top_share(1) > 20 / s.distinct_keys
    assert keystats.busiest_task_share(s, 32) > 1 / 32


def test_a_data_set_with_json_lines_only_gives_the_same_statistics(spark, dataset, tmp_path):
    import shutil

    copy = tmp_path / dataset.name
    shutil.copytree(dataset.path, copy, ignore=shutil.ignore_patterns("parquet"))
    only_json = ds.load(str(copy))
    ops = keystats.keyed_operators("q11")
    assert keys.run(spark, only_json, "q11", ops).operators == keys.run(spark, dataset, "q11", ops).operators


def test_a_query_keying_events_the_data_set_lacks_is_refused(spark, dataset):
    lacking = ds.DataSet(dataset.name, dataset.path, dataset.events, {**dataset.kinds, "person": 0})
    with pytest.raises(UserError, match="keys person events"):
        keys.run(spark, lacking, "q3", keystats.keyed_operators("q3"))


@pytest.mark.parametrize("argv,words", [
    (["--query", "q99", "--input", "k8000"], ["--query", "q99", "expected one of"]),
    (["--query", "q1", "--input", "k8000"], ["q1", "no keyed operator"]),
    (["--query", "q5"], ["--input"]),
    (["--query", "q5", "--input", "nope"], ["--input", "nope", "not a data set"]),
])
def test_bad_input_is_one_line_and_exit_status_2(capsys, dataset, argv, words):
    assert cli.main(["data", "keys", *argv, "--lake", str(dataset.path.parent)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("streambed: error:")
    for w in words:
        assert w in err


def test_the_command_writes_the_statistics_beside_the_data_set(capsys, spark, dataset):
    assert cli.main(["data", "keys", "--query", "q11", "--input", "k8000", "--lake", str(dataset.path.parent),
                     "--quiet"]) == 0
    written = keystats.read(dataset.path / "keys" / "q11.json")
    assert [s.operator for s in written.operators] == ["GroupWindowAggregate#2"]
    assert written.operators[0].records == dataset.kinds["bid"]
    out = capsys.readouterr().out
    assert "GroupWindowAggregate#2" in out and "bid.bidder" in out


def test_a_plan_replaying_the_data_set_counts_its_keys_with_this_job(spark, dataset):
    """campaigns/datakeys.py's default count is this job, written where `data keys` writes."""
    from streambed.campaigns import datakeys

    said = []
    path = datakeys.replayed_key_stats("q5", None, "k8000", dataset.path.parent, status=said.append)
    assert path == dataset.path / "keys" / "q5.json" and any("with Spark" in s for s in said)
    assert keystats.read(path).operators == keys.run(spark, dataset, "q5", keystats.keyed_operators("q5")).operators

"""Key statistics from the data (model/keystats.py): Flink's key hash against Flink's own classes, the
statistics and the busiest task's share on hand-made counts against brute force, the choice between
the data's skew and the inferred one, and the query -> key mapping against the query files."""

import importlib.util
import math
import random
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import REPO
from streambed import dataset as ds
from streambed.errors import UserError
from streambed.model import keygroups, keystats
from streambed.model.keyskew import KeySkew, more_pessimistic, within_census
from streambed.model.keystats import KeyStatistics, statistics_of_counts

QUERIES = REPO / "flink" / "queries"

KEY_GROUPS_JAVA = """
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.writer.BinaryRowWriter;

public class KeyGroups {
    public static void main(String[] args) {
        int m = Integer.parseInt(args[0]);
        int arity = Integer.parseInt(args[1]);
        for (int i = 2; i + arity <= args.length; i += arity) {
            BinaryRowData row = new BinaryRowData(arity);
            BinaryRowWriter w = new BinaryRowWriter(row);
            for (int j = 0; j < arity; j++) w.writeLong(j, Long.parseLong(args[i + j]));
            w.complete();
            System.out.println(row.hashCode() + " " + KeyGroupRangeAssignment.assignToKeyGroup(row, m));
        }
    }
}
"""


def flink_lib() -> Path | None:
    spec = importlib.util.find_spec("pyflink")
    if spec is None or not spec.submodule_search_locations:
        return None
    lib = Path(list(spec.submodule_search_locations)[0]) / "lib"
    return lib if any(lib.glob("flink-dist-*.jar")) else None


@pytest.fixture(scope="module")
def flink_key_groups(tmp_path_factory):
    """Flink's KeyGroupRangeAssignment on BinaryRowData keys of BIGINT fields, as Flink SQL keys records."""
    lib = flink_lib()
    if lib is None or shutil.which("javac") is None:
        pytest.skip("needs Flink's jars (make install) and a JDK")
    d = tmp_path_factory.mktemp("keygroups")
    (d / "KeyGroups.java").write_text(KEY_GROUPS_JAVA)
    cp = f"{lib}/*"
    subprocess.run(["javac", "-cp", cp, "-d", str(d), str(d / "KeyGroups.java")], check=True, capture_output=True)

    def run(m: int, keys: list[tuple[int, ...]]) -> list[tuple[int, int]]:
        args = [str(v) for k in keys for v in k]
        p = subprocess.run(["java", "-cp", f"{cp}:{d}", "KeyGroups", str(m), str(len(keys[0])), *args],
                           check=True, capture_output=True, text=True)
        return [tuple(map(int, line.split())) for line in p.stdout.split("\n") if line.strip()]
    return run


def sample_keys(arity: int, n: int, seed: int) -> list[tuple[int, ...]]:
    r = random.Random(seed)
    edge = [0, 1, -1, 2**63 - 1, -(2**63), 2**31, -(2**31), 1000, 1001]
    keys = [tuple(edge[(i + j) % len(edge)] for j in range(arity)) for i in range(len(edge))]
    keys += [tuple(r.randrange(-(2**63), 2**63) if r.random() < 0.3 else r.randrange(0, 200_000) for _ in range(arity))
             for _ in range(n)]
    return keys


@pytest.mark.parametrize("arity,m", [(1, 128), (1, 32768), (2, 256), (3, 4096)])
def test_key_group_is_flinks_for_sql_keys_of_bigints(flink_key_groups, arity, m):
    keys = sample_keys(arity, 300, seed=arity * m)
    expected = flink_key_groups(m, keys)
    assert len(expected) == len(keys)
    got = [((keystats.row_hash(k) + 2**31) % 2**32 - 2**31, keystats.key_group(k, m)) for k in keys]
    assert got == expected


def test_the_key_groups_of_a_power_of_two_fold_from_the_finest():
    keys = sample_keys(1, 2000, seed=5)
    for m in (128, 1024, 32768):
        assert all(keystats.key_group(k, keystats.RECORDED_KEY_GROUPS) % m == keystats.key_group(k, m) for k in keys)


ZIPFISH = {(k,): max(1, int(5000 / (k + 1) ** 0.9)) for k in range(3000)}
"""Hand-made counts: 3,000 keys, the heaviest 5,000 records, a long tail of ones."""


def test_distinct_keys_top_shares_and_concentration_of_hand_made_counts():
    s = statistics_of_counts("Op#1", "bid.auction", {(1,): 50, (2,): 30, (3,): 20})
    assert (s.records, s.distinct_keys) == (100, 3)
    assert s.top_share(1) == pytest.approx(0.5)
    assert s.top_share(10) == pytest.approx(1.0)
    assert s.concentration == pytest.approx(0.25 + 0.09 + 0.04)
    assert s.top_keys == ("1", "2", "3")
    z = statistics_of_counts("Op#1", "bid.auction", ZIPFISH)
    total = sum(ZIPFISH.values())
    heaviest = sorted(ZIPFISH.values(), reverse=True)
    assert z.distinct_keys == 3000
    assert z.top_share(1) == pytest.approx(heaviest[0] / total)
    assert z.top_share(10) == pytest.approx(sum(heaviest[:10]) / total)
    assert z.concentration == pytest.approx(sum(c * c for c in heaviest) / total ** 2)
    assert 1 / z.concentration < z.distinct_keys  # skewed: fewer effective keys than keys


@pytest.mark.parametrize("p,fixed", [(1, None), (2, None), (3, None), (7, None), (43, None), (85, None), (86, None),
                                     (200, None), (5, 4096), (128, 128), (1000, 32768), (43, 624), (7, 585),
                                     (300, 1000)])
def test_busiest_task_share_is_the_brute_force_count(p, fixed):
    s = statistics_of_counts("Op#1", "bid.auction", ZIPFISH)
    m = keygroups.max_parallelism(p, fixed)
    tasks = [0] * p
    for k, c in ZIPFISH.items():
        tasks[keystats.key_group(k, m) * p // m] += c
    assert keystats.busiest_task_share(s, p, fixed) == pytest.approx(max(tasks) / sum(ZIPFISH.values()), abs=0)


def test_the_busiest_task_carries_at_least_the_hottest_key_and_an_even_share():
    s = statistics_of_counts("Op#1", "bid.auction", ZIPFISH)
    for p in (2, 16, 128, 1024):
        share = keystats.busiest_task_share(s, p)
        assert share >= s.top_share(1)
        assert share >= 1 / p


def test_key_groups_fold_only_to_divisors_of_the_recorded_resolution_unless_every_key_is_listed():
    s = statistics_of_counts("Op#1", "bid.auction", {(1,): 2})
    assert keystats.busiest_task_share(s, 4, 1000) == 1.0  # one key, listed: one task has it all
    with pytest.raises(ValueError):
        keystats.busiest_task_share(replace(s, key_hashes=None), 4, 1000)
    assert keystats.busiest_task_share(statistics_of_counts("Op#1", "k", {(1,): 2}, hashed=False), 4) is None


def test_key_hashes_are_listed_up_to_hashed_keys():
    groups, hashes = keystats.hashed_counts([(7, 2), (7 + keystats.RECORDED_KEY_GROUPS, 3), (9, 1)], 3)
    assert groups == {7: 5, 9: 1} and hashes == {7: 2, 7 + keystats.RECORDED_KEY_GROUPS: 3, 9: 1}
    groups, hashes = keystats.hashed_counts([(7, 2), (9, 1)], keystats.HASHED_KEYS + 1)
    assert groups == {7: 2, 9: 1} and hashes is None
    many = statistics_of_counts("Op#1", "k", {(k,): 1 for k in range(keystats.HASHED_KEYS + 1)})
    assert many.key_hashes is None and sum(many.key_groups.values()) == keystats.HASHED_KEYS + 1
    assert len(statistics_of_counts("Op#1", "k", ZIPFISH).key_hashes) == len(ZIPFISH)


def test_key_skew_from_data_is_the_exact_concentration_and_hottest_key():
    s = statistics_of_counts("Op#1", "bid.auction", {(1,): 60, (2,): 20, (3,): 20})
    skew = keystats.key_skew(s)
    assert skew.concentration == pytest.approx(0.44)
    assert skew.hottest == pytest.approx(0.6)
    assert skew.floor == pytest.approx(0.6)


def test_the_more_pessimistic_skew_is_used_and_named():
    many_keys = KeySkew(concentration=1e-4)
    hot = KeySkew(concentration=0.05, hottest=0.2)
    c = more_pessimistic(many_keys, hot, 64)
    assert (c.source, c.skew) == ("data", hot)
    assert c.busiest_data > c.busiest_inferred
    c = more_pessimistic(hot, many_keys, 64)
    assert (c.source, c.skew) == ("tasks", hot)
    assert more_pessimistic(None, hot, 8).source == "data"
    assert more_pessimistic(hot, None, 8).source == "tasks"
    assert more_pessimistic(None, None, 8) is None
    # a tie goes to the data: counted, not inferred
    assert more_pessimistic(hot, hot, 8).source == "data"
    # the comparison is at the parallelism given: Flink's default key groups there
    for p in (2, 90, 3000):
        c = more_pessimistic(many_keys, hot, p)
        m = keygroups.default_max_parallelism(p)
        assert c.busiest_data == pytest.approx(hot.busiest_share(p, m))


def test_no_inferred_key_is_heavier_than_the_datas_heaviest():
    """28 keys over a job's 180 key groups: every run's busiest task held six of them (22 % of the input)
    and the hot-key test read one key of 20 %; the data counted every key, the heaviest at 7.3 %."""
    inferred = KeySkew(0.055, 0.20, 43, 180, hot_modulus=180, hot_groups=(176, 177, 178, 179))
    data = KeySkew(0.038, 0.073)
    bounded = within_census(inferred, data)
    assert bounded.hottest == pytest.approx(0.073) and bounded.concentration == inferred.concentration
    assert bounded.hot_groups == () and bounded.tested_parallelism == 43
    # at Flink's most key groups the 20 % "key" capped the busiest task at a fifth of the input
    assert inferred.busiest_share(32_768, 32_768) >= 0.20 > bounded.busiest_share(32_768, 32_768)
    c = more_pessimistic(inferred, data, 32_768, 32_768)
    assert c.skew.busiest_share(32_768, 32_768) < 0.08 and c.inferred == inferred
    # where the inferred spread is the wider, the inferred skew is used, within the census
    c = more_pessimistic(inferred, data, 180, 180)
    assert c.source == "tasks" and c.skew == bounded and c.inferred_held_to == pytest.approx(0.073)
    assert more_pessimistic(bounded, data, 180, 180).inferred_held_to is None  # nothing to hold
    # a key the data confirms, a key fainter than the data's and no data at all: as inferred
    assert within_census(inferred, KeySkew(0.06, 0.25)) == inferred
    assert within_census(KeySkew(0.01, 0.02), data) == KeySkew(0.01, 0.02)
    assert within_census(inferred, None) == inferred and within_census(None, data) is None
    assert within_census(inferred, KeySkew(0.038)) == inferred  # data without its hottest key bounds nothing


def test_skews_with_data_cover_operators_known_to_either_side():
    data = [statistics_of_counts("GroupWindowAggregate#2", "bid.auction", {(1,): 50, (2,): 50})]
    inferred = {"GroupWindowAggregate#2": KeySkew(0.01), "Join#7": KeySkew(0.3)}
    skews, choices = keystats.skews_with_data(inferred, data, 32)
    assert choices["GroupWindowAggregate#2"].source == "data"
    assert skews["GroupWindowAggregate#2"].hottest == pytest.approx(0.5)
    assert choices["Join#7"].source == "tasks" and skews["Join#7"] == KeySkew(0.3)


def test_statistics_round_trip_through_their_file(tmp_path):
    s = statistics_of_counts("GroupWindowAggregate#2", "bid.auction", ZIPFISH)
    f = keystats.DataKeyStatistics("q5", "lake-set", 123_456, (s,), {"master": "local[2]"}, 1.5)
    f.write(tmp_path / "q5.json")
    back = keystats.read(tmp_path / "q5.json")
    assert back == f
    assert keystats.busiest_task_share(back.operators[0], 16) == keystats.busiest_task_share(s, 16)
    (tmp_path / "bad.json").write_text('{"version": 1, "query": "q5"}')
    with pytest.raises(UserError, match="not a key statistics file"):
        keystats.read(tmp_path / "bad.json")
    with pytest.raises(ValueError):
        KeyStatistics("Op", "k", records=3, distinct_keys=4, sum_squares=1.0, top_counts=())


# -- the query -> key mapping ----------------------------------------------------------------------------------------

def known_queries() -> list[str]:
    return sorted(p.stem for p in QUERIES.glob("*.sql"))


def test_an_unknown_query_and_a_query_without_keyed_operator_are_one_line_each():
    with pytest.raises(UserError, match=r"--query: no query 'q99' \(expected one of .*q5"):
        keystats.keyed_operators("q99", known_queries())
    with pytest.raises(UserError, match="--query: q1 has no keyed operator"):
        keystats.keyed_operators("q1", known_queries())
    assert [o.operator for o in keystats.keyed_operators("q5", known_queries())] == ["GroupWindowAggregate#2"]


@pytest.mark.parametrize("query", sorted(keystats.QUERY_KEYS))
def test_every_keyed_operator_is_in_the_query_and_keyed_by_columns_its_sql_names(query):
    sql = (QUERIES / f"{query}.sql").read_text()
    declared = re.search(r"^--\s*streambed-operators:\s*(.+)$", sql, re.M).group(1).split()
    code = "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
    nexmark_fields = pytest.importorskip("streambed_spark.nexmark").FIELDS
    for op in keystats.QUERY_KEYS[query]:
        assert op.operator in declared
        # a keyed operator kind of Flink's planner, never a stateless Calc or a Sink
        assert re.match(r"(GroupWindowAggregate|WindowAggregate|GroupAggregate|Join|Rank|Deduplicate)#", op.operator)
        for side in op.sides:
            assert side.kind in ds.kinds_read(sql)
            names = [f.split()[0] for f in nexmark_fields[side.kind].split(",")]
            for col in side.columns:
                assert col in names
                # the column appears in a keying clause of the query (GROUP BY, ON, WHERE a = b, PARTITION BY)
                assert re.search(rf"(GROUP BY|PARTITION BY|ON|WHERE)[^;]*?\b(\w+\.)?{col}\b", code, re.S | re.I)
        assert math.prod(len(s.columns) for s in op.sides) >= 1
        assert len({len(s.columns) for s in op.sides}) == 1  # a join's sides are keyed alike


def test_the_data_count_the_skew_where_no_run_contradicts_them():
    """The data's key groups are the skew at every parallelism, even where the law of the inferred H says
    more at the widest (a model of the same keys), unless a run's tasks took input the counts do not give
    them (more than 10 % of the busiest task's share off: another key, another data set); then the more
    pessimistic of the two. A run over key groups that do not follow from the counts (not a power of two, the keys
    too many to list) contradicts nothing."""
    from streambed.model.keyskew import GroupShares

    groups = GroupShares([0.3, 0.1, 0.2, 0.05, 0.05, 0.1, 0.1, 0.1])
    assert groups.tasks(3, 8).tolist() == pytest.approx([0.6, 0.2, 0.2])  # groups 0-2, 3-5, 6-7
    run = (tuple(1000 * s for s in groups.tasks(4, 8)), 8, 1e6)
    assert not groups.contradicted([run]) and not groups.contradicted([])
    assert not groups.contradicted([(tuple(x * 1.03 for x in run[0][:3]) + run[0][3:], 8, 1e6)])  # jitter
    assert groups.contradicted([(tuple(reversed(run[0])), 8, 1e6)])  # the busiest task elsewhere
    assert groups.contradicted([run, (run[0][:3] + (run[0][3] * 1.5,), 8, 1e6)])
    assert not groups.contradicted([(tuple(reversed(run[0])), 6, 1e6)])  # 6 groups do not fold from 8

    data = KeySkew(0.03, 0.04, groups=GroupShares([1.0] * 64))
    law = KeySkew(0.2)  # far more pessimistic than 64 even groups at any width
    assert more_pessimistic(law, data, 32, 64).source == "tasks"
    c = more_pessimistic(law, data, 32, 64, counted=True)
    assert (c.source, c.skew, c.counted) == ("data", data, True) and c.inferred == law
    assert not more_pessimistic(law, None, 32, 64, counted=True).counted  # no data: nothing counted

    stats = statistics_of_counts("Join#3", "k", {(k,): 1 for k in range(500)})
    even = keystats.key_skew(stats)
    agree = {"Join#3": [(tuple(even.groups.tasks(4, 128)), 128, 1e6)]}
    for runs in (agree, None):
        _, choices = keystats.skews_with_data({"Join#3": law}, [stats], 64, None, runs)
        assert choices["Join#3"].source == "data" and choices["Join#3"].counted
    skewed = {"Join#3": [((4000.0, 1000.0, 1000.0, 1000.0), 128, 1e6)]}
    _, choices = keystats.skews_with_data({"Join#3": law}, [stats], 64, None, skewed)
    assert choices["Join#3"].source == "tasks" and not choices["Join#3"].counted
    own = {"Join#3": [((4000.0, 1000.0, 1000.0, 1000.0), 585, 1e6)]}  # the job's own 585 groups: the keys listed
    _, choices = keystats.skews_with_data({"Join#3": law}, [stats], 64, None, own)
    assert choices["Join#3"].source == "tasks" and not choices["Join#3"].counted
    _, choices = keystats.skews_with_data({"Join#3": law}, [replace(stats, key_hashes=None)], 64, None, own)
    assert choices["Join#3"].source == "data" and choices["Join#3"].counted
    unhashed = statistics_of_counts("Join#3", "k", {(k,): 1 for k in range(500)}, hashed=False)
    _, choices = keystats.skews_with_data({"Join#3": law}, [unhashed], 64)
    assert choices["Join#3"].source == "tasks" and not choices["Join#3"].counted  # no groups counted

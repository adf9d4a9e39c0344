"""Data sets without Spark: manifests, which events a query reads, and how much a replay consumes."""

import json
import math
from pathlib import Path

import pytest

from streambed import dataset as ds
from streambed.errors import UserError
from streambed.planner.estimator import TIMINGS

QUERIES = Path(__file__).resolve().parents[1] / "flink" / "queries"


def make(tmp_path: Path, name="d", events=100, kinds=None, files=1) -> Path:
    d = tmp_path / name
    (d / "json").mkdir(parents=True)
    for i in range(files):
        (d / "json" / f"part-{i:05d}.json").write_text("{}\n")
    kinds = kinds or {"person": 2, "auction": 6, "bid": events - 8}
    (d / ds.MANIFEST).write_text(json.dumps({"version": 1, "name": name, "events": events, "kinds": kinds,
                                             "formats": {"json": {"files": files, "bytes": 3}}, "origin": {}}))
    return d


def test_a_data_set_loads_by_name_from_the_lake_or_by_path(tmp_path):
    make(tmp_path)
    by_name = ds.load("d", tmp_path)
    by_path = ds.load(str(tmp_path / "d"))
    assert by_name.events == by_path.events == 100 and by_name.replay_dir == tmp_path / "d" / "json"
    assert ds.names(tmp_path) == ["d"]


@pytest.mark.parametrize("change,message", [
    (lambda p: (p / ds.MANIFEST).unlink(), r"--input: .*/d is not a data set: no dataset.json"),
    (lambda p: (p / ds.MANIFEST).write_text("{"), r"dataset.json: not valid JSON"),
    (lambda p: (p / ds.MANIFEST).write_text('{"version": 9}'), r"not a StreamBed data set manifest of version 1"),
    (lambda p: (p / ds.MANIFEST).write_text('{"version": 1, "events": 5, "kinds": {"bid": 4}, "formats": {}}'),
     r"events \(5\) is not the sum of the kinds"),
    (lambda p: (p / "json" / "part-00000.json").unlink(), r"holds no JSON lines files \(part-\*\.json\) to replay"),
])
def test_a_broken_data_set_is_one_line(tmp_path, change, message):
    change(make(tmp_path))
    with pytest.raises(UserError, match=message):
        ds.load("d", tmp_path)


def test_a_bad_name_is_refused():
    with pytest.raises(UserError, match="--input: expected a data set name"):
        ds.load("a b", Path("/nonexistent"))


@pytest.mark.parametrize("query,kinds", [("q1", ("bid",)), ("q5", ("bid",)), ("q3", ("person", "auction")),
                                         ("q8", ("person", "auction")), ("q9", ("auction", "bid"))])
def test_the_kinds_a_query_reads_come_from_its_sql(query, kinds):
    assert ds.kinds_read((QUERIES / f"{query}.sql").read_text()) == kinds


def test_a_query_reading_events_the_data_set_lacks_is_refused(tmp_path):
    make(tmp_path, kinds={"person": 0, "auction": 0, "bid": 100})
    d = ds.load("d", tmp_path)
    ds.check_fits(d, "q1", (QUERIES / "q1.sql").read_text())
    with pytest.raises(UserError, match=r"--input d: query q8 reads person and auction events, which the data set "
                                        r"does not hold \(it has 100 bid\)"):
        ds.check_fits(d, "q8", (QUERIES / "q8.sql").read_text())


def test_a_job_replays_rate_times_its_full_rate_time_plus_its_cooldowns():
    t = TIMINGS["quick"]
    full, cool = ds.job_seconds(t)
    assert full == max(t.warmup_s, t.warmup_max_s) + t.max_iterations * (t.ramp_s + t.observe_s)
    assert cool == t.max_iterations * t.max_cooldown_s
    s = ds.sizing(100_000, t, sources=2, jobs=3)
    assert s.job_events == math.ceil(100_000 * full + t.cooldown_rate_per_source * 2 * cool)
    assert s.campaign_events == 3 * s.job_events and s.job_seconds == full + cool
    # the steady-state extension counts as observation
    paper = TIMINGS["paper-simple"]
    assert ds.job_seconds(paper)[0] == paper.warmup_s + paper.max_iterations * (paper.ramp_s + paper.steady_observe_s)


@pytest.mark.parametrize("rate,nodes", [(1, 1), (1.2e6, 1), (1.2e6 + 1, 2), (25e6, 21)])
def test_kafka_nodes_serve_1_2_million_events_per_second_each(rate, nodes):
    assert ds.kafka_nodes(rate) == nodes


def test_a_campaign_that_would_run_out_of_data_is_refused_with_the_numbers(tmp_path):
    make(tmp_path, events=1_000_000)
    d = ds.load("d", tmp_path)
    t = TIMINGS["quick"]
    ds.check_enough(d, ds.sizing(5_000, t))
    too_much = ds.sizing(50_000, t)
    with pytest.raises(UserError, match=rf"--input d: a job of this campaign may replay up to "
                                        rf"{too_much.job_events:,} events .* the data set holds 1,000,000; generate "
                                        rf"at least that many \(make datagen EVENTS={too_much.job_events}\)"):
        ds.check_enough(d, too_much)


def test_validating_a_plan_replays_each_multiple_for_its_ramp_and_duration():
    s = ds.validation_sizing(5e6, (1.0, 1.2, 1.5), ramp_s=300, duration_s=1800)
    assert s.rate == 7.5e6 and s.kafka_nodes == 7 and s.jobs == 3
    assert s.job_events == 7.5e6 * 2100 and s.campaign_events == round(3.7 * 5e6 * 2100)


def test_data_size_prints_the_sizing_and_refuses_a_small_data_set(tmp_path, capsys):
    from streambed.cli import main

    make(tmp_path, events=1_000_000)
    assert main(["data", "size", "--rate", "1000", "--timing", "quick", "--lake", str(tmp_path), "--input", "d",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["job_events"] == ds.sizing(1000, TIMINGS["quick"]).job_events and result["kafka_nodes"] == 1
    assert main(["data", "size", "--rate", "1e5", "--timing", "quick", "--lake", str(tmp_path), "--input", "d"]) == 2
    assert "the data set holds 1,000,000" in capsys.readouterr().err

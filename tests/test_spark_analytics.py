"""Campaign analytics (spark/streambed_spark/analytics.py, ``streambed analytics``): real campaigns on the
simulated testbed, their ledgers flattened and summarized on the shared SparkSession (the ``spark``
fixture), the Parquet tables read back and checked against the ledgers read by hand."""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from streambed import cli  # noqa: E402
from streambed.commands import analytics as command  # noqa: E402
from streambed.errors import UserError  # noqa: E402
from streambed.report.console import Output  # noqa: E402
from streambed_spark import analytics  # noqa: E402

CAMPAIGNS = {
    # the paper's timing: q8's search observes one test longer (w2/more0..3), joined as the estimator does
    "estimate": ["estimate", "--query", "q8"],
    "plan": ["plan", "--query", "q1", "--rate", "5e6", "--timing", "quick", "--max-measurements", "3",
             "--memory", "1024,2048"],
    "measure": ["measure", "--query", "q1", "--rates", "5e5,1e6,2e6", "--warmup", "10", "--ramp", "5",
                "--window", "10"],
    "validate": ["validate", "--query", "q1", "--config", "Calc#1=2,Sink#2=1", "--rate", "2e6", "--ramp", "10",
                 "--duration", "60", "--window", "10"],
}


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("campaigns")
    dirs = {}
    for name, args in CAMPAIGNS.items():
        dirs[name] = root / name
        assert cli.main([*args, "--testbed", "sim", "--campaign-dir", str(dirs[name]), "--quiet"]) == 0
    return dirs


def ledger_steps(d: Path) -> list[tuple[str, dict]]:
    """The ledger's steps, read by hand with sqlite3."""
    with sqlite3.connect(d / "ledger.sqlite") as conn:
        return [(k, json.loads(v)) for k, v in conn.execute("SELECT key, data FROM steps ORDER BY seq")]


def ledger_result(d: Path) -> dict:
    with sqlite3.connect(d / "ledger.sqlite") as conn:
        return json.loads(conn.execute("SELECT data FROM result").fetchone()[0])


def hand_windows(d: Path) -> list[dict]:
    """Every window measurement the ledger holds, by hand: estimator tests, measure windows, and the
    judged windows of validation runs."""
    out = []
    for _, data in ledger_steps(d):
        if "measurement" in data:
            out.append(data["measurement"])
        elif "windows" in data:
            out += data["windows"]
        elif "target_rate" in data:
            out.append(data)
    return out


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile, linearly interpolated between the sorted values (numpy's default)."""
    v = sorted(values)
    x = q * (len(v) - 1)
    lo = int(x)
    return v[lo] + (x - lo) * (v[min(lo + 1, len(v) - 1)] - v[lo])


@pytest.fixture(scope="module")
def written(spark, campaigns, tmp_path_factory):
    """``streambed analytics`` over all four campaigns (its handler, on the shared session)."""
    out_dir = tmp_path_factory.mktemp("analytics") / "out"
    args = argparse.Namespace(campaign_dir=[str(d) for d in campaigns.values()], out=out_dir, master=None,
                              json=True, quiet=True)
    import streambed_spark.session as session_module
    mp = pytest.MonkeyPatch()
    mp.setattr(session_module, "session", lambda settings: spark)  # the fixture's session, never another
    try:
        command.cmd_analytics(args, Output(json_mode=True, quiet=True))
    finally:
        mp.undo()
    tables = {name: spark.read.parquet(str(out_dir / name)) for name in analytics.TABLES}
    return out_dir, {name: [r.asDict() for r in df.collect()] for name, df in tables.items()}


def test_reading_ledgers_needs_no_spark_and_counts_every_window(campaigns):
    rows = analytics.read_ledgers(list(campaigns.values()) + [campaigns["plan"] / "ledger.sqlite"])
    assert [c["kind"] for c in rows.campaigns] == list(CAMPAIGNS)  # the ledger given twice is read once
    for name, d in campaigns.items():
        mine = [w for w in rows.windows if w["campaign"] == str(d.resolve())]
        assert len(mine) == len(hand_windows(d)) > 0, name
        ops = [o for o in rows.operators if o["campaign"] == str(d.resolve())]
        assert len(ops) == sum(len(w["operators"]) for w in hand_windows(d))
    validate = [w for w in rows.windows if w["run_kind"] == "validate"]
    assert {w["run_key"] for w in validate} == {"validate/1x", "validate/1.2x", "validate/1.5x"}
    assert {w["slots"] for w in validate} == {3} and {w["run_verdict"] for w in validate} <= {
        "sustained", "unstable", "not-sustained", "source-limited"}
    more = [w for w in rows.windows if w["part"] > 0 and w["run_kind"] == "estimator"]
    assert more, "the q8 estimate should observe a test longer"


def test_mst_and_verdicts_are_the_ones_the_campaigns_recorded(campaigns):
    rows = analytics.read_ledgers(campaigns.values())
    est = [w for w in rows.windows if w["campaign_kind"] == "estimate"]
    recorded = ledger_result(campaigns["estimate"])
    assert {w["run_mst"] for w in est} == {recorded["mst"]}
    by_test = {w["test"]: w["sustained"] for w in est}
    assert [by_test[i] for i in range(len(recorded["windows"]))] == [w["success"] for w in recorded["windows"]]
    # a plan's measured points (what export's measurements.csv holds): each is one run's MST (a plan may
    # measure one configuration twice: its search, then a confirmation of its own answer)
    points = ledger_result(campaigns["plan"])["exploration"]["points"]
    runs: dict[tuple, list] = {}
    for w in rows.windows:
        if w["campaign_kind"] == "plan":
            runs.setdefault((w["memory_mb"], w["slots"], w["configuration"]), []).append(w["run_mst"])
    for p in points:
        measured = runs[(p["memory_mb"], p["slots"], json.dumps(p["configuration"]))]
        assert any(m == pytest.approx(p["mst"], rel=1e-12) for m in measured), (p, measured)
    assert all(w["run_mst"] is None for w in rows.windows if w["run_kind"] != "estimator")


def test_tables_hold_every_window_of_every_campaign(written, campaigns):
    out_dir, t = written
    summary = json.loads((out_dir / "summary.json").read_text())
    for name in analytics.TABLES:
        assert summary["tables"][name]["rows"] == len(t[name]) > 0, name
    assert [c["campaign"] for c in summary["campaigns"]] == [str(d.resolve()) for d in campaigns.values()]
    for name, d in campaigns.items():
        c = str(d.resolve())
        assert sum(w["campaign"] == c for w in t["windows"]) == len(hand_windows(d)), name
        assert any(r["campaign"] == c for r in t["runs"]), name
        assert any(o["campaign"] == c for o in t["operators"]), name
    assert sum(r["windows"] for r in t["runs"]) == len(t["windows"])
    assert not list(out_dir.glob(".staging-*"))


def test_a_runs_ratio_statistics_are_those_of_its_windows(written, campaigns):
    _, t = written
    # the q8 estimate by hand: achieved/target of every window of the run, from the ledger
    ratios = [m["achieved_rate"] / m["target_rate"] for m in hand_windows(campaigns["estimate"])]
    (run,) = [r for r in t["runs"] if r["campaign_kind"] == "estimate"]
    assert run["windows"] == len(ratios) and run["run_key"] == "estimate" and run["query"] == "q8"
    assert run["ratio_p50"] == pytest.approx(statistics.median(ratios), rel=1e-12)
    assert run["ratio_max"] == pytest.approx(max(ratios), rel=1e-12)
    assert run["ratio_min"] == pytest.approx(min(ratios), rel=1e-12)
    assert run["ratio_stddev"] == pytest.approx(statistics.stdev(ratios), rel=1e-9)
    slopes = [m["pending_slope"] for m in hand_windows(campaigns["estimate"])]
    assert run["pending_slope_p50"] == pytest.approx(statistics.median(slopes), rel=1e-12)
    assert run["pending_slope_max"] == pytest.approx(max(slopes), rel=1e-12)
    assert run["mst"] == ledger_result(campaigns["estimate"])["mst"]
    assert run["slots"] == sum(json.loads(run["configuration"]).values()) and run["memory_mb"] == 4096


def test_operator_percentiles_are_ordered_and_come_from_the_runs_windows(written, campaigns):
    _, t = written
    for o in t["operators"]:
        assert o["busyness_p50"] <= o["busyness_p95"] <= o["busyness_max"] <= o["task_busyness_max"], o
        assert o["backpressure_p50"] <= o["backpressure_max"]
    # one operator of two tasks by hand (Calc#1=2 in the validation run at 1x): over its six windows
    (step,) = [data for key, data in ledger_steps(campaigns["validate"]) if key == "validate/1x"]
    ops = [next(op for op in w["operators"] if op["operator"] == "Calc#1") for w in step["windows"]]
    busy, busiest = [op["busyness"] for op in ops], [op["busyness_max"] for op in ops]
    (o,) = [o for o in t["operators"] if o["run_key"] == "validate/1x" and o["operator"] == "Calc#1"]
    assert o["windows"] == len(ops) and o["parallelism"] == 2
    assert o["busyness_max"] == max(busy) and o["task_busyness_max"] == max(busiest) > max(busy)
    assert o["busyness_p50"] == pytest.approx(statistics.median(busy), rel=1e-12)
    assert o["busyness_p95"] == pytest.approx(percentile(busy, 0.95), rel=1e-12)
    assert o["input_rate_p50"] == pytest.approx(statistics.median(op["input_rate"] for op in ops), rel=1e-12)
    runs = {(r["campaign"], r["run_key"]) for r in t["runs"]}
    assert {(o["campaign"], o["run_key"]) for o in t["operators"]} == runs


def test_the_parquet_schema_says_what_each_column_means(written, spark):
    out_dir, _ = written
    for name in analytics.TABLES:
        fields = spark.read.parquet(str(out_dir / name)).schema.fields
        assert [f.name for f in fields] == list(analytics.COLUMN_DOCS[name])
        assert all(f.metadata.get("comment") for f in fields), name


def _with_command(monkeypatch):
    """cli.main with ``analytics`` registered (until cli.py lists it)."""
    if command not in cli.COMMANDS:
        monkeypatch.setattr(cli, "COMMANDS", cli.COMMANDS + (command,))


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert "Traceback" not in captured.err and captured.out == ""
    assert len(lines) == 1, captured.err
    return lines[0]


def test_bad_input_is_one_line_and_exit_status_2(campaigns, tmp_path, monkeypatch, capsys):
    _with_command(monkeypatch)
    empty = tmp_path / "empty"
    empty.mkdir()
    out = str(tmp_path / "out")
    assert cli.main(["analytics", "--campaign-dir", str(campaigns["estimate"]), "--campaign-dir", str(empty),
                     "--out", out]) == 2
    line = _one_error_line(capsys)
    assert line.startswith("streambed: error: --campaign-dir ") and str(empty) in line and "ledger.sqlite" in line

    assert cli.main(["analytics", "--out", out]) == 2
    assert "--campaign-dir" in _one_error_line(capsys)

    # a damaged ledger: a step that is not JSON, and a file that is not a ledger at all
    broken = tmp_path / "broken"
    shutil.copytree(campaigns["measure"], broken)
    with sqlite3.connect(broken / "ledger.sqlite") as conn:
        conn.execute("UPDATE steps SET data = '{not json' WHERE seq = (SELECT min(seq) FROM steps)")
    assert cli.main(["analytics", "--campaign-dir", str(broken), "--out", out]) == 2
    line = _one_error_line(capsys)
    assert f"--campaign-dir {broken}" in line and "damaged at step " in line
    (broken / "ledger.sqlite").write_bytes(b"garbage" * 100)
    assert cli.main(["analytics", "--campaign-dir", str(broken), "--out", out]) == 2
    assert f"--campaign-dir {broken}" in _one_error_line(capsys)
    assert not Path(out).exists()  # refused before anything was written


def test_spark_submit_entry_point_refuses_bad_input_in_one_line(tmp_path, capsys):
    assert analytics.main(["--campaign-dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("analytics: error: --campaign-dir")
    with pytest.raises(UserError):
        analytics.read_ledgers([])

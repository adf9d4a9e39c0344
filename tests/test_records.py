"""Planning from recorded measurements, without a testbed: ``optimize --from-metrics``, ``fit`` and
``export`` through the CLI, on the paper's own records (data/streambed-paper) and on a campaign's.

The paper's records are the reference: BIDS2 must give the paper's objective on every one of its
324 solves, and the explorer's fitting and inverse solve must give Table IV's 16 slot counts.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from clitools import error_line, json_result, streambed
from conftest import PAPER_DATA, REPO
from streambed.model import OperatorRates, SingleTaskMetrics
from paper import QUERIES, TABLE_III_FAMILY, TABLE_IV_RATE, TABLE_IV_SLOTS
from streambed.records import (RecordError, paper_search_file, read_measurements, read_single_task_metrics,
                               write_measurements_csv, write_operator_rates_csv, write_single_task_json)

BIDS2_VECTORS = PAPER_DATA / "bids2_vectors.json"
OPERATOR_RATES = PAPER_DATA / "operator_rates_from_details.csv"


# ------------------------------------------------------------------ the paper's records through the CLI

def test_optimize_from_metrics_gives_the_papers_objective_on_all_324_solves(tmp_path):
    d = json_result(streambed("optimize", "--from-metrics", str(BIDS2_VECTORS), "--json", cwd=tmp_path))
    solves = d["solves"]
    assert d["format"] == "bids2_vectors.json" and len(solves) == 324
    vectors = json.loads(BIDS2_VECTORS.read_text())
    for s, v in zip(solves, vectors):
        assert (s["query"], s["slots"]) == (v["query"], v["slots"])
        assert s["memory_mb"] == v["memory_mb"] / 16  # the file's TaskManager MB, 16 slots each
        assert s["predicted_rate"] == pytest.approx(v["paper_objective"], rel=1e-6, abs=0)
        assert sum(s["parallelism"].values()) == s["slots"]
        assert min(s["parallelism"].values()) >= 1


def test_optimize_from_metrics_reads_the_papers_operator_rates_csv(tmp_path):
    """operator_rates_from_details.csv holds every run; its single-task runs are BIDS2's input. Each
    of the paper's 48-slot q11 solves at 4 GB per slot was solved from one of those runs (data README):
    one of the CSV's runs, solved for 48 slots, must give that solve's objective."""
    d = json_result(streambed("optimize", "--from-metrics", str(OPERATOR_RATES), "--query", "q11",
                              "--memory", "4096", "--slots", "48", "--json", cwd=tmp_path))
    assert d["format"] == "operator_rates_from_details.csv"
    assert {s["query"] for s in d["solves"]} == {"q11"} and {s["memory_mb"] for s in d["solves"]} == {4096}
    vectors = [v for v in json.loads(BIDS2_VECTORS.read_text())
               if v["query"] == "q11" and v["memory_mb"] == 65536 and v["slots"] == 48]
    assert vectors, "the paper's data must hold a 48-slot q11 solve at 4 GB per slot"
    for v in vectors:
        closest = min(abs(s["predicted_rate"] - v["paper_objective"]) / v["paper_objective"] for s in d["solves"])
        assert closest <= 1e-6, (v["source_file"], v["row_index"], closest)


@pytest.mark.parametrize("query", QUERIES)
def test_fit_with_the_papers_families_gives_table_iv(tmp_path, query):
    """The paper's model usage (section VI): its family (Table III), its features (TaskManager MB,
    log1p: the defaults) and its training prefix, inverse-solved at 1.10 x the requested rate."""
    memories = sorted(TABLE_IV_SLOTS[query])
    d = json_result(streambed(
        "fit", "--measurements", str(paper_search_file(PAPER_DATA, query)), "--rate", str(TABLE_IV_RATE[query]),
        "--family", TABLE_III_FAMILY[query], "--training", "paper-prefix", "--min-marginal", "0",
        "--profiles", ",".join(map(str, memories)), "--json", cwd=tmp_path))
    assert d["family"] == TABLE_III_FAMILY[query] and d["safety"] == pytest.approx(1.10)
    assert {e["memory_mb"]: e["slots"] for e in d["entries"]} == TABLE_IV_SLOTS[query]
    for e in d["entries"]:
        assert e["predicted_mst"] >= 1.10 * TABLE_IV_RATE[query]
        assert e["loocv_rmse"] > 0


def test_fit_safety_factor_and_family_change_the_plan(tmp_path):
    base = ["fit", "--measurements", str(paper_search_file(PAPER_DATA, "q11")), "--rate", "2e7",
            "--training", "paper-prefix", "--profiles", "4096", "--json"]
    slots = {}
    for family, safety in (("linear", "1.10"), ("linear", "1.0"), ("linear", "1.5"), ("sqrt", "1.10")):
        d = json_result(streambed(*base, "--family", family, "--safety", safety, cwd=tmp_path))
        slots[family, safety] = d["entries"][0]["slots"]
    assert slots["linear", "1.0"] < slots["linear", "1.10"] == 559 < slots["linear", "1.5"]
    # a concave family extrapolates far more slots for the same rate: past the guard rail, where each
    # added slot gains less than a quarter of what it gains on the paper's 48-slot testbed...
    assert slots["sqrt", "1.10"] is None
    d = json_result(streambed(*base, "--family", "sqrt", cwd=tmp_path))["entries"][0]
    assert "gains less than 25 %" in d["unreachable"] and 16 * 47 < d["max_slots"] < 16 * 49  # sqrt: 16x
    assert d["max_rate"] < 2e7
    # ...and without the rail (the paper's inverse solve), over twice the linear family's slots
    d = json_result(streambed(*base, "--family", "sqrt", "--min-marginal", "0", "--max-extrapolation", "1000",
                              cwd=tmp_path))["entries"][0]
    assert d["slots"] > 2 * slots["linear", "1.10"]


def test_fit_auto_applies_the_explorers_own_selection(tmp_path):
    from streambed.planner.selection import select_family, select_features
    from streambed.model import FAMILIES, Features
    from streambed.planner.surrogates import loocv_rmse

    path = paper_search_file(PAPER_DATA, "q8")
    d = json_result(streambed("fit", "--measurements", str(path), "--rate", "1.5e7", "--json", cwd=tmp_path))
    obs = list(read_measurements(path).observations)
    features = select_features(obs, Features(), FAMILIES)
    family, rule = select_family(obs, features, FAMILIES, {f: loocv_rmse(f, obs, features) for f in FAMILIES})
    assert (d["family"], d["selection"]) == (family, rule)
    assert (d["entries"][0]["coefficients"]["d"] != 0) == features.interaction
    assert d["training_rows"] == d["observations"] == len(obs) == 16
    assert sorted(e["memory_mb"] for e in d["entries"]) == [2048, 4096]  # the profiles measured


# ------------------------------------------------------------------ a campaign's record, exported and re-planned

@pytest.fixture(scope="module")
def plan_campaign(tmp_path_factory):
    """A small plan campaign on the simulated testbed: its plan is what re-planning must give back."""
    cwd = tmp_path_factory.mktemp("plan")
    d = json_result(streambed("plan", "--query", "paper-q11-linear", "--rate", "2e7", "--profiles", "512,4096",
                              "--timing", "quick", "--campaign-dir", "p", "--json", cwd=cwd, timeout=120))
    return cwd, d


def test_export_writes_files_that_fit_and_optimize_read_back_to_the_campaigns_plan(plan_campaign, tmp_path):
    cwd, campaign = plan_campaign
    plan = campaign["plan"]
    d = json_result(streambed("export", "--campaign-dir", str(cwd / "p"), "--out", str(tmp_path), "--json", cwd=cwd))
    assert d["kind"] == "plan" and d["measurements"] == len(campaign["exploration"]["points"])
    assert d["single_task_metrics"] == [512, 4096]
    planned = {e["memory_mb"]: e["model_slots"] for e in plan["entries"]}
    # the ledger, exploration.json and the exported CSV all re-plan to the campaign's own model budget
    # (the campaign's last pass may add slots its configuration needs: fit has no configurations)
    for record in (cwd / "p", cwd / "p" / "exploration.json", tmp_path / "measurements.csv"):
        f = json_result(streambed("fit", "--measurements", str(record), "--rate", "2e7", "--profiles", "512,4096",
                                  "--json", cwd=cwd))
        assert f["family"] == plan["family"], record
        assert {e["memory_mb"]: e["slots"] for e in f["entries"]} == planned, record
        assert f["model"]["b"] == pytest.approx(plan["model"]["b"], rel=1e-9)
    # both single-task metric files re-solve each planned budget as the campaign's own single-task
    # metrics do; that is the plan's configuration when the plan was configured from the single-task run
    # (its last BIDS2 pass may use the rates of the largest run of D instead: configured_from)
    from streambed.planner.policies.bids2 import bids2

    recorded = {r.metrics.memory_mb: r.metrics for r in read_single_task_metrics(cwd / "p").records}
    for metrics in (tmp_path / "single-task-metrics.json", tmp_path / "operator-rates.csv"):
        for e in plan["entries"]:
            o = json_result(streambed("optimize", "--from-metrics", str(metrics), "--memory", str(e["memory_mb"]),
                                      "--slots", str(e["slots"]), "--json", cwd=cwd))
            solved = o["solves"][0]["parallelism"]
            assert solved == bids2(recorded[e["memory_mb"]], e["slots"]).parallelism, (metrics, e["memory_mb"])
            if e.get("configured_from", "the single-task run") == "the single-task run":
                assert solved == e["configuration"], (metrics, e["memory_mb"])


def test_export_of_an_unfinished_campaign_is_refused(plan_campaign, tmp_path):
    import sqlite3

    cwd, _ = plan_campaign
    copy = tmp_path / "unfinished"
    shutil.copytree(cwd / "p", copy)
    conn = sqlite3.connect(copy / "ledger.sqlite")
    conn.execute("DELETE FROM result")
    conn.commit()
    conn.close()
    line = error_line(streambed("export", "--campaign-dir", str(copy), cwd=tmp_path))
    assert "no result yet" in line and "--resume" in line


@pytest.mark.parametrize("out, fragments", [
    ("a-file", ["--out", "a-file", "not a directory"]),
    ("a-file/export", ["--out", "a-file/export", "cannot create"]),
    ("/proc/streambed-export", ["--out", "/proc/streambed-export", "cannot create"]),
], ids=["out-is-a-file", "out-under-a-file", "out-not-creatable"])
def test_export_to_an_unusable_out_is_one_line(plan_campaign, tmp_path, out, fragments):
    cwd, _ = plan_campaign
    (tmp_path / "a-file").write_text("not a directory\n")
    line = error_line(streambed("export", "--campaign-dir", str(cwd / "p"), "--out", out, cwd=tmp_path))
    for fragment in fragments:
        assert fragment in line, (fragment, line)


def test_export_of_the_ledger_file_writes_next_to_it(plan_campaign, tmp_path):
    """--campaign-dir may name the ledger itself: the default export directory is then beside it."""
    cwd, _ = plan_campaign
    shutil.copytree(cwd / "p", tmp_path / "p")
    d = json_result(streambed("export", "--campaign-dir", "p/ledger.sqlite", "--json", cwd=tmp_path))
    assert d["files"]["measurements"] == "p/export/measurements.csv"
    assert (tmp_path / "p" / "export" / "measurements.csv").is_file()


# ------------------------------------------------------------------ readers and writers

def _metrics(query="q", memory=1024, rates=((1000.0, 1.0), (500.0, 0.5))):
    return SingleTaskMetrics(query, memory, tuple((f"Op#{i + 1}", OperatorRates(o, r)) for i, (o, r) in
                                                  enumerate(rates)), source_rate=900.0)


def test_single_task_metrics_round_trip_through_both_export_formats(tmp_path):
    ms = [_metrics(memory=512), _metrics(memory=4096, rates=((2000.0, 1.0), (800.0, 0.25)))]
    write_single_task_json(tmp_path / "m.json", ms)
    write_operator_rates_csv(tmp_path / "m.csv", ms, "test")
    for path in (tmp_path / "m.json", tmp_path / "m.csv"):
        back = [r.metrics for r in read_single_task_metrics(path).records]
        assert back == ms, path


def test_measurements_round_trip_in_the_papers_columns(tmp_path):
    points = [{"memory_mb": 512, "slots": 4, "mst": 1.5e5, "configuration": {"A#1": 2, "B#2": 2}},
              {"memory_mb": 4096, "slots": 12, "mst": 4.25e5, "configuration": {"A#1": 6, "B#2": 6}}]
    write_measurements_csv(tmp_path / "m.csv", points, "q", "test")
    f = read_measurements(tmp_path / "m.csv")
    assert [(o.memory_mb, o.slots, o.mst) for o in f.observations] == [(512, 4, 1.5e5), (4096, 12, 4.25e5)]
    assert (f.query, f.operators, f.slots_per_taskmanager) == ("q", 2, 16)


def test_the_papers_taskmanager_memory_becomes_memory_per_slot():
    f = read_measurements(paper_search_file(PAPER_DATA, "q5"))
    assert sorted({o.memory_mb for o in f.observations}) == [2048, 4096]  # 32768 and 65536 MB TaskManagers
    assert f.query == "q5" and len(f.observations) == 22


def test_regression_rows_are_not_msts(tmp_path):
    rows = (PAPER_DATA / "runs" / "regression_q1-20230722031321.csv").read_text()
    (tmp_path / "r.csv").write_text(rows)
    with pytest.raises(RecordError, match=r"line 2: phase regression rows are production runs"):
        read_measurements(tmp_path / "r.csv")


# ------------------------------------------------------------------ bad files: one clear line each

BAD_FILES = [
    # id, file name, content, argv (FILE = the file), fragments of the one error line
    ("measurements-missing-column", "m.csv", "query,memory_mb,observed_source_rate\nq1,8192,1e6\n",
     ["fit", "--measurements", "FILE", "--rate", "1e6"], ["m.csv", "missing column used_task_slots"]),
    ("measurements-negative-mst", "m.csv",
     "query,memory_mb,used_task_slots,observed_source_rate\nq1,8192,2,1e6\nq1,8192,4,-5\n",
     ["fit", "--measurements", "FILE", "--rate", "1e6"], ["line 3", "observed_source_rate", "'-5'"]),
    ("measurements-zero-slots", "m.csv",
     "query,memory_mb,used_task_slots,observed_source_rate\nq1,8192,0,1e6\n",
     ["fit", "--measurements", "FILE", "--rate", "1e6"], ["line 2", "used_task_slots", "'0'"]),
    ("measurements-two-queries", "m.csv",
     "query,memory_mb,used_task_slots,observed_source_rate\nq1,8192,2,1e6\nq2,8192,4,2e6\n",
     ["fit", "--measurements", "FILE", "--rate", "1e6"], ["several queries", "q1, q2"]),
    ("measurements-too-few", "m.csv",
     "query,memory_mb,used_task_slots,observed_source_rate\nq1,8192,2,1e6\nq1,8192,4,2e6\n",
     ["fit", "--measurements", "FILE", "--rate", "1e6"], ["--measurements", "too few"]),
    ("metrics-negative-rate", "o.json",
     json.dumps({"query": "q", "memory_mb": 1024, "operators": [
         {"name": "A#1", "true_rate_per_task": -3, "input_ratio": 1.0}]}),
     ["optimize", "--from-metrics", "FILE", "--slots", "2"], ["operator A#1", "true_rate_per_task", "-3"]),
    ("metrics-negative-ratio", "o.csv",
     "query,row_index,memory_mb,operator,parallelism,true_processing_rate_per_task,input_ratio_vs_source\n"
     "q,0,8192,A#1,1,100,-0.5\n",
     ["optimize", "--from-metrics", "FILE", "--slots", "2"], ["line 2", "input_ratio_vs_source", "-0.5"]),
    ("metrics-missing-field", "o.json",
     json.dumps({"query": "q", "memory_mb": 1024, "operators": [{"name": "A#1", "input_ratio": 1.0}]}),
     ["optimize", "--from-metrics", "FILE", "--slots", "2"], ["operator 1", "missing field true_rate_per_task"]),
    ("slots-below-operators", "o.json",
     json.dumps({"query": "q", "memory_mb": 1024, "operators": [
         {"name": f"A#{i}", "true_rate_per_task": 100, "input_ratio": 1.0} for i in range(1, 4)]}),
     ["optimize", "--from-metrics", "FILE", "--slots", "2"], ["--slots", "3 operators", "got 2"]),
    ("metrics-no-budget", "o.json",
     json.dumps({"query": "q", "memory_mb": 1024, "operators": [
         {"name": "A#1", "true_rate_per_task": 100, "input_ratio": 1.0}]}),
     ["optimize", "--from-metrics", "FILE"], ["--slots", "gives no slot budget"]),
    ("metrics-operator-twice", "o.json",
     json.dumps({"query": "q", "memory_mb": 1024, "operators": [
         {"name": "A#1", "true_rate_per_task": 100, "input_ratio": 1.0}] * 2}),
     ["optimize", "--from-metrics", "FILE", "--slots", "2"], ["operator 2", "A#1 is listed twice"]),
    ("measurements-point-missing-mst", "e.json", json.dumps({"points": [{"memory_mb": 512, "slots": 4}]}),
     ["fit", "--measurements", "FILE", "--rate", "1e6"], ["point 1", "missing field mst"]),
    ("metrics-not-json", "o.json", "{not json",
     ["optimize", "--from-metrics", "FILE", "--slots", "2"], ["o.json", "not valid JSON"]),
    ("metrics-empty", "o.csv", "", ["optimize", "--from-metrics", "FILE", "--slots", "2"], ["o.csv", "empty"]),
    ("metrics-unknown-memory", "o.json",
     json.dumps({"query": "q", "memory_mb": 1024, "operators": [
         {"name": "A#1", "true_rate_per_task": 100, "input_ratio": 1.0}]}),
     ["optimize", "--from-metrics", "FILE", "--slots", "2", "--memory", "4096"], ["4096 MB", "q at 1024 MB"]),
    ("metrics-with-testbed", "o.json",
     json.dumps({"query": "q", "memory_mb": 1024, "operators": [
         {"name": "A#1", "true_rate_per_task": 100, "input_ratio": 1.0}]}),
     ["optimize", "--from-metrics", "FILE", "--slots", "2", "--testbed", "flink"], ["--testbed", "does not apply"]),
    ("file-missing", None, None, ["fit", "--measurements", "FILE", "--rate", "1e6"], ["file not found"]),
    ("paper-prefix-needs-a-family", "m.csv",
     "query,memory_mb,used_task_slots,observed_source_rate\n" + "".join(
         f"q1,8192,{p},{p * 1e5}\n" for p in range(2, 10)),
     ["fit", "--measurements", "FILE", "--rate", "1e6", "--training", "paper-prefix"], ["--family", "by hand"]),
    ("export-no-campaign", None, None, ["export", "--campaign-dir", "FILE"], ["--campaign-dir", "no campaign ledger"]),
    ("metrics-short-row", "o.csv",
     "query,row_index,memory_mb,operator,parallelism,true_processing_rate_per_task,input_ratio_vs_source\n"
     "q,0,8192,A#1,1,100,1.0\nq,1,8192,A#1,1\n",
     ["optimize", "--from-metrics", "FILE", "--slots", "2"],
     ["o.csv", "line 3", "missing columns true_processing_rate_per_task, input_ratio_vs_source"]),
    ("measurements-short-row", "m.csv",
     "query,memory_mb,used_task_slots,observed_source_rate\nq1,8192,2,1e6\nq1,8192,4\n",
     ["fit", "--measurements", "FILE", "--rate", "1e6"], ["m.csv", "line 3", "missing column observed_source_rate"]),
    ("measurements-long-row", "m.csv",
     "query,memory_mb,used_task_slots,observed_source_rate\nq1,8192,2,1e6,7\n",
     ["fit", "--measurements", "FILE", "--rate", "1e6"], ["m.csv", "line 2", "5 fields", "4 columns"]),
    ("measurements-operators-beyond-max-slots", "m.csv",
     "query,memory_mb,used_task_slots,observed_source_rate,n_operators\n" + "".join(
         f"q1,8192,{p},{p * 1e5},200000\n" for p in range(2, 10)),
     ["fit", "--measurements", "FILE", "--rate", "1e6"], ["line 2", "n_operators", "at most 100,000", "'200000'"]),
    ("metrics-empty-list", "o.json", "[]", ["optimize", "--from-metrics", "FILE", "--slots", "2"],
     ["--from-metrics", "o.json", "holds no single-task metrics"]),
    ("metrics-no-input", "o.json",
     json.dumps({"query": "q", "memory_mb": 1024, "operators": [
         {"name": f"A#{i}", "true_rate_per_task": 100, "input_ratio": 0} for i in range(1, 3)]}),
     ["optimize", "--from-metrics", "FILE", "--slots", "2"],
     ["--from-metrics", "no operator receives input", "every input ratio is 0"]),
    # bounds and types (each accepted, or a traceback, before): a boolean is a boolean, a name has no
    # control character, an integer has a digit limit, a guard factor a formula can take
    ("metrics-keyed-as-text", "o.json",
     json.dumps({"query": "q", "memory_mb": 1024, "operators": [
         {"name": "A#1", "true_rate_per_task": 100, "input_ratio": 1.0, "keyed": "yes"}]}),
     ["optimize", "--from-metrics", "FILE", "--slots", "2"], ["operator A#1", "keyed", "true or false", "'yes'"]),
    ("metrics-operator-name-with-a-newline", "o.json",
     json.dumps({"query": "q", "memory_mb": 1024, "operators": [
         {"name": "A\n#1", "true_rate_per_task": 100, "input_ratio": 1.0}]}),
     ["optimize", "--from-metrics", "FILE", "--slots", "2"], ["operator 1", "name", "control characters"]),
    ("metrics-memory-5000-digits", "o.json",
     '{"query": "q", "memory_mb": ' + "9" * 5000 + ', "operators": []}',
     ["optimize", "--from-metrics", "FILE", "--slots", "2"], ["o.json", "5,000 digits", "at most 30"]),
    ("fit-max-extrapolation-1e308", "m.csv",
     "query,memory_mb,used_task_slots,observed_source_rate\n" + "".join(f"q1,8192,{p},{p * 1e5}\n" for p in range(2, 10)),
     ["fit", "--measurements", "FILE", "--rate", "1e6", "--max-extrapolation", "1e308"],
     ["--max-extrapolation", "'1e308'", "100,000"]),
    ("fit-min-marginal-1e308", "m.csv",
     "query,memory_mb,used_task_slots,observed_source_rate\n" + "".join(f"q1,8192,{p},{p * 1e5}\n" for p in range(2, 10)),
     ["fit", "--measurements", "FILE", "--rate", "1e6", "--min-marginal", "1e308"],
     ["--min-marginal", "'1e308'", "fraction from 0 to 1"]),
    ("fit-profiles-below-one-mb", "m.csv",
     "query,memory_mb,used_task_slots,observed_source_rate\n" + "".join(f"q1,8192,{p},{p * 1e5}\n" for p in range(2, 10)),
     ["fit", "--measurements", "FILE", "--rate", "1e6", "--profiles", "0.4"], ["--profiles", "'0.4'", "MB"]),
]


@pytest.mark.parametrize("name, content, argv, fragments", [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES])
def test_bad_record_files_are_one_line_exit_2(tmp_path, name, content, argv, fragments):
    path = tmp_path / (name or "absent")
    if content is not None:
        path.write_text(content)
    argv = [str(path) if a == "FILE" else a for a in argv]
    line = error_line(streambed(*argv, cwd=tmp_path))
    for fragment in fragments:
        assert fragment in line, (fragment, line)


# ------------------------------------------------------------------ the held-out check (holdout)

def _exploration(path, msts: dict[int, float], memory_mb: int = 1024):
    path.write_text(json.dumps({"points": [{"memory_mb": memory_mb, "slots": s, "mst": m} for s, m in msts.items()]}))
    return str(path)


def test_relative_error_is_signed_against_the_measurement():
    from streambed.planner.replan import relative_error

    assert relative_error(110, 100) == pytest.approx(0.10)
    assert relative_error(90, 100) == pytest.approx(-0.10)
    assert relative_error(100, 100) == 0
    assert relative_error(100, 0) is None  # a budget that sustained nothing: no share of it


def test_holdout_against_a_largest_budget_that_sustained_nothing_says_so_without_a_share(tmp_path):
    path = _exploration(tmp_path / "e.json", {4: 4000, 5: 5000, 7: 7000, 8: 8000, 10: 0})
    r = streambed("holdout", "--measurements", path, cwd=tmp_path)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    d = json_result(streambed("holdout", "--measurements", path, "--json", cwd=tmp_path))
    assert d["held_out"][0]["error"] is None and d["held_out"][0]["predicted"] == pytest.approx(10000, rel=1e-6)


def test_holdout_fits_below_the_largest_budget_and_predicts_it(tmp_path):
    """A line measured at 4-8 slots and a 10-slot point 20 % above it: the linear model, fitted
    without the 10-slot point, must predict the line there, 1/1.2 - 1 of the measurement."""
    line = {s: 1000.0 * s - 500 for s in (4, 5, 7, 8)}
    path = _exploration(tmp_path / "exploration.json", {**line, 10: 1.2 * 9500})
    d = json_result(streambed("holdout", "--measurements", path, "--reference", "9000", "9500", "12000",
                              "--json", cwd=tmp_path))
    assert d["held_out_slots"] == 10 and d["training_slots"] == [4, 5, 7, 8] and d["training_rows"] == 4
    (h,) = d["held_out"]
    assert h["measured"] == pytest.approx(11400)
    linear = h["by_family"]["linear"]
    assert linear["predicted"] == pytest.approx(9500, rel=1e-9)
    assert linear["error"] == pytest.approx(1 / 1.2 - 1)
    assert d["reference"] == 9500 and linear["reference_error"] == pytest.approx(0, abs=1e-9)  # the median
    assert d["reference_spread"] == pytest.approx(12000 / 9000)
    assert h["predicted"] == h["by_family"][d["family"]]["predicted"]
    # the concave families bend below the line beyond the points they were fitted on
    assert h["by_family"]["log"]["predicted"] < h["by_family"]["sqrt"]["predicted"] < linear["predicted"]


def test_holdout_without_references_compares_with_the_measurement_only(tmp_path):
    path = _exploration(tmp_path / "e.json", {4: 4000, 5: 5100, 7: 6800, 8: 8200, 10: 9900})
    d = json_result(streambed("holdout", "--measurements", path, "--json", cwd=tmp_path))
    assert d["references"] == [] and d["reference"] is None and d["reference_spread"] is None
    assert all(e["reference_error"] is None for e in d["held_out"][0]["by_family"].values())


@pytest.mark.parametrize("msts, expected", [
    ({4: 4000, 10: 9000}, "leaves 1 slot count to fit on"),
    ({4: 4000, 5: 5000, 10: 9000}, "leaves 2 slot counts to fit on"),
])
def test_holdout_needs_three_budgets_below_the_largest(tmp_path, msts, expected):
    r = streambed("holdout", "--measurements", _exploration(tmp_path / "e.json", msts), cwd=tmp_path)
    assert r.returncode != 0 and expected in error_line(r) and "Traceback" not in r.stderr


def test_holdout_refuses_references_when_several_memories_are_held_out(tmp_path):
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"points": [{"memory_mb": m, "slots": s, "mst": 1000.0 * s * m / 1024}
                                           for m in (1024, 2048) for s in (4, 5, 7, 10)]}))
    d = json_result(streambed("holdout", "--measurements", str(path), "--json", cwd=tmp_path))
    assert [h["memory_mb"] for h in d["held_out"]] == [1024, 2048]
    r = streambed("holdout", "--measurements", str(path), "--reference", "9000", cwd=tmp_path)
    assert r.returncode != 0 and "--reference" in error_line(r) and "1024, 2048 MB" in error_line(r)
    # --memory picks one; the model is still fitted on both memories' smaller budgets
    d = json_result(streambed("holdout", "--measurements", str(path), "--reference", "9000", "--memory", "2048",
                              "--json", cwd=tmp_path))
    assert [h["memory_mb"] for h in d["held_out"]] == [2048] and d["training_rows"] == 6 and d["reference"] == 9000
    r = streambed("holdout", "--measurements", str(path), "--memory", "512", cwd=tmp_path)
    assert r.returncode != 0 and "--memory" in error_line(r) and "not 512" in error_line(r)


def test_holdout_rejects_a_non_positive_reference(tmp_path):
    path = _exploration(tmp_path / "e.json", {4: 4000, 5: 5100, 7: 6800, 10: 9900})
    r = streambed("holdout", "--measurements", path, "--reference", "0", cwd=tmp_path)
    assert r.returncode != 0 and "--reference" in error_line(r)


def test_heldout_bench_measures_the_largest_budget_again_on_the_plans_testbed(plan_campaign, tmp_path):
    """bench/experiments/heldout.py on a sim plan: the plan's largest configuration estimated --repeats times on
    the plan's own testbed, each a campaign of its own, then `holdout` with those MSTs as references."""
    cwd, _ = plan_campaign
    shutil.copytree(cwd / "p", tmp_path / "p")
    run = subprocess.run([sys.executable, str(REPO / "bench" / "experiments" / "heldout.py"), "--campaign-dir", str(tmp_path / "p"),
                          "--repeats", "2"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    d = json.loads(run.stdout)
    ledgers = sorted((tmp_path / "p" / "holdout").glob("*/ledger.sqlite"))
    assert len(ledgers) == 2 and len(d["references"]) == 2 and d["reference"] > 0
    largest = max(o.slots for o in read_measurements(str(tmp_path / "p")).observations)
    assert d["held_out_slots"] == largest and len(d["held_out"]) == 1 and d["held_out"][0]["slots"] == largest
    assert largest not in d["training_slots"]


def test_heldout_bench_refuses_a_directory_without_a_plan_in_one_line(tmp_path):
    run = subprocess.run([sys.executable, str(REPO / "bench" / "experiments" / "heldout.py"), "--campaign-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [f"heldout: --campaign-dir: {tmp_path}: no campaign ledger "
                                               f"(ledger.sqlite) there"]


def test_the_planners_re_plans_solve_on_records_held_in_memory_no_file_read():
    """planner/replan.py takes any object with the fields it reads: a data set written nowhere."""
    from dataclasses import dataclass
    from pathlib import Path

    from streambed.model import Observation
    from streambed.planner.replan import fit_plan, hold_out

    @dataclass(frozen=True)
    class InMemory:
        path: Path
        format: str
        observations: tuple
        query: str | None = "toy"
        operators: int | None = 3
        slots_per_taskmanager: int | None = None

    law = lambda m, p: 5_000.0 * p + 2.0 * m  # noqa: E731 -- linear in slots and memory
    obs = tuple(Observation(m, p, law(m, p)) for m in (1024, 4096) for p in (4, 8, 12, 16, 24, 32))
    d = InMemory(Path("memory"), "in-memory", obs)
    held = hold_out(d)
    assert held["held_out_slots"] == 32 and held["query"] == "toy"
    for row in held["held_out"]:
        assert row["error"] == pytest.approx(0.0, abs=0.01)
    plan = fit_plan(d, 200_000.0, [4096], "linear")
    entry = plan["entries"][0]
    assert entry["slots"] is not None and law(4096, entry["slots"]) >= 1.10 * 200_000.0 > law(4096, entry["slots"] - 1)

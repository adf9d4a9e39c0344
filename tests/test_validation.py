"""Validation at production scale (paper section VIII): run verdicts and the plan's verdict."""

import pytest

from streambed.ledger import Ledger
from streambed.model import Budget, Configuration, Measurement
from streambed.testbed.sim.profile import parse_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed
from streambed.planner.validation import (INCONCLUSIVE, NO_BASE, NOT_SUSTAINED, OVER, RIGHT, SOURCE_LIMITED, SUSTAINED, UNDER,
                                  UNSTABLE, RunVerdict, ValidationSettings, judge_plan, judge_run, validate)

S = ValidationSettings()


def windows(ratios, target=1000.0, pending_growth=0.0, length=60.0, source_saturated=False):
    out, pending = [], 0.0
    for i, r in enumerate(ratios):
        start = i * length
        new = pending + pending_growth * target * length
        out.append(Measurement(target, r * target, pending, new, pending_growth * target, 0.0, start, start + length,
                               source_saturated=source_saturated))
        pending = new
    return out


def test_run_verdicts():
    assert judge_run(windows([1.0] * 10), 1.0, S).verdict == SUSTAINED
    assert judge_run(windows([1.0, 0.9, 1.0, 1.1] * 3), 1.0, S).verdict == UNSTABLE  # keeps up, but jumps about
    assert judge_run(windows([0.9] * 10), 1.0, S).verdict == NOT_SUSTAINED
    growing = judge_run(windows([0.995] * 10, pending_growth=0.005), 1.0, S)
    assert growing.verdict == NOT_SUSTAINED and growing.pending_growth == pytest.approx(0.005)


def test_a_run_the_source_could_not_feed_judges_the_source_not_the_plan():
    capped = judge_run(windows([0.9] * 10, source_saturated=True), 1.2, S)
    assert capped.verdict == SOURCE_LIMITED and capped.source_saturated
    # a run that keeps up is sustained whatever the source's load
    assert judge_run(windows([1.0] * 10, source_saturated=True), 1.0, S).verdict == SUSTAINED
    # one saturated window of ten does not make the run source-limited
    mixed = windows([0.9] * 9) + windows([0.9], source_saturated=True)
    assert judge_run(mixed, 1.0, S).verdict == NOT_SUSTAINED


def verdict(v, m):
    return RunVerdict(m, 1000.0, 1.0, 0.0, 0.0, v)


def test_plan_verdicts():
    assert judge_plan([verdict(NOT_SUSTAINED, 1.0), verdict(NOT_SUSTAINED, 1.2)]) == UNDER
    assert judge_plan([verdict(SUSTAINED, 1.0), verdict(SUSTAINED, 1.2), verdict(NOT_SUSTAINED, 1.5)]) == OVER
    assert judge_plan([verdict(UNSTABLE, 1.0), verdict(NOT_SUSTAINED, 1.2), verdict(NOT_SUSTAINED, 1.5)]) == RIGHT
    # source-limited runs: the verdict stands only where it does not depend on them
    assert judge_plan([verdict(SOURCE_LIMITED, 1.0), verdict(NOT_SUSTAINED, 1.2)]) == INCONCLUSIVE
    assert judge_plan([verdict(SUSTAINED, 1.0), verdict(SOURCE_LIMITED, 1.2), verdict(NOT_SUSTAINED, 1.5)]) \
        == INCONCLUSIVE
    assert judge_plan([verdict(SUSTAINED, 1.0), verdict(SUSTAINED, 1.2), verdict(SOURCE_LIMITED, 1.5)]) == OVER
    # instability at a higher rate is a sign the plan is not over-provisioned (section VIII)
    assert judge_plan([verdict(SUSTAINED, 1.0), verdict(UNSTABLE, 1.2), verdict(NOT_SUSTAINED, 1.5)]) == RIGHT
    assert judge_plan([verdict(SUSTAINED, 1.0), verdict(UNSTABLE, 1.2), verdict(SUSTAINED, 1.5)]) == OVER
    # without a 100 % run: a higher rate sustained still decides; otherwise nothing does
    assert judge_plan([verdict(SUSTAINED, 1.2), verdict(SUSTAINED, 1.5)]) == OVER
    assert judge_plan([verdict(NOT_SUSTAINED, 1.2), verdict(NOT_SUSTAINED, 1.5)]) == NO_BASE


@pytest.mark.parametrize("fraction, expected", [(0.95, RIGHT), (0.6, OVER), (1.15, UNDER)])
def test_validate_on_the_sim(tmp_path, fraction, expected):
    prof = parse_profile({"name": "toy", "operators": [
        {"name": "m", "kind": "map", "rate": 1e7, "inputs": [{"from": "source"}]},
        {"name": "agg", "kind": "aggregate", "rate": 50_000, "keys": {"count": 100_000, "zipf": 0},
         "inputs": [{"from": "m", "partitioning": "hash"}]},
        {"name": "s", "kind": "sink", "rate": 1e7, "inputs": [{"from": "agg"}]}]}, "toy.yaml")
    tb = SimTestbed(prof, SimSettings(noise=True, seed=2, max_slots=1000))
    cfg = Configuration.of(prof.query(), {"m": 1, "agg": 8, "s": 1})
    capacity = 8 * 50_000 * 128 / (8 * 16)  # 8 tasks x 16 of 128 key groups each: even
    settings = ValidationSettings(ramp_s=60, duration_s=600, window_s=60)
    with Ledger.open(tmp_path, "v", {}, resume=False) as ledger:
        report = validate(tb, ledger, "toy", Budget(cfg.slots, 4096), cfg, fraction * capacity, settings)
    assert report.verdict == expected
    assert [r.multiplier for r in report.runs] == [1.0, 1.2, 1.5]


# -- the validate campaign's typed result and the command's lines -------------------------------------------

def test_validate_says_on_the_console_what_its_json_and_ledger_hold(tmp_path):
    """The command reads the campaign's ValidationResult; its table title, run rows and catch-up line carry
    the same numbers as the JSON (ValidationResult.to_dict), and the ledger holds that JSON without files."""
    from clitools import json_result, streambed
    from streambed.ledger import read_campaign

    proc = streambed("validate", "--query", "q1", "--config", "Calc#1=4,Sink#2=2", "--rate", "5e6", "--ramp", "30",
                     "--duration", "60", "--multipliers", "1,1.5", "--catch-up", "60s/120s", "--campaign-dir", "v",
                     "--json", cwd=tmp_path, columns=400, timeout=300)
    d = json_result(proc)
    assert (f"Validation on {d['cluster']['name']}: {d['slots']} slots x {d['memory_mb']} MB at {d['rate']:,.0f} "
            f"events/s -> {d['verdict']}") in proc.stderr
    for r in d["runs"]:
        assert any(line.split("│")[1].strip() == f"{r['multiplier'] * 100:.0f} %" and line.split("│")[-2].strip()
                   == r["verdict"] for line in proc.stderr.splitlines() if line.startswith("│"))
    c = d["catch_up"]
    drained = f"drained in {c['drain_s']:,.0f} s" if c["drain_s"] is not None else "not drained"
    assert (f"catch-up: {c['backlog_s']:g} s of backlog at {c['rate']:,.0f} events/s, to drain within "
            f"{c['within_s']:g} s: {c['verdict']} ({drained})") in proc.stderr
    recorded = read_campaign(tmp_path / "v").result
    assert recorded == {k: v for k, v in d.items() if k != "files"} and d["files"]["report"].endswith("report.html")


def test_a_catch_up_the_testbed_cannot_run_is_said_as_the_json_says_it():
    from streambed.campaigns.validate import CatchUpNotRun, ValidationResult
    from streambed.commands.validate import _catch_up_line
    from streambed.model.catchup import CatchUp
    from streambed.planner.validation import ValidationReport

    cfg = Configuration((("a", 2),))
    report = ValidationReport(1000.0, cfg, 4096, [], RIGHT)
    result = ValidationResult(report, {"name": "local"}, CatchUpNotRun(CatchUp(300.0, 600.0, 1000.0), "no offset"),
                              plan_file="p/plan.json", files={"report": "r.html"})
    d = result.to_dict()
    assert list(d) == ["rate", "slots", "memory_mb", "configuration", "verdict", "runs", "cluster", "catch_up", "plan",
                       "files"]
    assert d["catch_up"] == {"backlog_s": 300.0, "within_s": 600.0, "rate": 1000.0, "effective_rate": 1500.0,
                             "verdict": "not run", "why": "no offset"}
    assert d["plan"] == {"file": "p/plan.json", "replanned_for_cluster": False}
    assert _catch_up_line(result) == ("catch-up: 300 s of backlog at 1,000 events/s, to drain within 600 s: not run "
                                      "(no offset)")
    assert _catch_up_line(ValidationResult(report, {"name": "sim"})) is None

"""Catch-up after a restart (plan --catch-up B/T): the option, the effective rate, the sim's start behind
a backlog, and the drain time the validation measures."""

import argparse
import dataclasses
import json

import pytest

from streambed.commands.args import catch_up
from streambed.errors import UserError
from streambed.ledger import Ledger
from streambed.model import Budget, Configuration
from streambed.model.catchup import CatchUp, catch_up_factor, drain_time
from streambed.planner.validation import DOES_NOT_DRAIN, DRAINS, DrainSettings, drain_run, judge_drain
from streambed.testbed.sim.profile import parse_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed


def toy(rate=100_000):
    """A map, an aggregate of ``rate`` records/s per task, a sink: capacity ``rate`` x the aggregate's tasks."""
    return parse_profile({"name": "toy", "operators": [
        {"name": "m", "kind": "map", "rate": 1e7, "inputs": [{"from": "source"}]},
        {"name": "agg", "kind": "aggregate", "rate": rate, "keys": {"count": 1000, "zipf": 0},
         "inputs": [{"from": "m", "partitioning": "hash"}]},
        {"name": "s", "kind": "sink", "rate": 1e7, "inputs": [{"from": "agg"}]}]}, "toy.yaml")


@pytest.mark.parametrize("text, expected", [("300s/600s", (300.0, 600.0)), ("5m/30m", (300.0, 1800.0)),
                                            ("0s/1h", (0.0, 3600.0)), ("90/120", (90.0, 120.0))])
def test_the_option_reads_backlog_and_time_in_seconds(text, expected):
    assert catch_up(text) == expected


@pytest.mark.parametrize("text", ["300s", "-5s/600s", "300s/0s", "300x/600s", "1/2/3", "300s/2w"])
def test_the_option_refuses_what_is_not_a_backlog_and_a_positive_time(text):
    with pytest.raises(argparse.ArgumentTypeError, match="expected B/T"):
        catch_up(text)


def test_the_plan_command_refuses_a_bad_catch_up_in_one_line(capsys):
    from streambed.cli import main
    assert main(["plan", "--query", "q1", "--catch-up", "300s/0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "--catch-up" in err[-1] and "expected B/T" in err[-1] and "Traceback" not in "\n".join(err)


def test_the_effective_rate_is_the_rate_times_one_plus_backlog_over_time():
    assert catch_up_factor(300, 600) == pytest.approx(1.5)
    assert catch_up_factor(0, 600) == 1.0
    c = CatchUp(300, 600, 10_000)
    assert c.effective_rate == pytest.approx(15_000) and c.backlog_events == pytest.approx(3e6)
    assert CatchUp.from_dict(c.to_dict()) == c


def test_drain_time_is_when_pending_records_fall_to_the_tolerance_for_good():
    times = [0, 10, 20, 30, 40, 50]
    assert drain_time(times, [100, 60, 5, 0, 0, 0], tolerance=1) == 30
    assert drain_time(times, [100, 0, 50, 0, 0, 0], tolerance=1) == 30  # a dip that grows again has not drained
    assert drain_time(times, [100, 90, 80, 70, 60, 50], tolerance=1) is None


def test_the_sim_starts_behind_with_the_backlog_pending():
    tb = SimTestbed(toy(), SimSettings(max_slots=8, memory_per_slot=(4096,), noise=False))
    assert tb.info().backlog_start
    q = tb.query("toy")
    cfg = Configuration.of(q, {"m": 1, "agg": 2, "s": 1})
    tb.prepare(Budget(cfg.slots, 4096))
    run = tb.start("toy", cfg, 50_000, backlog_s=60)
    w = tb.observe(run, 10)
    assert w.pending_start == pytest.approx(60 * 50_000)
    # a replay source reads faster than its rate while a backlog waits: the job at 2 x 100k drains it
    assert w.achieved_rate > 1.5 * 50_000 and w.pending_end < w.pending_start
    plain = tb.start("toy", cfg, 50_000)
    assert tb.observe(plain, 10).pending_start == 0


def drained(tmp, rate, tasks, backlog_s=60, within_s=120):
    tb = SimTestbed(toy(), SimSettings(max_slots=8, memory_per_slot=(4096,), noise=False))
    cfg = Configuration.of(tb.query("toy"), {"m": 1, "agg": tasks, "s": 1})
    with Ledger.open(tmp, "t", {}, resume=False) as ledger:
        return drain_run(tb, ledger, "toy", Budget(cfg.slots, 4096), cfg, CatchUp(backlog_s, within_s, rate),
                         DrainSettings(window_s=5))


def test_the_drain_run_measures_the_time_a_backlog_takes_on_a_toy_profile(tmp_path):
    # capacity 200k/s at 150k/s: 60 s x 150k drain at 50k/s in about 180 s, beyond T = 120 s
    slow = drained(tmp_path / "slow", 150_000, 2)
    # capacity 300k/s: they drain at 150k/s in about 60 s
    fast = drained(tmp_path / "fast", 150_000, 3)
    assert fast.verdict == DRAINS and fast.drain_s == pytest.approx(60, rel=0.25)
    assert slow.verdict == DOES_NOT_DRAIN and slow.drain_s == pytest.approx(180, rel=0.25)
    assert judge_drain(fast.times, fast.pending, CatchUp(60, 120, 150_000), DrainSettings()).verdict == DRAINS


def test_a_testbed_that_cannot_start_behind_runs_no_drain(tmp_path):
    class Strict(SimTestbed):
        def info(self):
            return dataclasses.replace(super().info(), backlog_start=False)

    tb = Strict(toy(), SimSettings(max_slots=8, memory_per_slot=(4096,), noise=False))
    cfg = Configuration.of(tb.query("toy"), {"m": 1, "agg": 3, "s": 1})
    with Ledger.open(tmp_path, "t", {}, resume=False) as ledger:
        assert drain_run(tb, ledger, "toy", Budget(cfg.slots, 4096), cfg, CatchUp(60, 120, 1000)) is None


def test_plan_json_keeps_the_catch_up():
    from streambed.model import Plan
    plain = {"query": "q1", "rate": 15_000.0, "entries": [{"memory_mb": 4096, "slots": 2, "predicted_mst": 16_000.0,
                                                           "configuration": {"a": 1, "b": 1}}]}
    assert "catch_up" not in Plan.from_dict(plain).to_dict()
    d = dataclasses.replace(Plan.from_dict(plain), catch_up=CatchUp(300, 600, 10_000)).to_dict()
    assert d["catch_up"]["effective_rate"] == pytest.approx(15_000)
    assert Plan.from_dict(d).catch_up == CatchUp(300, 600, 10_000)
    with pytest.raises(UserError, match="catch_up"):
        Plan.from_dict({**d, "catch_up": {"backlog_s": 300, "within_s": 0, "rate": 10_000}})


def test_a_catch_up_plan_drains_on_the_sim_and_the_plain_plan_does_not(tmp_path, capsys):
    from streambed.cli import main

    def plan(name, *more):
        assert main(["plan", "--query", "q11", "--rate", "1e6", "--memory", "4096", "--timing", "quick",
                     "--campaign-dir", str(tmp_path / name), *more]) == 0
        return tmp_path / name / "plan.json"

    def validate(plan_file, name):
        capsys.readouterr()
        assert main(["validate", "--query", "q11", "--plan", str(plan_file), "--multipliers", "1", "--ramp", "30",
                     "--duration", "60", "--window", "30", "--catch-up", "300s/600s", "--json",
                     "--campaign-dir", str(tmp_path / name)]) == 0
        return json.loads(capsys.readouterr().out)["catch_up"]

    sized = json.loads(plan("cu", "--catch-up", "300s/600s").read_text())
    assert sized["rate"] == pytest.approx(1.5e6) and sized["catch_up"]["rate"] == pytest.approx(1e6)
    cu, plain = validate(tmp_path / "cu" / "plan.json", "v-cu"), validate(plan("plain"), "v-plain")
    assert cu["rate"] == plain["rate"] == pytest.approx(1e6)
    assert cu["verdict"] == DRAINS and cu["drain_s"] <= 600
    assert plain["verdict"] == DOES_NOT_DRAIN and plain["pending"][-1] > 0.5 * 300 * 1e6

"""Judging a sizing on a testbed without ground truth (campaigns/judge.py) and the compare hook that
uses it, on the scripted fake testbed: capacities are known exactly, so the measured MST and the
verdict can be checked against them."""

from __future__ import annotations

import json

import pytest

from streambed.campaigns import compare, testbeds
from streambed.campaigns.compare import CompareCampaign, CompareSettings
from streambed.campaigns.judge import BEYOND, SOURCE_LIMITED, Judgement, beyond, judge
from streambed.campaigns.settings import CampaignSettings, TestbedSpec
from streambed.cli import main
from streambed.errors import UserError
from streambed.ledger import Ledger
from streambed.model import Query
from streambed.model.verdict import UNDER
from streambed.planner import PLANNERS, Sizing
from streambed.planner.estimator import Timing
from fake_testbed import FakeTestbed

TIMING = Timing("t", warmup_s=10, cooldown_s=2, cooldown_rate_per_source=10, ramp_s=2, observe_s=5,
                max_iterations=12, sensibility=0.01, warmup_observe_s=5, max_cooldown_s=10)
QUERY = Query("chain", ("parse", "agg", "sink"), (("source", "parse"), ("parse", "agg"), ("agg", "sink")))
RATES = {"parse": (150_000.0, 1.0), "agg": (50_000.0, 0.5), "sink": (1_000_000.0, 0.5)}
"""o_i, r_i: (2, 3, 1) holds min(300k, 300k, 2M) = 300k source events/s, (1, 1, 1) 100k."""


def sizing(config: dict[str, int] | None, rate: float, memory_mb: int = 1024, method: str = "m") -> Sizing:
    slots = sum(config.values()) if config else None
    return Sizing(method, "chain", rate, slots, memory_mb if config else None, config, 60.0, 3)


@pytest.fixture
def ledger(tmp_path):
    with Ledger.open(tmp_path, "test", {}, resume=False) as led:
        yield led


def test_a_sizing_that_fits_is_measured_and_judged_by_its_mst(ledger):
    tb = FakeTestbed(QUERY, RATES, max_slots=8, memory_per_slot=(1024,))
    j = judge(tb, QUERY, sizing({"parse": 2, "agg": 3, "sink": 1}, 250_000), ledger, TIMING)
    assert j.reason is None and not j.source_limited
    assert j.mst == pytest.approx(300_000, rel=0.03)  # the estimator's sensibility, not an exact search
    assert j.testbed_seconds > 0
    assert j.verdict(250_000, "sustains", UNDER) == "sustains"
    assert j.verdict(400_000, "sustains", UNDER) == UNDER
    assert any(k.startswith("judge:m:parse=2,agg=3,sink=1@1024MB") for k, _ in ledger.steps())


def test_a_sizing_larger_than_the_testbed_is_not_run_and_says_its_slots(ledger):
    tb = FakeTestbed(QUERY, RATES, max_slots=4, memory_per_slot=(1024,))
    j = judge(tb, QUERY, sizing({"parse": 2, "agg": 3, "sink": 1}, 250_000), ledger, TIMING)
    assert j.mst is None and tb.starts == 0
    assert j.verdict(250_000, "sustains", UNDER) == f"{BEYOND} (6 slots, the testbed has 4)"


def test_a_memory_the_testbed_does_not_offer_is_beyond_it():
    tb = FakeTestbed(QUERY, RATES, max_slots=8, memory_per_slot=(1024,))
    why = beyond(sizing({"parse": 1, "agg": 1, "sink": 1}, 1e5, memory_mb=4096), tb.info())
    assert why.startswith(BEYOND) and "4096" in why
    assert beyond(sizing({"parse": 1, "agg": 1, "sink": 1}, 1e5), tb.info()) is None


def test_an_mst_the_source_capped_below_the_rate_is_not_a_verdict_on_the_job(ledger):
    tb = FakeTestbed(QUERY, RATES, max_slots=8, memory_per_slot=(1024,), max_source_rate=120_000)
    j = judge(tb, QUERY, sizing({"parse": 2, "agg": 3, "sink": 1}, 250_000), ledger, TIMING)
    assert j.source_limited and j.mst <= 120_000
    assert j.verdict(250_000, "sustains", UNDER).startswith(SOURCE_LIMITED)
    assert Judgement(100.0, source_limited=True).verdict(50.0, "sustains", UNDER) == "sustains"


class FixedPlanner:
    """A method that plans a fixed configuration per rate, without touching the testbed."""

    name = "fixed"
    CONFIGS = {1e5: {"parse": 1, "agg": 1, "sink": 1}, 2e5: {"parse": 2, "agg": 3, "sink": 1},
               9e5: {"parse": 6, "agg": 9, "sink": 1}}

    def explore(self, testbed, request, log=None):
        return None

    def plan(self, evidence, request):
        return sizing(self.CONFIGS[request.rate], request.rate, method="fixed")


@pytest.fixture
def fake_compare(monkeypatch, tmp_path):
    """compare over a registered fake testbed (8 slots) and the fixed method."""
    monkeypatch.setitem(testbeds.TESTBEDS, "fake",
                        lambda request, log: FakeTestbed(QUERY, RATES, max_slots=8, memory_per_slot=(1024,)))
    monkeypatch.setitem(PLANNERS, "fixed", "fixed:FixedPlanner")  # listed; built by the patched lookup
    known = compare.planner_named
    monkeypatch.setattr(compare, "planner_named", lambda name: FixedPlanner() if name == "fixed" else known(name))

    def run(rate: float, resume: bool = False) -> dict:
        c = CampaignSettings("chain", TestbedSpec("fake"), directory=tmp_path / "c", resume=resume)
        return CompareCampaign(CompareSettings(c, rate, methods=("fixed",), judge_timing="quick")).run()
    return run


@pytest.mark.parametrize("rate, verdict", [(1e5, "sustains"), (2e5, "sustains")])
def test_compare_on_a_testbed_without_truth_judges_by_the_measured_mst(fake_compare, rate, verdict):
    row = fake_compare(rate)["rows"][0]
    capacity = {1e5: 100_000, 2e5: 300_000}[rate]
    assert row["mst"] == pytest.approx(capacity, rel=0.06)
    assert row["mst_over_rate"] == pytest.approx(row["mst"] / rate)
    assert row["verdict"] == (verdict if row["mst"] >= rate else UNDER)
    assert row["judge_seconds"] > 0  # the judging's own testbed time, apart from the method's


def test_compare_says_beyond_the_testbed_for_a_plan_it_cannot_hold(fake_compare):
    row = fake_compare(9e5)["rows"][0]
    assert row["mst"] is None and row["verdict"] == f"{BEYOND} (16 slots, the testbed has 8)"
    assert row["judge_seconds"] == 0


def test_a_resumed_compare_replays_the_judged_row(fake_compare):
    first = fake_compare(2e5)["rows"][0]
    again = fake_compare(2e5, resume=True)["rows"][0]
    assert json.dumps(again, sort_keys=True) == json.dumps(first, sort_keys=True)


def test_a_bad_judge_timing_is_one_line(capsys, tmp_path):
    code = main(["compare", "--query", "q1", "--rate", "1e6", "--methods", "ds2", "--judge-timing", "slow",
                 "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "--judge-timing" in err and "'slow'" in err
    with pytest.raises(UserError, match="--judge-timing"):
        CompareCampaign(CompareSettings(CampaignSettings("q1"), 1e6, methods=("ds2",), judge_timing="slow"))


class RecordedPhases:
    """Phases that remember their names, in order (what Grafana annotations would be posted for)."""

    def __init__(self):
        self.names: list[str] = []

    def phase(self, name, text):
        import contextlib
        self.names.append(name)
        return contextlib.nullcontext()


def test_the_judging_estimator_tells_its_phases(ledger):
    tb = FakeTestbed(QUERY, RATES, max_slots=8, memory_per_slot=(1024,))
    phases = RecordedPhases()
    judge(tb, QUERY, sizing({"parse": 2, "agg": 3, "sink": 1}, 250_000), ledger, TIMING, phases=phases)
    assert "warm-up" in phases.names and "observation" in phases.names


def test_compare_with_a_grafana_url_runs_and_posts_where_it_can(tmp_path, capsys):
    """A Grafana URL gives every campaign its phases; compare took none and ended in a traceback."""
    code = main(["compare", "--query", "q1", "--rate", "1e6", "--methods", "ds2", "--max-slots", "16",
                 "--memory", "1024", "--out", str(tmp_path), "--json", "--quiet",
                 "--grafana-url", "http://127.0.0.1:9"])
    assert code == 0, capsys.readouterr().err
    assert [r["method"] for r in json.loads(capsys.readouterr().out)["rows"]] == ["ds2"]

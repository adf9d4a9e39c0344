"""run_plan's settings objects: the request (what to plan), the observers (who watches), the guard rails
(one object from the options to the explorer), and every estimator built by chain.assemble."""

from __future__ import annotations

import json

import pytest

from streambed.campaigns.chain import Observers, assemble
from streambed.campaigns.plan import run_plan
from streambed.campaigns.settings import CampaignSettings, FitSettings, GuardRails, PlanRequest, PlanSettings
from streambed.ledger import Ledger
from streambed.model import Configuration, Query
from streambed.planner.estimator import Timing
from streambed.planner.exploration import ExplorerSettings
from fake_testbed import FakeTestbed

QUERY = Query("chain", ("parse", "agg", "sink"), (("source", "parse"), ("parse", "agg"), ("agg", "sink")))


def capacity(cfg: Configuration, memory_mb: int) -> float:
    """Linear in slots and memory, with a small deterministic ripple (an exact fit trips the stop rule)."""
    return 20_000.0 * cfg.slots + 10.0 * memory_mb + 300.0 * ((7 * cfg.slots + memory_mb // 1024) % 5 - 2)


def test_the_guard_rails_travel_as_one_object_into_the_explorers_settings():
    guards = GuardRails(max_extrapolation=7.0, min_marginal=0.05)
    plan = PlanSettings(CampaignSettings("q1"), guards=guards, safety=1.3).explorer()
    assert (plan.max_extrapolation, plan.min_marginal, plan.safety) == (7.0, 0.05, 1.3)
    # one home for the defaults: the plan's, fit's and the explorer's are the same numbers
    explorer = ExplorerSettings()
    for defaults in (PlanSettings(CampaignSettings("q1")).guards, FitSettings("m.csv", 1.0).guards, GuardRails()):
        assert (defaults.max_extrapolation, defaults.min_marginal) == (explorer.max_extrapolation,
                                                                       explorer.min_marginal)
    assert guards.applied(ExplorerSettings(seed=3)).seed == 3


def test_assemble_builds_the_checkpoint_clusters_estimator_too(tmp_path):
    tb, staged = FakeTestbed(QUERY, capacity=capacity), FakeTestbed(QUERY, capacity=capacity, max_slots=64)
    with Ledger.open(tmp_path, "test", {}, resume=False) as ledger:
        alone = assemble(tb, ledger, "chain", Timing.named("quick"))
        both = assemble(tb, ledger, "chain", Timing.named("quick"), checkpoint=staged)
    assert alone.staged is None and alone.estimators == (alone.estimator,)
    assert both.staged.testbed is staged and both.estimator.testbed is tb
    assert both.estimators == (both.estimator, both.staged)


@pytest.mark.parametrize("catch_up", [None, (300.0, 600.0)])
def test_run_plan_plans_the_requests_multiple_and_tells_its_observers_each_point(tmp_path, catch_up):
    tb = FakeTestbed(QUERY, capacity=capacity, max_slots=16, memory_per_slot=(1024, 4096))
    request = PlanRequest("chain", (1024, 4096), rate=None, rate_multiple=3.0, catch_up=catch_up, timing="quick",
                          explorer=ExplorerSettings(seed=1, max_measurements=8))
    seen = []
    with Ledger.open(tmp_path / "c", "plan", {}, resume=False) as ledger:
        outcome = run_plan(tb, ledger, request, tmp_path / "c", observers=Observers(on_point=seen.append))
    ex = outcome.exploration
    top = max(p.slots for p in ex.points)
    steady = 3.0 * max(p.mst for p in ex.points if p.slots == top)
    factor = 1.0 if catch_up is None else 1.0 + catch_up[0] / catch_up[1]
    assert outcome.plan.rate == pytest.approx(steady * factor)
    assert (outcome.plan.catch_up is None) == (catch_up is None)
    if catch_up:
        assert outcome.plan.catch_up.rate == pytest.approx(steady)
    assert seen == ex.points  # every point measured, in order, probes included
    assert ex.estimator_calls >= len(ex.points)
    written = json.loads((tmp_path / "c" / "plan.json").read_text())
    assert written == outcome.plan.to_dict()

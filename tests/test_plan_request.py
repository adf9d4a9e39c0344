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


@pytest.mark.slow  # an exploration of two memories on the sim: about 1 min idle
def test_the_plan_command_writes_each_operators_memory_and_the_total_in_plan_json(tmp_path):
    """A memory-bound aggregate beside a stateless map: plan.json's entry gives the map a smaller memory per
    slot than the aggregate (planner/memory.py), its total counts each operator's tasks at their own memory,
    and the console says what that saves against the entry's one size."""
    import yaml

    from clitools import json_result, streambed

    # the profile of test_memory_plan.memory_bound_profile, as the YAML --profile reads
    profile = {"name": "memory-bound", "defaults": {"noise": 0.0}, "operators": [
        {"name": "m", "kind": "map", "rate": 50_000, "inputs": [{"from": "source"}]},
        {"name": "agg", "kind": "aggregate", "rate": 200_000, "keys": {"count": 1000, "zipf": 0},
         "inputs": [{"from": "m", "partitioning": "hash"}],
         "state": {"working_set_mb": 600, "bytes_per_record": 100, "retention_s": 10, "miss_penalty": 36.0,
                   "miss_exponent": 0.9, "warmup_s": 1, "warmup_speedup": 1.0}},
        {"name": "s", "kind": "sink", "rate": 1e7, "inputs": [{"from": "agg"}]}]}
    (tmp_path / "memory-bound.yaml").write_text(yaml.safe_dump(profile))
    proc = streambed("plan", "--query", "memory-bound", "--profile", "memory-bound.yaml", "--rate", "150000",
                     "--memory", "512,2048", "--max-slots", "16", "--max-measurements", "8", "--timing", "quick",
                     "--campaign-dir", "p", "--json", cwd=tmp_path, columns=400, timeout=600)
    d = json_result(proc)
    written = json.loads((tmp_path / "p" / "plan.json").read_text())
    assert written == d["plan"]
    entry = next(e for e in written["entries"] if e["memory_mb"] == 2048)
    per_op = entry["memory_by_operator"]
    assert per_op["m"] < per_op["agg"] == 2048
    total = sum(p * per_op.get(op, entry["memory_mb"]) for op, p in entry["configuration"].items())
    assert entry["total_memory_mb"] == total < entry["slots"] * entry["memory_mb"]
    assert (f"2048 MB per slot: memory per operator: {total:,} MB in total against "
            f"{entry['slots'] * 2048:,} MB for {entry['slots']} slots of 2048 MB") in proc.stderr
    # an entry of one size keeps the JSON it had: no total, memory_by_operator null
    for e in written["entries"]:
        if not e["memory_by_operator"]:
            assert "total_memory_mb" not in e

"""StreamBed's own planner behind the Planner seam (planner/streambed.py), on the simulated testbed."""

import pytest

from streambed.errors import UserError
from streambed.model import Plan, PlanEntry
from streambed.planner import Planner, PlanningRequest, planner_named
from streambed.planner.streambed import smallest_memory
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed


def entry(memory_mb, slots, unreachable=None):
    return PlanEntry(memory_mb, slots, None, {"a": slots} if slots else None, None, unreachable=unreachable)


def test_the_sizing_is_the_entry_with_the_least_total_memory():
    plan = Plan("q", 1.0, 1.1, "linear", {}, (entry(512, 40), entry(1024, 16), entry(4096, 5)))
    assert smallest_memory(plan).memory_mb == 1024  # 16 GB, against 20 and 20
    tie = Plan("q", 1.0, 1.1, "linear", {}, (entry(1024, 8), entry(2048, 4)))
    assert smallest_memory(tie).slots == 4
    none = Plan("q", 1.0, 1.1, "linear", {}, (entry(512, None, "too far"),))
    assert smallest_memory(none) is None


def test_the_streambed_planner_explores_the_sim_then_plans_without_touching_it():
    testbed = SimTestbed(load_profile("q1"), SimSettings(seed=0, max_slots=12))
    planner = planner_named("streambed")
    assert isinstance(planner, Planner)
    explore = PlanningRequest("q1", 0.0, memories=(1024, 4096), seed=0, max_measurements=5,
                              options={"timing": "quick"})
    evidence = planner.explore(testbed, explore)
    points = evidence.exploration.points
    assert len(points) == 5 and {p.memory_mb for p in points} == {1024, 4096}
    top = max(p.mst for p in points if p.slots == 12)

    def untouchable(*args, **kwargs):
        raise AssertionError("plan() touched the testbed")

    testbed.start = testbed.prepare = untouchable
    request = PlanningRequest("q1", 3 * top, memories=(1024, 4096), seed=0, max_measurements=5,
                              options={"timing": "quick"})
    sizing = planner.plan(evidence, request)
    plan = sizing.detail
    reached = [e for e in plan["entries"] if e["slots"] is not None]
    assert reached, plan["entries"]
    best = min(reached, key=lambda e: (e["slots"] * e["memory_mb"], e["slots"]))
    assert (sizing.slots, sizing.memory_mb) == (best["slots"], best["memory_mb"])
    assert sum(sizing.configuration.values()) == sizing.slots > 12  # 3 x the testbed's MST needs more slots
    assert sizing.total_memory_mb == sizing.slots * sizing.memory_mb
    assert sizing.measurements == evidence.estimator_calls >= len(points)
    assert sizing.testbed_seconds >= sum(p.testbed_seconds for p in points) > 0
    assert [s.slots for s in sizing.steps] == [p.slots for p in points]
    assert planner.plan(evidence, request).to_dict() == sizing.to_dict()  # from the evidence alone, repeatable


def test_an_option_the_planner_does_not_read_is_refused_in_one_line():
    testbed = SimTestbed(load_profile("q1"), SimSettings(seed=0, max_slots=12))
    with pytest.raises(UserError, match=r"^options: the streambed planner takes timing, .*not target_utilization$"):
        planner_named("streambed").explore(testbed, PlanningRequest("q1", 1.0, options={"target_utilization": 0.7}))

"""Rafiki (planner/rafiki.py): recovery time, tasks for a utilization target, the bottleneck and the
capacity table read from back-pressure and busy time, and the profiling loop on the sim."""

from __future__ import annotations

import math

import pytest

from streambed.errors import UserError
from streambed.model import Measurement, OperatorMetrics, Query
from streambed.planner import PLANNERS, PlanningRequest, planner_named
from streambed.planner.rafiki import (Entry, Rafiki, RafikiEvidence, backpressured, bottleneck, capacities,
                                      input_ratios, recovery_time, table_entries, tasks_for)
from streambed.testbed.sim.capacity import CapacityModel
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed

CHAIN = Query("chain", ("parse", "agg", "sink"), (("source", "parse"), ("parse", "agg"), ("agg", "sink")))


def window(target: float, achieved: float, ops: dict[str, tuple[int, float, float, float]]) -> Measurement:
    """A hand-made window: per operator (parallelism, records in/s, busiest task's busy share, back-pressure)."""
    return Measurement(target, achieved, 0.0, 0.0, 0.0, 0.0, 0.0, 60.0, tuple(
        OperatorMetrics(name, p, rate, rate, busy, busy, bp) for name, (p, rate, busy, bp) in ops.items()))


# -- formulas ----------------------------------------------------------------------------------------

def test_recovery_time_at_a_utilization():
    # at 70 %, spare capacity is 3/7 of the rate: 60 s of backlog drains in 60 x 0.7 / 0.3 = 140 s
    assert recovery_time(60.0, 0.7) == pytest.approx(140.0)
    assert recovery_time(60.0, 0.5) == pytest.approx(60.0)
    assert recovery_time(0.0, 0.9) == 0.0
    assert recovery_time(60.0, 1.0) == math.inf
    assert recovery_time(60.0, 0.8) > recovery_time(60.0, 0.7) > recovery_time(30.0, 0.7)
    with pytest.raises(UserError, match=r"^recovery: expected a non-negative backlog"):
        recovery_time(-1.0, 0.7)


def test_tasks_for_a_utilization_target():
    # 100,000 events/s x 0.5 records per event on 10,000-record tasks at 70 %: 50,000 / 7,000 = 7.1 -> 8
    assert tasks_for(100_000.0, 0.5, 10_000.0, 0.7) == 8
    assert tasks_for(100_000.0, 0.5, 10_000.0, 1.0) == 5
    assert tasks_for(1.0, 0.001, 10_000.0, 0.7) == 1
    with pytest.raises(UserError, match=r"^capacity: expected a positive capacity per task"):
        tasks_for(1.0, 1.0, 0.0, 0.7)


# -- the table ---------------------------------------------------------------------------------------

def test_the_operator_after_the_last_back_pressured_one_is_the_bottleneck_and_its_throughput_a_maximum():
    m = window(1e10, 40_000.0, {"parse": (1, 40_000.0, 0.3, 0.7),  # held back by agg
                                "agg": (2, 40_000.0, 1.0, 0.0),    # busy, not held: the bottleneck
                                "sink": (1, 4_000.0, 0.1, 0.0)})
    assert backpressured(CHAIN, m) == {"source": True, "parse": True, "agg": False, "sink": False}
    assert bottleneck(CHAIN, m) == "agg"
    entries = table_entries(CHAIN, m, run=0)
    assert [(e.operator, e.maximum) for e in entries] == [("parse", False), ("agg", True), ("sink", False)]
    assert entries[1].per_task == 20_000.0


def test_a_fed_operator_that_is_not_busy_is_no_maximum():
    # a window's burst back-pressures parse for a moment; agg is idle most of the time: no capacity there
    m = window(1e10, 40_000.0, {"parse": (1, 40_000.0, 0.4, 0.2), "agg": (2, 40_000.0, 0.3, 0.0),
                                "sink": (1, 4_000.0, 0.1, 0.0)})
    assert not any(e.maximum for e in table_entries(CHAIN, m, run=0))
    assert bottleneck(CHAIN, m) == "agg"  # without a saturated one, the busiest operator fed by a held one


def test_no_bottleneck_when_the_job_takes_all_it_is_offered():
    m = window(50_000.0, 50_000.0, {"parse": (1, 50_000.0, 0.4, 0.0), "agg": (2, 50_000.0, 0.5, 0.0),
                                    "sink": (1, 5_000.0, 0.1, 0.0)})
    assert bottleneck(CHAIN, m) is None
    assert not any(e.maximum for e in table_entries(CHAIN, m, run=0))


def test_capacity_per_task_is_read_at_the_largest_parallelism_with_a_maximum_else_a_lower_bound():
    entries = [Entry("agg", 1, 21_000.0, True, 0), Entry("agg", 2, 38_000.0, True, 1),
               Entry("agg", 2, 42_000.0, True, 2), Entry("agg", 3, 45_000.0, False, 3),
               Entry("sink", 1, 2_000.0, False, 0), Entry("sink", 1, 4_500.0, False, 3)]
    caps = capacities(entries)
    assert caps["agg"] == (pytest.approx(20_000.0), True)  # (19,000 + 21,000) / 2 at parallelism 2
    assert caps["sink"] == (4_500.0, False)


def test_input_ratios_pool_the_runs():
    runs = [window(1e10, 1_000.0, {"parse": (1, 1_000.0, 1, 0), "agg": (1, 500.0, 1, 0), "sink": (1, 50.0, 1, 0)}),
            window(1e10, 3_000.0, {"parse": (1, 3_000.0, 1, 0), "agg": (1, 1_500.0, 1, 0), "sink": (1, 150.0, 1, 0)})]
    assert input_ratios(CHAIN, runs) == {"parse": 1.0, "agg": 0.5, "sink": 0.05}


# -- the planner on the sim --------------------------------------------------------------------------

def test_rafiki_is_registered():
    assert PLANNERS["rafiki"] == "rafiki:Rafiki"
    assert planner_named("rafiki").name == "rafiki"


def test_on_the_sim_the_table_is_within_10_percent_of_the_true_task_rates_and_the_plan_meets_the_target():
    profile = load_profile("q1")
    tb = SimTestbed(profile, SimSettings(max_slots=16))
    rate = 2.0e7
    request = PlanningRequest("q1", rate, options={"max_parallelism": 4, "warmup_s": 20, "observe_s": 20})
    planner = planner_named("rafiki")
    ev = planner.explore(tb, request)
    # the loop raised the bottleneck one task at a time and stopped at the bound
    assert [s.configuration["Calc#1"] for s in ev.steps][:4] == [1, 2, 3, 4]
    assert ev.stopped.endswith("would pass the maximum parallelism 4")
    truth = CapacityModel(profile, ev.memory_mb).rates
    caps = capacities(ev.entries)
    assert caps["Calc#1"][1]  # the bottleneck's capacity is a maximum
    for op, (per_task, maximum) in caps.items():
        if maximum:
            assert abs(per_task / truth[op] - 1) <= 0.10, op
        else:
            assert per_task <= truth[op] * 1.10, op  # a lower bound
    sizing = planner.plan(ev, request)
    assert sum(sizing.configuration.values()) == sizing.slots
    u = sizing.detail["utilization"]
    assert u <= 0.70 + 1e-9
    # every operator's tasks, at their true rate, carry the rate with the target's headroom or better
    for op, p in sizing.configuration.items():
        assert rate * ev.ratios[op] / (p * truth[op]) <= 0.70 * 1.10
    assert sizing.detail["recovery_s"] == pytest.approx(recovery_time(60.0, u))


@pytest.mark.parametrize("options, message", [
    ({"utilization": 1.5}, r"^options: rafiki option utilization: expected a number > 0 and <= 1, got 1.5$"),
    ({"max_parallelism": 0}, r"^options: rafiki option max_parallelism: expected an integer >= 1, got 0$"),
    ({"observe_s": 0}, r"^options: rafiki option observe_s: expected a number > 0 \(seconds\), got 0$"),
    ({"target": 0.7}, r"^options: rafiki has no option 'target' \(expected one of .*utilization.*\)$"),
])
def test_bad_options_are_one_line_naming_the_option(options, message):
    tb = SimTestbed(load_profile("q1"), SimSettings(max_slots=8))
    with pytest.raises(UserError, match=message):
        planner_named("rafiki").explore(tb, PlanningRequest("q1", 1e6, options=options))


def test_an_operator_no_record_reached_gets_one_task_and_a_note():
    entries = [Entry("parse", 2, 40_000.0, True, 0), Entry("agg", 1, 0.0, False, 0), Entry("sink", 1, 0.0, False, 0)]
    ev = RafikiEvidence("chain", 4096, entries, {"parse": 1.0, "agg": 0.0, "sink": 0.0})
    sizing = Rafiki().plan(ev, PlanningRequest("chain", 70_000.0))
    assert sizing.configuration == {"parse": 5, "agg": 1, "sink": 1}  # 70,000 / (20,000 x 0.7) = 5
    assert any("agg, sink received no record" in n for n in sizing.notes)
    assert sizing.detail["utilization"] == pytest.approx(0.7)

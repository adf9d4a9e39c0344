"""DS2's scaling loop and the autoscaler's additions (planner/ds2.py): formulas, and the loop on a toy job."""

from __future__ import annotations

import pytest
from fake_testbed import FakeTestbed

from streambed.errors import UserError
from streambed.model import Configuration, Measurement, OperatorMetrics, Query, keygroups
from streambed.planner import PLANNERS, PlanningRequest, planner_named
from streambed.planner.ds2 import (Autoscaler, Ds2Loop, LoopOptions, aligned, bounded_scale_down, catch_up_factor,
                                   operator_metrics, parse_catch_up, scale_up_effective, scaling_target, within_band)

TOY = Query("toy", ("map", "agg", "sink"), (("source", "map"), ("map", "agg"), ("agg", "sink")),
            keyed=frozenset({"agg"}))
RATES = {"map": (1000.0, 1.0), "agg": (300.0, 0.5), "sink": (5000.0, 0.5)}
"""One map task takes 1,000 records/s; the keyed aggregate gets half the events at 300 per task."""


def toy(max_slots: int = 64) -> FakeTestbed:
    return FakeTestbed(TOY, RATES, max_slots=max_slots, memory_per_slot=(1024,))


# -- formulas ----------------------------------------------------------------------------------

def test_catch_up_factor_is_one_plus_backlog_over_time():
    assert catch_up_factor(300, 600) == pytest.approx(1.5)
    assert catch_up_factor(0, 600) == 1.0
    with pytest.raises(ValueError):
        catch_up_factor(300, 0)


def test_catch_up_text_reads_units():
    assert parse_catch_up("300s/600s") == (300.0, 600.0)
    assert parse_catch_up("5m/30m") == (300.0, 1800.0)
    with pytest.raises(ValueError):
        parse_catch_up("300s")


def test_scaling_target_scales_by_catch_up_and_utilization():
    assert scaling_target(1000, 1.0, 1.5) == pytest.approx(1500)
    assert scaling_target(700, 0.7) == pytest.approx(1000)


def test_true_rate_is_input_per_task_over_busyness():
    om = OperatorMetrics("map", 4, input_rate=2000.0, output_rate=2000.0, busyness=0.5, busyness_max=0.8,
                         backpressure=0.0)
    q = Query("one", ("map",), (("source", "map"),))
    m = Measurement(2000, 2000, 0, 0, 0, 0, 0, 60, operators=(om,))
    assert dict(operator_metrics(q, 1024, m, "avg").operators)["map"].true_rate == pytest.approx(1000)  # 500 / 0.5
    assert dict(operator_metrics(q, 1024, m, "max").operators)["map"].true_rate == pytest.approx(625)  # 500 / 0.8


def test_utilization_band():
    assert within_band(70, 100, 0.7, 0.3)
    assert within_band(40, 100, 0.7, 0.3)
    assert not within_band(39, 100, 0.7, 0.3)
    assert not within_band(101, 100, 0.7, 0.3)


def test_aligned_to_a_divisor_of_the_key_groups():
    assert aligned(5, 128) == 8
    assert aligned(33, 128) == 64
    assert aligned(12, 12) == 12  # above half the groups: unchanged
    assert aligned(7, 12) == 7  # no divisor of 12 in 7..6: unchanged
    assert aligned(5, 12) == 6
    assert aligned(65, 128) == 65  # the next divisor is all 128 groups: not taken


def test_scale_up_effectiveness():
    # 2 -> 4 tasks was expected to add 200 (from 200): 10 % of that is 20
    assert scale_up_effective(2, 200.0, 4, 221.0, 0.1)
    assert not scale_up_effective(2, 200.0, 4, 219.0, 0.1)


def test_scale_down_is_bounded():
    assert bounded_scale_down(10, 1, 0.6) == 4
    assert bounded_scale_down(10, 7, 0.6) == 7


# -- the loop -----------------------------------------------------------------------------------

def test_registered():
    assert PLANNERS["ds2"] and PLANNERS["autoscaler"]
    assert isinstance(planner_named("ds2"), Ds2Loop)
    assert isinstance(planner_named("autoscaler"), Autoscaler)


def test_loop_converges_on_a_toy_job_and_records_every_step():
    loop = Ds2Loop()
    req = PlanningRequest("toy", 3000.0)
    ev = loop.explore(toy(), req)
    sizing = loop.plan(ev, req)
    # DS2's rule: map ceil(3000/1000) = 3, agg ceil(1500/300) = 5, sink 1
    assert ev.converged
    assert sizing.configuration == {"map": 3, "agg": 5, "sink": 1}
    assert sizing.slots == 9 and sizing.memory_mb == 1024
    assert [s.configuration for s in sizing.steps] == [{"map": 1, "agg": 1, "sink": 1}, {"map": 3, "agg": 5, "sink": 1}]
    assert ev.reconfigurations == 1
    assert sizing.steps[0].rate == pytest.approx(600)  # one agg task: 300 / 0.5
    assert sizing.testbed_seconds == pytest.approx(2 * (60 + 120))
    assert sizing.measurements == 2


def test_catch_up_scales_the_target():
    loop = Ds2Loop()
    req = PlanningRequest("toy", 3000.0, options={"catch_up": "300s/600s"})
    sizing = loop.plan(loop.explore(toy(), req), req)
    # sized for 4,500 events/s: map 5, agg ceil(2250/300) = 8
    assert sizing.configuration == {"map": 5, "agg": 8, "sink": 1}


def test_utilization_target_leaves_headroom():
    loop = Ds2Loop()
    req = PlanningRequest("toy", 3000.0, options={"utilization": 0.5, "boundary": 0.3})
    sizing = loop.plan(loop.explore(toy(), req), req)
    assert sizing.configuration == {"map": 6, "agg": 10, "sink": 1}


def test_key_groups_alignment_rounds_the_keyed_operator_only():
    loop = Ds2Loop()
    req = PlanningRequest("toy", 3000.0, options={"align_key_groups": True})
    sizing = loop.plan(loop.explore(toy(), req), req)
    assert keygroups.max_parallelism(5) == 128
    assert sizing.configuration == {"map": 3, "agg": 8, "sink": 1}  # agg 5 -> 8 divides 128; map is not keyed


def test_source_partitions_round_the_operators_reading_the_source():
    loop = Ds2Loop()
    req = PlanningRequest("toy", 3000.0, options={"align_key_groups": True, "partitions": 8})
    assert loop.plan(loop.explore(toy(), req), req).configuration["map"] == 4


def test_slots_beyond_the_testbed_stop_the_loop():
    loop = Ds2Loop()
    req = PlanningRequest("toy", 30000.0)
    ev = loop.explore(toy(max_slots=10), req)
    assert not ev.converged and "slots" in ev.stop_reason
    assert loop.plan(ev, req).configuration == {"map": 1, "agg": 1, "sink": 1}


def test_ineffective_scale_up_is_blocked():
    """A job whose aggregate does not speed up with tasks: the second scale-up of it is refused."""
    def capacity(c: Configuration, memory: int) -> float:
        return min(c["map"] * 1000.0, 600.0)

    fake = FakeTestbed(TOY, capacity=capacity, max_slots=64, memory_per_slot=(1024,))
    loop = Ds2Loop()
    req = PlanningRequest("toy", 3000.0, options={"effectiveness": 0.1, "max_steps": 4})
    ev = loop.explore(fake, req)
    assert not ev.converged
    assert set(ev.blocked) >= {"agg"}


def test_memory_is_the_smallest_whose_true_rates_hold():
    slow = {"map": (1000.0, 1.0), "agg": (100.0, 0.5), "sink": (5000.0, 0.5)}  # the aggregate's state spills
    fake = FakeTestbed(TOY, {512: slow, 1024: RATES, 4096: RATES}, max_slots=64)
    loop = Ds2Loop()
    ev = loop.explore(fake, PlanningRequest("toy", 3000.0))
    assert ev.memory_mb == 1024
    assert [(r["phase"], r["memory_mb"]) for r in ev.runs][:3] == [("probe", 4096), ("probe", 512), ("step", 1024)]


def test_plan_for_another_rate_applies_the_rule_to_the_last_run():
    loop = Ds2Loop()
    ev = loop.explore(toy(), PlanningRequest("toy", 3000.0))
    sizing = loop.plan(ev, PlanningRequest("toy", 6000.0))
    assert sizing.configuration == {"map": 6, "agg": 10, "sink": 1}
    assert any("not run" in n for n in sizing.notes)


def test_autoscaler_defaults():
    o = Autoscaler.defaults
    assert (o.utilization, o.boundary, o.catch_up, o.busy) == (0.7, 0.3, (300.0, 1800.0), "max")
    assert LoopOptions().utilization == 1.0


@pytest.mark.parametrize("options, word", [({"utilisation": 0.5}, "utilisation"), ({"utilization": 0}, "utilization"),
                                           ({"catch_up": "soon"}, "catch_up"), ({"busy": "median"}, "busy")])
def test_bad_options_are_one_line_naming_them(options, word):
    with pytest.raises(UserError) as e:
        Ds2Loop().explore(toy(), PlanningRequest("toy", 3000.0, options=options))
    assert word in str(e.value) and "\n" not in str(e.value)


def test_a_loop_that_does_not_converge_on_the_sim_is_json_ready():
    """On the sim the numbers are numpy's: the evidence must still be plain JSON (the ledger stores it)."""
    import json

    from streambed.testbed.base import TestbedRequest
    from streambed.testbed.sim.testbed import create

    loop = Ds2Loop()
    req = PlanningRequest("q5", 5e5, memories=(1024,), options={"max_steps": 2, "warmup_s": 20, "window_s": 30})
    ev = loop.explore(create(TestbedRequest(query="q5", max_slots=200)), req)
    assert not ev.converged and ev.stop_reason
    assert json.loads(json.dumps(loop.plan(ev, req).to_dict()))["detail"]["converged"] is False

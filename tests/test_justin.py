"""Justin's hybrid scaling (planner/justin.py): the memory-level rule, the sim's state signals, the
loop on a memory-bound sim profile, and ``streambed compare --methods justin``."""

from __future__ import annotations

import json
import math

import pytest

from streambed.cli import main
from streambed.errors import UserError
from streambed.model import Budget, Configuration, OperatorMetrics, TestbedInfo
from streambed.planner import PlanningRequest, planner_named
from streambed.planner.justin import OperatorState, improved, justin_options, justin_step, level_memory, memory_starved
from streambed.testbed.sim import formulas
from streambed.testbed.sim.operator_memory import OperatorMemoryTruth
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed, run_once

# -- the memory-level rule -------------------------------------------------------------------------


def test_levels_double_from_the_base():
    assert [level_memory(512, x) for x in range(3)] == [512, 1024, 2048]
    assert level_memory(512, None) == 512  # stateless: the smallest a whole slot has


@pytest.mark.parametrize("hit, latency, starved", [(0.5, None, True), (0.79, 0.1, True), (0.9, 0.1, False),
                                                   (0.95, 2.0, True), (None, None, False), (0.8, 1.0, False)])
def test_memory_starved_by_either_signal(hit, latency, starved):
    assert memory_starved(hit, latency, 0.8, 1.0) is starved


def test_improvement_needs_a_higher_hit_rate_or_a_lower_latency():
    assert improved((0.7, 0.5), (0.5, 0.5))
    assert improved((0.5, 0.2), (0.5, 0.5))
    assert not improved((1.0, 0.0), (1.0, 0.0))  # a state that fitted already: nothing gained
    assert not improved((0.55, 0.5), (0.5, 0.5), margin=0.2)  # within the hysteresis


def _states(**kw):
    return {op: OperatorState(*v) if isinstance(v, tuple) else v for op, v in kw.items()}


def test_a_starved_operator_gets_memory_instead_of_tasks_and_the_others_follow_ds2():
    current = {"map": OperatorState(1, 0, False, None, None),          # stateless
               "join": OperatorState(1, 0, False, 0.4, 0.05),          # state does not fit
               "agg": OperatorState(1, 0, False, 0.99, 0.0)}           # state fits
    nxt = justin_step(current, {"map": 2, "join": 4, "agg": 3}, max_level=3, min_hit_rate=0.8, max_latency_ms=1.0)
    assert nxt["map"] == OperatorState(2, None)
    assert nxt["join"] == OperatorState(1, 1, True)  # the scale-out cancelled, one level up
    assert nxt["agg"] == OperatorState(3, 0)


def test_a_scale_up_that_helped_climbs_again_until_the_top_level():
    before = {"join": OperatorState(1, 0, False, 0.4, 0.05)}
    now = {"join": OperatorState(1, 1, True, 0.7, 0.02)}
    assert justin_step(now, {"join": 3}, 3, 0.8, 1.0, previous=before)["join"] == OperatorState(1, 2, True)
    top = {"join": OperatorState(1, 2, True, 0.9, 0.01)}
    # at the top level (max_level 3: levels 0-2) DS2's scale-out applies
    assert justin_step(top, {"join": 3}, 3, 0.8, 1.0, previous=now)["join"] == OperatorState(3, 2)


def test_a_scale_up_that_did_not_help_is_rolled_back_and_ds2_applies():
    before = {"join": OperatorState(1, 0, False, 0.6, 0.05)}
    now = {"join": OperatorState(1, 1, True, 0.6, 0.05)}  # the same signals: write-heavy, memory does not help
    assert justin_step(now, {"join": 3}, 3, 0.8, 1.0, previous=before)["join"] == OperatorState(3, 0)


def test_an_operator_ds2_leaves_alone_keeps_its_level():
    now = {"join": OperatorState(2, 1, False, 0.3, 0.5)}
    assert justin_step(now, {"join": 2}, 3, 0.8, 1.0)["join"] == OperatorState(2, 1)


def test_bad_option_is_one_line():
    with pytest.raises(UserError, match="justin option hit_rate"):
        justin_options({"hit_rate": 1.5})
    own, rest = justin_options({"max_level": 4, "warmup_s": 600})
    assert own.max_level == 4 and rest == {"warmup_s": 600}


# -- the sim's state signals ------------------------------------------------------------------------


def test_hit_rate_is_the_share_of_the_working_set_that_fits():
    assert formulas.cache_hit_rate(205.0, 600.0) == pytest.approx(205.0 / 600.0)
    assert formulas.cache_hit_rate(819.0, 600.0) == 1.0
    assert formulas.cache_hit_rate(100.0, 0.0) == 1.0  # nothing to read
    assert formulas.state_access_latency_ms(0.0, 36.0, 0.9, 2e5) == 0.0
    # the memory law's extra cost per record, in ms: 36 x 0.5^0.9 / 200,000 records/s
    assert formulas.state_access_latency_ms(0.5, 36.0, 0.9, 2e5) == pytest.approx(1000 * 36 * 0.5 ** 0.9 / 2e5)


def test_sim_reports_state_signals_for_stateful_operators_only_and_memory_per_operator_moves_them():
    profile = load_profile("q5")
    config = Configuration.single_task(profile.query())
    _, small, _ = run_once(profile, 512, 20_000, 600, configuration=config)
    _, large, _ = run_once(profile, 2048, 20_000, 600, configuration=config)
    assert small.operator("Calc#1").cache_hit_rate is None and small.operator("Calc#1").state_latency_ms is None
    assert small.operator("Join#7").cache_hit_rate < 0.8 < large.operator("Join#7").cache_hit_rate
    assert small.operator("Join#7").state_latency_ms > large.operator("Join#7").state_latency_ms
    # the same 512-MB job with the join's slot at 2048 MB: only the join's signal changes
    tb = SimTestbed(profile, SimSettings(max_slots=16))
    tb.prepare(Budget(config.slots, 512, (("Join#7", 2048),)))
    run = tb.start("q5", config, 20_000)
    mixed = tb.observe(run, 600)
    assert mixed.operator("Join#7").cache_hit_rate == pytest.approx(large.operator("Join#7").cache_hit_rate, abs=0.02)
    gwa = "GroupWindowAggregate#2"
    assert mixed.operator(gwa).cache_hit_rate == pytest.approx(small.operator(gwa).cache_hit_rate, abs=1e-6)


def test_signals_are_optional_in_a_measurement_and_round_trip():
    om = OperatorMetrics("a", 1, 10.0, 10.0, 0.5, 0.5, 0.0)
    assert "cache_hit_rate" not in om.to_dict()  # an engine that does not report them writes nothing
    assert OperatorMetrics.from_dict(om.to_dict()).cache_hit_rate is None
    with_signals = OperatorMetrics("a", 1, 10.0, 10.0, 0.5, 0.5, 0.0, cache_hit_rate=0.4, state_latency_ms=0.2)
    assert OperatorMetrics.from_dict(with_signals.to_dict()) == with_signals


def test_a_testbed_of_one_memory_per_slot_refuses_per_operator_memory_in_one_line():
    info = TestbedInfo("flink", 8, (512, 1024))
    with pytest.raises(UserError, match="one memory per slot") as e:
        info.check_budget(Budget(2, 512, (("join", 1024),)))
    assert "\n" not in str(e.value)
    with pytest.raises(UserError, match="offers 512, 1024 MB per slot, got 3000"):
        TestbedInfo("sim", 8, (512, 1024), operator_memory=True).check_budget(Budget(2, 512, (("join", 3000),)))


# -- the loop on a memory-bound profile ---------------------------------------------------------------

RATE = 150_000.0
"""q5's join does not fit 512 MB (hit rate ~0.35 there) and fits 2048 MB: memory-bound at this rate."""


def test_justin_on_q5_gives_the_join_memory_and_its_plan_sustains_by_the_sim_truth():
    profile = load_profile("q5")
    request = PlanningRequest("q5", RATE, options={"warmup_s": 600})  # the sim's state fills over minutes
    planner = planner_named("justin")
    sizing = planner.plan(planner.explore(SimTestbed(profile, SimSettings(max_slots=64)), request), request)
    assert sizing.memory_by_operator["Join#7"] > 512
    assert {mb for op, mb in sizing.memory_by_operator.items() if op != "Join#7"} == {512}
    assert sizing.configuration["Join#7"] == 1  # memory instead of tasks
    assert sizing.total_memory_mb < sizing.slots * sizing.memory_mb  # less than its largest size everywhere
    truth = OperatorMemoryTruth(profile, sizing.memory_by_operator).configuration_mst(
        Configuration.of(profile.query(), dict(sizing.configuration)), sizing.memory_mb)
    assert truth.mst >= RATE
    # judged at 512 MB for every slot, the same configuration falls far short: the memory is what holds it
    from streambed.testbed.sim.truth import GroundTruth
    assert GroundTruth(profile).configuration_mst(Configuration.of(profile.query(), dict(sizing.configuration)),
                                                  512).mst < 0.5 * RATE


def test_justin_refuses_a_testbed_without_per_operator_memory():
    class OneSize(SimTestbed):
        def info(self):
            from dataclasses import replace
            return replace(super().info(), operator_memory=False)

    testbed = OneSize(load_profile("q5"), SimSettings(max_slots=16))
    with pytest.raises(UserError, match="per-operator memory"):
        planner_named("justin").explore(testbed, PlanningRequest("q5", RATE))


def test_compare_runs_justin_and_judges_its_memory_per_operator(tmp_path, capsys):
    code = main(["compare", "--query", "q5", "--rate", str(RATE), "--methods", "justin", "--max-slots", "64",
                 "--out", str(tmp_path), "--json", "--quiet", "--set", "justin.warmup_s=600"])
    assert code == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    per_operator = row["sizing"]["memory_by_operator"]
    configuration = row["sizing"]["configuration"]
    assert row["total_memory_mb"] == sum(configuration[op] * mb for op, mb in per_operator.items())
    assert row["verdict"] == "sustains" and row["mst"] >= RATE and math.isfinite(row["mst"])

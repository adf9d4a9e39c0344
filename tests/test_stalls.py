"""An operator whose pauses hold the job (model/stalls.py): found by back-pressure in the rate search's failing
windows, sized by its stall bound (the default policy), and said in the plan."""

from __future__ import annotations

import math

import pytest

from streambed.model import Measurement, OperatorMetrics, OperatorRates, Query, SingleTaskMetrics, TestbedInfo
from streambed.model.stalls import (HELD_FLOOR, NEAR_MST, Stall, held, stalled_capacity,
                                    stalling, stalling_operators)
from streambed.planner.exploration import Exploration, ExplorationPoint, ExplorerSettings
from streambed.planner.explorer import ResourceExplorer
from streambed.planner.policies import skew

CHAIN = Query("q", ("filter", "window", "sink"), (("source", "filter"), ("filter", "window"), ("window", "sink")))
DIAMOND = Query("d", ("split", "left", "right", "join"),
                (("source", "split"), ("split", "left"), ("split", "right"), ("left", "join"), ("right", "join")))

# -- the bound and its inverse ------------------------------------------------------------------------------


def test_a_stalling_operators_capacity_grows_as_the_square_root_of_its_tasks():
    assert stalled_capacity(100.0, 1, 4) == pytest.approx(200.0)
    assert stalled_capacity(100.0, 4, 1) == pytest.approx(50.0)
    assert stalled_capacity(100.0, 3, 3) == pytest.approx(100.0)
    assert stalled_capacity(100.0, 1, 4, growth=1.0) == pytest.approx(400.0)  # no tail: in proportion


@pytest.mark.parametrize("p0,rate", [(1, 216.0), (1, 433.0), (3, 10.85), (7, 3.0), (4, 100.0), (1, 1.0)])
def test_the_fewest_tasks_are_the_first_whose_bound_reaches_the_rate(p0, rate):
    stall = Stall(p0, 96.0 if rate > 50 else 8.37)
    p = stall.fewest_tasks(rate)
    assert stall.capacity(p) >= rate
    assert p == 1 or stall.capacity(p - 1) < rate


def test_a_stall_round_trips_through_the_metrics_dict():
    metrics = SingleTaskMetrics("q", 4096, (("window", OperatorRates(1e5, 1e-3, keyed=True)),)).with_stalls(
        {"window": Stall(2, 9.6e7)})
    again = SingleTaskMetrics.from_dict(metrics.to_dict())
    assert dict(again.operators)["window"].stall == Stall(2, 9.6e7)
    assert dict(SingleTaskMetrics.from_dict({**metrics.to_dict(), "operators": [
        {"name": "window", "true_rate_per_task": 1e5, "input_ratio": 1e-3}]}).operators)["window"].stall is None


# -- naming the stalling operator ---------------------------------------------------------------------------


def test_an_operator_counts_as_held_for_its_part_of_the_shortfall_only():
    assert held(0.02, 0.017) and held(HELD_FLOOR, 0.0)
    assert not held(0.004, 0.0)  # under the floor
    assert not held(0.01, 0.05)  # a fifth of a 5 % shortfall: not what held the source


def test_the_stalling_operator_is_the_first_past_the_held_ones():
    # the filter waited on its output for about the source's 1.7 % shortfall; the window, 30 % busy, did not
    assert stalling_operators(CHAIN, {"filter": 0.02, "window": 0.0, "sink": 0.0}, 0.017) == {"window"}
    # a held window too: the sink past it
    assert stalling_operators(CHAIN, {"filter": 0.02, "window": 0.02, "sink": 0.0}, 0.017) == {"sink"}
    # nothing fed by the source waited: it is the bound itself, or the source is
    assert stalling_operators(CHAIN, {"filter": 0.0, "window": 0.3, "sink": 0.0}, 0.017) == set()
    # both ends of a diamond's held paths, which back-pressure cannot tell apart
    assert stalling_operators(DIAMOND, {"split": 0.05, "left": 0.0, "right": 0.1, "join": 0.0}, 0.01) == \
        {"left", "join"}


def _failing(rate, achieved, bp, busy):
    return {"rate": rate, "success": False, "measurement": {"target_rate": rate, "achieved_rate": achieved},
            "operators": [{"operator": op, "backpressure": bp.get(op, 0.0), "busyness_max": busy.get(op, 0.1)}
                          for op in CHAIN.operators]}


STALLED = {"filter": 0.02}
LIGHT = {"filter": 0.66, "window": 0.3}


def test_the_failing_windows_near_the_mst_name_a_lightly_busy_stalling_operator():
    mst = 96.1e6
    windows = [_failing(97.2e6, 96.86e6, STALLED, LIGHT), _failing(98.3e6, 96.67e6, STALLED, LIGHT),
               {"rate": 93.9e6, "success": True, "measurement": {"target_rate": 93.9e6, "achieved_rate": 93.9e6},
                "operators": []}]
    assert stalling(CHAIN, windows, mst, 0.8) == ["window"]
    # a window far above the MST says nothing of the MST's bound
    assert stalling(CHAIN, [_failing(NEAR_MST * mst * 1.2, 0.9 * mst, STALLED, LIGHT)], mst, 0.8) == []
    # a busy one is a bound of throughput, not of pauses
    assert stalling(CHAIN, windows, mst, 0.25) == []
    # named in one window of three: not the MST's bound
    quiet = _failing(97.5e6, 97.4e6, {}, LIGHT)
    assert stalling(CHAIN, [windows[0], quiet, quiet], mst, 0.8) == []
    # windows recorded without their operators (explorations before model/stalls.py)
    assert stalling(CHAIN, [{**w, "operators": []} for w in windows], mst, 0.8) == []


# -- the default policy sizes by the bound ------------------------------------------------------------------


def _metrics(stall: Stall | None = None) -> SingleTaskMetrics:
    ops = (("filter", OperatorRates(3.8e6, 1.0)), ("window", OperatorRates(4.5e5, 1.3e-3)),
           ("sink", OperatorRates(3e6, 1e-4)))
    metrics = SingleTaskMetrics("q", 4096, ops)
    return metrics.with_stalls({"window": stall}) if stall else metrics


def test_the_default_policy_gives_a_stalling_operator_the_tasks_its_bound_asks():
    stall = Stall(1, 96e6)
    rates = dict(_metrics(stall).operators)["window"]
    assert skew.capacity(rates, 1) == pytest.approx(96e6)  # its busy time alone would read 346 M
    assert skew.capacity(rates, 4) == pytest.approx(192e6)
    assert skew.fewest_tasks(rates, 216e6, 100) == stall.fewest_tasks(216e6) == 6
    assert skew.fewest_tasks(rates, 216e6, 5) is None
    plain, bound = skew.skew_aware_bids2(_metrics(), 70), skew.skew_aware_bids2(_metrics(stall), 70)
    assert plain.parallelism["window"] == 1 and bound.parallelism["window"] > 1
    assert bound.predicted_rate == pytest.approx(skew.predicted_rate(_metrics(stall), bound.parallelism))
    assert bound.predicted_rate <= stall.capacity(bound.parallelism["window"]) + 1e-6


# -- the explorer reads it and the plan says it -------------------------------------------------------------


class _Optimizer:
    query = CHAIN

    def measured_single_task(self):
        return {}


def _top(busy_window=0.3, trace=None):
    ops = [OperatorMetrics("filter", 40, 96.1e6, 1.25e5, 0.63, 0.66, 0.0),
           OperatorMetrics("window", 1, 1.25e5, 1.5e4, busy_window, busy_window, 0.0),
           OperatorMetrics("sink", 1, 1.5e4, 1.5e4, 0.01, 0.01, 0.0)]
    m = Measurement(96.1e6, 96.1e6, 0, 0, 0, 0, 0, 30, operators=tuple(ops)).to_dict()
    windows = trace if trace is not None else [_failing(97.2e6, 96.86e6, STALLED, LIGHT)]
    return ExplorationPoint(4096, 42, 96.1e6, {"filter": 40, "window": 1, "sink": 1}, 0, 0, 0, "corner",
                            trace=windows, measurement=m)


def _explorer(**settings):
    return ResourceExplorer(_Optimizer(), TestbedInfo("t", 48, (4096,)), ExplorerSettings(**settings))


def test_the_explorer_bounds_the_operator_its_largest_budget_read_as_stalling():
    ex = Exploration([_top()])
    metrics, origin = _explorer().final_metrics(ex, 4096)
    assert dict(metrics.operators)["window"].stall == Stall(1, 96.1e6)
    assert "window's stalls held the source to 96,100,000 events/s on 1 task (" in origin
    assert dict(_explorer(stalls=False).final_metrics(ex, 4096)[0].operators)["window"].stall is None
    assert dict(_explorer(stalls=0).final_metrics(ex, 4096)[0].operators)["window"].stall is None
    # a busy operator at the MST is the bound; a trace without failing windows names nothing
    assert dict(_explorer().final_metrics(Exploration([_top(busy_window=0.95)]), 4096)[0].operators)[
        "window"].stall is None
    assert dict(_explorer().final_metrics(Exploration([_top(trace=[])]), 4096)[0].operators)["window"].stall is None


def test_a_plan_entry_says_what_its_stalling_operators_capacity_rests_on():
    from streambed.planner import caveats

    line = caveats.stall_reason("window", Stall(1, 96.1e6), 6)
    assert "window's pauses" in line and "96,100,000 events/s on 1 task of it" in line
    assert "gives it 6" in line and "square root" in line and "--checkpoint-slots" in line
    assert caveats.unattributed_risk(line) == caveats.UNATTRIBUTED_RISK
    assert math.isclose(caveats.combined_risk(0.0, caveats.unattributed_risk(line)), caveats.UNATTRIBUTED_RISK)


def test_the_rate_searchs_compact_trace_keeps_what_names_a_stalling_operator():
    from streambed.planner.exploration import compact_trace

    m = Measurement(97.2e6, 96.86e6, 0, 0, 0, 0, 0, 30, operators=(
        OperatorMetrics("filter", 40, 96.86e6, 1.26e5, 0.64, 0.66, 0.02),
        OperatorMetrics("window", 1, 1.26e5, 1.5e4, 0.3, 0.3, 0.0))).to_dict()
    window = {"rate": 97.2e6, "success": False, "min_rate": 96.1e6, "max_rate": 98.3e6, "measurement": m}
    (kept,) = compact_trace({"windows": [window]})
    assert kept["operators"] == [{"operator": "filter", "busyness_max": 0.66, "backpressure": 0.02},
                                 {"operator": "window", "busyness_max": 0.3, "backpressure": 0.0}]
    assert stalling(CHAIN, [kept], 96.1e6, 0.8) == ["window"]


def test_the_engines_failing_windows_name_a_straggling_window(tmp_path):
    """On the engine: a held-out generated profile (seed 20261218, profile 5) whose window, on one task of a
    48-slot budget and 25-31 % busy, held the job at 96 M events/s where its configuration predicted 150 M.
    The rate search's failing windows just above the MST name that window, and nothing else."""
    from streambed.ledger import Ledger
    from streambed.model import Budget, Configuration
    from streambed.planner.estimator import CapacityEstimator, Timing
    from streambed.planner.exploration import compact_trace
    from streambed.testbed.sim.generate import generate_profile
    from streambed.testbed.sim.profile import parse_profile
    from streambed.testbed.sim.testbed import SimSettings, SimTestbed

    profile = parse_profile(generate_profile(20261218, 5))
    tb = SimTestbed(profile, SimSettings(seed=0, max_slots=48))
    query = tb.query(profile.name)
    cfg = Configuration.of(query, {"Calc#1": 40, **{op: 1 for op in query.operators if op != "Calc#1"}})
    with Ledger.open(tmp_path, "stall", {}, resume=False) as ledger:
        est = CapacityEstimator(tb, ledger, Timing.named("paper-simple")).estimate(
            profile.name, Budget(48, 4096), cfg, "top").to_dict()
    busiest = max(o["busyness_max"] for w in est["windows"] if w["success"] for o in w["measurement"]["operators"])
    assert busiest < 0.8  # no operator's busy time is the bound
    assert stalling(query, compact_trace(est), est["mst"], 0.8) == ["GroupWindowAggregate#2"]

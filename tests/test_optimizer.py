"""Configuration Optimizer (paper section V): single-task metrics, BIDS2, DS2."""

import itertools
import math
import time

import pytest

from conftest import PAPER_DATA

from streambed.errors import UserError
from streambed.model import Measurement, OperatorMetrics, Query
from streambed.model import OperatorRates, SingleTaskMetrics
from streambed.planner.policies.bids2 import bids2, bids2_rate
from streambed.planner.policies.ds2 import ds2, ds2_within
from streambed.records import read_single_task_metrics

PAPER = PAPER_DATA


def metrics(*ops):
    return SingleTaskMetrics("q", 4096, tuple((n, OperatorRates(o, r)) for n, o, r in ops))


def brute_force(m: SingleTaskMetrics, slots: int) -> float:
    names = m.names()
    best = 0.0
    for ps in itertools.product(range(1, slots + 1), repeat=len(names)):
        if sum(ps) == slots:
            best = max(best, bids2_rate(m, dict(zip(names, ps))))
    return best


def test_single_task_metrics_come_from_input_rates_and_busyness():
    q = Query("q", ("a", "b"), (("source", "a"), ("a", "b")))
    m = Measurement(target_rate=1000, achieved_rate=1000, pending_start=0, pending_end=0, pending_slope=0,
                    achieved_cv=0, start=0, end=30, operators=(
                        OperatorMetrics("a", 1, input_rate=1000, output_rate=500, busyness=0.5, busyness_max=0.5,
                                        backpressure=0),
                        OperatorMetrics("b", 1, input_rate=500, output_rate=0, busyness=0.001, busyness_max=0.001,
                                        backpressure=0)))
    st = SingleTaskMetrics.from_measurement(q, 4096, m)
    a, b = dict(st.operators)["a"], dict(st.operators)["b"]
    assert a.true_rate == pytest.approx(2000)  # 1000 rec/s at 50 % busy
    assert a.input_ratio == pytest.approx(1.0)
    assert b.input_ratio == pytest.approx(0.5)
    assert b.true_rate == pytest.approx(500 / 0.01)  # busyness floored: an idle task is not infinitely fast
    assert SingleTaskMetrics.from_dict(st.to_dict()) == st


def test_bids2_on_a_case_with_a_known_answer():
    # a needs 3x the tasks of b for the same source rate: with 8 slots, 6 + 2
    m = metrics(("a", 100.0, 3.0), ("b", 100.0, 1.0))
    sol = bids2(m, 8)
    assert sol.parallelism == {"a": 6, "b": 2}
    assert sol.predicted_rate == pytest.approx(200.0)


@pytest.mark.parametrize("seed", range(8))
def test_bids2_is_optimal_against_brute_force(seed):
    import random
    rnd = random.Random(seed)
    ops = [(f"o{i}", rnd.uniform(1e3, 1e6), rnd.uniform(0.01, 1.5)) for i in range(rnd.randint(2, 4))]
    m = metrics(*ops)
    for slots in (len(ops), len(ops) + 3, 11):
        sol = bids2(m, slots)
        assert sum(sol.parallelism.values()) == slots
        assert all(p >= 1 for p in sol.parallelism.values())
        assert sol.predicted_rate == pytest.approx(brute_force(m, slots), rel=1e-6)
        assert bids2_rate(m, sol.parallelism) == pytest.approx(sol.predicted_rate, rel=1e-6)


def test_bids2_refuses_a_budget_smaller_than_the_query():
    with pytest.raises(UserError, match="3 operators; a budget needs at least one slot each"):
        bids2(metrics(("a", 1.0, 1.0), ("b", 1.0, 1.0), ("c", 1.0, 1.0)), 2)


def test_ds2_one_pass_rule():
    m = metrics(("a", 100.0, 1.0), ("b", 50.0, 0.5), ("c", 1000.0, 0.1))
    assert ds2(m, 250.0) == {"a": 3, "b": 3, "c": 1}
    assert ds2(m, 200.0) == {"a": 2, "b": 2, "c": 1}  # exact fits are not rounded up
    par, target = ds2_within(m, 7)
    assert sum(par.values()) <= 7
    assert sum(ds2(m, target * 1.01).values()) > 7


def test_bids2_reproduces_the_papers_324_solves():
    """bids2_vectors.json: every BIDS2 solve of the paper's runs, with its inputs and objective."""
    solves = read_single_task_metrics(PAPER / "bids2_vectors.json").records
    assert len(solves) == 324
    worst = 0.0
    t0 = time.perf_counter()
    for v in solves:
        sol = bids2(v.metrics, v.slots)
        worst = max(worst, abs(sol.predicted_rate - v.recorded_objective) / v.recorded_objective)
        assert sum(sol.parallelism.values()) == v.slots
    assert worst <= 1e-6, worst
    assert time.perf_counter() - t0 < 120  # sanity bound only; speed is measured in make bench


def test_bids2_handles_large_budgets():
    m = metrics(*[(f"o{i}", 1e4 * (i + 1), 1.0 / (i + 1)) for i in range(8)])
    sol = bids2(m, 2000)
    assert sum(sol.parallelism.values()) == 2000
    # no slot can be moved to raise the bound: the optimum is tight up to integrality
    assert sol.predicted_rate >= 0.99 * 2000 / sum(r.input_ratio / r.true_rate for _, r in m.operators)
    assert math.isfinite(sol.predicted_rate)

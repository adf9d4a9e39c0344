"""The sim's steady-state capacity model and its search for the best configuration of a budget."""

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest

from streambed.errors import UserError
from streambed.model import Configuration
from streambed.testbed.sim.capacity import CapacityModel, capacity_model
from streambed.testbed.sim.profile import load_profile, parse_profile


def small():
    return parse_profile({"name": "s", "operators": [
        {"name": "a", "kind": "map", "rate": 100_000, "inputs": [{"from": "source"}]},
        {"name": "b", "kind": "aggregate", "rate": 30_000, "keys": {"count": 500, "zipf": 0.6},
         "inputs": [{"from": "a", "selectivity": 0.8, "partitioning": "hash"}]},
        {"name": "c", "kind": "sink", "rate": 200_000, "inputs": [{"from": "b", "selectivity": 0.5}]},
    ]}, "s.yaml")


def test_operator_capacity_of_a_stateless_operator_is_linear():
    m = CapacityModel(small(), 4096)
    assert m.operator_capacity("a", 3) == pytest.approx(300_000)
    assert m.operator_capacity("c", 2) == pytest.approx(2 * 200_000 / 0.4)


def test_best_configuration_is_at_least_as_good_as_every_other_configuration():
    prof = small()
    m = CapacityModel(prof, 4096)
    q = prof.query()
    for slots in (3, 7, 12):
        best, cap = m.best_configuration(slots)
        assert best.slots == slots
        others = [Configuration.of(q, dict(zip(q.operators, ps)))
                  for ps in itertools.product(range(1, slots - 1), repeat=3) if sum(ps) == slots]
        assert cap.mst == pytest.approx(max(m.capacity(c).mst for c in others), rel=1e-9)


def test_best_configuration_refuses_a_budget_smaller_than_the_query():
    with pytest.raises(UserError, match="3 operators; a budget needs at least one slot each"):
        CapacityModel(small(), 4096).best_configuration(2)


def test_straggler_loss_grows_with_the_rate_and_shrinks_with_more_tasks():
    m = CapacityModel(load_profile("q8"), 4096)
    name = "GroupWindowAggregate#3"
    assert m.straggler_loss(name, 4, 2e6) < m.straggler_loss(name, 4, 4e6)
    assert m.straggler_loss(name, 8, 4e6) < m.straggler_loss(name, 4, 4e6)
    assert m.straggler_loss("Join#7", 4, 4e6) == 0  # not a window


def without_straggler_tail(prof):
    """The same profile with every firing stretched by exactly its mean (Pareto tail index inf): the
    same mean firing cost, hence the same operator capacities, but no straggler."""
    ops = tuple(replace(o, window=replace(o.window, straggler_tail=math.inf)) if o.window else o
                for o in prof.operators)
    return replace(prof, operators=ops)


def test_model_of_q8_includes_stragglers():
    prof = load_profile("q8")
    m = CapacityModel(prof, 4096)
    tailless = CapacityModel(without_straggler_tail(prof), 4096)
    q = prof.query()
    # Stragglers only add stalls: every operator alone sustains the same rate with or without them.
    for n in q.operators:
        assert m.operator_capacity(n, 8) == pytest.approx(tailless.operator_capacity(n, 8), rel=1e-12)
    # The best configuration without stragglers is limited by operator capacities alone; rated with
    # stragglers, the slowest firing of its window tasks stalls the job: its MST falls well below.
    cfg, cap = tailless.best_configuration(48)
    plain = min(tailless.operator_capacity(n, p) for n, p in cfg.parallelism)
    assert cap.mst == pytest.approx(plain, rel=1e-9)
    with_stragglers = m.capacity(cfg)
    assert with_stragglers.mst < 0.8 * cap.mst
    assert prof.operator(with_stragglers.bottleneck).window is not None
    # The search moves slots to the window operators to shorten firings, but cannot win it all back:
    # with stragglers the best MST of a budget is strictly lower.
    for slots in (16, 48):
        assert m.best_configuration(slots)[1].mst < 0.9 * tailless.best_configuration(slots)[1].mst


def test_capacity_model_picks_the_analytic_model_for_analytic_profiles():
    prof = load_profile("paper-q11-linear")
    m = capacity_model(prof, 4096)
    for slots in (4, 48, 559):
        _, cap = m.best_configuration(slots)
        assert cap.mst == pytest.approx(prof.analytic.capacity(4096, slots), rel=1e-9)
    assert np.isclose(m.speed_scale(48) * m.linear.best_configuration(48)[1].mst, prof.analytic.capacity(4096, 48))

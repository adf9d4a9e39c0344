"""The sim's laws, one small pure function at a time."""

import math

import numpy as np
import pytest

from streambed.testbed.sim import formulas as f


def test_state_fill_starts_empty_and_approaches_full():
    assert f.state_fill(0.0, 60.0) == pytest.approx(0.0)
    assert f.state_fill(60.0, 60.0) == pytest.approx(1 - math.exp(-1))
    assert f.state_fill(600.0, 60.0) > 0.9999
    # stateless operators have no warm-up: warmup_s = inf leaves the fill at 0, which their
    # speed-up of 1 and empty working set make irrelevant
    assert f.state_fill(100.0, math.inf) == pytest.approx(0.0)


def test_warmup_speed_is_speedup_when_empty_and_one_when_full():
    assert f.warmup_speed(0.0, 1.3) == pytest.approx(1.3)
    assert f.warmup_speed(1.0, 1.3) == pytest.approx(1.0)
    assert f.warmup_speed(0.5, 1.3) == pytest.approx(1.15)


def test_working_set_grows_with_the_task_rate_and_the_fill():
    assert f.working_set_mb(100, 500, 0, 10) == pytest.approx(100)
    assert f.working_set_mb(100, 500, 20_000, 10) == pytest.approx(100 + 500 * 20_000 * 10 / 1e6)
    assert f.working_set_mb(100, 500, 20_000, 10, fill=0.5) == pytest.approx(0.5 * 200)


def test_miss_ratio_is_zero_when_the_working_set_fits():
    assert f.miss_ratio(1000, 800) == 0
    assert f.miss_ratio(400, 800) == pytest.approx(0.5)
    assert f.miss_ratio(400, 0) == 0
    np.testing.assert_allclose(f.miss_ratio(400, np.array([200, 800, 1600])), [0, 0.5, 0.75])


def test_memory_slowdown():
    assert f.memory_slowdown(0.0, 30, 2) == 1
    assert f.memory_slowdown(0.5, 30, 2) == pytest.approx(1 + 30 * 0.25)


def test_sustainable_task_rate_is_the_fixed_point_of_the_memory_law():
    args = dict(available_mb=410, base_mb=100, bytes_per_record=1000, retention_s=10, penalty=20, exponent=1)
    x = f.sustainable_task_rate(50_000, **args)
    ws = f.working_set_mb(100, 1000, x, 10)
    speed = 50_000 / f.memory_slowdown(f.miss_ratio(410, ws), 20, 1)
    assert x == pytest.approx(speed, rel=1e-6)
    assert x < 50_000
    # with enough memory the task runs at its base rate
    assert f.sustainable_task_rate(50_000, **{**args, "available_mb": 10_000}) == 50_000


def test_straggler_stretch_has_the_requested_mean_and_cap():
    u = (np.arange(200_000) + 0.5) / 200_000
    x = f.straggler_stretch(u, 0.5, 3.0, cap=1e9)
    assert x.mean() == pytest.approx(0.5, rel=0.02)
    capped = f.straggler_stretch(u, 0.5, 2.0, cap=10)
    assert capped.max() == pytest.approx(5.0)
    assert np.all(f.straggler_stretch(u, 0.5, math.inf) == 0.5)
    assert np.all(f.straggler_stretch(u, 0.0, 2.0) == 0)


def test_slowest_stretch_is_the_distribution_of_the_max_of_independent_draws():
    rng = np.random.default_rng(1)
    draws = f.straggler_draws(rng, 20_000 * 16, 0.5, 2.0, 20).reshape(20_000, 16).max(axis=1)
    u = (np.arange(4000) + 0.5) / 4000
    exact = f.slowest_stretch(u, 16, 0.5, 2.0, 20)
    assert exact.mean() == pytest.approx(draws.mean(), rel=0.03)
    assert np.quantile(exact, 0.9) == pytest.approx(np.quantile(draws, 0.9), rel=0.05)


def test_slowest_stretch_grows_with_the_number_of_tasks_like_p_to_one_over_the_tail():
    u = (np.arange(4000) + 0.5) / 4000
    m = [f.slowest_stretch(u, p, 0.5, 2.0, cap=1e9).mean() for p in (4, 16, 64)]
    assert m[0] < m[1] < m[2]
    # Pareto index 2: quadrupling the tasks roughly doubles the slowest stretch
    assert m[2] / m[1] == pytest.approx(2.0, rel=0.15)


def test_golden_quantiles_are_equidistributed():
    q = np.array([f.golden_quantiles(0.3, n) for n in range(1, 1001)])
    counts, _ = np.histogram(q, bins=10, range=(0, 1))
    assert counts.min() >= 95 and counts.max() <= 105


def test_ar1_coefficient():
    assert f.ar1_coefficient(1.0, 10.0) == pytest.approx(math.exp(-0.1))

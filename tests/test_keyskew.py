"""Key skew beyond the testbed (model/keyskew.py): the busiest task's share as parallelism grows, and the key
concentration read from per-task input records."""

import math
from dataclasses import replace

import numpy as np
import pytest

from streambed.model import Measurement, OperatorMetrics, OperatorRates, Query, keygroups
from streambed.model.keyskew import (GroupShares, KeySkew, deviation_terms, estimate, max_z, group_classes, hot_key,
                                     task_group_counts, typical_busiest)
from streambed.model.measurement import SingleTaskMetrics, input_imbalance, key_skews
from streambed.planner.policies.skew import busiest_share, capacity, fewest_tasks, skew_aware_bids2
from streambed.testbed.sim.partitioning import KeyedStream
from test_policies import check_fewest_tasks


def zipf(count, exponent):
    w = np.arange(1, count + 1, dtype=float) ** -exponent
    return w / w.sum()


def hashed_shares(weights, parallelism, max_parallelism, seed):
    """Task shares of keys hashed at random into key groups, groups in Flink's contiguous ranges."""
    groups = np.random.default_rng(seed).integers(0, max_parallelism, size=len(weights))
    mass = np.bincount(groups, weights=weights, minlength=max_parallelism)
    owner = np.arange(max_parallelism) * parallelism // max_parallelism
    return np.bincount(owner, weights=mass, minlength=parallelism)


def test_the_busiest_of_n_exceeds_the_mean_by_at_most_max_z_nine_times_in_ten():
    assert max_z(1) == 0.0 and max_z(0) == 0.0
    rng = np.random.default_rng(0)
    for n in (10, 43, 1000):
        maxima = rng.standard_normal((4000, n)).max(axis=1)
        assert 0.05 < float(np.mean(maxima > max_z(n))) < 0.2
        assert max_z(n) > float(np.mean(maxima))  # above the expectation: a plan deploys one draw
    zs = [max_z(n) for n in range(1, 3000)]
    assert all(b > a for a, b in zip(zs, zs[1:]))


@pytest.mark.parametrize("keys,p,m", [(244, 1000, 1024), (40, 100, 128), (1000, 700, 1024), (300, 300, 512)])
def test_with_few_keys_per_task_the_busiest_is_held_in_the_typical_draw(keys, p, m):
    # equal keys hashed at random: the normal bound falls below the busiest task in most draws, the
    # plan's share (at least the typical busiest) in fewer than half
    normal = KeySkew(1.0 / keys).busiest_share(p, m, normal=True)
    planned = KeySkew(1.0 / keys).busiest_share(p, m)
    assert typical_busiest(p, m, 1.0 / keys) > normal
    busiest = np.array([hashed_shares(np.full(keys, 1.0 / keys), p, m, seed).max() for seed in range(600)])
    assert float(np.mean(busiest > normal + 1e-12)) > 0.5
    assert float(np.mean(busiest > planned + 1e-12)) < 0.5


def test_with_many_keys_per_task_the_typical_busiest_adds_nothing():
    assert typical_busiest(100, 4096, 1e-6) == 0.0 and typical_busiest(100, 4096, 0.0) == 0.0
    for keys, p, m in ((3000, 40, 128), (200_000, 1000, 4096)):
        assert KeySkew(1.0 / keys).busiest_share(p, m) == KeySkew(1.0 / keys).busiest_share(p, m, normal=True)
    # computed anyway, the typical busiest of many keys per task lies below the normal bound
    from streambed.model.keyskew import _typical_busiest_keys
    assert _typical_busiest_keys(3000, 40, 128) / 3000 < KeySkew(1.0 / 3000).busiest_share(40, 128, normal=True)


@pytest.mark.parametrize("p,m", [(1, 128), (42, 128), (43, 128), (128, 128), (100, 4096), (1366, 2048), (7, 1000)])
def test_group_classes_follow_flinks_ranges(p, m):
    counts = task_group_counts(p, m)
    assert sum(counts) == m and len(counts) == p
    classes = dict(group_classes(p, m))
    assert classes == {c: counts.count(c) for c in set(counts)}
    assert max(counts) == math.ceil(m / p)


def test_without_skew_the_busiest_task_owns_the_most_key_groups():
    even = KeySkew(0.0)
    assert even.busiest_share(42, 128) == pytest.approx(4 / 128)
    assert even.busiest_share(64, 128) == pytest.approx(1 / 64)
    assert even.busiest_share(1, 128) == 1.0


def test_the_excess_grows_with_parallelism_and_a_hot_key_is_a_floor():
    skew = KeySkew(6e-6)
    ratios = [skew.busiest_share(p, 32768) * p for p in (16, 64, 256, 1024, 4096)]
    assert all(b > a for a, b in zip(ratios, ratios[1:])) and ratios[0] < 1.05 < 1.2 < ratios[-1]
    hot = KeySkew(6e-6, hottest=0.01)
    assert hot.busiest_share(4096, 32768) >= 0.01
    assert hot.busiest_share(4, 32768) == pytest.approx(0.01 + 0.99 / 4)  # its task's quarter of the rest
    assert KeySkew(6e-6, hottest=1e-4).busiest_share(16, 32768) == pytest.approx(skew.busiest_share(16, 32768))
    # the floor never falls below H, which the hottest key cannot be below
    assert KeySkew(0.02).busiest_share(10_000, 32768) >= 0.02
    with pytest.raises(ValueError):
        KeySkew(1.5)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_many_keys_the_law_predicts_the_share_30x_beyond(seed):
    """Measured at 5-43 tasks (128 key groups), q11's window keys: the busiest share predicted at 1,366
    tasks within 10 % of the one the keys give, where carrying the 43-task imbalance is 20 % short."""
    w = zipf(200_000, 0.3)
    runs = [(hashed_shares(w, p, 128, seed), 128, 0.0) for p in (5, 16, 28, 43)]
    skew = estimate(runs)
    assert skew.hottest == 0.0
    assert skew.concentration == pytest.approx(float((w ** 2).sum()), rel=0.4)
    m = keygroups.default_max_parallelism(1366)
    truth = float(hashed_shares(w, 1366, m, seed).max())
    assert skew.busiest_share(1366, m) == pytest.approx(truth, rel=0.10)
    carried = float(runs[-1][0].max()) * 43 / 1366
    assert carried < 0.9 * truth


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_hot_key_shows_as_a_floor(seed):
    w = zipf(1_000_000, 1.0)  # the hottest key carries 6.9 %
    runs = [(hashed_shares(w, p, 128, seed), 128, 0.0) for p in (5, 16, 43)]
    skew = estimate(runs)
    assert skew.hottest == pytest.approx(w[0], rel=0.2)
    truth = float(hashed_shares(w, 2000, 4096, seed).max())
    assert skew.busiest_share(2000, 4096) == pytest.approx(truth, rel=0.15)


def test_no_hot_key_without_an_outlier():
    even = [100.0 * c for c in task_group_counts(43, 128)]  # every key group alike
    assert hot_key(even, 128, 1e-6) == 0.0
    one = list(even)
    one[5] += 900.0  # one task carries four times its share: a key of about 7 %
    total = sum(one)
    assert hot_key(one, 128, 1e-6) == pytest.approx((1200 / total - 3 / 128) / (1 - 3 / 128))


def test_a_finite_count_of_records_is_not_mistaken_for_skew():
    """Even keys, records drawn at random: the squared deviations are the sampling's alone."""
    rng = np.random.default_rng(4)
    p, m, records = 43, 128, 200_000
    groups = np.bincount(np.arange(m) * p // m, minlength=p) / m
    counts = rng.multinomial(records, groups)
    dev, norm = deviation_terms(counts.astype(float), m, records)
    assert abs(dev / norm) < 2e-6  # against 1 / records = 5e-6 before the correction
    assert deviation_terms([5.0], 128, 10) is None and deviation_terms([0.0, 0.0], 128, 10) is None


def test_the_sims_own_hashing():
    """The sim's window of q11 (its own key hashes): predicted from 4-43 tasks, the share at 1,366 and
    4,000 tasks within 10 %."""
    stream = KeyedStream(200_000, 0.3, seed=11)
    skew = estimate([(list(stream.shares(p)), keygroups.default_max_parallelism(p), 0.0) for p in (4, 16, 43)])
    for p in (1366, 4000):
        m = keygroups.default_max_parallelism(p)
        assert skew.busiest_share(p, m) == pytest.approx(stream.max_share(p), rel=0.10)


def _measurement(task_input, busy, parallelism=None):
    p = parallelism or len(task_input)
    op = OperatorMetrics("W", p, float(sum(task_input)), 0.0, float(np.mean(busy)), float(max(busy)), 0.0,
                         tuple(busy), tuple(task_input))
    return Measurement(1000.0, 1000.0, 0, 0, 0, 0, 0.0, 30.0, (op,))


def test_task_input_round_trips_and_joins():
    m = _measurement([10.0, 30.0], [0.2, 0.6])
    back = Measurement.from_dict(m.to_dict())
    assert back.operator("W").task_input == (10.0, 30.0)
    joined = m.then(_measurement([20.0, 40.0], [0.3, 0.7]))
    assert joined.operator("W").task_input == pytest.approx((15.0, 35.0))
    old = m.to_dict()
    del old["operators"][0]["task_input"]
    assert Measurement.from_dict(old).operator("W").task_input == ()
    assert input_imbalance(m.operator("W")) == pytest.approx(1.5)


def test_key_skews_pool_the_runs_of_keyed_operators():
    q = Query("q", ("W",), (("source", "W"),), frozenset({"W"}))
    w = zipf(200_000, 0.3)
    runs = [(_measurement(list(hashed_shares(w, p, 128, 1) * 1e5), [0.9] * p), None) for p in (8, 43)]
    skews = key_skews(q, runs)
    assert set(skews) == {"W"} and skews["W"].concentration > 0
    assert key_skews(Query("q", ("W",), (("source", "W"),)), runs) == {}  # not keyed: nothing to read
    assert key_skews(q, [(_measurement([5.0], [0.5]), None)]) == {}  # one task tells nothing


def test_the_policy_sizes_a_keyed_operator_by_the_law():
    skew = KeySkew(6e-6)
    measured = OperatorRates(50_000.0, 1.0, keyed=True, imbalance=1.05, measured_parallelism=43,
                             input_imbalance=1.03, key_skew=skew)
    carried = OperatorRates(50_000.0, 1.0, keyed=True, imbalance=1.05, measured_parallelism=43)
    # at the testbed both agree within the speed part; 30x beyond, the law asks for more
    assert busiest_share(measured, 1366) > 1.15 * busiest_share(carried, 1366)
    for rate in (1e5, 2e6, 3e7, 6e7):
        check_fewest_tasks(measured, rate, 32768)


def test_speed_imbalance_is_what_the_input_does_not_explain():
    from streambed.planner.policies.skew import speed_imbalance
    r = OperatorRates(1.0, 1.0, keyed=True, imbalance=1.10, measured_parallelism=43, input_imbalance=1.10)
    assert speed_imbalance(r, 1366) == pytest.approx(1.0)
    r = OperatorRates(1.0, 1.0, keyed=True, imbalance=1.10, measured_parallelism=43, input_imbalance=1.0)
    assert speed_imbalance(r, 43) == pytest.approx(1.10)
    assert speed_imbalance(r, 1366) == pytest.approx(1 + 0.1 * max_z(1366) / max_z(43))


def test_skew_aware_bids2_with_a_key_skew_fills_the_budget():
    ops = (("Calc#1", OperatorRates(750_000.0, 1.0)),
           ("W", OperatorRates(54_000.0, 0.92, keyed=True, imbalance=1.05, measured_parallelism=43,
                               input_imbalance=1.03, key_skew=KeySkew(6e-6))))
    metrics = SingleTaskMetrics("q11", 4096, ops)
    small, large = skew_aware_bids2(metrics, 48), skew_aware_bids2(metrics, 1500)
    assert sum(small.parallelism.values()) == 48 and sum(large.parallelism.values()) == 1500
    # the rate per slot falls beyond the testbed: the busiest task carries more
    assert large.predicted_rate / 1500 < small.predicted_rate / 48
    back = SingleTaskMetrics.from_dict(metrics.to_dict())
    assert dict(back.operators)["W"].key_skew == KeySkew(6e-6)
    tested = KeySkew(6e-6, 0.0, 1366, 2048)
    assert KeySkew.from_dict(tested.to_dict()) == tested


def test_a_key_the_testbed_cannot_see_is_named_with_what_it_would_cap():
    from streambed.planner.sizing import hidden_keys, key_warning
    from streambed.planner.policies.skew import hidden_key, hidden_key_capacity
    window = OperatorRates(54_000.0, 0.92, keyed=True, imbalance=1.05, measured_parallelism=43,
                           input_imbalance=1.03, key_skew=KeySkew(6e-6))
    w = hidden_key(window)
    expected = 1.3 * (KeySkew(6e-6).busiest_share(43, 128) - 3 / 128)
    assert w == pytest.approx(expected) and 0.0005 < w < 0.005
    # beyond the testbed such a key is what holds the tasks; at the testbed it is not
    assert hidden_key_capacity(window, 1366) < 0.8 * capacity(window, 1366)
    assert hidden_key_capacity(window, 43) > 0.85 * capacity(window, 43)
    assert hidden_key(replace_skew(window, KeySkew(6e-6, hottest=0.01))) == 0.0  # seen: it is a floor already
    metrics = SingleTaskMetrics("q11", 512, (("Calc#1", OperatorRates(750_000.0, 1.0)), ("W", window)))
    line = key_warning(metrics, {"Calc#1": 80, "W": 1366}, 5.6e7)
    assert line.startswith("W: a key with up to 0.") and "43 tasks measured" in line and "1,366 tasks" in line
    assert key_warning(metrics, {"Calc#1": 2, "W": 43}, 2e6) is None
    # the operators named are hidden_keys', the one list the skew probes read too
    assert set(hidden_keys(metrics, {"Calc#1": 80, "W": 1366}, 5.6e7)) == {"W"}
    assert hidden_keys(metrics, {"Calc#1": 2, "W": 43}, 2e6) == {}
    share, cap = hidden_keys(metrics, {"Calc#1": 80, "W": 1366}, 5.6e7)["W"]
    assert share == pytest.approx(w) and cap == pytest.approx(hidden_key_capacity(window, 1366))


def test_a_plan_on_more_tasks_than_keys_relies_on_a_key_the_runs_could_not_exclude():
    """30 keys' worth (H = 1/30) seen on 44 tasks: a key of up to about 10 % would not stand out there. Planned
    on more tasks than that, the busiest task holds the hottest key whole (outnumbered_keys names it where
    such a key would hold the tasks below the rate); on fewer tasks, or at a rate the key leaves, it is only
    the key warning's."""
    from streambed.planner.sizing import hidden_keys, outnumbered_keys
    from streambed.planner.policies.skew import hidden_key_capacity
    window = OperatorRates(20_000.0, 0.01, keyed=True, measured_parallelism=44,
                           key_skew=KeySkew(1 / 30, tested_parallelism=44, tested_max_parallelism=128))
    metrics = SingleTaskMetrics("few", 4096, (("Calc#1", OperatorRates(500_000.0, 1.0)), ("W", window)))
    wide, narrow = {"Calc#1": 30, "W": 610}, {"Calc#1": 30, "W": 20}
    held = hidden_key_capacity(window, 610)
    assert held < capacity(window, 610)
    found = outnumbered_keys(metrics, wide, 1.01 * held)
    assert set(found) == {"W"} and found["W"][0] == pytest.approx(30) and found["W"][2] == pytest.approx(held)
    assert 0.05 < found["W"][1] < 0.2  # the key the 44 tasks could not exclude
    assert outnumbered_keys(metrics, wide, 0.99 * held) == {}
    low = hidden_key_capacity(window, 20)
    assert "W" in hidden_keys(metrics, narrow, 1.01 * low) and outnumbered_keys(metrics, narrow, 1.01 * low) == {}
    seen = SingleTaskMetrics("few", 4096, (("W", replace_skew(window, KeySkew(1 / 30, hottest=0.11))),))
    assert outnumbered_keys(seen, {"W": 610}, 1.01 * held) == {}  # a key the runs showed is a floor, not a doubt


def replace_skew(rates, skew):
    import dataclasses
    return dataclasses.replace(rates, key_skew=skew)


def test_a_plans_key_warning_is_read_back_and_checked():
    from streambed.errors import UserError
    from streambed.model import Plan
    entry = {"memory_mb": 4096, "slots": 2, "configuration": {"a": 1, "b": 1}, "key_warning": "W: a key ..."}
    plan = Plan.from_dict({"query": "q", "rate": 10.0, "entries": [entry]})
    assert plan.entries[0].key_warning == "W: a key ..."
    with pytest.raises(UserError, match=r"entries\[0\]\.key_warning: expected text"):
        Plan.from_dict({"query": "q", "rate": 10.0, "entries": [dict(entry, key_warning=3)]})


def test_runs_with_the_jobs_own_key_groups_are_read_with_them():
    """A job whose max parallelism is fixed (158, as generated profiles draw) runs every configuration that
    sets none with those key groups: read with Flink's default 128 instead, the tasks' shares of their key
    groups are wrong and 784,168 keys at Zipf 0.33 look like a hot key."""
    w = zipf(784_168, 0.33)
    fixed = Query("q", ("W",), (("source", "W"),), frozenset({"W"}), max_parallelism=158)
    runs = [(_measurement(list(hashed_shares(w, p, 158, 2) * 1e5), [0.9] * p), None) for p in (8, 16, 31)]
    skew = key_skews(fixed, runs)["W"]
    assert skew.hottest < 1e-3 and skew.tested_max_parallelism == 158  # the top key carries 7.5e-5
    assert skew.concentration == pytest.approx(float((w ** 2).sum()), abs=2e-5)
    default = key_skews(Query("q", ("W",), (("source", "W"),), frozenset({"W"})), runs)["W"]
    # what 128 groups made of the same runs: 85 times the concentration, and a key of 0.7 %
    assert default.concentration > 10 * skew.concentration + 1e-5 and default.hottest > 5e-3


def test_configuration_gain_is_what_the_plans_configuration_predicts_over_the_measured_one():
    """A measured budget read as the plan would configure it: Flink's default key groups cost the point's
    configuration what their steps take, and an operator the explorer gave too few tasks what it starved;
    a point that ran the plan's own configuration with the finest key groups gains nothing."""
    from streambed.planner.exploration import ExplorationPoint
    from streambed.planner.policies import policy_named
    from streambed.planner.sizing import configuration_gain
    window = OperatorRates(200_000.0, 1.0, keyed=True, measured_parallelism=37, key_skew=KeySkew(1e-7))
    metrics = SingleTaskMetrics("w", 4096, (("Calc#1", OperatorRates(2e6, 1.0)), ("W", window)))
    policy = policy_named("bids2-skew")

    def point(calc: int, tasks: int, max_parallelism: int | None = None) -> ExplorationPoint:
        return ExplorationPoint(4096, calc + tasks, 1.0, {"Calc#1": calc, "W": tasks}, 0, 0, 0, "search",
                                max_parallelism=max_parallelism)

    # 128 default key groups over 37 tasks: the busiest owns 4, 1.16 x the mean's 3.46; 41 slots are
    # best configured as they ran (4 map tasks carry 8 M events/s, 37 window tasks 7.4 M)
    assert configuration_gain(policy, metrics, point(4, 37)) == pytest.approx(4 / (128 / 37), rel=0.01)
    assert configuration_gain(policy, metrics, point(4, 32)) == pytest.approx(1.0, abs=0.01)  # 4 groups each
    assert configuration_gain(policy, metrics, point(4, 37, 32768)) == pytest.approx(1.0, abs=0.01)  # set: no steps
    # one map task starved the same 41 slots: 2 M events/s where the plan's configuration predicts 7.4 M
    assert configuration_gain(policy, metrics, point(1, 40, 32768)) == pytest.approx(7.4e6 / 2e6, rel=0.01)
    plain = SingleTaskMetrics("m", 4096, (("Calc#1", OperatorRates(2e6, 1.0)), ("M", OperatorRates(2e5, 1.0))))
    run = ExplorationPoint(4096, 41, 1.0, {"Calc#1": 4, "M": 37}, 0, 0, 0, "search")
    assert configuration_gain(policy, plain, run) == 1.0
    assert configuration_gain(policy, plain, replace(run, configuration={"Calc#1": 2, "M": 39})) == pytest.approx(
        7.4e6 / 4e6, rel=0.01)


def _hot_stream(seed):
    return KeyedStream(20_000, 0.5, seed, hot=0.03)  # the hot key is key 0, group hash mod m


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_runs_of_a_few_parallelisms_locate_the_hot_keys_group(seed):
    from streambed.model.keyskew import hot_groups
    stream = _hot_stream(seed)
    group = int(stream._hashes[0] % 128)
    runs = [(list(stream.shares(p)), 128) for p in (24, 32, 35, 37)]
    modulus, groups = hot_groups(runs, 0.002, 0.03)
    assert modulus == 128 and group in groups and len(groups) <= 4  # one run alone leaves 128/37 of them
    skew = KeySkew(0.002, 0.03, 37, 128, modulus, (group,))
    counts = {p: task_group_counts(p, 128) for p in range(2, 129)}
    # the task that holds it at every parallelism, as Flink assigns key groups: its own groups, not the most
    assert all(skew.hot_task_groups(p, 128) == counts[p][group * p // 128] for p in counts)
    one = [p for p in range(65, 128) if counts[p][group * p // 128] == 1 and max(counts[p]) == 2]
    assert one and all(skew.busiest_share(p, 128) < KeySkew(0.002, 0.03).busiest_share(p, 128) for p in one)


def test_a_located_group_carries_to_key_groups_its_modulus_divides_or_that_divide_it():
    from streambed.model.keyskew import groups_at, hot_groups
    assert groups_at(128, (121,), 256) == (121, 249)
    assert groups_at(256, (249,), 128) == (121,)
    assert groups_at(100, (5,), 128) == () and groups_at(0, (), 128) == ()
    # two runs whose busiest tasks share no group: not one hot key, so nothing is located
    a, b = [1.0] * 32, [1.0] * 32
    a[0], b[31] = 5.0, 5.0
    hottest = hot_key(a, 128, 1e-6)
    assert hot_groups([(a, 128), (b, 128)], 1e-6, hottest) == (0, ())
    assert hot_groups([(a, 128), (a, 256)], 1e-6, hottest)[0] == 256  # a run in 256 groups reads in 256


def test_the_policy_finds_the_fewest_tasks_that_give_a_located_hot_key_a_task_of_one_group():
    stream = _hot_stream(2)
    group = int(stream._hashes[0] % 128)
    located = KeySkew(0.002, 0.03, 37, 128, 128, (group,))
    r = OperatorRates(40_000.0, 1.0, keyed=True, key_skew=located)
    plain = OperatorRates(40_000.0, 1.0, keyed=True, key_skew=KeySkew(0.002, 0.03, 37, 128))
    fewer = 0
    for rate in np.linspace(0.9e6, 1.3e6, 9):
        p = fewest_tasks(r, rate, 32768)
        smallest = next((q for q in range(1, 32769) if capacity(r, q) >= rate), None)
        assert p == smallest  # not only one that holds: the scan below the bisection finds the least
        fewer += p < fewest_tasks(plain, rate, 32768)
    assert fewer > 0


def _data_groups(seed: int = 3, keys: int = 3000, zipf: float = 0.6) -> np.ndarray:
    """Records per key group of 32,768 of a Zipf key distribution hashed at random (a data set's counts)."""
    stream = KeyedStream(keys, zipf, seed)
    return np.bincount(stream.hashes % 32768, weights=stream.weights, minlength=32768)


def _tasks_by_brute_force(groups: np.ndarray, p: int, m: int) -> np.ndarray:
    folded = np.zeros(m)
    for g, share in enumerate(groups):
        folded[g % m] += share
    tasks = np.zeros(p)
    for g in range(m):
        tasks[g * p // m] += folded[g]
    return tasks


@pytest.mark.parametrize("p,m", [(2, 128), (41, 1024), (185, 16384), (944, 32768), (128, 128)])
def test_the_data_s_key_groups_give_the_busiest_task_exactly_where_they_fold(p, m):
    groups = _data_groups()
    skew = KeySkew(float(np.sum(KeyedStream(3000, 0.6, 3).weights ** 2)), groups=GroupShares(groups))
    tasks = _tasks_by_brute_force(groups, p, m)
    assert skew.exact(m)
    assert skew.busiest_share(p, m) == pytest.approx(tasks.max(), rel=1e-12)
    assert skew.busiest_share(p, m, least=True) <= tasks.max() * (1 + 1e-12)


def test_where_the_key_groups_do_not_fold_the_model_holds():
    groups = _data_groups()
    skew = KeySkew(0.002, 0.01, groups=GroupShares(groups))
    for m in (1304, 3000, 65536):
        assert not skew.exact(m)
        assert skew.busiest_share(41, m) == KeySkew(0.002, 0.01).busiest_share(41, m)
    with pytest.raises(ValueError):
        GroupShares(np.ones(1000))


@pytest.mark.parametrize("p,m", [(41, 624), (7, 585), (300, 1000), (41, 1024)])
def test_listed_key_hashes_give_the_busiest_task_at_every_max_parallelism(p, m):
    """A job's own max parallelism that is not a power of two does not fold from 32,768 groups; the hash of
    every key, where the data's keys are few enough to list, gives its groups all the same."""
    stream = KeyedStream(3000, 0.6, 3, max_parallelism=m)
    skew = KeySkew(0.002, groups=GroupShares(_data_groups(), stream.hashes, stream.weights))
    assert skew.exact(m)
    assert skew.busiest_share(p, m) == pytest.approx(stream.max_share(p), rel=1e-12)
    with pytest.raises(ValueError):
        GroupShares(_data_groups(), stream.hashes, stream.weights[:5])


def test_the_bound_below_the_data_s_share_falls_as_tasks_are_added():
    skew = KeySkew(0.002, groups=GroupShares(_data_groups()))
    least = [skew.busiest_share(p, 4096, least=True) for p in range(1, 4097, 7)]
    assert all(a >= b for a, b in zip(least, least[1:]))


def test_the_policy_sizes_a_keyed_operator_by_the_data_s_key_groups():
    """A Zipf 0.6 head over 3,000 keys: its heaviest key (about 1.5 %) and the keys the hash puts beside it
    set the busiest task where the data's groups say, not where the law of H puts a typical hashing."""
    stream = KeyedStream(3000, 0.6, 3)
    h = float(np.sum(stream.weights ** 2))
    exact = OperatorRates(40_000.0, 1.0, keyed=True, key_skew=KeySkew(h, float(stream.weights.max()),
                                                                        groups=GroupShares(_data_groups())))
    law = OperatorRates(40_000.0, 1.0, keyed=True, key_skew=KeySkew(h))
    for rate in np.linspace(3e5, 2.4e6, 8):
        p = fewest_tasks(exact, rate, 32768)
        if p is None:
            assert rate > 40_000.0 / stream.weights.max()  # the heaviest key's task caps it
            continue
        assert capacity(exact, p) >= rate * (1 - 1e-9)
        truth = _tasks_by_brute_force(_data_groups(), p, keygroups.max_parallelism(p)).max()
        assert 40_000.0 / truth >= rate * (1 - 1e-9)  # its own tasks sustain the rate, by the groups themselves
    wide = 500
    assert busiest_share(exact, wide) > busiest_share(law, wide)  # the head the law does not see

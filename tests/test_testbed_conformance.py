"""The conformance suite (tests/conformance.py) on the simulated and the fake testbeds, the suite's
own teeth (broken testbeds fail it), and the fake's script (what planner tests rely on)."""

from __future__ import annotations

import math

import pytest

from conformance import ConformanceCase, TestbedConformance
from streambed.errors import JobRestarted, MetricsMissing
from streambed.model import Budget, Configuration, Query, SingleTaskMetrics
from streambed.testbed import base
from fake_testbed import FakeTestbed
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed

QUERY = Query("chain", ("parse", "agg", "sink"), (("source", "parse"), ("parse", "agg"), ("agg", "sink")))
RATES = {"parse": (200_000.0, 1.0), "agg": (50_000.0, 0.5), "sink": (1_000_000.0, 0.5)}
"""o_i, r_i: the single task sustains min(200k / 1, 50k / 0.5, 1M / 0.5) = 100k events/s, agg binding."""


def fake_case(testbed: FakeTestbed | None = None) -> ConformanceCase:
    return ConformanceCase(testbed or FakeTestbed(QUERY, RATES), "chain", 4096, low_rate=20_000, high_rate=2e6,
                           window_s=10.0)


class TestSimConformance(TestbedConformance):
    __test__ = True

    @pytest.fixture
    def conformance_case(self):
        # q1's single task: about 1.6 M events/s at 4 GB per slot (its profile, from the paper's Table II)
        return ConformanceCase(SimTestbed(load_profile("q1"), SimSettings(seed=3)), "q1", 4096,
                               low_rate=200_000, high_rate=20e6, window_s=10.0)


class TestFakeConformance(TestbedConformance):
    __test__ = True

    @pytest.fixture
    def conformance_case(self):
        return fake_case()


def test_both_testbeds_implement_the_protocol():
    assert isinstance(FakeTestbed(QUERY, RATES), base.Testbed)
    assert isinstance(SimTestbed(load_profile("q1")), base.Testbed)


# -- the suite can fail: each broken testbed fails the check of what it breaks ---------------------

class IgnoresSetRate(FakeTestbed):
    """Notes the new rate on the run handle but never tells the job."""

    def set_rate(self, run, rate):
        run.rate = rate


class DeploysAnyMemory(FakeTestbed):
    """Skips the testbed's budget check."""

    def prepare(self, budget):
        self._budget = budget


class NeverOverloaded(FakeTestbed):
    """Claims every window achieved its target, however high."""

    def capacity(self, configuration, memory_mb):
        return math.inf


class ForgetsToStop(FakeTestbed):
    """Keeps observing a run it was told to stop."""

    def stop(self, run):
        pass


class FrozenClock(FakeTestbed):
    def now(self):
        return 0.0


@pytest.mark.parametrize("broken, check", [
    (IgnoresSetRate, "test_set_rate_changes_the_next_window_without_restarting"),
    (DeploysAnyMemory, "test_prepare_refuses_memory_the_testbed_does_not_offer"),
    (NeverOverloaded, "test_a_rate_far_above_capacity_is_not_sustained"),
    (ForgetsToStop, "test_observing_a_stopped_run_is_an_error"),
    (FrozenClock, "test_the_clock_advances_with_wait_and_observe"),
])
def test_a_broken_testbed_fails_the_suite(broken, check):
    """The suite is not vacuous: a testbed that breaks a promise fails that promise's check (and the
    same check passes on the fake it was derived from, in TestFakeConformance)."""
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        getattr(TestbedConformance(), check)(fake_case(broken(QUERY, RATES)))


# -- the fake's script ----------------------------------------------------------------------------

def started(tb: FakeTestbed, parallelism: dict[str, int] | None = None, rate: float = 1000.0, memory_mb: int = 4096):
    cfg = Configuration.of(QUERY, parallelism) if parallelism else Configuration.single_task(QUERY)
    tb.prepare(Budget(cfg.slots, memory_mb))
    return tb.start("chain", cfg, rate)


def test_a_single_task_window_gives_back_the_scripted_rates():
    """SingleTaskMetrics.from_measurement (section V) reads the scripted o_i and r_i off a window."""
    tb = FakeTestbed(QUERY, RATES)
    run = started(tb, rate=90_000)
    metrics = SingleTaskMetrics.from_measurement(QUERY, 4096, tb.observe(run, 10))
    for name, rates in metrics.operators:
        assert rates.true_rate == pytest.approx(RATES[name][0])
        assert rates.input_ratio == pytest.approx(RATES[name][1])


def test_a_window_achieves_the_target_up_to_the_configurations_capacity():
    tb = FakeTestbed(QUERY, RATES)
    wide = {"parse": 1, "agg": 3, "sink": 1}  # agg 150k, parse 200k: parse binds at 200k
    assert tb.capacity(Configuration.of(QUERY, wide), 4096) == pytest.approx(200_000)
    run = started(tb, wide, rate=500_000)
    m = tb.observe(run, 10)
    assert m.achieved_rate == pytest.approx(200_000) and not m.source_saturated
    assert m.operator("parse").busyness == pytest.approx(1.0)  # the bottleneck is fully busy
    assert m.operator("agg").busyness == pytest.approx(200_000 * 0.5 / (3 * 50_000))
    # the source offers 500k, the job takes 200k: 300k records/s pile up
    assert m.pending_slope == pytest.approx(300_000)
    assert m.pending_end - m.pending_start == pytest.approx(300_000 * 10)


def test_the_source_cap_binds_and_says_so():
    tb = FakeTestbed(QUERY, RATES, max_source_rate=60_000)
    m = tb.observe(started(tb, rate=80_000), 10)
    assert m.achieved_rate == pytest.approx(60_000) and m.source_saturated
    m = tb.observe(started(tb, rate=50_000), 10)
    assert m.achieved_rate == pytest.approx(50_000) and not m.source_saturated


def test_rates_per_memory_and_a_canned_capacity():
    slow = {op: (o / 2, r) for op, (o, r) in RATES.items()}
    tb = FakeTestbed(QUERY, {1024: slow, 4096: RATES})
    assert tb.info().memory_per_slot == (1024, 4096)
    single = Configuration.single_task(QUERY)
    assert tb.capacity(single, 1024) == pytest.approx(50_000)
    assert tb.capacity(single, 4096) == pytest.approx(100_000)
    canned = FakeTestbed(QUERY, capacity=lambda cfg, memory: 1000.0 * cfg.slots + memory)
    m = canned.observe(started(canned, {"parse": 2, "agg": 2, "sink": 1}, rate=1e9), 10)
    assert m.achieved_rate == pytest.approx(5000 + 4096)
    assert all(o.busyness == pytest.approx(1.0) for o in m.operators)


def test_the_failure_script_raises_on_the_kth_observe_after_its_time():
    tb = FakeTestbed(QUERY, RATES, failures={2: JobRestarted, 3: MetricsMissing("scripted")})
    run = started(tb)
    tb.observe(run, 5)
    with pytest.raises(JobRestarted):
        tb.observe(run, 5)
    with pytest.raises(MetricsMissing, match="scripted"):
        tb.observe(run, 5)
    assert tb.now() == pytest.approx(15)  # a failed window still spent its time
    tb.observe(run, 5)  # one-shot: the fourth window is fine
    assert tb.observes == 4


def test_the_fake_refuses_a_script_it_cannot_follow():
    with pytest.raises(ValueError):
        FakeTestbed(QUERY)  # neither rates nor capacity
    with pytest.raises(ValueError):
        FakeTestbed(QUERY, {"parse": (1.0, 1.0)})  # operators missing
    with pytest.raises(ValueError):
        FakeTestbed(QUERY, {4096: RATES}, memory_per_slot=(1024, 4096))  # 1024 MB unscripted

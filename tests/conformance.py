"""The conformance suite every testbed passes: what the algorithms rely on from ANY engine.

The Capacity Estimator, Configuration Optimizer and Resource Explorer (paper sections IV-VI) talk to
an engine only through the Testbed protocol (streambed/testbed/base.py). This suite checks the
promises behind those calls, so that a new engine (or a change to one) that breaks them fails here
rather than as a wrong MST deep in a campaign.

To run it on a testbed, subclass :class:`TestbedConformance`, set ``__test__ = True`` and provide a
pytest fixture ``conformance_case`` returning a :class:`ConformanceCase`::

    class TestSimConformance(TestbedConformance):
        __test__ = True

        @pytest.fixture
        def conformance_case(self):
            return ConformanceCase(SimTestbed(load_profile("q1")), "q1", 4096, 2e5, 2e7, 10.0)

Each test costs at most two or three short windows (a real Flink window costs seconds), stops every
run it starts, and leaves the testbed reusable, so a module-scoped case works too.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator, Mapping

import pytest

from streambed.errors import TestbedError, UserError
from streambed.model import SOURCE, Budget, Configuration, Query
from streambed.testbed.base import Run, Testbed

SUSTAINED = 0.95
"""Achieved / target of a window the suite calls sustained: looser than the estimator's 99 % (section
IV), as the suite's windows are short and unwarmed; the estimator's own tests hold the 99 %."""


@dataclass
class ConformanceCase:
    """One testbed and the query, memory and rates the suite runs on it."""

    testbed: Testbed
    query: str
    """A query the testbed runs."""
    memory_mb: int
    """A memory per slot the testbed offers."""
    low_rate: float
    """Events/s the single-task configuration sustains comfortably (at most about half its MST)."""
    high_rate: float
    """Events/s far above the single-task configuration's MST (ten times or more)."""
    window_s: float
    """Observation window, seconds: at least the testbed's sample period."""
    warmup_s: float = 0.0
    """Seconds a started job runs before its first window (a real engine needs a few)."""
    window_tolerance_s: float | None = None
    """How far a window's length may differ from ``window_s``; default: one sample period (an
    engine's window spans the metric samples that cover it)."""
    parallelism: Mapping[str, int] | None = None
    """The configuration of the window test; default: the single task, the first operator doubled
    when the testbed has the slot."""


class TestbedConformance:
    """What the algorithms rely on from any testbed. Not collected itself: subclasses set __test__."""

    __test__ = False

    # -- what the testbed offers ------------------------------------------------------------------

    def test_info_offers_slots_memory_and_a_sample_period(self, conformance_case):
        """The explorer's search space comes from info(): slots, memory per slot, sample period."""
        case = conformance_case
        info = case.testbed.info()
        assert info.name
        assert info.max_slots >= 1
        assert info.memory_per_slot and all(m > 0 for m in info.memory_per_slot)
        assert info.sample_period > 0
        assert info.source_parallelism >= 1 and info.max_source_rate > 0
        # the case itself must fit the testbed, or the other tests would prove nothing
        assert case.memory_mb in info.memory_per_slot
        assert info.max_slots >= case.testbed.query(case.query).size
        assert case.window_s >= info.sample_period

    def test_query_gives_the_operator_graph(self, conformance_case):
        """query(name) is the graph the planner sizes: named operators fed from the source, no source
        among them, the same graph each time it is asked."""
        case = conformance_case
        q = case.testbed.query(case.query)
        assert isinstance(q, Query) and q.name == case.query
        assert q.size >= 1 and SOURCE not in q.operators
        assert any(up == SOURCE for up, _ in q.edges)
        assert all(down in q.operators for _, down in q.edges)
        assert case.testbed.query(case.query) == q

    def test_an_unknown_query_is_a_user_error(self, conformance_case):
        with pytest.raises(UserError):
            conformance_case.testbed.query("no-such-query-in-any-testbed")

    def test_prepare_refuses_memory_the_testbed_does_not_offer(self, conformance_case):
        case = conformance_case
        info = case.testbed.info()
        size = case.testbed.query(case.query).size
        with pytest.raises(UserError):
            case.testbed.prepare(Budget(size, max(info.memory_per_slot) + 1))

    def test_prepare_refuses_more_slots_than_offered(self, conformance_case):
        case = conformance_case
        info = case.testbed.info()
        with pytest.raises(UserError):
            case.testbed.prepare(Budget(info.max_slots + 1, case.memory_mb))

    # -- runs and windows -------------------------------------------------------------------------

    def test_a_window_reports_the_run_it_observed(self, conformance_case):
        """A measurement's target is the rate set, its operators are the query's with the configured
        parallelism, and it lasts about the seconds asked (section IV's windows)."""
        case = conformance_case
        q = case.testbed.query(case.query)
        cfg = _window_configuration(case, q)
        with _running(case, case.low_rate, cfg) as run:
            m = case.testbed.observe(run, case.window_s)
        assert m.target_rate == pytest.approx(case.low_rate, rel=0.02)
        assert [o.operator for o in m.operators] == list(q.operators)
        assert {o.operator: o.parallelism for o in m.operators} == cfg.as_dict()
        assert m.end > m.start
        assert abs((m.end - m.start) - case.window_s) <= _tolerance(case)

    def test_a_low_rate_is_sustained(self, conformance_case):
        case = conformance_case
        with _running(case, case.low_rate) as run:
            m = case.testbed.observe(run, case.window_s)
        assert m.ratio >= SUSTAINED, f"achieved {m.achieved_rate:,.0f} of {m.target_rate:,.0f} events/s"
        assert not m.source_saturated
        assert all(o.input_rate > 0 for o in m.operators)  # every operator saw records
        # a job that keeps up takes in what its operators are offered (where the testbed says; within
        # 10 %: at a low rate a few late scrapes weigh more)
        for o in m.operators:
            assert o.offered_rate is None or abs(o.offered_rate - o.input_rate) <= 0.1 * o.offered_rate, o

    def test_a_rate_far_above_capacity_is_not_sustained(self, conformance_case):
        """A window never claims more than the job can take; if the source could not even emit the
        rate, the window says so (source_saturated), as the estimator then must not read it."""
        case = conformance_case
        with _running(case, case.high_rate) as run:
            m = case.testbed.observe(run, case.window_s)
        assert m.ratio < SUSTAINED or m.source_saturated, \
            f"achieved {m.achieved_rate:,.0f} of {m.target_rate:,.0f} events/s"

    def test_set_rate_changes_the_next_window_without_restarting(self, conformance_case):
        """The estimator moves one job from rate to rate (cooldown, injection): set_rate must take
        effect on the running job, which keeps its id and raises no restart."""
        case = conformance_case
        with _running(case, case.low_rate) as run:
            first = case.testbed.observe(run, case.window_s)
            run_id = run.id
            case.testbed.set_rate(run, case.high_rate)
            second = case.testbed.observe(run, case.window_s)
        assert run.id == run_id and run.rate == case.high_rate
        assert first.target_rate == pytest.approx(case.low_rate, rel=0.02)
        assert second.target_rate == pytest.approx(case.high_rate, rel=0.02)
        assert second.start >= first.end - _tolerance(case)  # the same job's clock goes on
        # the job itself took more, not only the bookkeeping of its target
        assert second.achieved_rate > 1.2 * first.achieved_rate

    def test_the_clock_advances_with_wait_and_observe(self, conformance_case):
        """Ledger times and the estimator's testbed seconds come from now()."""
        case = conformance_case
        tb = case.testbed
        with _running(case, case.low_rate) as run:
            t0 = tb.now()
            tb.wait(run, case.window_s)
            t1 = tb.now()
            tb.observe(run, case.window_s)
            t2 = tb.now()
        assert t1 - t0 >= 0.95 * case.window_s
        assert t2 - t1 >= 0.95 * case.window_s

    def test_observing_a_stopped_run_is_an_error(self, conformance_case):
        """A stopped job is gone: the estimator must never get a window of it."""
        case = conformance_case
        run = _start(case, case.low_rate)
        case.testbed.stop(run)
        with pytest.raises((UserError, TestbedError)):
            case.testbed.observe(run, case.window_s)


def _window_configuration(case: ConformanceCase, q: Query) -> Configuration:
    if case.parallelism is not None:
        return Configuration.of(q, case.parallelism)
    widen = 2 if case.testbed.info().max_slots > q.size else 1
    return Configuration.of(q, {op: widen if i == 0 else 1 for i, op in enumerate(q.operators)})


def _tolerance(case: ConformanceCase) -> float:
    return case.window_tolerance_s if case.window_tolerance_s is not None else case.testbed.info().sample_period


def _start(case: ConformanceCase, rate: float, cfg: Configuration | None = None) -> Run:
    tb = case.testbed
    cfg = cfg or Configuration.single_task(tb.query(case.query))
    tb.prepare(Budget(cfg.slots, case.memory_mb))
    return tb.start(case.query, cfg, rate)


@contextlib.contextmanager
def _running(case: ConformanceCase, rate: float, cfg: Configuration | None = None) -> Iterator[Run]:
    """A started (and warmed-up) job, stopped whatever the test finds (a real cluster must not keep it)."""
    run = _start(case, rate, cfg)
    try:
        if case.warmup_s > 0:
            case.testbed.wait(run, case.warmup_s)
        yield run
    finally:
        case.testbed.stop(run)

"""A scripted fake testbed, for fast planner tests. It is NOT a model of any engine.

It answers instantly from a script: per operator the true rate of one task o_i (records/s) and its
input ratio r_i (records per source event), the single-task quantities of the paper's section V
(Table I), optionally per memory per slot; or instead a canned capacity function
``(configuration, memory_mb) -> MST`` for tests that want exact MSTs. What the planner's tests rely on:

* a configuration's capacity is ``min_i pi_i o_i / r_i`` (the bound BIDS2 maximizes, Eq. 1-4) or the
  canned function's value;
* a window at target T achieves ``min(T, capacity, max_source_rate)``, ``source_saturated`` when the
  source's own cap binds; each operator takes ``achieved x r_i`` records/s and its tasks are busy
  ``achieved x r_i / (pi_i o_i)`` of the time, so that ``SingleTaskMetrics.from_measurement`` on a
  single-task window gives the scripted o_i and r_i back (with a canned capacity: r_i = 1 and every
  operator busy ``achieved / capacity``); back-pressure is not scripted (always 0);
* pending records grow at ``T - achieved`` (a strict rate limiter: lost emission stays pending);
* a virtual clock that ``wait`` and ``observe`` advance;
* a failure script: ``{k: error}`` (a TestbedError class or instance) makes the k-th call of
  ``observe`` (counted from 1 over the testbed's life, all runs together) raise it once, after its
  window's time has passed, so that the estimator's discard-and-retry (section IV) can be tested.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

import numpy as np

from streambed.errors import TestbedError, UserError
from streambed.metrics import window
from streambed.model import Budget, Configuration, Measurement, OperatorRates, Query, TestbedInfo
from streambed.testbed.base import Run, check_start

Rates = Mapping[str, OperatorRates | tuple[float, float]]
"""Per operator: (o_i, r_i), the true rate of one task and the input ratio."""
Capacity = Callable[[Configuration, int], float]


class FakeTestbed:
    """A Testbed that answers from a script (see the module docstring)."""

    name = "fake"

    def __init__(self, query: Query, rates: Rates | Mapping[int, Rates] | None = None, *,
                 capacity: Capacity | None = None, max_slots: int = 16,
                 memory_per_slot: tuple[int, ...] | None = None, sample_period: float = 5.0,
                 source_parallelism: int = 4, max_source_rate: float = TestbedInfo.max_source_rate,
                 failures: Mapping[int, TestbedError | type[TestbedError]] | None = None):
        """``rates``: {operator: (o_i, r_i)} at every memory, or {memory_mb: {operator: (o_i, r_i)}};
        ``capacity`` instead: the MST of a configuration at a memory per slot. ``memory_per_slot``
        defaults to the memories of per-memory rates, else (1024, 4096)."""
        if (rates is None) == (capacity is None):
            raise ValueError("FakeTestbed: script either per-operator rates or a capacity function")
        self._query = query
        self._capacity_fn = capacity
        self._rates: dict[int | None, dict[str, OperatorRates]] = {}
        if rates is not None:
            per_memory = rates if all(isinstance(k, int) for k in rates) else {None: rates}
            for memory, ops in per_memory.items():
                if set(ops) != set(query.operators):
                    raise ValueError(f"FakeTestbed: rates for {sorted(ops)}, the query has {list(query.operators)}")
                self._rates[memory] = {op: r if isinstance(r, OperatorRates) else OperatorRates(*r)
                                      for op, r in ops.items()}
            if not self._rates:
                raise ValueError("FakeTestbed: no rates scripted")
        scripted = tuple(sorted(m for m in self._rates if m is not None))
        self._info = TestbedInfo(name="fake", max_slots=max_slots,
                                 memory_per_slot=tuple(memory_per_slot or scripted or (1024, 4096)),
                                 sample_period=sample_period, source_parallelism=source_parallelism,
                                 max_source_rate=max_source_rate, notes=("scripted fake testbed (tests only)",))
        if scripted and not set(self._info.memory_per_slot) <= set(scripted):
            raise ValueError("FakeTestbed: memory_per_slot offers memories the rates do not script")
        self.failures = dict(failures or {})
        self.observes = 0
        """Calls of observe so far (the failure script counts them)."""
        self.starts = 0
        self._budget: Budget | None = None
        self._runs: dict[str, dict] = {}
        self._clock = 0.0

    # -- the script's truth ---------------------------------------------------------------------

    def rates(self, memory_mb: int) -> dict[str, OperatorRates]:
        """The scripted o_i and r_i at a memory per slot (none with a canned capacity)."""
        if self._capacity_fn is not None:
            return {}
        return self._rates.get(memory_mb) or self._rates[None]

    def capacity(self, configuration: Configuration, memory_mb: int) -> float:
        """The configuration's true MST: what a window achieves at any rate above it."""
        if self._capacity_fn is not None:
            return float(self._capacity_fn(configuration, memory_mb))
        rates = self.rates(memory_mb)
        return min(configuration[op] * r.true_rate / r.input_ratio for op, r in rates.items() if r.input_ratio > 0)

    # -- Testbed protocol ------------------------------------------------------------------------

    def info(self) -> TestbedInfo:
        return self._info

    def query(self, name: str) -> Query:
        if name != self._query.name:
            raise UserError(f"query: the fake testbed runs {self._query.name}, not {name!r}")
        return self._query

    def prepare(self, budget: Budget) -> None:
        self.info().check_budget(budget)
        self._budget = budget

    def start(self, query: str, configuration: Configuration, rate: float) -> Run:
        q = self.query(query)
        check_start(self._budget, configuration)
        _check_rate(rate)
        self.starts += 1
        run = Run(f"fake-{self.starts}", q, configuration, self._budget, self._clock, rate)
        self._runs[run.id] = {"rate": float(rate), "pending": 0.0}
        return run

    def set_rate(self, run: Run, rate: float) -> None:
        _check_rate(rate)
        self._state(run)["rate"] = float(rate)
        run.rate = rate

    def wait(self, run: Run, seconds: float) -> None:
        state = self._state(run)
        achieved, _ = self._achieved(state["rate"], self._capacity(run))
        state["pending"] += self._advance(seconds) * (state["rate"] - achieved)

    def observe(self, run: Run, seconds: float) -> Measurement:
        state = self._state(run)
        self.observes += 1
        t0, p0, target = self._clock, state["pending"], state["rate"]
        capacity = self._capacity(run)  # once per window: a canned capacity may vary with now()
        achieved, saturated = self._achieved(target, capacity)
        end = t0 + self._advance(seconds)
        state["pending"] = p0 + (target - achieved) * (end - t0)
        failure = self.failures.get(self.observes)
        if isinstance(failure, type):
            failure = failure(f"{run.id}: scripted failure of observe call {self.observes}")
        if failure is not None:
            raise failure  # after the window's time is spent, as on an engine
        period = self._info.sample_period
        times = list(np.arange(t0 + period, end + 1e-9, period)) or [end]
        return window.measurement(
            start=t0, end=end, target_rate=target, emitted=achieved * (end - t0), offered=target * (end - t0),
            sample_times=times, sample_emitted_rates=[achieved] * len(times),
            sample_pending=[p0 + (target - achieved) * (t - t0) for t in times], pending_start=p0,
            operators=self._operators(run, achieved, capacity), source_saturated=saturated)

    def stop(self, run: Run) -> None:
        self._runs.pop(run.id, None)

    def now(self) -> float:
        return self._clock

    # ------------------------------------------------------------------------------------------

    def _state(self, run: Run) -> dict:
        try:
            return self._runs[run.id]
        except KeyError:
            raise UserError(f"run {run.id} is not running") from None

    def _advance(self, seconds: float) -> float:
        if not (math.isfinite(seconds) and seconds >= 0):
            raise UserError(f"duration: expected a non-negative number of seconds, got {seconds}")
        self._clock += seconds
        return seconds

    def _capacity(self, run: Run) -> float:
        return self.capacity(run.configuration, run.budget.memory_mb)

    def _achieved(self, target: float, capacity: float) -> tuple[float, bool]:
        """(achieved rate, whether the source's own cap bound it)."""
        job = min(target, capacity)
        cap = self._info.max_source_rate
        return min(job, cap), cap < job

    def _operators(self, run: Run, achieved: float, capacity: float):
        cfg = run.configuration
        rates = self.rates(run.budget.memory_mb)
        names = self._query.operators
        parallelism = [cfg[op] for op in names]
        ratio = {op: rates[op].input_ratio if rates else 1.0 for op in names}
        busy, rin, rout = [], [], []
        for op, p in zip(names, parallelism):
            if rates:
                load = achieved * ratio[op] / (p * rates[op].true_rate)
            else:
                load = achieved / capacity if capacity > 0 else 0.0
            # a join's input is split evenly among its inputs, for the upstream's output rate
            out = sum(achieved * ratio[down] / len(self._query.inputs(down)) for down in self._query.outputs(op))
            busy += [min(1.0, load)] * p
            rin += [achieved * ratio[op] / p] * p
            rout += [out / p] * p
        zeros = np.zeros(len(busy))
        return window.operator_metrics(names, parallelism, np.array(busy), zeros, np.array(rin), np.array(rout))


def _check_rate(rate: float) -> None:
    if not (math.isfinite(rate) and rate >= 0):
        raise UserError(f"rate: expected a non-negative number of events/s, got {rate}")

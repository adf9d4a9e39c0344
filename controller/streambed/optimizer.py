"""Configuration Optimizer: the best configuration of a slot budget (paper section V, Table I, Eq. 1-4).

From the metrics of a single-task run (parallelism 1 everywhere), each operator i has
  o_i  the true processing rate of one task: its observed input rate over its busyness (DS2's
       definition, busyness floored so an idle operator does not look infinitely fast), and
  r_i  its input rate over the source's rate (a multi-input operator counts all its inputs).
BIDS2 then solves the MILP
  max lambda_src  s.t.  lambda_src * r_i <= pi_i * o_i,  sum_i pi_i = P,  pi_i >= 1 integer
with PuLP and the CBC solver (shipped by cbcbox, PuLP's ``cbc`` extra), and the Capacity Estimator measures the resulting configuration's MST.
DS2's one-pass rule (Kalavri et al., OSDI'18: pi_i = ceil(target * r_i / o_i)) is the baseline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import cbcbox
import pulp

from .errors import UserError
from .model import Budget, Configuration, Measurement, Query

BUSYNESS_FLOOR = 0.01
"""Lowest busyness used to compute a true rate: below it the measurement says little."""


@dataclass(frozen=True)
class OperatorRates:
    true_rate: float
    """o_i: records/s one task processes when fully busy."""
    input_ratio: float
    """r_i: records into the operator per source event."""


@dataclass(frozen=True)
class SingleTaskMetrics:
    """BIDS2's input: per operator, in the query's topological order."""

    query: str
    memory_mb: int
    operators: tuple[tuple[str, OperatorRates], ...]
    source_rate: float = 0.0
    """The source rate of the run the metrics come from (its MST)."""

    @classmethod
    def from_measurement(cls, query: Query, memory_mb: int, m: Measurement,
                         busyness_floor: float = BUSYNESS_FLOOR) -> "SingleTaskMetrics":
        if m.achieved_rate <= 0:
            raise UserError(f"single-task metrics of {query.name}: the run sustained no rate at all")
        ops = []
        for name in query.operators:
            om = m.operator(name)
            per_task_in = om.input_rate / om.parallelism
            busy = max(om.busyness, busyness_floor)
            ops.append((name, OperatorRates(true_rate=per_task_in / busy, input_ratio=om.input_rate / m.achieved_rate)))
        return cls(query.name, int(memory_mb), tuple(ops), m.achieved_rate)

    def names(self) -> list[str]:
        return [n for n, _ in self.operators]

    def to_dict(self) -> dict:
        return {"query": self.query, "memory_mb": self.memory_mb, "source_rate": self.source_rate,
                "operators": [{"name": n, "true_rate_per_task": r.true_rate, "input_ratio": r.input_ratio}
                              for n, r in self.operators]}

    @classmethod
    def from_dict(cls, d: Mapping) -> "SingleTaskMetrics":
        return cls(d["query"], int(d["memory_mb"]),
                   tuple((o["name"], OperatorRates(float(o["true_rate_per_task"]), float(o["input_ratio"])))
                         for o in d["operators"]), float(d.get("source_rate", 0.0)))


@dataclass(frozen=True)
class Bids2Solution:
    parallelism: dict[str, int]
    predicted_rate: float
    """The objective lambda_src: the source rate the configuration should sustain if tasks scaled linearly."""


def bids2(metrics: SingleTaskMetrics, slots: int, *, time_limit_s: float = 60.0) -> Bids2Solution:
    """Bounded-inverse DS2 (Eq. 1-4): the configuration of exactly ``slots`` slots that maximizes the
    sustainable source rate, assuming each task of operator i processes o_i records/s."""
    names = metrics.names()
    if slots < len(names):
        raise UserError(f"slots: BIDS2 needs at least one slot per operator ({len(names)} for {metrics.query}), "
                        f"got {slots}")
    prob = pulp.LpProblem("bids2", pulp.LpMaximize)
    lam = prob.add_variable("lambda_src", lowBound=0)
    pi = {n: prob.add_variable(f"pi_{i}", lowBound=1, cat="Integer") for i, n in enumerate(names)}
    prob += lam
    for n, rates in metrics.operators:
        if rates.input_ratio > 0:
            prob += lam * rates.input_ratio <= pi[n] * rates.true_rate
    prob += pulp.lpSum(pi.values()) == slots
    status = prob.solve(pulp.COIN_CMD(path=cbcbox.cbc_bin_path(), msg=False, timeLimit=time_limit_s))
    if pulp.LpStatus[status] != "Optimal":
        raise UserError(f"BIDS2 found no optimal configuration of {slots} slots ({pulp.LpStatus[status]})")
    parallelism = {n: int(round(pi[n].value())) for n in names}
    return Bids2Solution(parallelism, float(lam.value()))


def bids2_rate(metrics: SingleTaskMetrics, parallelism: Mapping[str, int]) -> float:
    """BIDS2's prediction for any configuration: min_i pi_i o_i / r_i (the constraint that binds)."""
    return min(parallelism[n] * r.true_rate / r.input_ratio for n, r in metrics.operators if r.input_ratio > 0)


def ds2(metrics: SingleTaskMetrics, target_rate: float) -> dict[str, int]:
    """DS2's one-pass rule: each operator gets the parallelism that its share of the target rate needs
    at its true processing rate, pi_i = ceil(target * r_i / o_i) (at least 1)."""
    return {n: max(1, math.ceil(target_rate * r.input_ratio / r.true_rate - 1e-9)) for n, r in metrics.operators}


def ds2_within(metrics: SingleTaskMetrics, slots: int) -> tuple[dict[str, int], float]:
    """DS2 on a budget: the largest target rate whose one-pass parallelism fits in ``slots`` (DS2
    itself leaves any remaining slots unused), and that parallelism."""
    lo, hi = 0.0, bids2(metrics, slots).predicted_rate * 2 + 1.0
    best = {n: 1 for n in metrics.names()}
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        par = ds2(metrics, mid)
        if sum(par.values()) <= slots:
            lo, best = mid, par
        else:
            hi = mid
    return best, lo


@dataclass
class OptimizerResult:
    """One call of the Configuration Optimizer: the configuration of a budget and its measured MST."""

    budget: Budget
    configuration: Configuration
    predicted_rate: float
    mst: float
    estimate: dict
    """The Capacity Estimator's estimate (Estimate.to_dict())."""

    def to_dict(self) -> dict:
        return {"slots": self.budget.slots, "memory_mb": self.budget.memory_mb,
                "configuration": self.configuration.as_dict(), "predicted_rate": self.predicted_rate,
                "mst": self.mst, "estimate": self.estimate}


class ConfigurationOptimizer:
    """Best configuration of a budget, measured: single-task metrics cached per memory profile."""

    def __init__(self, estimator, query: Query):
        self.estimator = estimator
        self.query = query
        self._single: dict[int, tuple[SingleTaskMetrics, dict]] = {}
        self.calls = 0
        """Optimizer calls (the paper's #CO)."""

    def single_task(self, memory_mb: int) -> SingleTaskMetrics:
        """The single-task metrics of a memory profile, measured by the estimator when missing."""
        return self._single_task(memory_mb)[0]

    def measured_single_task(self) -> dict[int, SingleTaskMetrics]:
        """The single-task metrics measured so far, by memory profile."""
        return {m: v[0] for m, v in sorted(self._single.items())}

    def _single_task(self, memory_mb: int) -> tuple[SingleTaskMetrics, dict]:
        if memory_mb not in self._single:
            cfg = Configuration.single_task(self.query)
            est = self.estimator.estimate(self.query.name, Budget(cfg.slots, memory_mb), cfg,
                                          f"single/{memory_mb}MB")
            if est.measurement is None:
                raise UserError(f"{self.query.name}: the single-task configuration sustained no rate at "
                                f"{memory_mb} MB per slot; no metrics for BIDS2")
            metrics = SingleTaskMetrics.from_measurement(self.query, memory_mb, est.measurement)
            self._single[memory_mb] = (metrics, est.to_dict())
        return self._single[memory_mb]

    def optimize(self, budget: Budget, key: str) -> OptimizerResult:
        """BIDS2 for the budget, then the estimator's MST of that configuration."""
        self.calls += 1
        if budget.slots < self.query.size:
            raise UserError(f"slots: {self.query.name} has {self.query.size} operators; a budget of "
                            f"{budget.slots} slots cannot give each one a task")
        cached = budget.memory_mb in self._single
        metrics, single_est = self._single_task(budget.memory_mb)
        solution = bids2(metrics, budget.slots)
        cfg = Configuration.of(self.query, solution.parallelism)
        if cfg == Configuration.single_task(self.query) and not cached:
            # the single-task run this call just measured is the answer
            return OptimizerResult(budget, cfg, solution.predicted_rate, single_est["mst"], single_est)
        # Section V: the cache serves BIDS2, but a single-task configuration the explorer asks for
        # again is measured again (runs vary; the explorer repeats points to reduce that noise).
        est = self.estimator.estimate(self.query.name, budget, cfg, key)
        return OptimizerResult(budget, cfg, solution.predicted_rate, est.mst, est.to_dict())

"""Configuration Optimizer: the best configuration of a slot budget, measured (paper section V).

Single-task metrics (every operator at parallelism 1) are measured once per memory per slot and
cached; a configuration policy (policies/: BIDS2 by default) turns them and the budget into a
configuration; the Capacity Estimator measures that configuration's MST. The policy's answers keep
to what deploying them imposes (DeploymentConstraints): the source topic's partitions and whole key
groups per task, which single-task metrics cannot show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Protocol

from ..errors import UserError
from .estimator import Estimator
from ..model import Budget, Configuration, Measurement, Query, SingleTaskMetrics, check_slots, keygroups, partitions
from ..model.measurement import key_skews
from .policies import ConfigurationPolicy, Proposal, policy_named


def unit_counts(query: Query, parallelism: Mapping[str, int], fixed: int | None) -> dict[str, int]:
    """Per operator whose tasks split whole units, how many: a keyed operator's key groups (the job's
    max parallelism ``fixed`` or Flink's default), a source reader's partitions (where known)."""
    units = {op: keygroups.max_parallelism(parallelism[op], fixed) for op in query.operators if op in query.keyed}
    if query.source_partitions is not None:
        units.update({op: query.source_partitions for op in partitions.readers(query)})
    return units


def group_bound(query: Query, metrics: SingleTaskMetrics, parallelism: Mapping[str, int]) -> float:
    """The source rate the configuration's whole units allow: a keyed operator's busiest task owns
    ceil(M/p) of its M key groups, a source reader's ceil(P/p) of the P partitions, and with evenly
    loaded units it fills first (keygroups.group_bound_capacity); inf where no operator splits units."""
    rates = dict(metrics.operators)
    bounds = [math.inf]
    for op, units in unit_counts(query, parallelism, metrics.max_parallelism).items():
        r = rates[op]
        if r.input_ratio > 0:
            bounds.append(keygroups.group_bound_capacity(r.true_rate / r.input_ratio, parallelism[op], units))
    return min(bounds)


def alignment(query: Query, parallelism: Mapping[str, int], fixed: int | None = None) -> dict[str, dict]:
    """What a plan says of its alignment: per keyed operator and source reader, its tasks, the units
    they split (key groups or partitions), the fewest and most per task, and the imbalance
    ceil(M/p)/(M/p) it is sized with (1: p divides M)."""
    out = {}
    for op, units in unit_counts(query, parallelism, fixed).items():
        p = parallelism[op]
        lo, hi = keygroups.units_per_task(p, units)
        out[op] = {"tasks": p, "units": "key groups" if op in query.keyed else "partitions", "count": units,
                   "per_task": [lo, hi], "imbalance": keygroups.imbalance(p, units)}
    return out


def alignment_notes(report: Mapping[str, Mapping]) -> tuple[str, ...]:
    """One line per operator of an alignment report whose tasks split their units unevenly."""
    return tuple(f"{op}: {a['tasks']} tasks over {a['count']} {a['units']} ({a['per_task'][1]} for the busiest): "
                 f"sized for an imbalance of {a['imbalance']:.2f}"
                 for op, a in report.items() if a["imbalance"] > 1.0 + 1e-9)


class DeploymentConstraints:
    """A policy whose configurations keep to what deploying them imposes (docs/planner.md, "Sources and
    key groups"): the source's readers at most the topic's partitions; a keyed operator (or a source
    reader) at the fewest tasks that keep its busiest task's units, where the prediction does not fall;
    the slots so freed to the operator that gains most, while one gains, the rest given back. Predictions
    take the whole units' imbalance into account (group_bound), so that a policy assuming 1/p of the
    input per task (bids2) is sized with it. Everything else is the wrapped policy's."""

    def __init__(self, policy: ConfigurationPolicy, query: Query):
        self.policy, self.query = policy, query
        self.name = policy.name

    def __getattr__(self, name: str):
        return getattr(self.policy, name)

    def predict(self, metrics: SingleTaskMetrics, parallelism: Mapping[str, int]) -> float:
        return min(self.policy.predict(metrics, parallelism), group_bound(self.query, metrics, parallelism))

    def configure(self, metrics: SingleTaskMetrics, slots: int) -> Proposal:
        proposal = self.policy.configure(metrics, slots)
        q = self.query
        if not q.keyed and q.source_partitions is None:
            return proposal
        par = dict(proposal.parallelism)
        for op in partitions.readers(q):
            par[op] = partitions.bounded(par[op], q.source_partitions)
        best = self.predict(metrics, par)
        cut = {}
        for op, units in unit_counts(q, par, metrics.max_parallelism).items():
            p = (keygroups.aligned_keyed(par[op], metrics.max_parallelism) if op in q.keyed
                 else keygroups.aligned(par[op], units))
            if p < par[op]:
                trial = {**par, op: p}
                value = self.predict(metrics, trial)
                if value >= best * (1 - 1e-12):
                    cut[op] = par[op] - p
                    par, best = trial, value
        par, best = self._spend(metrics, par, best, slots - sum(par.values()))
        # Tasks no operator gains from go back where the policy put them: the budget stays whole, so
        # that measured budgets and their MSTs keep meaning slots used. A plan saves them anyway, as
        # its last pass takes the smallest budget that reaches the rate (sizing.configured_slots).
        spare = slots - sum(par.values())
        for op, n in cut.items():
            back = min(n, spare)
            par, spare = {**par, op: par[op] + back}, spare - back
        return Proposal(par, self.predict(metrics, par))

    def _spend(self, metrics: SingleTaskMetrics, par: dict[str, int], best: float,
               spare: int) -> tuple[dict[str, int], float]:
        """Spare slots one at a time to the operator whose extra task raises the prediction most (no
        source reader beyond the partitions); stops when no extra task raises it."""
        limit = self.query.source_partitions
        readers = set(partitions.readers(self.query))
        while spare > 0:
            pick, value = None, best
            for op in self.query.operators:
                if op in readers and limit is not None and par[op] >= limit:
                    continue
                v = self.predict(metrics, {**par, op: par[op] + 1})
                if v > value * (1 + 1e-12):
                    pick, value = op, v
            if pick is None:
                break
            par, best, spare = {**par, pick: par[pick] + 1}, value, spare - 1
        return par, best


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


class Optimizer(Protocol):
    """What the Resource Explorer needs from a Configuration Optimizer."""

    query: Query
    policy: ConfigurationPolicy

    def optimize(self, budget: Budget, key: str) -> OptimizerResult:
        """The policy's configuration of the budget and its measured MST; ``key`` names it in the ledger."""

    def single_task(self, memory_mb: int) -> SingleTaskMetrics:
        """The single-task metrics of a memory per slot, measured when missing."""

    def measured_single_task(self) -> dict[int, SingleTaskMetrics]:
        """The single-task metrics measured so far, by memory per slot (nothing is measured)."""


class ConfigurationOptimizer:
    """Best configuration of a budget, measured: single-task metrics cached per memory per slot."""

    def __init__(self, estimator: Estimator, query: Query, policy: ConfigurationPolicy | None = None):
        self.estimator = estimator
        self.query = query
        self.policy = DeploymentConstraints(policy or policy_named("bids2"), query)
        self._single: dict[int, tuple[SingleTaskMetrics, dict]] = {}
        self._largest: dict[int, tuple[int, Measurement]] = {}
        """Per memory per slot, the largest run measured so far (slots, its measurement at the MST):
        how unevenly its tasks were loaded tells the policy what 1/pi per task hides."""
        self._runs: list[tuple[Measurement, int | None]] = []
        """Every run measured at its MST, with its max parallelism: the keyed operators' per-task input
        records, pooled, give their key concentration (model/keyskew.py) whatever the memory."""
        self.calls = 0
        """Optimizer calls (the paper's #CO)."""

    def single_task(self, memory_mb: int) -> SingleTaskMetrics:
        """The single-task metrics of a memory per slot, measured by the estimator when missing."""
        return self._single_task(memory_mb)[0]

    def measured_single_task(self) -> dict[int, SingleTaskMetrics]:
        """The single-task metrics measured so far, by memory per slot."""
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
        """The policy's configuration for the budget, then the estimator's MST of that configuration."""
        self.calls += 1
        check_slots(budget.slots, self.query.size, query=self.query.name)
        cached = budget.memory_mb in self._single
        metrics, single_est = self._single_task(budget.memory_mb)
        if budget.memory_mb in self._largest:
            metrics = metrics.with_imbalance(self.query, self._largest[budget.memory_mb][1])
        metrics = metrics.with_key_skew(key_skews(self.query, self._runs))
        solution = self.policy.configure(metrics, budget.slots)
        cfg = Configuration.of(self.query, solution.parallelism)
        if cfg == Configuration.single_task(self.query) and not cached:
            # the single-task run this call just measured is the answer
            return OptimizerResult(budget, cfg, solution.predicted_rate, single_est["mst"], single_est)
        # Section V: the cache serves BIDS2, but a single-task configuration the explorer asks for
        # again is measured again (runs vary; the explorer repeats points to reduce that noise).
        est = self.estimator.estimate(self.query.name, budget, cfg, key)
        if est.measurement is not None:
            self._runs.append((est.measurement, cfg.max_parallelism))
        if est.measurement is not None and cfg.slots >= self._largest.get(budget.memory_mb, (0, None))[0]:
            self._largest[budget.memory_mb] = (cfg.slots, est.measurement)
        return OptimizerResult(budget, cfg, solution.predicted_rate, est.mst, est.to_dict())

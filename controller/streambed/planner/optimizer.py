"""Configuration Optimizer: the best configuration of a slot budget, measured (paper section V).

Single-task metrics (every operator at parallelism 1) are measured once per memory per slot and
cached; a configuration policy (policies/: BIDS2 by default) turns them and the budget into a
configuration; the Capacity Estimator measures that configuration's MST.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..errors import UserError
from .estimator import Estimator
from ..model import Budget, Configuration, Measurement, Query, SingleTaskMetrics, check_slots
from ..model.measurement import key_skews
from .policies import ConfigurationPolicy, policy_named


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


class ConfigurationOptimizer:
    """Best configuration of a budget, measured: single-task metrics cached per memory per slot."""

    def __init__(self, estimator: Estimator, query: Query, policy: ConfigurationPolicy | None = None):
        self.estimator = estimator
        self.query = query
        self.policy = policy or policy_named("bids2")
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

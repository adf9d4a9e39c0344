"""What an exploration holds: the explorer's settings, the points of D it measured, and its result
(paper section VI). Plain data, shared by the search, the model selection, the sizing and the
checkpoints; exploration.json and a plan campaign's ledger hold ``Exploration.to_dict``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..model import FAMILIES, FAMILY_SPREAD_LIMIT, MAX_PLAN_SLOTS, Features, Observation
from .optimizer import OptimizerResult


@dataclass(frozen=True)
class ExplorerSettings:
    """The Resource Explorer's settings: its search, its stop rule and its plan's guard rails (section VI)."""

    families: tuple[str, ...] = FAMILIES
    features: Features = Features()
    min_after_corners: int = 3
    max_measurements: int = 20
    rmse_growth: float = 0.10
    """Stop when the best LOOCV RMSE grows by more than this fraction between two measurements."""
    seed: int = 0
    safety: float = 1.10
    max_plan_slots: int = MAX_PLAN_SLOTS
    max_extrapolation: float = 50.0
    """Guard rail: a plan uses at most this many times the largest budget measured (the paper planned
    22x its testbed; its artifact's inverse solve stopped at 2,000 slots, 42x)."""
    risk: float | None = None
    """Size for this risk of under-provisioning (the bootstrap lower bound, risk_solve) instead of the
    flat ``safety`` factor; None: the paper's flat factor."""
    bootstrap_samples: int = 400
    min_marginal: float = 0.25
    """Guard rail: a plan stops where the model's gain per added slot falls below this fraction of its
    gain at the largest budget measured. Beyond, a small error of the fitted curve moves the answer by
    many slots (a log model 4x beyond the testbed, a sqrt model 16x)."""
    max_family_spread: float = FAMILY_SPREAD_LIMIT
    """The candidate families disagree when their slot counts differ by more than this factor: a
    checkpoint (ResourceExplorer.checkpoint) then measures where they diverge most."""
    search: str = "bayesian"
    """The search strategy that proposes D's points after the corners (search.SEARCHES)."""


CHECKPOINT = "checkpoint"
"""The phase of a staged measurement beyond the testbed (ResourceExplorer.checkpoint)."""


@dataclass
class ExplorationPoint:
    memory_mb: int
    slots: int
    mst: float
    configuration: dict[str, int]
    predicted_rate: float
    rmse: float
    """The best LOOCV RMSE of D once this point was added (the search's cost)."""
    testbed_seconds: float
    phase: str
    """corner, search, or checkpoint (a staged measurement beyond the testbed, ResourceExplorer.checkpoint)."""
    trace: list[dict] = field(default_factory=list)
    """The estimate's windows: target, achieved, success, bounds and times (for Fig. 6-like plots)."""
    source_limited: bool = False
    """The testbed's source, not the job, bounded this MST (it is then a lower bound)."""
    measurement: dict | None = None
    """The estimate's measurement at the MST (per-operator busyness and input rates): the largest run
    of a profile gives the plan's last BIDS2 pass its rates (section VI, "Model usage")."""
    max_parallelism: int | None = None
    """The job's max parallelism, when the configuration set it (a checkpoint measures the plan's own)."""

    @classmethod
    def of(cls, result: OptimizerResult, phase: str) -> "ExplorationPoint":
        """An optimizer call as a point of D (its RMSE is filled in once D holds it)."""
        est = result.estimate
        return cls(result.budget.memory_mb, result.budget.slots, result.mst, result.configuration.as_dict(),
                   result.predicted_rate, math.nan, est["testbed_seconds"], phase, compact_trace(est),
                   bool(est.get("source_limited", False)), est.get("measurement"),
                   result.configuration.max_parallelism)

    def observation(self) -> Observation:
        return Observation(self.memory_mb, self.slots, self.mst)

    def estimate_summary(self) -> dict:
        return {"mst": self.mst, "windows": self.trace}

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def compact_trace(estimate: dict) -> list[dict]:
    """The windows of an estimate without their per-operator metrics."""
    return [{"rate": w["rate"], "success": w["success"], "min_rate": w["min_rate"], "max_rate": w["max_rate"],
             "measurement": {k: w["measurement"][k] for k in ("start", "end", "achieved_rate", "target_rate")}}
            for w in estimate["windows"]]


@dataclass
class Exploration:
    points: list[ExplorationPoint] = field(default_factory=list)
    stop_reason: str = ""
    loocv: dict[str, float] = field(default_factory=dict)
    split: dict[str, float] = field(default_factory=dict)
    family: str = ""
    selection: str = ""
    """The rule that chose the family: split, or loocv when the split was degenerate."""
    model: dict = field(default_factory=dict)
    optimizer_calls: int = 0
    estimator_calls: int = 0
    testbed_seconds: float = 0.0

    def observations(self) -> list[Observation]:
        return [p.observation() for p in self.points]

    @classmethod
    def from_dict(cls, d: dict) -> "Exploration":
        """An exploration as ``to_dict`` (exploration.json, a plan campaign's result) wrote it."""
        return cls([ExplorationPoint(**p) for p in d["points"]], d.get("stop_reason", ""), dict(d.get("loocv_rmse", {})),
                   dict(d.get("split_rmse", {})), d.get("family", ""), d.get("selection", ""), dict(d["model"]),
                   d.get("optimizer_calls", 0), d.get("estimator_calls", 0), d.get("testbed_seconds", 0.0))

    def to_dict(self) -> dict:
        return {"points": [p.to_dict() for p in self.points], "stop_reason": self.stop_reason,
                "loocv_rmse": self.loocv, "split_rmse": self.split, "family": self.family, "selection": self.selection,
                "model": self.model,
                "optimizer_calls": self.optimizer_calls, "estimator_calls": self.estimator_calls,
                "testbed_seconds": self.testbed_seconds}


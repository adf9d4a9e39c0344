"""What an exploration holds: the explorer's settings, the points of D it measured, and its result
(paper section VI). Plain data, shared by the search, the model selection, the sizing and the
checkpoints; exploration.json and a plan campaign's ledger hold ``Exploration.to_dict``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..model import FAMILIES, FAMILY_SPREAD_LIMIT, MAX_PLAN_SLOTS, Features, Observation
from .optimizer import OptimizerResult


BEYOND_TRUSTED_KEYS = ("configured", "agree")
"""ExplorerSettings.beyond_trusted_keys' values."""
DECLINE_LAWS = ("lag", "linear")
"""ExplorerSettings.decline_law's values (sizing.lagged)."""
RATES_HOLD = 0.90
"""How far the runs' MSTs may fall below what the smallest run's rates predict for them, at the largest budget
against the smallest, for a plan to trust its configuration's capacity beyond the budgets D measured
(sizing.rates_hold). Section G's recorded explorations of seeds 20261207, 20261210 and 20261211 read a
median of 0.98 and 11 of 60 below 0.90 (states outgrowing the slot, hot keys: rates that do fall with the
load; bench/experiments/rates_kept.py); q8's keyed operators under the paper's sqrt law, whose every task slows
as the budget grows, 0.83 (bench/experiments/keys_on_concave.py, docs/evaluation.md)."""


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
    beyond_trusted: str = "agree"
    """Where a plan beyond the model's trusted range starts (caveats.beyond_trusted_start); "off": such a rate is
    unreachable, as the guard rails alone say."""
    below_model_with_keys: float = FAMILY_SPREAD_LIMIT
    """With the data's key statistics, the last pass scans from the model's budget divided by this (the
    families' own agreement margin) for the smallest whose configuration reaches the rate, where without
    them it only grows the model's budget (ResourceExplorer._configure); 1: the same with them."""
    rates_hold_floor: float = RATES_HOLD
    """The least share of the smallest budget's efficiency the largest keeps for the rules that trust the
    configuration's capacity with the data's keys to apply (sizing.rates_hold); 0: always."""
    beyond_trusted_keys: str = "configured"
    """With the data's key statistics, where beyond the trusted range the families disagree: "configured", the
    smallest budget from the smallest family's answer to ``max_family_spread`` x the largest whose own
    configuration reaches the rate at the measured efficiency (ResourceExplorer._beyond_trusted); "agree":
    unreachable, as without them."""
    outnumbered_keys: bool = True
    """A keyed operator planned on more tasks than its keys' worth (1 / H), where a key the runs could not
    exclude would hold those tasks below the rate (sizing.outnumbered_keys), makes the plan of that memory
    unreachable until the data's key statistics or a checkpoint tell; False: a plan with a key warning."""
    decline_law: str = "lag"
    """How the efficiency measured on the testbed declines beyond it (sizing.lagged): "lag", the time per
    record grows with the slowest of P tasks' lag; "linear", eta itself falls along it (down to 0)."""
    confirm_rounds: int = 3
    """A plan the testbed can hold is measured in its own configuration (ResourceExplorer.confirm) and, where
    short of the rate, made again with that measurement in D, at most this many times; 0: never measured."""
    stalls: bool = True
    """An operator whose pauses held the testbed's largest budget (model/stalls.py, ResourceExplorer.stalls) is
    sized by its stall bound; False: its loss lowers every operator's capacity alike (the efficiency)."""
    probes: bool = True
    """Skew probes (ResourceExplorer.probe): a keyed operator planned far wider than the testbed ran it is
    measured at the testbed's widest before the plan trusts its key skew."""
    key_statistics: tuple = ()
    """Key statistics of the data set the campaign replays (model/keystats.KeyStatistics, one per keyed
    operator): the skew model takes their counted key groups where no run contradicts them, else the more
    pessimistic of them and the skew inferred from the runs (keystats.skews_with_data)."""

    def __post_init__(self):
        if self.beyond_trusted_keys not in BEYOND_TRUSTED_KEYS:
            raise ValueError(f"beyond_trusted_keys {self.beyond_trusted_keys!r}: expected one of "
                             f"{', '.join(BEYOND_TRUSTED_KEYS)}")
        if self.decline_law not in DECLINE_LAWS:
            raise ValueError(f"decline_law {self.decline_law!r}: expected one of {', '.join(DECLINE_LAWS)}")
        if self.below_model_with_keys < 1:
            raise ValueError(f"below_model_with_keys {self.below_model_with_keys}: expected 1 or more")
        if not 0 <= self.rates_hold_floor <= 1:
            raise ValueError(f"rates_hold_floor {self.rates_hold_floor}: expected 0 to 1")
        if self.stalls not in (True, False):  # 1 and 0 from a command line's name=value are True and False
            raise ValueError(f"stalls {self.stalls!r}: expected true or false (1 or 0)")


CHECKPOINT = "checkpoint"
"""The phase of a staged measurement beyond the testbed (ResourceExplorer.checkpoint)."""
PROBE = "probe"
"""The phase of a skew probe (ResourceExplorer.probe, planner/probes.py)."""
LOAD_PROBE = "load-probe"
"""The phase of a load probe (ResourceExplorer.probe, planner/probes.py): one keyed operator on one task."""
CONFIRM = "confirm"
"""The phase of a plan's own configuration measured on the testbed that holds it (ResourceExplorer.confirm)."""


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
    """corner, search, checkpoint (a staged measurement beyond the testbed, ResourceExplorer.checkpoint),
    probe (a skew probe), load-probe (a load probe, ResourceExplorer.probe) or confirm (a plan's own
    configuration, ResourceExplorer.confirm)."""
    trace: list[dict] = field(default_factory=list)
    """The estimate's windows: target, achieved, success, bounds and times (for Fig. 6-like plots)."""
    source_limited: bool = False
    """The testbed's source, not the job, bounded this MST (it is then a lower bound)."""
    measurement: dict | None = None
    """The estimate's measurement at the MST (per-operator busyness and input rates): the largest run
    of a profile gives the plan's last BIDS2 pass its rates (section VI, "Model usage")."""
    max_parallelism: int | None = None
    """The job's max parallelism, when the configuration set it (a checkpoint measures the plan's own)."""
    repeated_windows: int = 0
    """Windows of the estimate the testbed observed again because its host was short of CPU."""
    cpu_shortfall: float = 0.0
    """The largest share of their quota the testbed's CPU groups waited for in a window kept (0 where the
    testbed does not read it)."""
    probed: str | None = None
    """The operator a probe measured (None for every other point)."""
    memory_by_operator: dict[str, int] | None = None
    """A confirmation of a plan with memory per operator: each named operator's memory per slot (MB)."""

    @classmethod
    def of(cls, result: OptimizerResult, phase: str) -> "ExplorationPoint":
        """An optimizer call as a point of D (its RMSE is filled in once D holds it)."""
        est = result.estimate
        repeated, shortfall = cpu_disturbance(est)
        return cls(result.budget.memory_mb, result.budget.slots, result.mst, result.configuration.as_dict(),
                   result.predicted_rate, math.nan, est["testbed_seconds"], phase, compact_trace(est),
                   bool(est.get("source_limited", False)), est.get("measurement"),
                   result.configuration.max_parallelism, repeated, shortfall)

    def observation(self) -> Observation:
        return Observation(self.memory_mb, self.slots, self.mst)

    def estimate_summary(self) -> dict:
        return {"mst": self.mst, "windows": self.trace}

    def to_dict(self) -> dict:
        # only a probe names an operator, only a plan's confirmation memory per operator
        return {k: v for k, v in self.__dict__.items() if k not in ("probed", "memory_by_operator") or v is not None}


def cpu_disturbance(estimate: dict) -> tuple[int, float]:
    """An estimate's windows repeated for lack of CPU, and the largest CPU shortfall share of a window kept
    (model/measurement.CpuContention), from its recorded windows (Measurement.to_dict)."""
    repeated, worst = 0, 0.0
    for w in estimate.get("windows", ()):
        m = w.get("measurement") or {}
        repeated += len(m.get("discarded") or ())
        cpu = m.get("cpu")
        if cpu and cpu.get("quota"):
            worst = max(worst, float(cpu.get("shortfall", 0.0)) / float(cpu["quota"]))
    return repeated, worst


def compact_trace(estimate: dict) -> list[dict]:
    """The windows of an estimate, each operator's metrics reduced to what names a stalling one
    (model/stalls.py: its busiest task's busyness, its back-pressure)."""
    return [{"rate": w["rate"], "success": w["success"], "min_rate": w["min_rate"], "max_rate": w["max_rate"],
             "measurement": {k: w["measurement"][k] for k in ("start", "end", "achieved_rate", "target_rate")},
             "operators": [{k: o[k] for k in ("operator", "busyness_max", "backpressure")}
                           for o in w["measurement"].get("operators", ())]}
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
    probes: list[ExplorationPoint] = field(default_factory=list)
    """Skew probes (ResourceExplorer.probe): a keyed operator alone at the testbed's widest, the others at
    one task. Their per-task input records feed the skew model; they are not points of D (their
    configurations are not the policy's), so no model is fitted on them."""
    confirmations: list[ExplorationPoint] = field(default_factory=list)
    """A plan's memory per operator measured on the testbed that holds it (ResourceExplorer.confirm_memory):
    not points of D (their slots do not share one memory)."""

    def observations(self) -> list[Observation]:
        return [p.observation() for p in self.points]

    @classmethod
    def from_dict(cls, d: dict) -> "Exploration":
        """An exploration as ``to_dict`` (exploration.json, a plan campaign's result) wrote it."""
        return cls([ExplorationPoint(**p) for p in d["points"]], d.get("stop_reason", ""), dict(d.get("loocv_rmse", {})),
                   dict(d.get("split_rmse", {})), d.get("family", ""), d.get("selection", ""), dict(d["model"]),
                   d.get("optimizer_calls", 0), d.get("estimator_calls", 0), d.get("testbed_seconds", 0.0),
                   [ExplorationPoint(**p) for p in d.get("probes", ())],
                   [ExplorationPoint(**p) for p in d.get("confirmations", ())])

    def to_dict(self) -> dict:
        d = {"points": [p.to_dict() for p in self.points], "stop_reason": self.stop_reason,
             "loocv_rmse": self.loocv, "split_rmse": self.split, "family": self.family, "selection": self.selection,
             "model": self.model,
             "optimizer_calls": self.optimizer_calls, "estimator_calls": self.estimator_calls,
             "testbed_seconds": self.testbed_seconds}
        if self.probes:  # only when measured: an exploration without probes is recorded as before
            d["probes"] = [p.to_dict() for p in self.probes]
        if self.confirmations:
            d["confirmations"] = [p.to_dict() for p in self.confirmations]
        return d


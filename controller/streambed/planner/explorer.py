"""Resource Explorer: the capacity planning model and the plan (paper section VI, Eq. 5-9).

* Candidate search. The search space is P from the query's number of operators to the testbed's
  slots, and M among the memory sizes per slot. D is bootstrapped with the four corners. Then Bayesian
  optimisation (scikit-optimize: Gaussian process, Expected Improvement) proposes (M, P); each
  proposal is a Configuration Optimizer call, and its cost is the lowest LOOCV RMSE among the
  linear, log and sqrt models on D (Eq. 9). At least 3 measurements follow the corners. The search
  stops when the RMSE grows by more than 10 % between two measurements, or at 20 measurements. A
  proposal may repeat an earlier point; it is then measured again (runs vary).
* Model selection. Each family is fitted on the half of D with the lowest P and tested on the other
  half; the lowest test RMSE wins, and that family is refitted on all of D.
* Model usage. Per memory per slot, the smallest P whose prediction reaches safety x the requested
  rate (1.10 by default), and its configuration from a last BIDS2 pass with the true processing
  rates and input ratios of the largest run of D with that profile (the profile's single-task run
  when D has none).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

from ..errors import UserError
from ..model import (FAMILIES, FAMILY_SPREAD_LIMIT, MAX_PLAN_SLOTS, keygroups, Budget, Configuration, Features, Measurement,
                    Observation, Plan, PlanEntry, Query, SingleTaskMetrics, Surrogate, TestbedInfo, family_spread)
from .estimator import Estimator
from ..model.keyskew import max_z
from ..model.measurement import key_skews
from .optimizer import Optimizer, OptimizerResult
from .policies import skew
from .surrogates import bootstrap_fits, fit, inverse_solve, loocv_rmse, predictions, select_by_split, split_size


@dataclass(frozen=True)
class ExplorerSettings:
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
    final_metrics: str = "largest"
    """Rates of the plan's last BIDS2 pass: "largest" (the paper: the largest run of D with that
    profile) or "single-task" (the profile's single-task run)."""
    sizing: str = "surrogate"
    """How a plan's budget is found: "surrogate" (section VI's inverse solve, then the configuration
    check) or "efficiency" (issue 11's alternative: the configuration check alone, from the query's
    operator count up to the extrapolation limit; docs/evaluation.md measures both)."""
    max_family_spread: float = FAMILY_SPREAD_LIMIT
    slot_slope: str = "auto"
    """"shared": Eq. 6-8, one slot slope for every memory per slot; "auto": also a slot slope per
    memory (Features.interaction) where leave-one-out cross-validation prefers it (select_features)."""
    """The candidate families disagree when their slot counts differ by more than this factor: a
    checkpoint (ResourceExplorer.checkpoint) then measures where they diverge most."""


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
    """The best LOOCV RMSE of D once this point was added (the BO's cost)."""
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


def best_loocv(observations: Sequence[Observation], features: Features, families: Sequence[str]) -> float:
    """Eq. 9's cost: the lowest LOOCV RMSE among the candidate families."""
    return min(loocv_rmse(f, observations, features) for f in families)


def should_stop(rmse_history: Sequence[float], corners: int, settings: ExplorerSettings) -> str | None:
    """The stop rule of section VI: after at least ``min_after_corners`` measurements beyond the corners,
    stop when the RMSE grew by more than ``rmse_growth`` since the previous measurement; always stop at
    ``max_measurements``. Returns the reason, or None to go on."""
    n = len(rmse_history)
    if n >= settings.max_measurements:
        return f"reached {settings.max_measurements} measurements"
    if n - corners >= settings.min_after_corners:
        prev, last = rmse_history[-2], rmse_history[-1]
        if math.isfinite(prev) and last > (1.0 + settings.rmse_growth) * prev:
            # an exact fit (RMSE 0, say on a fake testbed) grows by an unbounded fraction: say so, do not divide
            growth = f"{100 * (last / prev - 1):.0f} %" if prev > 0 else f"from 0 to {last:.3g}"
            return f"RMSE grew by {growth} (> {100 * settings.rmse_growth:.0f} %)"
    return None


def select_features(observations: Sequence[Observation], features: Features, families: Sequence[str],
                    slot_slope: str) -> Features:
    """``features``, or the same with a slot slope per memory (Features.interaction) where
    ``slot_slope`` is "auto" and the best family's leave-one-out RMSE is lower with it (Eq. 9's
    criterion, over structures as well as families). Eq. 6-8 give every memory per slot one slot
    slope: for a memory-bound query (q8's window state) the small memories barely grow with slots
    while 4 GB grows fast, and one shared slope plans 4 GB far too pessimistically. Where memory
    does not change what a slot is worth, the extra term only adds variance and cross-validation
    keeps the paper's models."""
    if slot_slope not in SLOT_SLOPES:
        raise UserError(f"slot_slope: expected one of {', '.join(SLOT_SLOPES)}, got {slot_slope!r}")
    if slot_slope == "shared":
        return features
    per_memory = replace(features, interaction=True)
    shared = best_loocv(observations, features, families)
    if best_loocv(observations, per_memory, families) < shared:
        return per_memory
    return features


SLOT_SLOPES = ("auto", "shared")


def select_family(observations: Sequence[Observation], features: Features, families: Sequence[str],
                  loocv: dict[str, float]) -> tuple[str, str]:
    """Section VI's model selection: train on the half of D with the lowest P, test on the other half.
    When that half holds a single slot count, no family's slope can be judged from it (the paper's own
    q1/q2/q11 data show this): fall back to Eq. 9's lowest LOOCV RMSE. Returns (family, rule used)."""
    ordered = sorted(observations, key=lambda o: (o.slots, o.memory_mb))
    train = ordered[: split_size(ordered, features)]
    if len({o.slots for o in train}) >= 2:
        try:
            return select_by_split(observations, features, families)[0], "split"
        except ValueError:
            pass
    return min(families, key=lambda f: loocv[f]), "loocv (split half had one slot count)"


def check_search_space(query: Query, info: TestbedInfo, memories: Sequence[int], *, memory_option: str = "memory",
                       slots_option: str | None = None) -> list[int]:
    """The explorer's search space (section VI): memories the testbed offers, and at least two slot
    counts, from the query's operator count (one slot each) to the testbed's slots. Returns the
    memories, sorted. ``slots_option`` names the option that set the testbed's size, if one did."""
    memories = sorted(set(int(m) for m in memories))
    unknown = [m for m in memories if m not in info.memory_per_slot]
    if unknown:
        raise UserError(f"{memory_option}: the {info.name} testbed offers {info.offered()} MB per slot, not "
                        f"{', '.join(map(str, unknown))}")
    if info.max_slots <= query.size:
        if slots_option:
            raise UserError(f"{slots_option}: must exceed the {query.size} operators of {query.name} (the explorer needs "
                            f"at least two slot counts, {query.size} and more), got {info.max_slots}")
        raise UserError(f"the {info.name} testbed offers {info.max_slots} slots; {query.name} has {query.size} "
                        f"operators and the explorer needs more slots than operators (at least two slot counts)")
    return memories


def corners(min_slots: int, max_slots: int, memories: Sequence[int]) -> list[tuple[int, int]]:
    """The bootstrap points (memory, slots): lowest and highest P with lowest and highest M. With a
    single memory per slot or a single slot count, midpoints keep at least three distinct points."""
    ms = sorted({min(memories), max(memories)})
    ps = sorted({min_slots, max_slots})
    pts = [(m, p) for m in ms for p in ps]
    if len(pts) < 3 and max_slots > min_slots + 1:
        pts.append((ms[0], (min_slots + max_slots) // 2))
    return pts


class ResourceExplorer:
    def __init__(self, optimizer: Optimizer, info: TestbedInfo, settings: ExplorerSettings | None = None,
                 log: Callable[[str], None] | None = None):
        self.optimizer = optimizer
        self.info = info
        self.settings = settings or ExplorerSettings()
        self.log = log or (lambda message: None)

    def explore(self, memories: Sequence[int], on_point: Callable[[ExplorationPoint], None] | None = None) -> Exploration:
        s = self.settings
        query = self.optimizer.query
        memories = check_search_space(query, self.info, memories)
        lo, hi = query.size, self.info.max_slots
        ex = Exploration()
        history: list[float] = []

        def measure(memory: int, slots: int, phase: str) -> ExplorationPoint:
            i = len(ex.points)
            pt = ExplorationPoint.of(self.optimizer.optimize(Budget(slots, memory), f"co{i:02d}/{memory}MB/{slots}"),
                                     phase)
            ex.points.append(pt)
            pt.rmse = best_loocv(ex.observations(), s.features, s.families)
            history.append(pt.rmse)
            self.log(f"{phase} {len(ex.points)}: {slots} slots x {memory} MB -> MST {pt.mst:,.0f} events/s, "
                     f"best LOOCV RMSE {pt.rmse:,.0f}")
            if on_point:
                on_point(pt)
            return pt

        boot = corners(lo, hi, memories)
        for m, p in boot:
            measure(m, p, "corner")
        optimizer = self._bayesian_optimizer(lo, hi, memories, len(boot))
        # Before the fourth corner LOOCV is undefined: the corners all carry the bootstrap's cost.
        for pt in ex.points:
            optimizer.tell(self._point(pt.slots, pt.memory_mb, memories), _cost(history[-1]))
        reason = should_stop(history, len(boot), s)
        while reason is None:
            with warnings.catch_warnings():
                # skopt warns when it proposes a point measured before: re-measuring is intended.
                warnings.simplefilter("ignore")
                x = optimizer.ask()
            slots, memory = int(x[0]), int(x[1]) if len(memories) > 1 else memories[0]
            pt = measure(memory, slots, "search")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                optimizer.tell(x, _cost(pt.rmse))
            reason = should_stop(history, len(boot), s)
        ex.stop_reason = reason
        self._select(ex)
        ex.optimizer_calls = len(ex.points)
        ex.testbed_seconds = sum(p.testbed_seconds for p in ex.points)
        return ex

    def _bayesian_optimizer(self, lo: int, hi: int, memories: Sequence[int], initial: int):
        from skopt import Optimizer
        from skopt.space import Categorical, Integer

        dims = [Integer(lo, hi, name="slots")]
        if len(memories) > 1:
            dims.append(Categorical(list(memories), name="memory_mb"))
        # The first measurements after the corners come from a space-filling (Halton) design, then the
        # Gaussian process takes over. Its cost (the best LOOCV RMSE) is lowest where points exist
        # already: started right after the corners, it only ever proposes the corners' two slot
        # counts, between which the three families cannot be told apart.
        return Optimizer(dims, base_estimator="GP", acq_func="EI", n_initial_points=initial + self.settings.min_after_corners,
                         initial_point_generator="halton", random_state=self.settings.seed)

    @staticmethod
    def _point(slots: int, memory: int, memories: Sequence[int]) -> list:
        return [slots, memory] if len(memories) > 1 else [slots]

    def _select(self, ex: Exploration) -> None:
        s = self.settings
        obs = ex.observations()
        features = select_features(obs, s.features, s.families, s.slot_slope)
        ex.loocv = {f: loocv_rmse(f, obs, features) for f in s.families}
        ex.family, ex.selection = select_family(obs, features, s.families, ex.loocv)
        try:
            ex.split = select_by_split(obs, features, s.families)[1]
        except ValueError:
            ex.split = {}
        ex.model = fit(ex.family, obs, features).to_dict()

    def features(self, ex: Exploration) -> Features:
        """How memory and slots enter D's models: the settings', with the slot slope per memory
        where the selection chose it (select_features)."""
        return Surrogate.from_dict(ex.model).features if ex.model else self.settings.features

    def final_metrics(self, ex: Exploration, memory_mb: int) -> tuple[SingleTaskMetrics, str]:
        """The rates of the plan's last BIDS2 pass and where they come from (section VI, "Model usage"):
        "the true processing rates and busyness levels collected for the largest number of cores in D
        with the selected resource profile". A profile D never measured falls back to its single-task
        metrics (measured by the estimator when missing)."""
        query = self.optimizer.query
        # a checkpoint measures the configuration these metrics give; its own rates would configure anew
        runs = [p for p in ex.points if p.memory_mb == memory_mb and p.measurement and p.mst > 0 and p.phase != CHECKPOINT]
        skews = key_skews(query, [(Measurement.from_dict(p.measurement), p.max_parallelism) for p in ex.points
                                  if p.measurement and p.mst > 0])
        if self.settings.final_metrics == "largest" and runs:
            top = max(runs, key=lambda p: (p.slots, p.mst))
            m = Measurement.from_dict(top.measurement)
            return (SingleTaskMetrics.from_measurement(query, memory_mb, m).with_key_skew(skews),
                    f"the largest run of D ({top.slots} slots)")
        return self.optimizer.single_task(memory_mb).with_key_skew(skews), "the single-task run"

    def memory_efficiency(self, ex: Exploration, memory_mb: int, metrics: SingleTaskMetrics
                   ) -> tuple[Callable[[int], float], int, float] | None:
        """``efficiency`` of one memory per slot, its decline pooled over every memory measured
        (``pooled_decline``), each memory's budgets predicted with that memory's own plan metrics."""
        policy = self.optimizer.policy
        spans = [m for m in sorted({p.memory_mb for p in ex.points})  # a decline needs two budgets
                 if len({p.slots for p in ex.points if p.memory_mb == m}) >= 2]
        per_memory = [measured_etas(ex.points, m, predictor(policy, self.final_metrics(ex, m)[0])) for m in spans]
        return efficiency(ex.points, memory_mb, predictor(policy, metrics), decline=pooled_decline(per_memory))

    def _configure(self, ex: Exploration, memory_mb: int, rate: float, solve: Solve, alternatives: dict,
                   model: Surrogate, fits: Sequence[Surrogate]) -> PlanEntry:
        """The plan's last pass for one memory per slot (section VI, "Model usage"): the policy's
        configuration of the model's budget, checked against the efficiency the testbed measured and
        grown until that configuration reaches the rate; where Flink's default key groups cost slots,
        the same with the job's max parallelism set (planned_max_parallelism)."""
        s, m, policy = self.settings, memory_mb, self.optimizer.policy
        metrics, origin = self.final_metrics(ex, m)
        eff = self.memory_efficiency(ex, m, metrics)
        slots, max_parallelism = solve.slots, None
        if eff is not None:
            eta, top, eta_top = eff
            need = rate * (1.0 if s.risk is not None else s.safety)
            slots, most = configured_slots(policy, metrics, eta, need, solve.slots, solve.max_slots)
            if self.optimizer.query.keyed and (slots is None or slots > solve.slots):
                fixed = replace(metrics, max_parallelism=planned_max_parallelism(slots or solve.max_slots))
                fixed_slots, fixed_most = configured_slots(policy, fixed, eta, need, solve.slots, solve.max_slots)
                if fixed_slots is not None and (slots is None or fixed_slots < slots):
                    slots, most, metrics, max_parallelism = fixed_slots, fixed_most, fixed, fixed.max_parallelism
            if slots is None:
                return PlanEntry(
                    m, None, None, None, None, alternatives, None, solve.max_slots, most * rate / need,
                    model_slots=solve.slots,
                    unreachable=f"unreachable within {solve.max_slots:,} slots: no configuration up to that many slots, at "
                    f"the share of its predicted rate that the measured budgets reached ({100 * eta_top:.0f} % at {top} "
                    f"slots, {100 * eta(solve.max_slots):.0f} % by their trend at {solve.max_slots:,}), supports more "
                    f"than {most * rate / need:,.0f} events/s. {MEASURE_NEXT}")
        sol = policy.configure(metrics, slots)
        return PlanEntry(m, slots, float(model.predict(m, slots)), sol.parallelism, sol.predicted_rate, alternatives,
                         origin, solve.max_slots, solve.max_rate, risk=risk_of(fits, m, slots, rate),
                         efficiency=eff[0](slots) if eff is not None else None, model_slots=solve.slots,
                         max_parallelism=max_parallelism, key_warning=key_warning(metrics, sol.parallelism, rate))

    def plan(self, ex: Exploration, rate: float, memories: Sequence[int], family: str | None = None) -> Plan:
        """Inverse-solve the chosen model per memory per slot, then a last pass of the policy for each budget.
        A memory a checkpoint measured solves its own model (model_for), recorded in its entry."""
        s = self.settings
        query = self.optimizer.query
        obs = [p.observation() for p in ex.points if p.phase != CHECKPOINT]
        model = fit(family, obs, self.features(ex)) if family else Surrogate.from_dict(ex.model)
        entries = []
        shared = bootstrap_fits(model.family, obs, self.features(ex), samples=s.bootstrap_samples, seed=s.seed)
        for m in sorted(set(int(x) for x in memories)):
            own, own_obs, local = (model, obs, False) if family else self.model_for(ex, m)
            fits = bootstrap_fits(own.family, own_obs, self.features(ex), samples=s.bootstrap_samples,
                                  seed=s.seed) if local else shared
            solve = guarded_solve(own, m, rate, min_slots=query.size, measured_slots=max(o.slots for o in own_obs),
                                  settings=s, fits=fits)
            if s.sizing == "efficiency" and any(p.memory_mb == m and p.mst > 0 for p in ex.points):
                measured = max(o.slots for o in own_obs)
                limit = max(measured, min(s.max_plan_slots, math.floor(s.max_extrapolation * measured)))
                solve = Solve(query.size, limit, 0.0)  # _configure grows it until eta x the prediction holds
            alternatives = plans_by_family(own_obs, self.features(ex), s.families, m, rate, safety=s.safety,
                                           min_slots=query.size, max_slots=s.max_plan_slots, settings=s)
            recorded = own.to_dict() if local else None
            if solve.slots is None:
                entries.append(PlanEntry(m, None, None, None, None, alternatives, None, solve.max_slots, solve.max_rate,
                                         solve.unreachable, model=recorded))
                continue
            entries.append(replace(self._configure(ex, m, rate, solve, alternatives, own, fits), model=recorded))
        return Plan(query=query.name, rate=rate, safety=1.0 if s.risk is not None else s.safety, family=model.family,
                    model=model.to_dict(), entries=tuple(entries), risk=s.risk)

    def checkpoint(self, ex: Exploration, plan: Plan, estimator: Estimator, slots: int) -> list[ExplorationPoint]:
        """``--checkpoint-slots``: staged measurements on part of the production cluster (issue 11, after
        Imai et al.'s validation points). For each memory per slot whose plan is unreachable, whose
        candidate families disagree by more than ``max_family_spread``, or whose keyed operators a key
        too faint for the testbed could hold below the rate (PlanEntry.key_warning: the checkpoint's tasks
        read the keys at the plan's own scale), ``estimator`` (a cluster of
        ``slots``) measures the plan's own configuration (the last pass, _configured) at the budget where
        the families fitted on D diverge most (checkpoint_budget). That memory's plan then rests on its
        own points (model_for). Returns the points measured, none when every plan agrees."""
        measured = max(p.slots for p in ex.points)
        if slots <= measured:
            raise UserError(f"--checkpoint-slots: must exceed the largest budget measured on the testbed ({measured}), "
                            f"got {slots}")
        s, query, new = self.settings, self.optimizer.query, []
        for e in plan.entries:
            if e.slots is not None and family_spread(e.by_family) <= s.max_family_spread and not e.key_warning:
                continue
            hi = checkpoint_range(e, slots)
            if hi <= measured:
                continue
            _, obs, _ = self.model_for(ex, e.memory_mb)
            budget = Budget(checkpoint_budget(obs, self.features(ex), s.families, e.memory_mb, measured + 1, hi), e.memory_mb)
            metrics, _ = self.final_metrics(ex, e.memory_mb)
            proposal, max_parallelism = self._configured(metrics, budget.slots)
            cfg = Configuration.of(query, proposal.parallelism, max_parallelism)
            est = estimator.estimate(query.name, budget, cfg, f"checkpoint/{budget.memory_mb}MB/{budget.slots}")
            pt = ExplorationPoint.of(OptimizerResult(budget, cfg, proposal.predicted_rate, est.mst, est.to_dict()),
                                     CHECKPOINT)
            ex.points.append(pt)
            pt.rmse = best_loocv(ex.observations(), self.features(ex), s.families)
            self.log(f"checkpoint: {budget.slots} slots x {budget.memory_mb} MB -> MST {pt.mst:,.0f} events/s")
            new.append(pt)
        ex.optimizer_calls = len(ex.points)
        return new

    def _configured(self, metrics: SingleTaskMetrics, slots: int):
        """The plan's configuration of ``slots`` (its last pass): the policy's, or, for a keyed query,
        the one with the job's max parallelism set (planned_max_parallelism) when that predicts more.
        Returns (the policy's proposal, the max parallelism or None)."""
        policy = self.optimizer.policy
        proposal = policy.configure(metrics, slots)
        if not self.optimizer.query.keyed:
            return proposal, None
        fixed = policy.configure(replace(metrics, max_parallelism=planned_max_parallelism(slots)), slots)
        if fixed.predicted_rate > proposal.predicted_rate:
            return fixed, planned_max_parallelism(slots)
        return proposal, None

    def model_for(self, ex: Exploration, memory_mb: int) -> tuple[Surrogate, list[Observation], bool]:
        """The model a plan for ``memory_mb`` solves, and the measurements it rests on: D's (section VI),
        or, once a checkpoint measured that memory beyond the testbed, that memory's own
        (checkpoint_family): the family whose fit on D came closest to the checkpoint, refitted on that
        memory's points alone, the testbed's and the checkpoint's. Why that memory's points: Eq. 6-8
        give every memory one slot slope, so one checkpoint would move every memory's plan (q8 at
        512 MB stalls near 0.6 M events/s at 500 slots where at 4 GB it grows to 28 M). Returns
        (model, measurements, whether it is that memory's own)."""
        s = self.settings
        testbed = [p.observation() for p in ex.points if p.phase != CHECKPOINT]
        staged = [p.observation() for p in ex.points if p.phase == CHECKPOINT and p.memory_mb == memory_mb]
        if staged:
            family = checkpoint_family(testbed, staged, self.features(ex), s.families)
            obs = [o for o in testbed if o.memory_mb == memory_mb] + staged
            try:
                return fit(family or ex.family, obs, self.features(ex)), obs, True
            except ValueError:  # a family that cannot take these points: D's model instead
                pass
        return Surrogate.from_dict(ex.model), testbed, False

    def rate_within(self, ex: Exploration, memory_mb: int, slots: int) -> float:
        """The highest rate this explorer's plan serves with at most ``slots`` slots of ``memory_mb``:
        section VI's "Model usage" read backwards. The model at that budget (the trusted limit at most,
        trusted_slots) over the safety factor, or its risk bound, and no more than that budget's own
        configuration reaches at the efficiency the testbed measured (the plan's last pass)."""
        s, query = self.settings, self.optimizer.query
        model, obs, _ = self.model_for(ex, memory_mb)
        limit, _ = trusted_slots(model, memory_mb, max(o.slots for o in obs), s)
        n = min(slots, limit)
        if n < query.size:
            raise UserError(f"{query.name} needs at least {query.size} slots (one per operator); {slots} given")
        if s.risk is not None:
            fits = bootstrap_fits(model.family, obs, self.features(ex), samples=s.bootstrap_samples, seed=s.seed)
            bound = float(np.quantile(predictions(fits, memory_mb, [n])[:, 0], s.risk)) if fits else 0.0
        else:
            bound = float(model.predict(memory_mb, n)) / s.safety
        metrics, _ = self.final_metrics(ex, memory_mb)
        eff = self.memory_efficiency(ex, memory_mb, metrics)
        if eff is not None:
            reach = self._configured(metrics, n)[0].predicted_rate
            bound = min(bound, eff[0](n) * reach / (1.0 if s.risk is not None else s.safety))
        return max(0.0, bound)

    def plan_within(self, ex: Exploration, memory_mb: int, slots: int) -> Plan:
        """The plan for rate_within(ex, memory_mb, slots): a budget of at most ``slots``, configured
        as the plan configures any budget. The rate steps down by 1 % while the last pass's growth
        (configured_slots) lands above ``slots``."""
        rate = self.rate_within(ex, memory_mb, slots) * (1 - 1e-9)  # the bound itself, not a rounding above it
        for _ in range(50):
            if rate <= 0:
                break
            plan = self.plan(ex, rate, [memory_mb])
            entry = plan.entry(memory_mb)
            if entry.slots is not None and entry.slots <= slots:
                return plan
            rate *= 0.99
        raise UserError(f"{self.optimizer.query.name}: no rate this plan supports fits {slots} slots of "
                        f"{memory_mb} MB")


@dataclass(frozen=True)
class Solve:
    """The inverse solve with its guard rails (section VI's "Model usage", bounded)."""

    slots: int | None
    max_slots: int
    """The largest budget the plan trusts the model to (trusted_slots)."""
    max_rate: float
    """The highest rate the plan supports within ``max_slots``: the model there over the safety factor."""
    unreachable: str | None = None
    """Why no budget is planned, and what to measure next."""


def _gain(model: Surrogate, memory_mb: float, slots: int) -> float:
    """The model's gain in events/s for one more slot at ``slots``."""
    return float(model.predict(memory_mb, slots + 1) - model.predict(memory_mb, slots))


def trusted_slots(model: Surrogate, memory_mb: float, measured_slots: int, settings: ExplorerSettings) -> tuple[int, str]:
    """The largest budget a plan may use, and the rule that sets it: ``max_extrapolation`` x the
    largest budget measured, or, for a model whose gain per slot shrinks (log, sqrt), the last budget
    where that gain is still ``min_marginal`` of its gain at the largest budget measured."""
    limit = max(measured_slots, min(settings.max_plan_slots, math.floor(settings.max_extrapolation * measured_slots)))
    why = (f"{limit:,} slots, {settings.max_extrapolation:g}x the largest budget measured ({measured_slots}): "
           f"the extrapolation limit")
    base = _gain(model, memory_mb, measured_slots)
    if base <= 0:
        return measured_slots, f"{measured_slots} slots: the model does not grow with slots beyond what was measured"
    floor_gain = settings.min_marginal * base
    if _gain(model, memory_mb, limit) >= floor_gain:
        return limit, why
    lo, hi = measured_slots, limit  # the gain shrinks with slots: the last budget above the floor
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _gain(model, memory_mb, mid) >= floor_gain:
            lo = mid
        else:
            hi = mid
    return lo, (f"{lo:,} slots: beyond, the {model.family} model gains less than {100 * settings.min_marginal:g} % "
                f"of what a slot gains at {measured_slots} slots, so its answer rests on the curve's flat tail")


MEASURE_NEXT = ("To extend the model, measure larger budgets: a larger testbed (--max-slots on the sim, more "
                "slots in the Flink inventory), or a staged run on part of the production cluster")
"""What an unreachable answer says to measure next."""

RISK_CHUNK = 4096
"""Budgets whose bootstrap predictions are evaluated at once by risk_solve."""


def risk_of(fits: Sequence[Surrogate], memory_mb: float, slots: int, rate: float) -> float | None:
    """The estimated risk that ``slots`` do not sustain ``rate``: the share of the bootstrap fits
    (surrogates.bootstrap_fits) that predict less there; None when the measurements allow no refit."""
    if not fits:
        return None
    return float(np.mean(predictions(fits, memory_mb, [slots])[:, 0] < rate))


def risk_solve(fits: Sequence[Surrogate], memory_mb: float, rate: float, risk: float, min_slots: int,
               max_slots: int) -> int | None:
    """The smallest budget whose one-sided lower bound (the ``risk`` quantile of the bootstrap fits'
    predictions) reaches ``rate``: at most that share of the curves the measurements allow falls short."""
    if not fits:
        return None
    for start in range(min_slots, max_slots + 1, RISK_CHUNK):
        slots = np.arange(start, min(start + RISK_CHUNK, max_slots + 1))
        bound = np.quantile(predictions(fits, memory_mb, slots), risk, axis=0)
        hits = np.flatnonzero(bound >= rate)
        if hits.size:
            return int(slots[hits[0]])
    return None


def guarded_solve(model: Surrogate, memory_mb: float, rate: float, *, min_slots: int, measured_slots: int,
                  settings: ExplorerSettings, safety: float | None = None,
                  fits: Sequence[Surrogate] | None = None) -> Solve:
    """The smallest budget whose prediction reaches safety x rate (or, with ``settings.risk`` and the
    bootstrap ``fits``, whose risk bound reaches the rate), within the trusted budgets; when none
    does, why, and the highest rate the plan can support there."""
    safety = settings.safety if safety is None else safety
    limit, why = trusted_slots(model, memory_mb, measured_slots, settings)
    if settings.risk is not None and fits is not None:
        max_rate = max(0.0, float(np.quantile(predictions(fits, memory_mb, [limit])[:, 0], settings.risk)))
        slots = risk_solve(fits, memory_mb, rate, settings.risk, min_slots, max(limit, min_slots))
    else:
        max_rate = max(0.0, float(model.predict(memory_mb, limit))) / safety
        slots = inverse_solve(model, memory_mb, rate, safety=safety, min_slots=min_slots,
                              max_slots=max(limit, min_slots))
    if slots is not None:
        return Solve(slots, limit, max_rate)
    return Solve(None, limit, max_rate,
                 f"unreachable within {why}; the most this plan supports is {max_rate:,.0f} events/s. {MEASURE_NEXT}")


def predictor(policy, metrics: SingleTaskMetrics) -> Callable[[ExplorationPoint], float]:
    """The policy's predicted rate of a measured point's configuration, with the plan's ``metrics`` and
    the job's max parallelism that point ran with."""
    def predict(p: ExplorationPoint) -> float:
        used = replace(metrics, max_parallelism=p.max_parallelism) if p.max_parallelism else metrics
        return policy.predict(used, p.configuration)

    return predict


def spread(slots: int) -> float:
    """The scale the efficiency declines along: sqrt(2 ln P), how far the slowest of P tasks lags the
    mean in standard deviations (model/keyskew.max_z). What a budget loses to its configuration's
    prediction is the moment-to-moment lag of its slowest tasks (speed noise, firings): it grows as
    the maximum of P draws, not as ln P, which over-provisioned q11 at 25 x by 28 % (docs/planner.md)."""
    return max_z(max(int(slots), 1))


def measured_etas(points: Sequence[ExplorationPoint], memory_mb: int, predict: Callable[[ExplorationPoint], float]
                  ) -> list[tuple[int, float]]:
    """(slots, eta) of every budget measured with ``memory_mb``: its MST over ``predict(point)``, at most 1."""
    etas = []
    for p in points:
        if p.memory_mb == memory_mb and p.mst > 0 and p.configuration:
            lam = predict(p)
            if lam > 0 and math.isfinite(lam):
                etas.append((p.slots, min(1.0, p.mst / lam)))
    return etas


def pooled_decline(per_memory: Sequence[Sequence[tuple[int, float]]]) -> float | None:
    """The slope of eta along spread(P), one for every memory, each memory keeping its own level
    (least squares on the measurements centred per memory); None where no memory has two budgets.
    The decline is the lag of the slowest of P tasks, a property of the query's parallelism, not of
    its memory; fitted on one memory's two budgets it follows that memory's noise: q11 on the sim
    read eta 0.988 at 4 slots and 0.933 at 48 at 4 GB, 0.951 and 0.983 at 512 MB, and the 4 GB
    decline over-provisioned it 1.26-1.30 x at 3-25 x (docs/evaluation.md, section A)."""
    num = den = 0.0
    for etas in per_memory:
        if len({s for s, _ in etas}) < 2:
            continue
        x = np.array([spread(s) for s, _ in etas])
        y = np.array([e for _, e in etas])
        num += float((x - x.mean()) @ (y - y.mean()))
        den += float((x - x.mean()) @ (x - x.mean()))
    return num / den if den > 0 else None


def efficiency(points: Sequence[ExplorationPoint], memory_mb: int, predict: Callable[[ExplorationPoint], float],
               decline: float | None = None) -> tuple[Callable[[int], float], int, float] | None:
    """eta(P): how much of its configuration's predicted rate a budget really sustains, measured MST over
    ``predict(point)`` (the policy's capacities with the plan's metrics) at each budget measured
    with ``memory_mb``. Beyond the testbed: the largest budget's eta (the lowest of its repeats), lowered
    further along spread(P) by ``decline`` (pooled_decline: one slope for every memory) or, without
    it, by this memory's own slope, where the measurements decline with P (never raised). Between
    the two largest budgets (the testbed's and a checkpoint's, far beyond it), eta runs linearly in
    spread(P) from one's lowest to the other's. Returns (eta, the largest budget measured, its eta),
    or None without measurements of that memory."""
    etas = measured_etas(points, memory_mb, predict)
    if not etas:
        return None
    top = max(s for s, _ in etas)
    eta_top = min(e for s, e in etas if s == top)
    slope = 0.0
    if decline is not None:
        slope = decline
    elif len({s for s, _ in etas}) >= 2:
        x = np.array([spread(s) for s, _ in etas])
        y = np.array([e for _, e in etas])
        slope = float(np.polyfit(x, y, 1)[0])
    below = max((s for s, _ in etas if s < top), default=None)

    def eta(slots: int) -> float:
        if below is not None and below < slots < top:
            eta_below = min(e for s, e in etas if s == below)
            return eta_below + (eta_top - eta_below) * (spread(slots) - spread(below)) / (spread(top) - spread(below))
        return max(0.0, eta_top + min(slope, 0.0) * (spread(max(slots, top)) - spread(top)))

    return eta, top, eta_top


def configured_slots(policy, metrics: SingleTaskMetrics, eta: Callable[[int], float], need: float, start: int,
                     limit: int) -> tuple[int | None, float]:
    """The smallest budget from ``start`` to ``limit`` whose own configuration, at the efficiency
    measured, reaches ``need`` (the plan's last pass, checked); and the most a budget up to ``limit``
    reaches. eta x the prediction need not grow with P (an efficiency that keeps falling beyond the
    largest budget measured ends below zero gain): budgets are scanned on a geometric grid, then the
    first step that reaches ``need`` is bisected."""
    def reach(slots: int) -> float:
        return eta(slots) * policy.configure(metrics, slots).predicted_rate

    if reach(start) >= need:
        return start, max(reach(start), reach(limit))
    grid = [int(v) for v in np.unique(np.geomspace(start, max(start, limit), CONFIGURED_GRID).round())]
    reached = [reach(p) for p in grid]
    most = max(reached)
    hit = next((i for i, r in enumerate(reached) if r >= need), None)
    if hit is None:
        return None, most
    lo, hi = grid[max(hit - 1, 0)], grid[hit]  # reach(lo) < need <= reach(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if reach(mid) >= need:
            hi = mid
        else:
            lo = mid
    return hi, most


CONFIGURED_GRID = 64
"""Budgets configured_slots scans between the model's budget and the trusted limit."""


def planned_max_parallelism(slots: int) -> int:
    """The max parallelism a plan sets when Flink's default would cost slots: 16 key groups or more per
    slot, so that the busiest task owns at most ~6 % more than the mean, within Flink's 32,768."""
    return min(keygroups.MAX_MAX_PARALLELISM, max(keygroups.MIN_MAX_PARALLELISM, 1 << (16 * slots - 1).bit_length()))


def key_warning(metrics: SingleTaskMetrics, parallelism: dict[str, int], rate: float) -> str | None:
    """What a plan cannot exclude about its keyed operators: a key hot enough to hold one below ``rate`` at
    its planned parallelism that would not have stood out at the parallelism measured
    (policies/skew.hidden_key_capacity), and what would settle it. None when no such key could."""
    lines = []
    for name, r in metrics.operators:
        if not r.keyed or name not in parallelism:
            continue
        cap = skew.hidden_key_capacity(r, parallelism[name], metrics.max_parallelism)
        if cap < rate:
            w = skew.hidden_key(r, metrics.max_parallelism)
            tested = r.key_skew.tested_parallelism or r.measured_parallelism
            lines.append(f"{name}: a key with up to {100 * w:.2g} % of its input would not stand out among the "
                         f"{tested:,} tasks measured, and would hold its {parallelism[name]:,} tasks at "
                         f"{cap:,.0f} events/s")
    if not lines:
        return None
    return ("; ".join(lines) + ". The key distribution of representative data, or a checkpoint at this scale "
            "(--checkpoint-slots), tells whether such a key exists (docs/planner.md, key skew)")


def plans_by_family(obs: Sequence[Observation], features: Features, families: Sequence[str], memory_mb: int,
                    rate: float, *, safety: float, min_slots: int, max_slots: int,
                    settings: ExplorerSettings | None = None) -> dict[str, int | None]:
    """The inverse solve (section VI, "Model usage") with each candidate family fitted on the same D.

    The paper picks one family; how far the others land shows how much a plan extrapolated far beyond
    the testbed rests on that pick (the paper chose its families by hand, docs/evaluation.md)."""
    out: dict[str, int | None] = {}
    measured = max(o.slots for o in obs)
    guards = replace(settings or ExplorerSettings(), max_plan_slots=max_slots)
    for f in families:
        try:
            out[f] = guarded_solve(fit(f, obs, features), memory_mb, rate, min_slots=min_slots, measured_slots=measured,
                                   settings=guards, safety=safety).slots
        except ValueError:  # too few measurements, or inputs the family cannot take
            out[f] = None
    return out


def checkpoint_range(entry: PlanEntry, slots: int) -> int:
    """The largest budget a checkpoint for ``entry`` may measure: ``slots``, or the largest budget any
    family (or the plan) gives the rate, when smaller. A checkpoint far beyond every answer tells
    little about the budgets in question: with 1,500 slots for it, q11 at 3 x (true minimum 139)
    was planned at 184 slots, and q8 at 3 x at 1,276 slots sustained 0.994 of its target."""
    answers = [a for a in (*entry.by_family.values(), entry.slots, entry.model_slots) if a is not None]
    return min(slots, max(answers)) if answers else slots


def checkpoint_family(testbed: Sequence[Observation], staged: Sequence[Observation], features: Features,
                      families: Sequence[str]) -> str | None:
    """The family whose fit on the testbed's measurements predicted the checkpoints best (the lowest
    squared relative error): the checkpoint was measured where the families diverge most, so it
    tells them apart where the split rule could only compare them within the testbed. None when no
    family can be fitted."""
    errors = {}
    for f in families:
        try:
            model = fit(f, testbed, features)
        except ValueError:
            continue
        errors[f] = sum((float(model.predict(o.memory_mb, o.slots)) / o.mst - 1.0) ** 2 if o.mst > 0 else math.inf
                        for o in staged)
    return min(errors, key=errors.get) if errors else None


CHECKPOINT_GRID = 256
"""Budgets compared by checkpoint_budget (geometrically spaced)."""


def checkpoint_budget(obs: Sequence[Observation], features: Features, families: Sequence[str], memory_mb: int,
                      lo: int, hi: int) -> int:
    """The budget from ``lo`` to ``hi`` where the candidate families fitted on ``obs`` diverge most:
    the largest ratio of their highest to their lowest prediction (a non-positive prediction counts as
    the most divergent). Ties go to the larger budget."""
    fits = []
    for f in families:
        try:
            fits.append(fit(f, obs, features))
        except ValueError:  # too few measurements, or inputs the family cannot take
            pass
    budgets = np.unique(np.geomspace(lo, hi, CHECKPOINT_GRID).round().astype(int))
    if len(fits) < 2:
        return int(budgets[-1])
    pred = np.array([np.asarray(m.predict(memory_mb, budgets), dtype=float) for m in fits])
    low = pred.min(axis=0)
    spread = np.where(low > 0, pred.max(axis=0) / np.where(low > 0, low, 1.0), math.inf)
    best = np.flatnonzero(spread == spread.max())
    return int(budgets[best[-1]])


def _cost(rmse: float) -> float:
    """skopt needs finite costs; too few points for LOOCV count as a very bad fit."""
    return rmse if math.isfinite(rmse) else 1e30

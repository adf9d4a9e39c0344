"""Imai et al.'s MST prediction (Imai, Patterson, Varela, "Maximum Sustainable Throughput Prediction for
Large-Scale Data Streaming Systems"): two regression models of the MST in the scale m, measured at a few
training scales, one of them chosen by extra validation measurements where the two disagree.

* Model 1 (Eq. 4): MST(m) = 1 / (w0 + w1/m + w2 m + w3 m^2), every w >= 0: the inverse of a processing
  time (serial, parallel, input/output distribution, inter-worker communication), after Ernest. Fitted
  by non-negative least squares on the time 1/MST, the quantity the polynomial models. By default with
  Ernest's own terms (1, 1/m, log m, m): on the sim's Nexmark profiles the chosen model then missed the
  truth beyond the training range by 19.0 % on average, against 20.3 % with Eq. 4's (docs/methods.md).
* Model 2 (Eq. 5): MST(m) = w0 + w1 m - w2 m^2, every w >= 0, fitted by non-negative least squares.
* Flat after the peak (section 4.3): nobody deploys more of a system for less throughput, so a
  prediction is constant beyond the model's peak.
* Training scales (section 4.4): the paper's Phase 1 searches every subset of candidate scales for the
  one with the least prediction error over reference applications (Eq. 6-8, ``training_subset``); its
  answer, {3, 4, 6, 8, 24} VMs of 2 vCPUs with one thread per vCPU, is {6, 8, 12, 16, 48} slots here
  (``PAPER_TRAINING_SLOTS``), each raised to the query's operator count (a budget needs a slot per
  operator).
* Validation scales (Algorithm 1): beyond the largest training scale, the first scale after each
  crossing of the two models where they differ by more than tau (0.10); the model with the lower
  validation RMSE wins, or the lower training RMSE when the models never differ that much.

As a Planner, the scale is a slot count: the configuration of m slots is the default configuration
policy's, its MST measured by the Capacity Estimator; the models read m as the spare slots (slots beyond
one per operator, plus one: ``scale_offset`` says why); the plan is the smallest slot count whose
prediction reaches the rate times the safety factor, at the memory per slot explored (the paper uses
one VM type), and unreachable when the model's peak stays below that.

Options (``PlanningRequest.options``): ``training`` (slot counts, default the paper's subset),
``scale`` ("spare" or "slots"), ``tau`` (0.10), ``model1_terms`` ("ernest": 1, 1/m, log m, m; "paper": 1, 1/m,
m, m^2), ``max_slots``
(the largest validation scale; default the testbed's), ``safety`` (StreamBed's, 1.10), ``timing``
(the estimator timing's name), ``policy`` (the configuration policy), ``ledger`` (a Ledger every
window goes through; default a throw-away one), ``plan_limit`` (the largest slot count a plan may ask).
"""

from __future__ import annotations

import itertools
import math
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
from scipy.optimize import minimize_scalar, nnls

from .. import checks
from ..errors import UserError
from .estimator import DEFAULT_TIMING, TIMINGS, CapacityEstimator, Timing
from .exploration import ExplorerSettings
from ..ledger import Ledger
from ..model import Budget, Configuration, Measurement, SingleTaskMetrics
from ..model.measurement import key_skews
from .optimizer import ConfigurationOptimizer
from .policies import DEFAULT_POLICY, POLICIES, policy_named
from ..testbed.base import Testbed
from .base import Log, PlanningRequest, Sizing, Step, method_options, silent

TAU = 0.10
"""Algorithm 1's discrepancy threshold (section 5.1)."""

PAPER_TRAINING_VMS = (3, 4, 6, 8, 24)
"""The paper's best training subset (Table 1, M_train = 24 or 32)."""
VCPUS_PER_VM = 2
"""m4.large: 2 vCPUs, one thread (here: one slot) each (Eq. 1)."""
PAPER_TRAINING_SLOTS = tuple(VCPUS_PER_VM * m for m in PAPER_TRAINING_VMS)

MODEL1_TERMS: dict[str, Callable[[np.ndarray], list[np.ndarray]]] = {
    "ernest": lambda m: [np.ones_like(m), 1.0 / m, np.log(m), m],
    "paper": lambda m: [np.ones_like(m), 1.0 / m, m, m * m],
}
"""Model 1's time polynomial: Ernest's terms (log m for a tree aggregation, the default), or Eq. 4's."""

PLAN_LIMIT = 100_000
"""The most slots a plan may ask for (a scale the model is read at, not one measured)."""


# -- the two models (pure) ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Fit:
    """One trained model: which (1 or 2), its weights, and Model 1's terms."""

    model: int
    weights: tuple[float, ...]
    terms: str = "ernest"

    def raw(self, m: float | np.ndarray) -> np.ndarray:
        """The model's prediction at m, without the flat after the peak."""
        m = np.asarray(m, dtype=float)
        w = np.asarray(self.weights)
        if self.model == 1:
            time = np.tensordot(w, np.array(MODEL1_TERMS[self.terms](m)), axes=1)
            with np.errstate(divide="ignore"):
                return np.where(time > 0, 1.0 / np.maximum(time, 1e-300), np.inf)
        return w[0] + w[1] * m - w[2] * m * m

    @cached_property
    def peak_m(self) -> float:
        return self.peak()

    def peak(self) -> float:
        """The scale at which the prediction peaks (inf when it keeps growing)."""
        w = self.weights
        if self.model == 2:
            return w[1] / (2 * w[2]) if w[2] > 0 else math.inf
        if w[2] <= 0 and w[3] <= 0:  # no term grows with m: the MST rises for ever
            return math.inf
        # The time polynomial is convex in m > 0 (each term is), so its minimum is the MST's peak.
        res = minimize_scalar(lambda x: -float(self.raw(math.exp(x))), bounds=(0.0, math.log(1e9)),
                              method="bounded", options={"xatol": 1e-9})
        return math.exp(res.x)

    def predict(self, m: float | np.ndarray) -> np.ndarray:
        """The prediction at m, flat after the peak (section 4.3)."""
        return self.raw(np.minimum(np.asarray(m, dtype=float), self.peak_m))

    def to_dict(self) -> dict:
        return {"model": self.model, "weights": list(self.weights), "terms": self.terms,
                "peak": self.peak() if math.isfinite(self.peak()) else None}


def _samples(ms: Sequence[float], msts: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    m, y = np.asarray(ms, dtype=float), np.asarray(msts, dtype=float)
    if m.shape != y.shape or m.size == 0:
        raise UserError(f"samples: expected as many MSTs as scales, got {m.size} scales and {y.size} MSTs")
    if np.any(m <= 0):
        raise UserError("samples: scales must be positive")
    return m, y


def fit_model1(ms: Sequence[float], msts: Sequence[float], terms: str = "ernest") -> Fit:
    """Model 1 by non-negative least squares on the time 1/MST (an MST of 0 is left out: infinite time)."""
    m, y = _samples(ms, msts)
    keep = y > 0
    if not keep.any():
        raise UserError("samples: Model 1 needs at least one positive MST")
    a = np.column_stack(MODEL1_TERMS[terms](m[keep]))
    w, _ = nnls(a, 1.0 / y[keep])
    return Fit(1, tuple(float(x) for x in w), terms)


def fit_model2(ms: Sequence[float], msts: Sequence[float]) -> Fit:
    """Model 2 by non-negative least squares (the minus sign of w2 is in the design matrix)."""
    m, y = _samples(ms, msts)
    w, _ = nnls(np.column_stack([np.ones_like(m), m, -m * m]), y)
    return Fit(2, tuple(float(x) for x in w))


def rmse(fit: Fit, ms: Sequence[float], msts: Sequence[float]) -> float:
    """Root mean square error of the (flat) prediction."""
    m, y = _samples(ms, msts)
    return float(np.sqrt(np.mean((fit.predict(m) - y) ** 2)))


def mape(fit: Fit, ms: Sequence[float], msts: Sequence[float]) -> float:
    """Mean absolute percentage error of the (flat) prediction (Eq. 10), in %."""
    m, y = _samples(ms, msts)
    return float(100.0 * np.mean(np.abs(y - fit.predict(m)) / np.abs(y)))


def discrepancy(a: float, b: float) -> float:
    """Algorithm 1, line 18: |a - b| / min(a, b)."""
    low = min(a, b)
    return math.inf if low <= 0 else abs(a - b) / low


def intersections(one: Fit, two: Fit, m_lo: int, m_hi: int) -> list[int]:
    """The ceilings of the scales in (m_lo, m_hi] where the two (flat) predictions cross, found by
    plugging in every integer (the paper's numeric way)."""
    if m_hi <= m_lo:
        return []
    m = np.arange(m_lo, m_hi + 1, dtype=float)
    diff = one.predict(m) - two.predict(m)
    sign = np.sign(diff)
    found = []
    for i in range(1, len(m)):
        if sign[i] == 0 and sign[i - 1] != 0:
            found.append(int(m[i]))
        elif sign[i] != 0 and sign[i - 1] != 0 and sign[i] != sign[i - 1]:
            found.append(int(m[i]))
    return found


def validation_points(one: Fit, two: Fit, training: Iterable[int], max_m: int, tau: float = TAU,
                      min_m: int = 1) -> list[int]:
    """Algorithm 1: beyond the largest training scale, one scale per stretch between crossings of the
    models, the first where they differ by more than ``tau``.

    The search starts at m_max + 1 also when the models cross later (line 6 otherwise only when they
    never cross): the paper's own Rolling Count points, 25 and 72 after training up to 24, need both."""
    m_max = max(training)
    starts = sorted({m_max + 1, *(m for m in intersections(one, two, min_m, max_m) if m > m_max)})
    starts = [m for m in starts if m <= max_m]
    chosen = []
    for i, start in enumerate(starts):
        end = max_m if i == len(starts) - 1 else starts[i + 1] - 1
        for m in range(start, end + 1):
            if discrepancy(float(one.predict(m)), float(two.predict(m))) > tau:
                chosen.append(m)
                break
    return chosen


def select_model(fits: Sequence[Fit], training: tuple[Sequence[float], Sequence[float]],
                 validation: tuple[Sequence[float], Sequence[float]]) -> tuple[Fit, str]:
    """The model of least validation RMSE, or of least training RMSE without validation samples
    (section 4.5); the second value says which error decided."""
    if len(validation[0]):
        return min(fits, key=lambda f: rmse(f, *validation)), "validation"
    return min(fits, key=lambda f: rmse(f, *training)), "training"


def training_subset(samples: Mapping[str, Mapping[int, Sequence[float]]], size: int, max_train: int,
                    terms: str = "ernest") -> tuple[tuple[int, ...], float]:
    """Phase 1 (Eq. 6-8): the subset of ``size`` scales up to ``max_train`` whose Models 1 and 2, trained
    on each application's mean MSTs there, predict the other scales' samples with the least RMSE over
    every application and both models. ``samples``: application -> scale -> MST samples (each
    application normalised by its largest MST, as the paper does)."""
    scales = sorted(set.intersection(*(set(s) for s in samples.values())))
    candidates = [m for m in scales if m <= max_train]
    if len(candidates) < size:
        raise UserError(f"training: {len(candidates)} scales up to {max_train}, fewer than the {size} asked")
    norm = {a: {m: np.asarray(v, dtype=float) / max(max(x) for x in s.values()) for m, v in s.items()}
            for a, s in samples.items()}
    best: tuple[tuple[int, ...], float] | None = None
    for subset in itertools.combinations(candidates, size):
        sse, count = 0.0, 0
        for s in norm.values():
            ms = list(subset)
            ys = [float(np.mean(s[m])) for m in ms]
            tests = [m for m in scales if m not in subset]
            for fit in (fit_model1(ms, ys, terms), fit_model2(ms, ys)):
                for m in tests:
                    sse += float(np.sum((s[m] - fit.predict(m)) ** 2))
                    count += len(s[m])
        score = math.sqrt(sse / count) if count else math.inf
        if best is None or score < best[1]:
            best = (subset, score)
    assert best is not None
    return best


def training_slots(paper_slots: Iterable[int], operators: int, max_slots: int) -> tuple[int, ...]:
    """The training scales on a query of ``operators`` operators: each at least one slot per operator,
    none above the testbed's slots."""
    return tuple(sorted({min(max(int(m), operators), max_slots) for m in paper_slots}))


SCALES = ("spare", "slots")


def scale_offset(scale: str, operators: int) -> int:
    """What is taken off a slot count to give the models' m. "spare": the slots a policy distributes
    beyond the one every operator needs, plus one (m = 1 is the single-task configuration). Imai's m
    (VMs) grows every operator together from the first VM on; a slot count does not: on the sim's q5
    (9 operators) the true MST rose x3.6 from 9 to 12 slots, a rise neither model can follow (both
    are concave in m). Measured on the five Nexmark profiles with Eq. 4's terms (docs/methods.md),
    the chosen model's error beyond the training range averaged 20.3 % on spare slots, 26.7 % on slots."""
    return operators - 1 if scale == "spare" else 0


def smallest_scale(fit: Fit, need: float, m_min: int, limit: int) -> int | None:
    """The smallest scale in [m_min, limit] whose (flat) prediction reaches ``need``; None when the
    model's peak (or its value at ``limit``) stays below it."""
    if float(fit.predict(limit)) < need:
        return None
    lo, hi = m_min, limit
    if float(fit.predict(lo)) >= need:
        return lo
    while hi - lo > 1:  # flat predictions are non-decreasing
        mid = (lo + hi) // 2
        if float(fit.predict(mid)) >= need:
            hi = mid
        else:
            lo = mid
    return hi


# -- the planner -------------------------------------------------------------------------------------

@dataclass
class ImaiEvidence:
    """What Imai's exploration measured and trained."""

    query: str
    memory_mb: int
    operators: int
    shift: int
    """The models' scale is slots - shift (``scale_offset``)."""
    training: list[tuple[int, float]]
    """(slots, measured MST) at the training scales."""
    validation: list[tuple[int, float]]
    fits: list[Fit]
    chosen: Fit
    decided_by: str
    metrics: dict
    """The policy's input (SingleTaskMetrics.to_dict(), with the imbalance and key skew measured)."""
    steps: list[Step] = field(default_factory=list)
    testbed_seconds: float = 0.0
    measurements: int = 0
    policy: str = DEFAULT_POLICY

    def to_dict(self) -> dict:
        return {"query": self.query, "memory_mb": self.memory_mb, "scale_shift": self.shift,
                "training": self.training,
                "validation": self.validation, "fits": [f.to_dict() for f in self.fits],
                "chosen": self.chosen.model, "decided_by": self.decided_by,
                "steps": [s.to_dict() for s in self.steps], "testbed_seconds": self.testbed_seconds,
                "measurements": self.measurements, "policy": self.policy}


@dataclass(frozen=True)
class ImaiOptions:
    """The method's options (each a key of PlanningRequest.options)."""

    training: tuple[int, ...] = PAPER_TRAINING_SLOTS
    scale: str = "spare"
    """What the models' m counts: "spare" (slots beyond one per operator, plus one) or "slots"."""
    tau: float = TAU
    model1_terms: str = "ernest"
    max_slots: int | None = None
    """The largest validation scale; None: the testbed's slots."""
    safety: float = ExplorerSettings.safety
    timing: str = DEFAULT_TIMING
    policy: str = DEFAULT_POLICY
    plan_limit: int = PLAN_LIMIT
    ledger: Ledger | None = None
    """Every estimator window goes through it (a campaign's, for --resume); None: a throw-away one."""


def _option(name: str, value: Any) -> Any:
    """One option's value in its type (checks.Invalid when it is not)."""
    if name == "training":
        if isinstance(value, str):  # from a command line: 6,8,12
            value = [checks.integer(v, text=True) for v in value.split(",")] if value.strip() else []
        if not isinstance(value, Sequence) or not value:
            raise checks.Invalid(f"expected a list of slot counts such as 6,8,12,16,48, got {value!r:.60}")
        return tuple(checks.integer(v) for v in value)
    if name in ("tau", "safety"):
        return checks.number(value, minimum=0.0, strict=True)
    if name == "scale":
        if value not in SCALES:
            raise checks.Invalid(f"expected one of {', '.join(SCALES)}, got {value!r:.40}")
        return value
    if name == "model1_terms":
        if value not in MODEL1_TERMS:
            raise checks.Invalid(f"expected one of {', '.join(MODEL1_TERMS)}, got {value!r:.40}")
        return value
    if name in ("max_slots", "plan_limit"):
        return None if value is None and name == "max_slots" else checks.integer(value)
    if name == "timing":
        if value not in TIMINGS:
            raise checks.Invalid(f"expected one of {', '.join(TIMINGS)}, got {value!r:.40}")
        return value
    if name == "policy":
        if value not in POLICIES:
            raise checks.Invalid(f"expected one of {', '.join(POLICIES)}, got {value!r:.40}")
        return value
    if name == "ledger":
        if value is not None and not isinstance(value, Ledger):
            raise checks.Invalid(f"expected an open ledger, got {type(value).__name__}")
        return value
    raise KeyError(name)


def imai_options(given: Mapping[str, Any]) -> ImaiOptions:
    """The defaults with the options ``given``; an unknown or bad one is one line naming it."""
    return method_options("imai", ImaiOptions(), given, _option)


class Imai:
    """Imai et al.'s two MST models, trained at the paper's scales and chosen by validation."""

    name = "imai"

    def options(self, request: PlanningRequest) -> ImaiOptions:
        """The request's options, checked (one line naming a bad one)."""
        return imai_options(request.options)

    def explore(self, testbed: Testbed, request: PlanningRequest, log: Log = silent) -> ImaiEvidence:
        o = self.options(request)
        info = testbed.info()
        query = testbed.query(request.query)
        n = len(query.operators)
        max_m = info.max_slots if o.max_slots is None else o.max_slots
        if not n <= max_m <= info.max_slots:
            raise UserError(f"options: imai option max_slots: expected {n} to {info.max_slots} "
                            f"(the query's operators to the testbed's slots), got {max_m}")
        timing = Timing.named(o.timing)
        policy = policy_named(o.policy)
        memory = _memory(request, info.memory_per_slot)
        training = training_slots(o.training, n, max_m)
        if len(training) < 2:
            raise UserError(f"options: imai option training: {request.query} needs at least two distinct slot "
                            f"counts from {n} to {max_m}, got {list(training)}")
        with _ledger(o.ledger, request) as ledger:
            estimator = CapacityEstimator(testbed, ledger, timing, log)
            optimizer = ConfigurationOptimizer(estimator, query, policy)
            runs = _Runs(optimizer, memory, log)
            train = [(m, runs.mst(m, "train")) for m in training]
            shift = scale_offset(o.scale, n)
            tm, ty = [m - shift for m, _ in train], [y for _, y in train]
            fits = [fit_model1(tm, ty, o.model1_terms), fit_model2(tm, ty)]
            points = [x + shift for x in validation_points(fits[0], fits[1], tm, max_m - shift, o.tau,
                                                           min_m=n - shift)]
            log(f"imai: validation at {points or 'no slot count'} (models differ by more than {o.tau:.0%} there)")
            val = [(m, runs.mst(m, "validate")) for m in points]
            chosen, why = select_model(fits, (tm, ty), ([m - shift for m, _ in val], [y for _, y in val]))
            metrics = runs.metrics(query)
        return ImaiEvidence(request.query, memory, n, shift, train, val, fits, chosen, why, metrics.to_dict(),
                            runs.steps, estimator.testbed_seconds, estimator.calls, policy.name)

    def plan(self, evidence: ImaiEvidence, request: PlanningRequest) -> Sizing:
        o = self.options(request)
        safety, limit = o.safety, max(o.plan_limit, evidence.operators)
        fit = evidence.chosen
        need = request.rate * safety
        detail = {**evidence.to_dict(), "safety": safety}
        common = dict(testbed_seconds=evidence.testbed_seconds, measurements=evidence.measurements,
                      steps=tuple(evidence.steps), detail=detail)
        shift = evidence.shift
        x = smallest_scale(fit, need, evidence.operators - shift, limit - shift)
        slots = None if x is None else x + shift
        if slots is None:
            peak = float(fit.predict(limit - shift))
            return Sizing(self.name, request.query, request.rate, None, None, None,
                          unreachable=f"Model {fit.model} peaks at {peak:,.0f} events/s, below {need:,.0f} "
                                      f"(the rate x {safety:g})", **common)
        metrics = SingleTaskMetrics.from_dict(evidence.metrics)
        parallelism = policy_named(evidence.policy).configure(metrics, slots).parallelism
        notes = (f"Model {fit.model} chosen by its {evidence.decided_by} error; predicts "
                 f"{float(fit.predict(slots - shift)):,.0f} events/s at {slots} slots",)
        return Sizing(self.name, request.query, request.rate, slots, evidence.memory_mb, parallelism,
                      notes=notes, **common)


class _Runs:
    """MSTs of the policy's configurations, with what the policy learns from them kept for the plan
    (the imbalance of the largest run and the key skew of all, as the Configuration Optimizer does)."""

    def __init__(self, optimizer: ConfigurationOptimizer, memory: int, log: Log):
        self.optimizer, self.memory, self.log = optimizer, memory, log
        self.steps: list[Step] = []
        self.largest: tuple[int, Measurement] | None = None
        self.measured: list[tuple[Measurement, int | None]] = []

    def mst(self, slots: int, why: str) -> float:
        res = self.optimizer.optimize(Budget(slots, self.memory), f"imai/{why}/{slots}")
        cfg: Configuration = res.configuration
        if res.estimate.get("measurement"):
            m = Measurement.from_dict(res.estimate["measurement"])
            self.measured.append((m, cfg.max_parallelism))
            if self.largest is None or slots >= self.largest[0]:
                self.largest = (slots, m)
        self.steps.append(Step(slots, self.memory, cfg.as_dict(), res.mst, res.estimate["testbed_seconds"], why))
        self.log(f"imai: {why} {slots} slots: MST {res.mst:,.0f} events/s")
        return res.mst

    def metrics(self, query) -> SingleTaskMetrics:
        metrics = self.optimizer.single_task(self.memory)
        if self.largest is not None:
            metrics = metrics.with_imbalance(query, self.largest[1])
        return metrics.with_key_skew(key_skews(query, self.measured))


def _memory(request: PlanningRequest, offered: Sequence[int]) -> int:
    """One memory per slot, as the paper uses one VM type: the request's first, else the largest offered."""
    if request.memories:
        if request.memories[0] not in offered:
            raise UserError(f"memory: {request.memories[0]} MB per slot is not offered "
                            f"(expected one of {', '.join(map(str, offered))})")
        return int(request.memories[0])
    return int(max(offered))


class _ledger:
    """The given ledger, or a throw-away one for the exploration."""

    def __init__(self, given: Ledger | None, request: PlanningRequest):
        self.given = given
        self.request = request

    def __enter__(self) -> Ledger:
        if self.given is not None:
            return self.given
        self.tmp = tempfile.TemporaryDirectory(prefix="streambed-imai-")
        self.ledger = Ledger.open(self.tmp.name, "imai", {"query": self.request.query}, resume=False)
        return self.ledger

    def __exit__(self, *exc: object) -> None:
        if self.given is None:
            self.ledger.close()
            self.tmp.cleanup()

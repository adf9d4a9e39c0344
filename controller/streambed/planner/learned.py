"""Learned cost models (PDSP-Bench: Agnihotri et al., "PDSP-Bench: A Benchmarking System for Parallel
and Distributed Stream Processing"), as a planner: a regression from a plan's features to its maximum
sustainable throughput, trained on recorded plans, read for the smallest configuration that sustains
the rate.

* Training data: ``PlanRecord`` s, each (query graph, single-task measurements at a memory per slot,
  configuration, memory per slot) -> MST, kept in a ``TrainingSet`` cached as JSON in a directory the
  ``training`` option names. bench/methods_learned.py builds one from generated workloads (labels from
  the sim) and from recorded campaigns (the Spark analytics tables); the planner only reads it.
* Features: planner/learned_features.py (what a testbed reveals: the Query and measured single-task
  rates, never a sim profile).
* Models (``MODELS``): linear regression, a multi-layer perceptron, a random forest (scikit-learn) and
  a graph model (operator features propagated along the DAG's edges by fixed mean aggregation, pooled,
  read by a perceptron: message passing without learned message weights, not a trained GNN). Each
  predicts log(MST), or with ``target=ratio`` the log of the MST over the plan's measured linear bound
  (its weakest operator's capacity), which a model need only correct.
* Score: the q-error max(pred/true, true/pred) (``q_error``), PDSP-Bench's metric.
* As a planner: ``explore`` measures the query's single-task configuration (every operator one task,
  the Configuration Optimizer's operator-isolating run) once per memory per slot and trains the model;
  ``plan`` asks the default configuration policy for the configuration of each slot count and takes the
  smallest whose predicted MST reaches the rate x the safety factor (StreamBed's, 1.10), at the memory
  per slot with the least total memory.

Options (``PlanningRequest.options``): ``training`` (the training set's directory; required),
``model`` (one of MODELS, default ``forest``), ``target`` (``ratio``, default, or ``mst``: the two scored
best and PDSP-Bench's own, docs/compare.md "Learned cost models"), ``safety`` (1.10),
``timing`` (the estimator timing of the single-task runs), ``policy`` (the configuration policy),
``plan_limit`` (the most slots a plan may ask), ``max_records`` (train on the first N records only).
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .. import checks
from ..errors import UserError
from ..files import write_text
from ..ledger import Ledger
from ..model import Configuration, Query, SingleTaskMetrics
from ..testbed.base import Testbed
from .base import Log, PlanningRequest, Sizing, Step, silent
from .estimator import DEFAULT_TIMING, TIMINGS, CapacityEstimator, Timing
from .exploration import ExplorerSettings
from .learned_features import OPERATOR_FEATURES, plan_vectors
from .optimizer import ConfigurationOptimizer
from .policies import DEFAULT_POLICY, POLICIES, policy_named

MODELS = ("linear", "mlp", "forest", "graph")
"""The cost models, by name (the ``model`` option)."""
TARGETS = ("mst", "ratio")
"""What a model predicts: log(MST) (PDSP-Bench's), or log(MST / the plan's measured linear bound)."""
TRAINING_FILE = "training.json"
"""The training set's file inside the ``training`` directory."""
PLAN_LIMIT = 100_000
"""The most slots a plan may ask for (a scale the model is read at, not one measured)."""
EXACT_SLOTS = 64
"""Slot counts up to (operators + this) are each tried; beyond, a ladder of GROWTH steps, refined."""
GROWTH = 1.03


# -- the score (pure) ----------------------------------------------------------------------------------

def q_error(predicted: float | np.ndarray, true: float | np.ndarray) -> np.ndarray:
    """max(pred/true, true/pred): 1 for a perfect prediction, the factor it is off by otherwise (inf when
    either side is 0 or negative)."""
    p, t = np.asarray(predicted, dtype=float), np.asarray(true, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.maximum(p / t, t / p)
    return np.where((p > 0) & (t > 0), q, np.inf)


def q_error_summary(predicted: Sequence[float], true: Sequence[float]) -> dict:
    """Median and 95th percentile of the q-errors (numpy's linear interpolation), and their count."""
    q = q_error(predicted, true)
    if q.size == 0:
        raise UserError("q-error: no plans to score")
    return {"median": float(np.median(q)), "p95": float(np.percentile(q, 95)), "plans": int(q.size)}


# -- training data ------------------------------------------------------------------------------------

def query_to_dict(q: Query) -> dict:
    return {"name": q.name, "operators": list(q.operators), "edges": [list(e) for e in q.edges],
            "keyed": sorted(q.keyed), "max_parallelism": q.max_parallelism, "state_span_s": q.state_span_s}


def query_from_dict(d: Mapping) -> Query:
    return Query(d["name"], tuple(d["operators"]), tuple(tuple(e) for e in d["edges"]), frozenset(d.get("keyed", ())),
                 d.get("max_parallelism"), float(d.get("state_span_s", 0.0)))


@dataclass(frozen=True)
class PlanRecord:
    """One labelled plan: what the model reads (query, single-task metrics at ``memory_mb``,
    configuration) and the MST it should predict."""

    query: Query
    metrics: SingleTaskMetrics
    configuration: Mapping[str, int]
    memory_mb: int
    mst: float
    source: str = "generated"
    """generated (a generated workload) or ledger (a recorded campaign)."""
    label: str = "truth"
    """Where the MST comes from: truth (the sim's engine), capacity (the sim's capacity model), measured
    (a campaign's Capacity Estimator)."""
    workload: str = ""
    """The profile or campaign the plan belongs to (held-out sets split by it)."""

    def plan(self) -> tuple[Query, SingleTaskMetrics, Mapping[str, int], float]:
        return self.query, self.metrics, self.configuration, float(self.memory_mb)

    def to_dict(self) -> dict:
        return {"query": query_to_dict(self.query), "metrics": self.metrics.to_dict(),
                "configuration": dict(self.configuration), "memory_mb": self.memory_mb, "mst": self.mst,
                "source": self.source, "label": self.label, "workload": self.workload}

    @classmethod
    def from_dict(cls, d: Mapping) -> "PlanRecord":
        return cls(query_from_dict(d["query"]), SingleTaskMetrics.from_dict(d["metrics"]),
                   {k: int(v) for k, v in d["configuration"].items()}, int(d["memory_mb"]), float(d["mst"]),
                   d.get("source", "generated"), d.get("label", "truth"), d.get("workload", ""))


@dataclass
class TrainingSet:
    """Labelled plans and how they were made (``built``: the builder's parameters, so a cache is reused
    only for the same ones)."""

    records: list[PlanRecord] = field(default_factory=list)
    built: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"built": self.built, "records": [r.to_dict() for r in self.records]}

    def save(self, directory: Path | str) -> Path:
        """Written as ``directory``/training.json (the directory created if missing)."""
        path = Path(directory) / TRAINING_FILE
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"training: cannot create {path.parent} ({e.strerror or e})") from None
        write_text(path, json.dumps(self.to_dict()) + "\n")
        return path

    @classmethod
    def load(cls, directory: Path | str, option: str = "training") -> "TrainingSet":
        """The training set cached in ``directory``; one line naming ``option`` when there is none."""
        path = Path(directory) / TRAINING_FILE
        if not path.is_file():
            raise UserError(f"{option}: no training set in {directory} (expected {TRAINING_FILE}; build one with "
                            f"python bench/methods_learned.py --cache {directory})")
        try:
            d = json.loads(path.read_text())
            return cls([PlanRecord.from_dict(r) for r in d["records"]], dict(d.get("built", {})))
        except (ValueError, KeyError, TypeError) as e:
            raise UserError(f"{option}: {path} is not a training set ({type(e).__name__}: {e})") from None


# -- the models ---------------------------------------------------------------------------------------

GRAPH_ROUNDS = 2
"""Message-passing rounds of the graph model: an operator sees two edges upstream."""
CAPACITY_COLUMN = OPERATOR_FEATURES.index("log_capacity")


def linear_bound(plans: Sequence[tuple[Query, SingleTaskMetrics, Mapping[str, int], float]]) -> np.ndarray:
    """ln of each plan's weakest operator's measured capacity (source events/s): DS2's linear law."""
    from .learned_features import operator_matrix

    return np.array([math.log(10.0) * float(operator_matrix(*p)[:, CAPACITY_COLUMN].min()) for p in plans])


def _regressor(name: str, seed: int):
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import LinearRegression
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if name == "linear":
        return make_pipeline(StandardScaler(), LinearRegression())
    if name == "forest":
        return RandomForestRegressor(n_estimators=200, min_samples_leaf=2, random_state=seed, n_jobs=1)
    # mlp, and the graph model's readout
    return make_pipeline(StandardScaler(), MLPRegressor(hidden_layer_sizes=(64, 64), alpha=1e-3, max_iter=3000,
                                                        learning_rate_init=1e-3, random_state=seed))


@dataclass
class CostModel:
    """A fitted model: name, target, and the regressor behind it."""

    name: str
    target: str
    regressor: Any
    records: int
    fit_seconds: float = 0.0

    def features(self, plans) -> np.ndarray:
        return plan_vectors(plans, graph=self.name == "graph", rounds=GRAPH_ROUNDS)

    def predict(self, plans: Sequence[tuple[Query, SingleTaskMetrics, Mapping[str, int], float]]) -> np.ndarray:
        """Predicted MSTs, events/s."""
        if not plans:
            return np.zeros(0)
        y = self.regressor.predict(self.features(plans))
        if self.target == "ratio":
            y = y + linear_bound(plans)
        return np.exp(np.clip(y, -700.0, 700.0))

    def to_dict(self) -> dict:
        return {"model": self.name, "target": self.target, "records": self.records, "fit_seconds": self.fit_seconds}


def fit(records: Sequence[PlanRecord], model: str = "forest", target: str = "mst", seed: int = 0) -> CostModel:
    """``model`` trained on the records whose MST is positive (log MST is the target)."""
    if model not in MODELS:
        raise UserError(f"model: expected one of {', '.join(MODELS)}, got {model!r}")
    if target not in TARGETS:
        raise UserError(f"target: expected one of {', '.join(TARGETS)}, got {target!r}")
    usable = [r for r in records if r.mst > 0 and math.isfinite(r.mst)]
    if len(usable) < 2:
        raise UserError(f"training: {len(usable)} plan(s) with a positive MST; a model needs at least 2")
    plans = [r.plan() for r in usable]
    y = np.log([r.mst for r in usable])
    if target == "ratio":
        y = y - linear_bound(plans)
    t0 = time.perf_counter()
    cost = CostModel(model, target, _regressor(model, seed), len(usable))
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():  # a tiny training set stops the perceptron early; its score says so
        warnings.simplefilter("ignore", ConvergenceWarning)
        cost.regressor.fit(cost.features(plans), y)
    cost.fit_seconds = time.perf_counter() - t0
    return cost


def score(model: CostModel, records: Sequence[PlanRecord]) -> dict:
    """The model's q-errors on ``records`` (median, p95)."""
    usable = [r for r in records if r.mst > 0]
    return q_error_summary(model.predict([r.plan() for r in usable]), [r.mst for r in usable])


# -- options ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LearnedOptions:
    training: str | None = None
    model: str = "forest"
    target: str = "ratio"
    safety: float = ExplorerSettings.safety
    timing: str = DEFAULT_TIMING
    policy: str = DEFAULT_POLICY
    plan_limit: int = PLAN_LIMIT
    max_records: int | None = None

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_CHOICES = {"model": MODELS, "target": TARGETS, "timing": tuple(TIMINGS), "policy": tuple(POLICIES)}


def _option(name: str, value: Any) -> Any:
    if name in _CHOICES:
        if value not in _CHOICES[name]:
            raise checks.Invalid(f"expected one of {', '.join(_CHOICES[name])}, got {value!r:.40}")
        return value
    if name == "training":
        if not isinstance(value, str) or not value.strip():
            raise checks.Invalid(f"expected a directory holding {TRAINING_FILE}, got {value!r:.60}")
        return value
    if name == "safety":
        return checks.number(value, minimum=0.0, strict=True)
    if name == "plan_limit":
        return checks.integer(value)
    if name == "max_records":
        return None if value is None else checks.integer(value, minimum=2)
    raise KeyError(name)


def learned_options(given: Mapping[str, Any]) -> LearnedOptions:
    """The defaults with the options ``given``; an unknown or bad one is one line naming it."""
    known = [f.name for f in fields(LearnedOptions)]
    values = {}
    for key, value in given.items():
        if key not in known:
            raise UserError(f"options: learned has no option {key!r} (expected one of {', '.join(sorted(known))})")
        try:
            values[key] = _option(key, value)
        except checks.Invalid as e:
            raise UserError(f"options: learned option {key}: {e}") from None
    return replace(LearnedOptions(), **values)


# -- the planner --------------------------------------------------------------------------------------

@dataclass
class LearnedEvidence:
    """The query's single-task measurements per memory per slot, and the model trained for it."""

    query: Query
    metrics: dict[int, SingleTaskMetrics]
    model: CostModel
    training: dict
    """What the model was trained on: records, sources, labels, the builder's parameters."""
    policy: str
    steps: list[Step] = field(default_factory=list)
    testbed_seconds: float = 0.0
    measurements: int = 0

    def to_dict(self) -> dict:
        return {"query": self.query.name, "metrics": {str(m): v.to_dict() for m, v in self.metrics.items()},
                "model": self.model.to_dict(), "training": self.training, "policy": self.policy,
                "steps": [s.to_dict() for s in self.steps], "testbed_seconds": self.testbed_seconds,
                "measurements": self.measurements}


def candidate_slots(operators: int, limit: int) -> list[int]:
    """The slot counts ``plan`` reads the model at: every count from the operators to EXACT_SLOTS more,
    then a ladder growing by GROWTH up to ``limit``."""
    exact = list(range(operators, min(limit, operators + EXACT_SLOTS) + 1))
    ladder, s = [], float(exact[-1])
    while s < limit:
        s = min(float(limit), max(s + 1, s * GROWTH))
        ladder.append(int(s))
    return sorted(set(exact + ladder))


def smallest_sustaining(slots: Sequence[int], predicted: Sequence[float], need: float) -> int | None:
    """The first slot count (ascending) whose predicted MST reaches ``need``; None when none does."""
    for s, mst in zip(slots, predicted):
        if mst >= need:
            return s
    return None


class LearnedCostModel:
    """PDSP-Bench's learned cost models as a planner (module docstring)."""

    name = "learned"

    def options(self, request: PlanningRequest) -> LearnedOptions:
        """The request's options, checked (one line naming a bad one)."""
        return learned_options(request.options)

    def missing(self, request: PlanningRequest) -> str | None:
        """What the method lacks to run as asked (a training set), in words a user can act on; None: nothing.
        ``streambed compare`` leaves the method out of its default for it, and refuses it by name."""
        if self.options(request).training is None:
            return ("needs a training set: add --set learned.training=DIR (python bench/methods_learned.py "
                    "--cache DIR builds one)")
        return None

    def explore(self, testbed: Testbed, request: PlanningRequest, log: Log = silent) -> LearnedEvidence:
        o = self.options(request)
        if o.training is None:
            raise UserError(f"options: learned option training: {self.missing(request)}")
        training = TrainingSet.load(o.training, "options: learned option training")
        records = training.records[:o.max_records] if o.max_records else training.records
        info = testbed.info()
        query = testbed.query(request.query)
        memories = tuple(request.memories) or tuple(info.memory_per_slot)
        for m in memories:
            info.check_memory(m, "memories")
        if query.size > info.max_slots:
            raise UserError(f"{query.name}: {query.size} operators need {query.size} slots; the testbed has "
                            f"{info.max_slots}")
        steps, metrics = [], {}
        with tempfile.TemporaryDirectory(prefix="streambed-learned-") as directory, \
                Ledger.open(directory, "learned", {"query": request.query, "seed": request.seed},
                            resume=False) as ledger:
            estimator = CapacityEstimator(testbed, ledger, Timing.named(o.timing), log)
            optimizer = ConfigurationOptimizer(estimator, query, policy_named(o.policy))
            for m in memories:
                before = estimator.testbed_seconds
                metrics[m] = optimizer.single_task(m)
                steps.append(Step(query.size, m, Configuration.single_task(query).as_dict(), metrics[m].source_rate,
                                  estimator.testbed_seconds - before, "single task: operator rates"))
                log(f"learned: single task at {m} MB: MST {metrics[m].source_rate:,.0f} events/s")
        model = fit(records, o.model, o.target, request.seed)
        log(f"learned: {o.model} trained on {model.records} plans in {model.fit_seconds:.1f} s")
        summary = {"directory": str(o.training), "records": model.records,
                   "sources": _counts(r.source for r in records), "labels": _counts(r.label for r in records),
                   "built": training.built}
        return LearnedEvidence(query, metrics, model, summary, o.policy, steps, estimator.testbed_seconds,
                               estimator.calls)

    def plan(self, evidence: LearnedEvidence, request: PlanningRequest) -> Sizing:
        o = self.options(request)
        need = request.rate * o.safety
        policy = policy_named(evidence.policy)
        query, limit = evidence.query, max(o.plan_limit, evidence.query.size)
        entries = {}
        best_seen = {}
        for memory, metrics in evidence.metrics.items():
            found, top = self._smallest(query, metrics, memory, policy, need, limit, evidence.model)
            best_seen[memory] = top
            if found is not None:
                entries[memory] = found
        detail = {**evidence.to_dict(), "safety": o.safety, "need": need,
                  "entries": {str(m): {"slots": s, "configuration": c, "predicted_mst": p}
                              for m, (s, c, p) in entries.items()},
                  "max_parallelism": query.max_parallelism}
        common = dict(testbed_seconds=evidence.testbed_seconds, measurements=evidence.measurements,
                      steps=tuple(evidence.steps), detail=detail)
        if not entries:
            top = max(best_seen.values())
            return Sizing(self.name, request.query, request.rate, None, None, None,
                          unreachable=f"the {evidence.model.name} model predicts at most {top:,.0f} events/s up to "
                                      f"{limit:,} slots, below {need:,.0f} (the rate x {o.safety:g})", **common)
        memory = min(entries, key=lambda m: (entries[m][0] * m, entries[m][0]))
        _, configuration, predicted = entries[memory]
        slots = sum(configuration.values())  # the policy's configuration may leave a slot of the count unused
        notes = (f"{evidence.model.name} model (target {evidence.model.target}, {evidence.model.records} training "
                 f"plans) predicts {predicted:,.0f} events/s for {slots} slots x {memory} MB",)
        return Sizing(self.name, request.query, request.rate, slots, memory, configuration, notes=notes, **common)

    @staticmethod
    def _smallest(query: Query, metrics: SingleTaskMetrics, memory: int, policy, need: float, limit: int,
                  model: CostModel) -> tuple[tuple[int, dict, float] | None, float]:
        """((slots, configuration, predicted MST) of the smallest candidate predicted to reach ``need``,
        or None; the largest prediction seen). Between the ladder's steps every count is read."""
        def predict(counts: Sequence[int]) -> tuple[list[dict], np.ndarray]:
            configs = [dict(policy.configure(metrics, s).parallelism) for s in counts]
            return configs, model.predict([(query, metrics, c, float(memory)) for c in configs])

        counts = candidate_slots(query.size, limit)
        configs, predicted = predict(counts)
        first = smallest_sustaining(counts, predicted, need)
        top = float(predicted.max())
        if first is None:
            return None, top
        i = counts.index(first)
        if i > 0 and first - counts[i - 1] > 1:  # the ladder skipped counts: read them
            between = list(range(counts[i - 1] + 1, first))
            more_configs, more = predict(between)
            inner = smallest_sustaining(between, more, need)
            if inner is not None:
                j = between.index(inner)
                return (inner, more_configs[j], float(more[j])), top
        return (first, configs[i], float(predicted[i])), top


def _counts(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out

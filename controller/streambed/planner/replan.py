"""Re-planning from recorded measurements, no testbed (docs/records.md): BIDS2 on recorded single-task
metrics, the explorer's model fitted on recorded measurements and inverse-solved, the model's prediction
of a held-out budget, and a finished exploration planned again within a cluster's slots.

Pure solves on records already read: the files are read by records.py and handed over by
campaigns/replan.py. The algorithms are the planner's own (policies, surrogates, selection, sizing),
so a re-plan from a campaign's record gives what the campaign itself gave.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Callable, Protocol, Sequence

from ..errors import UserError
from ..model import (FAMILIES, MAX_PLAN_SLOTS, Budget, Features, Observation, Plan, Query, SingleTaskMetrics,
                     TestbedInfo, check_slots)
from .exploration import Exploration, ExplorerSettings
from .explorer import ResourceExplorer
from .policies import policy_named
from .policies.bids2 import bids2
from .selection import select_features, select_family
from .sizing import guarded_solve, plans_by_family
from .surrogates import fit, loocv_rmse, paper_prefix_fit

TRAINING = ("all", "paper-prefix")
"""Which measurements train the model: all of them (the explorer's rule), or the paper artifact's
prefix procedure (surrogates.paper_prefix_fit), which produced the paper's Tables III and IV."""


class RecordedMetrics(Protocol):
    """One set of single-task metrics from a file (records.MetricsRecord) and the budget it records."""

    metrics: SingleTaskMetrics
    origin: str
    slots: int | None
    recorded_objective: float | None
    recorded_parallelism: dict[str, int] | None


class RecordedMeasurements(Protocol):
    """The Resource Explorer's data set D from a file (records.MeasurementFile), in file order."""

    path: Path
    format: str
    observations: tuple[Observation, ...]
    query: str | None
    operators: int | None
    slots_per_taskmanager: int | None


def solve_records(records: Sequence[RecordedMetrics], slots: int | None, path: str,
                  on_solve: Callable[[dict], None] | None = None) -> list[dict]:
    """BIDS2 (section V, Eq. 1-4) on each record: at ``slots``, or at the budget the record carries.
    Every budget is checked before the first solve, so bad input costs no solver time."""
    budgets = []
    for r in records:
        budget = slots if slots is not None else r.slots
        if budget is None:
            raise UserError(f"--slots: {path} ({r.origin}) gives no slot budget; give --slots N")
        n = len(r.metrics.operators)
        if not any(rates.input_ratio > 0 for _, rates in r.metrics.operators):
            raise UserError(f"--from-metrics: {path} ({r.origin}): no operator receives input (every input ratio "
                            f"is 0), so no source rate is limited; expected at least one positive input ratio")
        check_slots(budget, n, query=f"{r.metrics.query or 'the query'} (in {path}, {r.origin})", field="--slots")
        budgets.append(budget)
    solves = []
    for r, budget in zip(records, budgets):
        sol = bids2(r.metrics, budget)
        s = {"query": r.metrics.query, "memory_mb": r.metrics.memory_mb, "slots": budget, "origin": r.origin,
             "predicted_rate": sol.predicted_rate, "parallelism": sol.parallelism}
        if r.recorded_objective is not None and budget == r.slots:
            s["recorded_objective"] = r.recorded_objective
            s["recorded_parallelism"] = r.recorded_parallelism
        solves.append(s)
        if on_solve:
            on_solve(s)
    return solves


def _finite(x: float) -> float | None:
    """JSON has no infinity: a LOOCV that cannot be computed is null."""
    return x if math.isfinite(x) else None


def fit_plan(measurements: RecordedMeasurements, rate: float, memories: Sequence[int], family: str, *,
             safety: float = 1.10, training: str = "all", features=None, guards: ExplorerSettings | None = None) -> dict:
    """The Resource Explorer's model selection and model usage (section VI) on recorded measurements.

    ``family`` "auto" applies the explorer's own rule (selection.select_family on all measurements: the
    half-P split, or the lowest LOOCV RMSE when that split cannot judge); the chosen family is fitted
    on every measurement (``training="all"``, as the explorer does) or on the paper's best prefix
    (``"paper-prefix"``). Each memory per slot then gets the smallest slot count whose prediction
    reaches ``safety`` x ``rate``.
    """
    features = features or Features()
    obs = list(measurements.observations)
    where = f"--measurements: {measurements.path}"
    try:
        if training == "paper-prefix":
            if family == "auto":
                raise UserError("--family: the paper's prefix procedure fits a family chosen by hand (Table III); "
                                "give --family linear, log or sqrt, or --training all")
            model, k, _ = paper_prefix_fit(family, obs, features)
            train, selection = obs[:k], "given"
        elif training == "all":
            train = obs
            if family == "auto":  # the explorer's structure too: a slot slope per memory where LOOCV prefers it
                features = select_features(obs, features, FAMILIES)
            loocv = {f: loocv_rmse(f, obs, features) for f in FAMILIES}
            if family == "auto":
                if not any(math.isfinite(v) for v in loocv.values()):
                    raise UserError(f"{where}: {len(obs)} measurements are too few to choose a family by "
                                    f"cross-validation; give --family linear, log or sqrt, or more measurements")
                family, selection = select_family(obs, features, FAMILIES, loocv)
            else:
                selection = "given"
            model = fit(family, obs, features)
        else:
            raise UserError(f"--training: expected {' or '.join(TRAINING)}, got {training!r}")
        scores = {f: _finite(loocv_rmse(f, train, features)) for f in FAMILIES}
        artifact = _finite(loocv_rmse(family, train, features, aggregate="fold_mean"))
    except ValueError as e:  # surrogates: too few or degenerate measurements, non-positive log/sqrt inputs
        raise UserError(f"{where}: {e}") from None
    min_slots = measurements.operators or 1
    measured = max(o.slots for o in obs)
    guards = replace(guards or ExplorerSettings(), safety=safety)
    coefficients = {"a": model.a, "b": model.b, "c": model.c, "d": model.d}
    entries = []
    for m in sorted(set(memories)):
        solve = guarded_solve(model, m, rate, min_slots=min_slots, measured_slots=measured, settings=guards)
        entries.append({"memory_mb": m, "slots": solve.slots,
                        "predicted_mst": None if solve.slots is None else float(model.predict(m, solve.slots)),
                        "family": family, "coefficients": coefficients, "loocv_rmse": scores[family],
                        "max_slots": solve.max_slots, "max_rate": solve.max_rate, "unreachable": solve.unreachable,
                        "by_family": plans_by_family(train, features, FAMILIES, m, rate, safety=safety,
                                                     min_slots=min_slots, max_slots=MAX_PLAN_SLOTS, settings=guards)})
    return {"query": measurements.query, "measurements": str(measurements.path), "format": measurements.format,
            "observations": len(obs), "training": training, "training_rows": len(train),
            "rate": rate, "safety": safety, "family": family, "selection": selection,
            "model": model.to_dict(), "loocv_rmse": scores[family], "loocv_rmse_by_family": scores,
            "loocv_mean_abs_error": artifact, "entries": entries}


def relative_error(predicted: float, measured: float) -> float | None:
    """How far a prediction lies from a measurement, as a signed share of the measurement; None for
    a measurement of 0 events/s (a budget that sustained nothing), against which no share exists."""
    return predicted / measured - 1.0 if measured > 0 else None


def hold_out(measurements: RecordedMeasurements, references: Sequence[float] = (), memory_mb: float | None = None, *,
             features: Features | None = None) -> dict:
    """``holdout``: the Resource Explorer's model (section VI: the same family selection and fit)
    trained on every measurement but those at the largest slot count, and its prediction there
    against what was measured: the recorded MST, and the median of ``references`` (the same budget
    measured again, separately). A model that extrapolates well predicts a
    budget larger than any it was fitted on. ``memory_mb`` keeps the prediction at that memory per
    slot only; the model is fitted on every memory's smaller budgets all the same."""
    features = features or Features(slots_per_taskmanager=measurements.slots_per_taskmanager
                                    or Features().slots_per_taskmanager)
    where = f"--measurements: {measurements.path}"
    obs = list(measurements.observations)
    largest = max((o.slots for o in obs), default=0)
    held = sorted((o for o in obs if o.slots == largest), key=lambda o: o.memory_mb)
    train = [o for o in obs if o.slots != largest]
    if memory_mb is not None:
        measured = ", ".join(f"{o.memory_mb:g}" for o in held)
        held = [o for o in held if o.memory_mb == memory_mb]
        if not held:
            raise UserError(f"--memory: the largest budget ({largest} slots) was measured at {measured} MB per "
                            f"slot, not {memory_mb:g}")
    counts = len({o.slots for o in train})
    if counts < 3:  # two parameters a family, and a fold left out to choose between families
        raise UserError(f"{where}: holding out the largest budget ({largest} slots) leaves {counts} slot "
                        f"count{'s' * (counts != 1)} to fit on; expected measurements at three slot counts "
                        f"or more below it")
    try:
        # the explorer's structure too: a slot slope per memory where LOOCV prefers it (as fit_plan)
        features = select_features(train, features, FAMILIES)
        loocv = {f: loocv_rmse(f, train, features) for f in FAMILIES}
        if not any(math.isfinite(v) for v in loocv.values()):
            raise UserError(f"{where}: {len(train)} measurements below the largest budget are too few to choose a "
                            f"family by cross-validation; expected more")
        family, selection = select_family(train, features, FAMILIES, loocv)
        models = {f: fit(f, train, features) for f in FAMILIES}
    except ValueError as e:  # surrogates: degenerate measurements, non-positive log/sqrt inputs
        raise UserError(f"{where}: {e}") from None
    refs = sorted(float(r) for r in references)
    if refs and len(held) > 1:  # one budget measured again: which memory it was is not said
        raise UserError(f"--reference: the largest budget ({largest} slots) was measured at "
                        f"{', '.join(f'{o.memory_mb:g}' for o in held)} MB per slot; references are for one: "
                        f"give --memory")
    reference = statistics.median(refs) if refs else None
    rows = []
    for o in held:
        predicted = {f: float(m.predict(o.memory_mb, o.slots)) for f, m in models.items()}
        rows.append({"memory_mb": o.memory_mb, "slots": o.slots, "measured": o.mst,
                     "predicted": predicted[family],
                     "error": relative_error(predicted[family], o.mst),
                     "reference_error": None if reference is None else relative_error(predicted[family], reference),
                     "by_family": {f: {"predicted": v, "error": relative_error(v, o.mst),
                                       "reference_error": None if reference is None else relative_error(v, reference)}
                                   for f, v in predicted.items()}})
    return {"query": measurements.query, "measurements": str(measurements.path), "format": measurements.format,
            "held_out_slots": largest, "training_rows": len(train), "training_slots": sorted({o.slots for o in train}),
            "family": family, "selection": selection, "loocv_rmse_by_family": {f: _finite(v) for f, v in loocv.items()},
            "references": refs, "reference": reference,
            "reference_spread": None if len(refs) < 2 else refs[-1] / refs[0],
            "held_out": rows}


class RecordedOptimizer:
    """The Optimizer a re-plan needs (explorer.ResourceExplorer): the query, the campaign's policy and
    its recorded single-task metrics; nothing is measured."""

    def __init__(self, query: Query, policy: str, single_task: Sequence[SingleTaskMetrics], origin: str):
        self.query, self.policy, self.origin = query, policy_named(policy), origin
        self._single = {m.memory_mb: m for m in single_task}

    def single_task(self, memory_mb: int) -> SingleTaskMetrics:
        if memory_mb not in self._single:
            raise UserError(f"{self.origin}: no measurement of {memory_mb} MB per slot to configure a budget from "
                            f"(it has {', '.join(str(m) for m in sorted(self._single)) or 'none'})")
        return self._single[memory_mb]

    def measured_single_task(self) -> dict[int, SingleTaskMetrics]:
        return dict(sorted(self._single.items()))

    def optimize(self, budget: Budget, key: str):
        raise UserError(f"{self.origin}: a re-plan measures nothing")


def plan_within_recorded(exploration: Exploration, single_task: Sequence[SingleTaskMetrics], query: Query,
                         info: TestbedInfo, settings: ExplorerSettings, policy: str, memory_mb: int, slots: int,
                         origin: str) -> Plan:
    """The plan a finished exploration gives for the highest rate it serves within ``slots`` slots of
    ``memory_mb`` (explorer.ResourceExplorer.plan_within), with the campaign's policy, recorded single-task
    metrics and explorer settings; nothing is measured (``origin`` names the record in refusals)."""
    optimizer = RecordedOptimizer(query, policy, single_task, origin)
    return ResourceExplorer(optimizer, info, settings).plan_within(exploration, memory_mb, slots)

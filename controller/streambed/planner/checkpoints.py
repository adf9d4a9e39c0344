"""Checkpoints (``--checkpoint-slots``): staged measurements beyond the testbed, on part of the
production cluster, where a plan rests on an extrapolation the testbed cannot settle (after Imai et
al.'s validation points). These functions choose where to measure, which family the checkpoint
favours and what a checkpoint that held the rate plans; ResourceExplorer.checkpoint measures and
ResourceExplorer.model_for uses the result.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import numpy as np

from ..model import Features, Observation, PlanEntry
from ..model.plan import HELD_AT_CHECKPOINT
from .surrogates import fit


def checkpoint_range(entry: PlanEntry, slots: int) -> int:
    """The largest budget a checkpoint for ``entry`` may measure: ``slots``, or the largest budget any
    family (or the plan) gives the rate, when smaller. A checkpoint far beyond every answer tells
    little about the budgets in question: with 1,500 slots for it, q11 at 3 x (true minimum 139)
    was planned at 184 slots, and q8 at 3 x at 1,276 slots sustained 0.994 of its target."""
    answers = [a for a in (*entry.by_family.values(), entry.slots, entry.model_slots) if a is not None]
    return min(slots, max(answers)) if answers else slots


def held_at_checkpoint(entry: PlanEntry, checkpoints: Sequence, rate: float, safety: float) -> PlanEntry:
    """``entry`` where the model leaves it unreachable but a checkpoint (ExplorationPoint of phase checkpoint)
    of its memory measured the rate with the plan's safety factor: the smallest such checkpoint's budget, in
    the configuration it measured. A staged run of that configuration at that scale is what the model's
    extrapolation stands in for (q8 at 3 x, 4 GB: a checkpoint on 454 slots measured 30.1 M events/s, 1.18 x
    the rate, and the model refitted on it, whose configurations of larger budgets give the join the slots,
    still said unreachable). Its configuration ran at that scale, so nothing is left unseen there, and no
    risk is estimated: the budget was measured, not solved for. The model's answer stays in
    ``configured_from``. Any other entry as it is."""
    if entry.slots is not None:
        return entry
    held = [p for p in checkpoints if p.memory_mb == entry.memory_mb and p.configuration and p.mst >= rate * safety]
    if not held:
        return entry
    best = min(held, key=lambda p: (p.slots, -p.mst))
    return replace(entry, slots=best.slots, configuration=dict(best.configuration), predicted_mst=best.mst,
                   bids2_rate=best.predicted_rate, max_parallelism=best.max_parallelism, unreachable=None,
                   risk=None, unseen=(),
                   configured_from=f"{HELD_AT_CHECKPOINT}: {best.slots:,} slots at {best.mst:,.0f} events/s, "
                   f"{best.mst / rate:.2f} x the rate (the model alone: {entry.unreachable})")


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


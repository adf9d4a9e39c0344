"""Model selection (paper section VI): which surrogate family, and which features, describe D.

Eq. 9's cost is the lowest leave-one-out RMSE among the candidate families (``best_loocv``); the
family is chosen by training on the half of D with the fewest slots and testing on the other half
(``select_family``), and the features gain a slot slope per memory where cross-validation prefers it
(``select_features``). ``select`` records all three on an exploration.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..model import Features, Observation
from .exploration import Exploration, ExplorerSettings
from .surrogates import fit, loocv_rmse, select_by_split, split_size


def best_loocv(observations: Sequence[Observation], features: Features, families: Sequence[str]) -> float:
    """Eq. 9's cost: the lowest LOOCV RMSE among the candidate families."""
    return min(loocv_rmse(f, observations, features) for f in families)


def select_features(observations: Sequence[Observation], features: Features, families: Sequence[str]) -> Features:
    """``features``, or the same with a slot slope per memory (Features.interaction) where the best
    family's leave-one-out RMSE is lower with it (Eq. 9's criterion, over structures as well as
    families). Eq. 6-8 give every memory per slot one slot slope: for a memory-bound query (q8's
    window state) the small memories barely grow with slots while 4 GB grows fast, and one shared
    slope plans 4 GB far too pessimistically. Where memory does not change what a slot is worth, the
    extra term only adds variance and cross-validation keeps the paper's models."""
    per_memory = replace(features, interaction=True)
    shared = best_loocv(observations, features, families)
    if best_loocv(observations, per_memory, families) < shared:
        return per_memory
    return features


def split_features(features: Features) -> Features:
    """The features the split judges the families on: Eq. 6-8's, one slot slope for every memory. The
    train half holds one or two budgets per memory (the smallest, where a query's fixed tasks weigh
    most), too few for a slope per memory (select_features): on generated profiles whose MST grows in
    proportion to the slots, the per-memory slopes of the train half scattered and the split chose the
    square root, whose flat tail planned them up to 3.4 x too wide or called them unreachable
    (docs/evaluation.md, section G)."""
    return replace(features, interaction=False)


DESCRIBES_D = 1.5
"""The split chooses among the families whose leave-one-out RMSE on D is at most this many times the
best's (select_family)."""


def select_family(observations: Sequence[Observation], features: Features, families: Sequence[str],
                  loocv: dict[str, float], describes: float = DESCRIBES_D) -> tuple[str, str]:
    """Section VI's model selection: train on the half of D with the lowest P, test on the other half,
    on the paper's features (split_features). When that half holds a single slot count, no family's
    slope can be judged from it (the paper's own q1/q2/q11 data show this): fall back to Eq. 9's lowest
    LOOCV RMSE. *Deviation*: the split chooses only among the families that describe D, their LOOCV
    RMSE within ``describes`` x the best's. The train half holds the smallest budgets, where a query
    that gives each operator one task grows faster than in proportion (its bottleneck goes from one
    task to three in two slots); a concave family bent to that start can win the split by chance
    while it misses D's points 1.75-2.83 x as far as the linear one, and its flat tail then planned
    generated profiles whose MST grows in proportion to the slots 1.6-5.8 x too wide or called them
    unreachable (docs/planner.md, model selection). Returns (family, rule used)."""
    judged = split_features(features)
    ordered = sorted(observations, key=lambda o: (o.slots, o.memory_mb))
    train = ordered[: split_size(ordered, judged)]
    if len({o.slots for o in train}) >= 2:
        try:
            chosen, scores = select_by_split(observations, judged, families)
        except ValueError:
            pass
        else:
            best = min(loocv[f] for f in families)
            fitting = [f for f in families if loocv[f] <= describes * best]
            if chosen in fitting or not fitting:  # none fits: a LOOCV of NaN compares false
                return chosen, "split"
            return min(fitting, key=lambda f: scores[f]), f"split among the families within {describes:g} x the best LOOCV"
    return min(families, key=lambda f: loocv[f]), "loocv (split half had one slot count)"


def select(ex: Exploration, settings: ExplorerSettings, observations: Sequence[Observation] | None = None) -> None:
    """Fill in the exploration's model: its features (select_features), every family's LOOCV and split
    RMSE, the family chosen (select_family) and that family fitted on all of D (``observations``: D's
    measurements as the models read them, ResourceExplorer.observations; the raw MSTs by default)."""
    obs = list(observations) if observations is not None else ex.observations()
    features = select_features(obs, settings.features, settings.families)
    ex.loocv = {f: loocv_rmse(f, obs, features) for f in settings.families}
    ex.family, ex.selection = select_family(obs, features, settings.families, ex.loocv)
    try:
        ex.split = select_by_split(obs, split_features(features), settings.families)[1]
    except ValueError:
        ex.split = {}
    ex.model = fit(ex.family, obs, features).to_dict()

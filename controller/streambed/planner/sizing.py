"""Sizing (paper section VI, "Model usage"): from a fitted model to a budget, with guard rails.

* The guarded inverse solve (``guarded_solve``): the smallest budget whose prediction reaches
  safety x the rate, or whose bootstrap risk bound reaches the rate (``risk_solve``), within the
  budgets the model is trusted to (``trusted_slots``); otherwise why not, and the most it supports.
* The efficiency check (``efficiency``, ``configured_slots``): how much of its configuration's
  predicted rate a budget really sustained on the testbed, carried beyond it, and the smallest budget
  whose own configuration reaches the rate at that efficiency.
* What a plan cannot exclude (``key_warning``) and how far the candidate families' answers spread
  (``plans_by_family``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Collection, Mapping, Sequence

import numpy as np

from ..model import Features, Observation, SingleTaskMetrics, Surrogate, keygroups
from ..model.keyskew import max_z
from .caveats import what_tells
from .exploration import RATES_HOLD, ExplorationPoint, ExplorerSettings
from .policies import skew
from .surrogates import fit, inverse_solve, predictions


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


def configuration_gain(policy, metrics: SingleTaskMetrics, point: ExplorationPoint) -> float:
    """How much more the policy predicts, on the plan's ``metrics``, for the configuration it would give a
    measured point's budget (with the finest key groups, Flink's 32,768) than for the configuration that
    point ran: at least 1, and 1 where the point ran the plan's own choice. Two things make it more. The
    point's key groups: Flink's default of 128 over 37 tasks gives the busiest 4 where the mean owns 3.46.
    Its configuration: the explorer configured each budget from the single-task metrics (section VI), and
    an operator whose rate the larger runs read lower (a window whose state outgrows the slot:
    model/loadrate.py) got too few tasks, so that budget's MST is that operator's, not the budget's."""
    ran = predictor(policy, metrics)(point)
    best = policy.configure(replace(metrics, max_parallelism=keygroups.MAX_MAX_PARALLELISM), point.slots)
    if ran <= 0 or not math.isfinite(ran) or not math.isfinite(best.predicted_rate):
        return 1.0
    return max(1.0, best.predicted_rate / ran)


def spread(slots: int) -> float:
    """The scale the efficiency declines along: sqrt(2 ln P), how far the slowest of P tasks lags the
    mean in standard deviations (model/keyskew.max_z). What a budget loses to its configuration's
    prediction is the moment-to-moment lag of its slowest tasks (speed noise, firings): it grows as
    the maximum of P draws, not as ln P, which over-provisioned q11 at 25 x by 28 % (docs/planner.md)."""
    return max_z(max(int(slots), 1))


def lagged(eta_top: float, slope: float, spread_top: float, spread_at: float, law: str = "lag") -> float:
    """eta beyond the largest budget measured, from its eta there and the measured slope along spread(P).

    "lag": a budget's tasks wait on the slowest of P, whose time exceeds the mean by a number of
    deviations that grows as spread(P) (the fork-join bound: E[max of P] ~ mean + sd sqrt(2 ln P)), so
    the time per record, 1 / eta, grows linearly in spread(P) and eta = useful / (useful + lag) never
    reaches 0. Its slope at the largest budget is the measured one. "linear": eta itself falls linearly
    in spread(P), the lag law's first-order form, which reaches 0 where a steep decline is carried far
    (a straggling window's eta of 0.34 at 48 slots read 0 at 775, where its own configurations held
    0.26-0.30: docs/evaluation.md, section G). Never raised."""
    if slope >= 0 or eta_top <= 0:
        return eta_top
    if law == "linear":
        return max(0.0, eta_top + slope * (spread_at - spread_top))
    return eta_top / (1.0 + (-slope / eta_top) * (spread_at - spread_top))


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
               decline: float | None = None, law: str = "lag") -> tuple[Callable[[int], float], int, float] | None:
    """eta(P): how much of its configuration's predicted rate a budget really sustains, measured MST over
    ``predict(point)`` (the policy's capacities with the plan's metrics) at each budget measured
    with ``memory_mb``. Beyond the testbed: the largest budget's eta (the lowest of its repeats), lowered
    further along spread(P) by the ``law`` (``lagged``) at the slope ``decline`` (pooled_decline: one slope
    for every memory) or, without it, this memory's own, where the measurements decline with P. Between
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
        return lagged(eta_top, slope, spread(top), spread(max(slots, top)), law)

    return eta, top, eta_top


def rates_kept(etas: Sequence[tuple[int, float]]) -> float | None:
    """How much of the smallest budget's efficiency the largest keeps: ``etas`` are (slots, MST over the
    prediction from the smallest budget's rates) of every budget measured; the largest budget's (its lowest)
    over the smallest's (its highest). None with one budget."""
    budgets = sorted({s for s, _ in etas})
    if len(budgets) < 2:
        return None
    high = max(e for s, e in etas if s == budgets[0])
    return min(e for s, e in etas if s == budgets[-1]) / high if high > 0 else None


def rates_hold(etas: Sequence[tuple[int, float]], floor: float = RATES_HOLD) -> bool:
    """Whether the tasks' rates hold as the budget grows: rates_kept at least ``floor``. A query that bends for
    a reason the configuration does not see (the network, coordination; an analytic law on the sim) reads its
    rates falling; one whose curve bends only by its key skew and key groups does not, since the prediction
    counts those. False with one budget."""
    kept = rates_kept(etas)
    return kept is not None and kept >= floor


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


def margin_budget(with_margin: int | None, exact: int | None, safety: float, limit: int,
                  first_reaching: Callable[[int, int], int | None] = lambda lo, hi: lo) -> int | None:
    """The budget a plan takes for its safety factor (section VI, "Model usage": the smallest P whose
    prediction reaches safety x the rate): ``with_margin``, the last pass's budget whose configuration
    reaches that, unless it costs more than ``safety`` x ``exact``, the budget whose configuration reaches the
    rate itself; then that many slots (at most ``limit``). Past a step in the configuration's capacity (a hot
    key's task, a key-group boundary) the factor on the rate can double the slots (Nexmark q5 at 1.4 x:
    162 window tasks where 81 reach the rate); on the slots it stays the paper's 10 % over-provisioning.
    ``with_margin`` None (the factor's rate out of reach): the same, where ``exact`` reaches the rate. A
    budget's configuration need not reach more with more slots (Flink's default key groups step with them),
    so the budget is the first from there up to ``with_margin`` (or ``limit``) whose configuration reaches the
    rate, ``first_reaching(lo, hi)``; none: ``with_margin`` (a held-out aggregate of 410 keys planned 4,509
    slots, 1.1 x the first that reached the rate, and its configuration sustained 0.969 of it)."""
    if exact is None:
        return with_margin
    capped = min(limit, math.ceil(exact * safety))
    if with_margin is not None and with_margin <= capped:
        return with_margin
    found = first_reaching(capped, with_margin if with_margin is not None else limit)
    return with_margin if found is None else found


def margin_over_choices(with_margin: int | None, safety: float, limit: int,
                        choices: Sequence[tuple[int | None, Callable[[int, int], int | None]]]) -> tuple[int | None, int | None, int]:
    """margin_budget over several configurations of the same budgets (Flink's default key groups, the job's
    own): each choice is (its exact budget, its first_reaching); the one whose margin budget is fewest,
    the first (``with_margin``'s own) on a tie or where another would only return ``with_margin``. A hot
    key's task near its ceiling reaches the rate over 32,768 groups on 170 slots where Flink's default
    groups need 233 (a held-out aggregate at 1.5 x: 257 slots planned, 142 the truth's minimum). Returns
    (the budget, its exact budget, the index of its choice)."""
    best = (with_margin, None, 0)
    for i, (exact, first_reaching) in enumerate(choices):
        budget = margin_budget(with_margin, exact, safety, limit, first_reaching)
        if i == 0:
            best = (budget, exact, 0)
        elif budget is not None and budget != with_margin and (best[0] is None or budget < best[0]):
            best = (budget, exact, i)
    return best


CONFIGURED_GRID = 64
"""Budgets configured_slots scans between the model's budget and the trusted limit."""


def planned_max_parallelism(slots: int) -> int:
    """The max parallelism a plan sets when Flink's default would cost slots: 16 key groups or more per
    slot, so that the busiest task owns at most ~6 % more than the mean, within Flink's 32,768."""
    return min(keygroups.MAX_MAX_PARALLELISM, max(keygroups.MIN_MAX_PARALLELISM, 1 << (16 * slots - 1).bit_length()))


def hidden_keys(metrics: SingleTaskMetrics, parallelism: Mapping[str, int], rate: float) -> dict[str, tuple[float, float]]:
    """Per keyed operator of ``parallelism`` that a key hot enough to hold it below ``rate`` at that
    parallelism could hide from the parallelism measured (policies/skew.hidden_key_capacity): (the
    largest share such a key may carry, the source rate it would hold the operator's tasks at)."""
    out = {}
    for name, r in metrics.operators:
        if not r.keyed or name not in parallelism:
            continue
        cap = skew.hidden_key_capacity(r, parallelism[name], metrics.max_parallelism)
        if cap < rate:
            out[name] = (skew.hidden_key(r, metrics.max_parallelism), cap)
    return out


def outnumbered_keys(metrics: SingleTaskMetrics, parallelism: Mapping[str, int], rate: float) -> dict[str, tuple[float, float, float]]:
    """Per keyed operator of ``parallelism`` planned on more tasks than its keys' worth (1 / H, the effective
    number of keys: model/keyskew.py) that a key the runs could not show may hold below ``rate``
    (hidden_keys): (its keys' worth, that key's largest share, the source rate it would hold the tasks at).
    Past its keys' worth a task holds whole keys, so the busiest holds the hottest key, of which the runs
    know only that it lies between H and that share; the law's typical hashing of equal keys is no bound
    (a held-out window of 40 keys at Zipf 0.6, 30 keys' worth, planned on 610 tasks as one key of 3.3 %
    each: its 11 % key held the plan at 0.59 of its target)."""
    rates = dict(metrics.operators)
    out = {}
    for name, (w, cap) in hidden_keys(metrics, parallelism, rate).items():
        h = rates[name].key_skew.concentration
        if h > 0 and parallelism[name] > 1.0 / h:
            out[name] = (1.0 / h, w, cap)
    return out


def key_warning(metrics: SingleTaskMetrics, parallelism: dict[str, int], rate: float,
                beyond_data: Collection[str] = ()) -> str | None:
    """What a plan cannot exclude about its keyed operators (hidden_keys) and what would settle it
    (caveats.what_tells; ``beyond_data``: the operators whose runs read more skew than the data's
    statistics give). None when no key could hold one below ``rate``."""
    rates, hidden = dict(metrics.operators), hidden_keys(metrics, parallelism, rate)
    lines = []
    for name, (w, cap) in hidden.items():
        tested = rates[name].key_skew.tested_parallelism or rates[name].measured_parallelism
        lines.append(f"{name}: a key with up to {100 * w:.2g} % of its input would not stand out among the "
                     f"{tested:,} tasks measured, and would hold its {parallelism[name]:,} tasks at "
                     f"{cap:,.0f} events/s")
    if not lines:
        return None
    told = what_tells(bool(set(beyond_data) & set(hidden)))
    return "; ".join(lines) + f". Whether such a key exists: {told} (docs/planner.md, key skew)"


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


def confirm_step(slots: int, measured: float, rate: float, safety: float) -> int:
    """The budget to measure next after ``slots`` measured ``measured`` events/s, short of ``rate``: grown
    by the shortfall with the plan's ``safety`` factor, as a slot's worth stays what that budget showed
    (the local slope through the origin, a secant to the measured curve), and at least one slot more."""
    if measured <= 0:
        return 2 * slots
    return max(slots + 1, math.ceil(slots * safety * rate / measured))

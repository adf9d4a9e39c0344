"""BIDS2 on the capacities tasks really have: skew- and key-group-aware (the default policy).

The paper's objective stays (section V, Eq. 1-4): the configuration of the budget with the highest
source rate, every operator at least one task. What changes is the capacity of pi tasks of
operator i. BIDS2 takes it as pi o_i, as if every task carried 1/pi of the input. Two things make
the busiest task carry more, and an operator goes no faster than its busiest task (every upstream
task blocks on its fullest channel):

* **Flink's key-group rule.** A keyed operator's tasks own contiguous ranges of its key groups:
  the busiest of pi tasks owns ceil(m/pi) of m groups (model/keygroups.py). 42 tasks over 128
  groups work like 32; 43 work like 42.7.
* **Measured imbalance.** In a run of several tasks, the busiest task's busyness over the mean
  task's (Flink's autoscaler sizes by the busiest subtask by default). For a keyed operator the
  part the key groups explain is taken out, and the rest (key skew) is carried to other
  parallelisms; for the others, the measured ratio itself.

So the busiest task's share is s_i(pi) = rho_i g(pi) (keyed, g the key-group share) or kappa_i / pi,
and the capacity is o_i / (r_i s_i(pi)).

Where the runs measured a keyed operator's per-task input records, the key part of its imbalance is
not carried unchanged: the busiest task's share follows the key concentration those records show
(model/keyskew.py: the excess over the key groups' share falls as 1/sqrt(pi), the mean as 1/pi, so
the imbalance grows with pi), and only the rest, the tasks' speed, is carried, grown as the
expected maximum of pi draws. The fewest tasks that sustain a rate grow with the rate, so the best configuration is
found by bisection on the rate: a rate is feasible when the fewest tasks that sustain it, operator
by operator, fit in the budget. The fewest tasks of a keyed operator land on key-group boundaries by
construction; the spare slots go, one by one, to the operator with the least capacity.
"""

from __future__ import annotations

import heapq
import math

from ...model import SingleTaskMetrics, check_slots, keygroups
from ...model.keyskew import HOT_KEY_RATIO, KeySkew, max_z
from ...model.measurement import OperatorRates
from .base import Proposal


def residual_skew(rates: OperatorRates, fixed: int | None = None) -> float:
    """The imbalance of a keyed operator that its key groups do not explain (>= 1)."""
    p = rates.measured_parallelism
    return max(1.0, rates.imbalance / (p * keygroups.busiest_groups_share(p, fixed)))


def speed_imbalance(rates: OperatorRates, parallelism: int) -> float:
    """The part of the busiest task's excess that its input records do not explain (the tasks' speed:
    noise, a slow host), grown from the measured parallelism as the expected maximum of as many draws."""
    p0 = rates.measured_parallelism
    if p0 <= 1:
        return 1.0
    excess = max(1.0, rates.imbalance / max(rates.input_imbalance, 1.0)) - 1.0
    return 1.0 + excess * max_z(parallelism) / max_z(p0)


def busiest_share(rates: OperatorRates, parallelism: int, fixed: int | None = None, least: bool = False) -> float:
    """The share of the operator's input that its busiest task receives at ``parallelism`` (``least``:
    KeySkew.busiest_share's bound below it, wherever a hot key lies). Remembered in ``rates.memo``."""
    key = ("busiest_share", int(parallelism), fixed, least)
    share = rates.memo.get(key)
    if share is None:
        share = rates.memo[key] = _busiest_share(rates, *key[1:])
    return share


def _busiest_share(rates: OperatorRates, parallelism: int, fixed: int | None, least: bool) -> float:
    if rates.keyed:
        if rates.key_skew is not None:
            groups = keygroups.max_parallelism(parallelism, fixed)
            return min(1.0, speed_imbalance(rates, parallelism)
                       * rates.key_skew.busiest_share(parallelism, groups, least=least))
        return min(1.0, residual_skew(rates, fixed) * keygroups.busiest_groups_share(parallelism, fixed))
    return min(1.0, max(1.0, rates.imbalance) / parallelism)


def hidden_key(rates: OperatorRates, fixed: int | None = None) -> float:
    """The largest share of the input one key may carry without standing out in the run of the most tasks
    measured (keyskew.hot_key's test): HOT_KEY_RATIO x the excess its key concentration explains at the
    parallelism measured. 0 when the rates hold no key concentration or a hot key was seen."""
    skew = rates.key_skew
    if skew is None or skew.hottest > 0:
        return 0.0
    p0 = skew.tested_parallelism or rates.measured_parallelism
    if p0 < 2:
        return 0.0
    m0 = skew.tested_max_parallelism or keygroups.max_parallelism(p0, fixed)
    largest = math.ceil(m0 / p0) / m0
    return min(1.0, HOT_KEY_RATIO * max(0.0, KeySkew(skew.concentration).busiest_share(p0, m0) - largest))


def hidden_key_capacity(rates: OperatorRates, parallelism: int, fixed: int | None = None) -> float:
    """The source rate ``parallelism`` tasks of a keyed operator would sustain if its hottest key carried
    hidden_key's share: the measurements cannot exclude it (model/keyskew.py)."""
    w = hidden_key(rates, fixed)
    if w <= 0 or rates.input_ratio <= 0:
        return math.inf
    groups = keygroups.busiest_groups_share(parallelism, fixed)
    share = max(busiest_share(rates, parallelism, fixed), speed_imbalance(rates, parallelism) * (w + (1 - w) * groups))
    return rates.true_rate / (rates.input_ratio * min(1.0, share))


def capacity(rates: OperatorRates, parallelism: int, fixed: int | None = None) -> float:
    """The source rate (events/s) that ``parallelism`` tasks of the operator sustain: its busiest task's, and
    no more than its stalls allow where they held the testbed (model/stalls.py)."""
    if rates.input_ratio <= 0:
        return math.inf
    busy = rates.true_rate / (rates.input_ratio * busiest_share(rates, parallelism, fixed))
    return busy if rates.stall is None else min(busy, rates.stall.capacity(parallelism))


def fewest_tasks(rates: OperatorRates, rate: float, limit: int, fixed: int | None = None) -> int | None:
    """The fewest tasks (at most ``limit``) whose capacity reaches ``rate``, or None."""
    if rates.input_ratio <= 0 or rate <= 0:
        return 1
    if rates.stall is not None:
        least = rates.stall.fewest_tasks(rate)
        if least > limit:
            return None
        p = _fewest_busy(rates, rate, limit, fixed)
        if p is None:
            return None
        # past a key-group step capacity need not grow with the tasks: the first from there that holds
        start = max(p, least)
        return next((q for q in range(start, min(limit, start + LOCATED_SCAN) + 1)
                     if capacity(rates, q, fixed) >= rate), None)
    return _fewest_busy(rates, rate, limit, fixed)


def _fewest_busy(rates: OperatorRates, rate: float, limit: int, fixed: int | None = None) -> int | None:
    """fewest_tasks by the busiest task's load alone."""
    allowed = rates.true_rate / (rates.input_ratio * rate)  # the largest share the busiest task can take
    if not rates.keyed:
        p = max(1, math.ceil(max(1.0, rates.imbalance) / allowed - 1e-9))
        return p if p <= limit else None
    if rates.key_skew is not None:
        return _fewest_by_search(rates, allowed, limit, fixed)
    share = allowed / residual_skew(rates, fixed)  # the largest key-group share the busiest task may own
    if share >= 1.0:
        return 1
    mps = [fixed] if fixed is not None else [keygroups.MIN_MAX_PARALLELISM << k for k in range(9)]
    best = None
    for m in mps:
        groups = math.floor(share * m + 1e-9)  # key groups the busiest task may own
        if groups < 1:
            continue
        p = math.ceil(m / groups)
        # Flink derives m from p (unless fixed): p must be a parallelism whose default is this m
        if p <= limit and (fixed is not None or keygroups.default_max_parallelism(p) == m):
            best = p if best is None else min(best, p)
    return best


def located(rates: OperatorRates) -> bool:
    """Whether the busiest task's share may rise and fall as tasks are added: the runs showed which key
    groups hold the operator's hot key (KeySkew.hot_groups), or the data's key groups give it (exact)."""
    return rates.key_skew is not None and (bool(rates.key_skew.hot_groups) or rates.key_skew.groups is not None)


LOCATED_SCAN = 64
"""How many parallelisms below the bisection's answer _fewest_by_search tries for a hot key whose key
groups are known (beyond, the hot key's task owns one group more or less out of many)."""


def _fewest_by_search(rates: OperatorRates, allowed: float, limit: int, fixed: int | None) -> int | None:
    """fewest_tasks for a share that follows the key concentration: per number of key groups m, the
    parallelisms that run with m (all up to m when fixed; Flink's default otherwise) are searched by
    bisection, the busiest share falling as tasks are added. Where the runs located a hot key
    (KeySkew.hot_groups) the share is not monotone (its task owns one group at one parallelism, two at
    the next): the bisection still ends on a parallelism that holds, if the range's last one does, and
    the ones from the bound below (``least``) up to it are tried in order for a smaller one."""
    def holds(p: int) -> bool:
        return busiest_share(rates, p, fixed) <= allowed

    ranges = [(1, fixed)] if fixed is not None else keygroups.default_ranges()
    for lo, hi in ranges:
        hi = min(hi, limit)
        if lo > hi:
            continue
        found = _bisect(holds, lo, hi) if holds(hi) else None
        if located(rates) and busiest_share(rates, hi, fixed, least=True) <= allowed:
            below = _bisect(lambda p: busiest_share(rates, p, fixed, least=True) <= allowed, lo, found or hi)
            end = min(found if found is not None else hi + 1, below + LOCATED_SCAN)
            found = next((p for p in range(below, end) if holds(p)), found)
        if found is not None:
            return found  # the ranges ascend: no later one holds fewer tasks
    return None


def _bisect(holds, lo: int, hi: int) -> int:
    """The smallest p in [lo, hi] where ``holds`` (true at hi) turns true, for a predicate that does not turn
    false again; otherwise some p where it holds."""
    while hi - lo > 0:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _limits(metrics: SingleTaskMetrics, slots: int) -> dict[str, int]:
    spare = slots - len(metrics.operators) + 1
    return {n: min(spare, keygroups.parallelism_limit(metrics.max_parallelism)) if r.keyed else spare
            for n, r in metrics.operators}


def skew_aware_bids2(metrics: SingleTaskMetrics, slots: int) -> Proposal:
    """The configuration of ``slots`` slots with the highest source rate, on skew- and key-group-aware
    capacities (module docstring)."""
    names = metrics.names()
    check_slots(slots, len(names), query=metrics.query or "the query")
    rates, fixed, limits = dict(metrics.operators), metrics.max_parallelism, _limits(metrics, slots)

    def allocation(rate: float) -> dict[str, int] | None:
        need = {}
        for n in names:
            p = fewest_tasks(rates[n], rate, limits[n], fixed)
            if p is None:
                return None
            need[n] = p
        return need if sum(need.values()) <= slots else None

    lo, hi = 0.0, min(capacity(rates[n], limits[n], fixed) for n in names)
    best = {n: 1 for n in names}
    if math.isinf(hi):
        hi = 1e18
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        need = allocation(mid)
        if need is not None:
            lo, best = mid, need
        else:
            hi = mid
        if hi - lo <= 1e-9 * hi:
            break
    # Spare slots, one at a time, to the operator that then has the least capacity.
    heap = [(capacity(rates[n], best[n], fixed), i, n) for i, n in enumerate(names)]
    heapq.heapify(heap)
    spare = slots - sum(best.values())
    while spare > 0 and heap:
        held, i, n = heapq.heappop(heap)
        if best[n] >= limits[n] or math.isinf(held):
            continue  # full (a keyed operator at its max parallelism) or limiting nothing
        if located(rates[n]) and capacity(rates[n], best[n] + 1, fixed) < held:
            continue  # one more task would put the hot key's group in a task of more groups
        best[n] += 1
        spare -= 1
        heapq.heappush(heap, (capacity(rates[n], best[n], fixed), i, n))
    if spare > 0:  # only operators that limit nothing left: give the rest to the first
        best[names[0]] += spare
    return Proposal(best, min(capacity(rates[n], best[n], fixed) for n in names))


def predicted_rate(metrics: SingleTaskMetrics, parallelism) -> float:
    """The source rate a configuration sustains on these capacities: its weakest operator's."""
    return min(capacity(r, parallelism[n], metrics.max_parallelism) for n, r in metrics.operators)


class SkewAwareBids2:
    """BIDS2's objective on the capacities the busiest tasks allow (the default policy)."""

    name = "bids2-skew"

    def configure(self, metrics: SingleTaskMetrics, slots: int) -> Proposal:
        return skew_aware_bids2(metrics, slots)

    def predict(self, metrics: SingleTaskMetrics, parallelism) -> float:
        return predicted_rate(metrics, parallelism)

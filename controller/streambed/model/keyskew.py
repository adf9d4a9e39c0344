"""How a keyed operator's busiest task grows away from the mean as its parallelism grows, so that a plan sizes the busiest task, not the mean one.

Flink hashes each key to one of m key groups and gives each of p tasks a contiguous range of them
(model/keygroups.py). A task that owns a share g of the key groups receives, for keys hashed at
random, g of the input on average and a random excess: each key lands in the task's range with
probability g, so the excess has variance g (1 - g) H, where H = sum of the squared key shares is
the key distribution's *concentration* (its Herfindahl index; 1/H is its effective number of keys).
The busiest of n such tasks exceeds g by up to sqrt(2 ln n) standard deviations (max_z), and is
never planned below the busiest task of a typical hashing of 1/H equal keys (typical_busiest), which
the normal tail misses where tasks hold few keys.

So measured on a small testbed the excess looks harmless and it grows with p: the mean task's
share falls as 1/p, the excess only as 1/sqrt(p). On the sim's q11 (200,000 bidders, Zipf 0.3),
the busiest window task carries 3 % more than the mean at 43 tasks and 29 % more at 1,366
(`bench/experiments/skew_growth.py`); carried unchanged from the testbed, the 3 % under-provisioned q11 at
25 x (docs/evaluation.md).

H is read from each measured run's per-task *input records* (``OperatorMetrics.task_input``), not
from busyness: busyness also holds the tasks' speed noise, which grows only as the expected maximum
of p draws. The per-task records follow the keys alone, so every run of D, whatever its memory,
estimates the same H, and the runs are pooled.

A single hot key sets a floor: its task receives at least its share. The hottest key carries at
least H (H = sum w_k^2 <= max w_k), the floor used without a key histogram. Which key groups hold it
the runs show: its group is fixed by its hash (murmur mod m), so every run that shows it puts it in its
busiest task's range, and runs of different parallelisms narrow it down (hot_groups); a plan then
sizes the task that will hold it by the groups that task owns, not by the most any task owns (the
sim's q5: 37 and 35 window tasks over 128 groups pin it to group 121, which at 81 tasks has a task of
its own). A key far hotter than
that, but not visible at the testbed's few tasks, is not excluded by any measurement of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np

from . import keygroups


def max_z(n: int) -> float:
    """How many standard deviations the busiest of n tasks exceeds the mean by, as planned: sqrt(2 ln n),
    the classic bound on the maximum of n normals (0 for n <= 1). The maximum's expectation is lower
    (3.31 against 3.80 at n = 1,366), but a plan deploys one draw: the realized maximum exceeds the
    bound in 15 % of draws at 10 tasks, 10 % at 1,000 (tests/test_keyskew.py); the expectation, in
    half of them."""
    return math.sqrt(2.0 * math.log(n)) if n > 1 else 0.0


COUNT_LAW_KEYS = 400.0
"""From this many effective keys per task (g / H) up, the busiest task's typical count of keys lies well
below the normal bound, and typical_busiest is not computed."""


def typical_busiest(parallelism: int, max_parallelism: int, concentration: float) -> float:
    """The busiest task's share of the input in a typical draw of the hashing (the median over draws)
    with the keys taken as 1/H equal keys hashed at random: a task owning g of the key groups holds a
    binomial (1/H, g) count of them, and the busiest holds the least k with P(every task holds at most
    k) >= 1/2. Where tasks hold few keys the count is skewed and the normal bound (busiest_share) falls
    below even this (244 equal keys over 1,000 tasks of 1,024 groups: the normal bound gives the busiest
    2.2 keys' worth, the typical busiest holds 3; tests/test_keyskew.py). 0 where tasks hold many keys
    (COUNT_LAW_KEYS) or H is 0."""
    p, m, h = int(parallelism), int(max_parallelism), concentration
    if h <= 0.0 or p <= 1 or (m // p) / (m * h) >= COUNT_LAW_KEYS:
        return 0.0
    keys = max(1, round(1.0 / h))
    return min(1.0, _typical_busiest_keys(keys, p, m) / keys)


@lru_cache(maxsize=65536)
def _typical_busiest_keys(keys: int, parallelism: int, max_parallelism: int) -> int:
    """typical_busiest's count: the least k with sum over task classes of n log P(count <= k) >= log 1/2."""
    from scipy.stats import binom  # imported here: scipy's import costs the CLI's start half a second

    classes = group_classes(parallelism, max_parallelism)
    top = max(groups for groups, _ in classes) / max_parallelism
    ks = np.arange(0, min(keys, int(keys * top + 12.0 * math.sqrt(keys * top) + 20.0)) + 1)
    total = sum(n * binom.logcdf(ks, keys, groups / max_parallelism) for groups, n in classes)
    return int(ks[np.argmax(total >= math.log(0.5))]) if np.any(total >= math.log(0.5)) else int(ks[-1])


def group_classes(parallelism: int, max_parallelism: int) -> tuple[tuple[int, int], ...]:
    """Flink's contiguous key-group ranges as (key groups a task owns, how many tasks own that many):
    with p tasks over m groups, m mod p tasks own ceil(m/p) groups and the rest floor(m/p)."""
    p, m = int(parallelism), int(max_parallelism)
    base, extra = divmod(m, p)
    classes = [(base + 1, extra)] if extra else []
    if p - extra > 0 and base > 0:
        classes.append((base, p - extra))
    return tuple(classes)


def task_group_counts(parallelism: int, max_parallelism: int) -> list[int]:
    """Key groups each of the ``parallelism`` tasks owns, in task order (Flink's KeyGroupRangeAssignment:
    group g goes to task g * p // m)."""
    p, m = int(parallelism), int(max_parallelism)
    counts = [0] * p
    for g in range(m):
        counts[g * p // m] += 1
    return counts


COUNT_AGREEMENT = 0.10
"""How far (a share of the busiest task's) a run's task may lie from the data's count of it for the data to
count as the keys the job hashed (GroupShares.contradicted). On the sim the runs of section G's seeds
20261207 and 20261210 lay within 1.1 % of it (bench/experiments/count_agreement.py); on Flink a window's
sampling moves a task's records more, which this margin leaves room for (not measured there)."""


class GroupShares:
    """A data set's share of a keyed operator's records per key group of ``len(shares)`` (a power of two:
    model/keystats.py counts them at Flink's 32,768), from which the busiest task's share at any parallelism
    and any power-of-two max parallelism that divides it is exact for that data: Flink puts a key in group
    murmur(hash) mod m, so the groups of m fold from the finer ones (keystats.fold_key_groups). Where the
    data's keys are few enough to be listed (``hashes``: each distinct murmur(hash) and its share,
    keystats.HASHED_KEYS), the groups of every max parallelism are exact, a job's own 585 or 624 among them.
    Compared and hashed by identity: one data set's shares, computed once."""

    def __init__(self, shares: Sequence[float], hashes: Sequence[int] | None = None,
                 hash_shares: Sequence[float] | None = None):
        self.shares = np.asarray(shares, dtype=np.float64)
        n = len(self.shares)
        if n < 1 or n & (n - 1):
            raise ValueError(f"key group shares: {n} groups, expected a power of two")
        if (hashes is None) != (hash_shares is None) or (hashes is not None and len(hashes) != len(hash_shares)):
            raise ValueError("key hashes: expected one share per hash")
        self.hashes = None if hashes is None else np.asarray(hashes, dtype=np.int64)
        self.hash_shares = None if hash_shares is None else np.asarray(hash_shares, dtype=np.float64)
        self._folded: dict[int, np.ndarray] = {}
        self._busiest: dict[tuple[int, int], float] = {}

    def folds(self, max_parallelism: int) -> bool:
        """Whether the groups of ``max_parallelism`` follow from these: a power of two no larger, or any
        max parallelism up to theirs where every key's hash is listed."""
        m = int(max_parallelism)
        return 1 <= m <= len(self.shares) and (len(self.shares) % m == 0 or self.hashes is not None)

    def folded(self, max_parallelism: int) -> np.ndarray:
        m = int(max_parallelism)
        if m not in self._folded:
            if len(self.shares) % m == 0:
                self._folded[m] = self.shares.reshape(-1, m).sum(axis=0)
            else:  # folds(m): every key's group is its hash mod m
                self._folded[m] = np.bincount(self.hashes % m, weights=self.hash_shares, minlength=m)
        return self._folded[m]

    def tasks(self, parallelism: int, max_parallelism: int) -> np.ndarray:
        """Each of ``parallelism`` tasks' share over ``max_parallelism`` groups, by subtask index (Flink's
        KeyGroupRangeAssignment: group g to task g * p // m)."""
        p, m = int(parallelism), int(max_parallelism)
        owner = np.arange(m, dtype=np.int64) * p // m
        return np.bincount(owner, weights=self.folded(m), minlength=p) / (float(self.shares.sum()) or 1.0)

    def busiest(self, parallelism: int, max_parallelism: int) -> float:
        """The busiest of ``parallelism`` tasks' share over ``max_parallelism`` groups."""
        key = (int(parallelism), int(max_parallelism))
        if key not in self._busiest:
            self._busiest[key] = float(self.tasks(*key).max())
        return self._busiest[key]

    def contradicted(self, runs: Iterable[tuple[Sequence[float], int, float]]) -> bool:
        """Whether a run's tasks took input these counts do not give them (each run: per-task input rates by
        subtask index, its max parallelism, records counted), by more than COUNT_AGREEMENT of the busiest
        task's share: the data would then not be the keys the job hashed (another key, another data set).
        A run over key groups that do not follow from these (a job's own max parallelism of 585, keys too many to
        list) cannot."""
        for task_input, m, _ in runs:
            measured = np.asarray(task_input, dtype=np.float64)
            if len(measured) < 2 or measured.sum() <= 0 or not self.folds(m):
                continue
            counted = self.tasks(len(measured), m)
            if np.abs(measured / measured.sum() - counted).max() > COUNT_AGREEMENT * counted.max():
                return True
        return False

    def heaviest(self, max_parallelism: int) -> float:
        """The heaviest group's share at ``max_parallelism``: no task's share is below it."""
        return float(self.folded(max_parallelism).max()) / (float(self.shares.sum()) or 1.0)


@dataclass(frozen=True)
class KeySkew:
    """A keyed operator's key distribution as the planner knows it."""

    concentration: float
    """H, the sum of the squared key shares (0: infinitely many even keys; 1: one key)."""
    hottest: float = 0.0
    """The share of the hottest key known (a floor on the busiest task's share); at least H."""
    tested_parallelism: int = 0
    """The tasks of the run the hot-key test read (hot_key), and their key groups: a key fainter than
    that run could show is not excluded (policies/skew.hidden_key). 0: not known."""
    tested_max_parallelism: int = 0
    hot_modulus: int = 0
    """The key groups (a max parallelism) ``hot_groups`` counts in; 0: where the hot key lies is not known."""
    hot_groups: tuple[int, ...] = ()
    """The key groups, of ``hot_modulus``, that may hold the hottest key (hot_groups): the runs that
    showed it put it in their busiest task's range."""
    groups: GroupShares | None = field(default=None, compare=False, repr=False)
    """The data's records per key group (model/keystats.py), where a data set's key statistics counted
    them: the busiest task's share is then read from them wherever the key groups fold (exact)."""

    def __post_init__(self):
        if not (0.0 <= self.concentration <= 1.0) or not (0.0 <= self.hottest <= 1.0):
            raise ValueError(f"key skew out of range: concentration {self.concentration}, hottest {self.hottest}")

    @property
    def floor(self) -> float:
        """The hottest key's share as the floor uses it: never below H, which it cannot be below."""
        return max(self.hottest, self.concentration)

    def busiest_share(self, parallelism: int, max_parallelism: int, least: bool = False, normal: bool = False) -> float:
        """The share of the input the busiest of ``parallelism`` tasks receives over ``max_parallelism``
        key groups, as planned: per class of tasks owning the same number of groups, their share plus
        max_z of their count standard deviations, and no less than the typical busiest task where tasks
        hold few keys (typical_busiest); at least the hottest key's share with its task's part of the rest
        (its task's groups: hot_task_groups). ``least``: with the fewest groups any task owns there instead
        and without the typical busiest, a bound below the share wherever the hot key lies (it falls as
        tasks are added). ``normal``: without the typical busiest (the hot-key test's expectation, which
        HOT_KEY_RATIO was calibrated on). Where the data's key groups fold to ``max_parallelism`` (exact),
        the share they give (``least``: the mean task's or the heaviest group's, a bound below it that falls
        as tasks are added)."""
        p, m = int(parallelism), int(max_parallelism)
        if p <= 1:
            return 1.0
        if self.exact(m) and p <= m:
            if least:
                return max(1.0 / p, self.groups.heaviest(m))
            return self.groups.busiest(p, m)
        h = self.concentration
        busiest = 0.0
        for groups, tasks in group_classes(p, m):
            g = groups / m
            busiest = max(busiest, g + max_z(tasks) * math.sqrt(g * (1.0 - g) * h))
        if not (normal or least):
            busiest = max(busiest, typical_busiest(p, m, h))
        w = self.floor
        hot = max(1, m // p) if least else self.hot_task_groups(p, m)
        return min(1.0, max(busiest, w + (1.0 - w) * hot / m))

    def exact(self, max_parallelism: int) -> bool:
        """Whether the data's key groups give the busiest task's share over ``max_parallelism`` groups."""
        return self.groups is not None and self.groups.folds(max_parallelism)

    def hot_task_groups(self, parallelism: int, max_parallelism: int) -> int:
        """The most key groups a task that may hold the hottest key owns at ``parallelism`` over
        ``max_parallelism`` groups: the tasks of the groups that may hold it (hot_groups), where their
        modulus and ``max_parallelism`` divide one another; else the most any task owns."""
        p, m = int(parallelism), int(max_parallelism)
        if not self.hot_groups:
            return ceil_div(m, p)
        return _hot_task_groups(self.hot_modulus, self.hot_groups, p, m)

    def to_dict(self) -> dict:
        d = {"concentration": self.concentration, "hottest": self.hottest,
             "tested_parallelism": self.tested_parallelism, "tested_max_parallelism": self.tested_max_parallelism}
        if self.hot_groups:
            d.update(hot_modulus=self.hot_modulus, hot_groups=list(self.hot_groups))
        if self.groups is not None:
            d["key_groups_counted"] = len(self.groups.shares)
        return d

    @classmethod
    def from_dict(cls, d) -> "KeySkew":
        return cls(float(d["concentration"]), float(d.get("hottest", 0.0)), int(d.get("tested_parallelism", 0)),
                   int(d.get("tested_max_parallelism", 0)), int(d.get("hot_modulus", 0)),
                   tuple(int(g) for g in d.get("hot_groups", ())))


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


LOCATED_GROUPS = 64
"""Past this many candidate groups the hot key's task is taken to own the most any task owns: the
candidates then cover many tasks of both sizes (and the policy asks for the share thousands of times)."""


@lru_cache(maxsize=65536)
def _hot_task_groups(modulus: int, groups: tuple[int, ...], parallelism: int, max_parallelism: int) -> int:
    p, m = parallelism, max_parallelism
    candidates = groups_at(modulus, groups, m) if len(groups) * max(1, m // modulus) <= LOCATED_GROUPS else ()
    if not candidates:
        return ceil_div(m, p)
    return max(len(task_groups(t, p, m)) for t in {g * p // m for g in candidates})


def groups_at(modulus: int, groups: Sequence[int], max_parallelism: int) -> tuple[int, ...]:
    """The key groups of ``max_parallelism`` that a key in one of ``groups`` (of ``modulus``) may fall in:
    Flink puts a key in group murmur(hash) mod m, so its group mod a divisor of m is its group there. ()
    when neither modulus divides the other (nothing follows) or nothing is known."""
    if not groups or modulus <= 0:
        return ()
    m = int(max_parallelism)
    if m % modulus == 0:
        return tuple(g + k * modulus for k in range(m // modulus) for g in groups)
    if modulus % m == 0:
        return tuple(sorted({g % m for g in groups}))
    return ()


def task_groups(task: int, parallelism: int, max_parallelism: int) -> range:
    """The key groups task ``task`` of ``parallelism`` owns (Flink: group g goes to task g * p // m)."""
    return range(ceil_div(task * max_parallelism, parallelism), ceil_div((task + 1) * max_parallelism, parallelism))


def hot_groups(runs: Sequence[tuple[Sequence[float], int]], concentration: float,
               hottest: float) -> tuple[int, tuple[int, ...]]:
    """Where the hottest key (of share ``hottest``) lies: (modulus, key groups), the busiest task's groups
    in every run (per-task inputs, max parallelism) whose hot-key test shows a key within 2 x that share,
    intersected in the largest of their moduli that the others divide (runs in moduli that do not are
    left out). (0, ()) when no run shows it or the runs disagree (then it is not one key)."""
    shown = [(x, m) for x, m in runs if hottest / 2 <= hot_key(x, m, concentration) <= 2 * hottest]
    if not shown:
        return 0, ()
    modulus = max(m for _, m in shown)
    kept: set[int] | None = None
    for x, m in shown:
        if modulus % m:
            continue
        total, counts = float(sum(x)), task_group_counts(len(x), m)
        busiest = max(range(len(x)), key=lambda t: x[t] / total - counts[t] / m)  # hot_key's task
        here = set(groups_at(m, tuple(task_groups(busiest, len(x), m)), modulus))
        kept = here if kept is None else kept & here
    return (modulus, tuple(sorted(kept))) if kept else (0, ())


def deviation_terms(task_input: Sequence[float], max_parallelism: int, records: float) -> tuple[float, float] | None:
    """One run's evidence on H: (sum over tasks of (x - g)^2 less the sampling part, sum of g (1 - g)),
    where x is a task's share of the operator's input records, g its share of the key groups and
    ``records`` the records the window counted (a finite count adds g (1 - g) / records to each
    squared deviation). None when the run tells nothing (one task, no input)."""
    p = len(task_input)
    total = float(sum(task_input))
    if p < 2 or total <= 0 or max_parallelism < p:
        return None
    counts = task_group_counts(p, max_parallelism)
    dev = norm = 0.0
    for x, groups in zip(task_input, counts):
        g = groups / max_parallelism
        dev += (x / total - g) ** 2
        norm += g * (1.0 - g)
    if norm <= 0:
        return None
    sampling = norm / records if records > 0 else 0.0
    return dev - sampling, norm


HOT_KEY_RATIO = 1.3
"""A run's busiest task is taken to hold one hot key when its excess over its key groups' share is
more than this many times the excess the concentration alone explains (KeySkew.busiest_share).
Measured at 5-43 tasks over 14 key distributions hashed at random, 4 seeds each (bench/experiments/skew_law.py):
every Zipf 0.8-1.1 shape had its hot key found, no many-key shape (Zipf 0.2-0.3) had one invented; at
1.1 a 500,000-key Zipf 0.2 shape got a key it does not have (2 x over at 3,000 tasks), at 1.5 a third
of the Zipf 0.8-0.85 draws lost theirs (0.11 x the busiest share)."""


def hot_key(task_input: Sequence[float], max_parallelism: int, concentration: float) -> float:
    """The hottest key's share one run shows: the busiest task's excess over its key groups' share, when
    it exceeds HOT_KEY_RATIO x what the concentration explains, else 0. With many keys a task's excess
    is the sum of many small ones and grows only as 1/sqrt(p) (the law); a hot key keeps its whole share
    however many tasks there are, and only a floor carries it."""
    p, total = len(task_input), float(sum(task_input))
    if p < 2 or total <= 0 or max_parallelism < p:
        return 0.0
    counts = task_group_counts(p, max_parallelism)
    excess, g = max(((x / total - c / max_parallelism), c / max_parallelism) for x, c in zip(task_input, counts))
    expected = KeySkew(concentration).busiest_share(p, max_parallelism, normal=True) - max(counts) / max_parallelism
    if excess <= 0 or excess <= HOT_KEY_RATIO * max(expected, 0.0):
        return 0.0
    return min(1.0, excess / (1.0 - g))


def estimate(runs: Iterable[tuple[Sequence[float], int, float]]) -> KeySkew | None:
    """The key distribution of one keyed operator from measured runs, each (per-task input rates, its max
    parallelism, records counted): H pooled over the runs (the summed squared deviations over the summed
    g (1 - g), which weighs every task of every run alike), and a hot key where the run of the most
    tasks shows one (hot_key). None without a run of two tasks or more."""
    runs = [r for r in runs if len(r[0]) >= 2]
    dev = norm = 0.0
    for task_input, max_parallelism, records in runs:
        terms = deviation_terms(task_input, max_parallelism, records)
        if terms is not None:
            dev, norm = dev + terms[0], norm + terms[1]
    if norm <= 0:
        return None
    h = min(1.0, max(0.0, dev / norm))
    widest = max(runs, key=lambda r: len(r[0]))
    hottest = hot_key(widest[0], widest[1], h)
    modulus, groups = hot_groups([(x, int(m)) for x, m, _ in runs], h, hottest) if hottest > 0 else (0, ())
    return KeySkew(h, hottest, len(widest[0]), int(widest[1]), modulus, groups)


def run_max_parallelism(parallelism: int, fixed: int | None) -> int:
    """The key groups an operator ran with: the job's max parallelism, else Flink's default for it."""
    return keygroups.max_parallelism(parallelism, fixed)


@dataclass(frozen=True)
class SkewChoice:
    """The key skew a plan uses for one keyed operator, where it comes from, and both candidates."""

    skew: KeySkew
    source: str
    """"data" (key statistics of the data set at rest, model/keystats.py) or "tasks" (inferred from the
    measured runs' per-task input records)."""
    inferred: KeySkew | None
    data: KeySkew | None
    busiest_inferred: float | None
    """The busiest task's share each candidate gives at the parallelism compared (None: no candidate)."""
    busiest_data: float | None
    inferred_held_to: float | None = None
    """The data's hottest key where the inferred hot key was held to it (within_census), else None."""
    counted: bool = False
    """The data's key groups, which no run contradicts (GroupShares.contradicted), are used at every
    parallelism; the inferred skew is only shown."""


def within_census(inferred: KeySkew | None, data: KeySkew | None) -> KeySkew | None:
    """The skew inferred from task imbalance with no key heavier than the data's heaviest: the data's
    statistics count every key of the data set the campaign replays, so a busiest task's excess beyond
    that key is several keys sharing its key groups (a run over the job's few key groups cannot tell them
    apart), not one key no budget can split; where the excess lay then says nothing about the hottest
    key, so its groups are forgotten. The concentration H stays as inferred; data without its hottest key
    (0) bounds nothing."""
    if inferred is None or data is None or not 0 < data.hottest < inferred.hottest:
        return inferred
    return replace(inferred, hottest=data.hottest, hot_modulus=0, hot_groups=())


def more_pessimistic(inferred: KeySkew | None, data: KeySkew | None, parallelism: int,
                     max_parallelism: int | None = None, counted: bool = False) -> SkewChoice | None:
    """The candidate whose busiest of ``parallelism`` tasks carries the larger share (the data's on a tie:
    it is counted, not inferred), over ``max_parallelism`` key groups (Flink's default when None), the
    inferred one held within the data's census (within_census). Compare at the widest the operator may
    run (a budget's slots): the hot-key floor dominates there. ``counted``: the data's key groups, which no
    run contradicts (GroupShares.contradicted), are the skew at every parallelism: the law of the
    inferred H is a model of the same keys (held-out `gen-20261210-0006`'s join: the law,
    more pessimistic at the widest, gave 617 tasks over 16,384 groups 1.37 % where the data's hash puts
    1.85 % on one task, and the plan sustained 0.75 of its target). None when neither exists."""
    m = keygroups.max_parallelism(parallelism, max_parallelism)
    bounded = within_census(inferred, data)
    share = {name: (s.busiest_share(parallelism, m) if s is not None else None)
             for name, s in (("tasks", bounded), ("data", data))}
    if inferred is None and data is None:
        return None
    if counted and data is not None:  # the data count what the runs measured: a count, not a model
        source, skew = "data", data
    elif data is None or (bounded is not None and share["tasks"] > share["data"]):
        source, skew = "tasks", bounded
    else:
        source, skew = "data", data
    held = data.hottest if bounded is not inferred else None
    return SkewChoice(skew, source, inferred, data, share["tasks"], share["data"], held, counted and data is not None)

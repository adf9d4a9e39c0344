"""Flink's key-group rule: how a keyed operator's state and input spread over its tasks.

A key hashes to one of ``max parallelism`` key groups, and each task owns a contiguous range of
them (Flink's ``KeyGroupRangeAssignment``): with p tasks and m groups the busiest task owns
ceil(m / p) groups. Unless the job sets it, m follows from the operator's parallelism at its first
start: 1.5 x p rounded up to a power of two, within [128, 32,768]; a keyed operator never runs
more tasks than it has key groups. The planner sizes keyed operators with this rule, the simulated
testbed partitions with it, and Flink applies it.
"""

from __future__ import annotations

import math
from functools import lru_cache

MIN_MAX_PARALLELISM = 128
MAX_MAX_PARALLELISM = 32768


def default_max_parallelism(parallelism: int) -> int:
    """Flink's default number of key groups for an operator started at ``parallelism``."""
    parallelism = int(parallelism)
    target = parallelism + parallelism // 2
    power = 1 << max(0, (target - 1).bit_length())
    return min(max(power, MIN_MAX_PARALLELISM), MAX_MAX_PARALLELISM)


def max_parallelism(parallelism: int, fixed: int | None = None) -> int:
    """The key groups of an operator at ``parallelism``: ``fixed`` when the job sets it, else Flink's default."""
    return fixed if fixed is not None else default_max_parallelism(parallelism)


def parallelism_limit(fixed: int | None = None) -> int:
    """The most tasks a keyed operator may run: its max parallelism (Flink refuses more)."""
    return fixed if fixed is not None else MAX_MAX_PARALLELISM


def busiest_groups_share(parallelism: int, fixed: int | None = None) -> float:
    """The share of the key groups the busiest of ``parallelism`` tasks owns: ceil(m / p) / m (1/p when
    p divides m). With evenly loaded groups, that is the busiest task's share of the input."""
    m = max_parallelism(parallelism, fixed)
    return math.ceil(m / parallelism) / m


@lru_cache(maxsize=1)
def default_ranges() -> tuple[tuple[int, int], ...]:
    """The parallelisms that run with each of Flink's default max parallelisms, as (first, last), in
    increasing order: 1-85 with 128 key groups, 86-171 with 256, ..., up to 32,768."""
    ranges, lo = [], 1
    while lo <= MAX_MAX_PARALLELISM:
        m = default_max_parallelism(lo)
        a, b = lo, MAX_MAX_PARALLELISM  # the default never falls as p grows: the last p with m, by bisection
        while a < b:
            mid = (a + b + 1) // 2
            if default_max_parallelism(mid) == m:
                a = mid
            else:
                b = mid - 1
        ranges.append((lo, a))
        lo = a + 1
    return tuple(ranges)


# -- alignment: whole ranges per task ---------------------------------------------------------------
# The same rule covers a keyed operator's key groups and the partitions of a Kafka topic its source
# reads: ``units`` ranges split as evenly as they go over ``parallelism`` tasks.


def units_per_task(parallelism: int, units: int) -> tuple[int, int]:
    """(fewest, most) of ``units`` key groups (or partitions) a task owns among ``parallelism`` tasks:
    floor(M/p) and ceil(M/p); the most bounds what the busiest task carries."""
    if parallelism < 1 or units < 1:
        raise ValueError(f"units_per_task: expected positive parallelism and units, got {parallelism}, {units}")
    return units // parallelism, -(-units // parallelism)


def imbalance(parallelism: int, units: int) -> float:
    """The busiest task's load over the mean task's when every group carries the same load:
    ceil(M/p) / (M/p), 1 exactly when p divides M (42 tasks over 128 groups: 1.31)."""
    most = units_per_task(parallelism, units)[1]
    return most * parallelism / units


def aligned(parallelism: int, units: int) -> int:
    """The fewest tasks whose busiest task owns no more groups than at ``parallelism``: ceil(M / ceil(M/p)).
    The busiest task, hence the operator's capacity with evenly loaded groups, is the same, and the
    tasks in between are slots that add nothing (42 tasks over 128 groups: 32, each owning 4)."""
    most = units_per_task(parallelism, units)[1]
    return -(-units // most)


def aligned_keyed(parallelism: int, fixed: int | None = None) -> int:
    """:func:`aligned` for a keyed operator, whose key groups are the job's max parallelism or Flink's
    default for its parallelism; unchanged when the aligned count would start with other key groups."""
    m = max_parallelism(parallelism, fixed)
    p = aligned(parallelism, m)
    return p if max_parallelism(p, fixed) == m else parallelism


def group_bound_capacity(per_task: float, parallelism: int, units: int) -> float:
    """What an operator of ``parallelism`` tasks over ``units`` groups carries when its busiest task is
    full, in the units ``per_task`` is given in: per_task x M / ceil(M/p) (p x per_task / imbalance)."""
    return per_task * units / units_per_task(parallelism, units)[1]

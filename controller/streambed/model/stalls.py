"""An operator whose pauses, not its busy time, hold the job: found by back-pressure, sized by its slowest pause.

A window whose firings straggle blocks its input for the length of its slowest firing now and then. At
the MST such stalls are rare and short enough to be absorbed: the operator reads lightly busy (25-30 % on
the generated profile that showed it), nothing is steadily back-pressured, and a policy that sizes by busy
time sees no bound at all. Just above the MST, the rate search's failing windows show it: the operators
between the source and the stalling one are back-pressured about as much as the source fell short, and
the first operator past them that is not is the one that stalls (Flink's own reading of back-pressure:
the bottleneck is the first task downstream of back-pressured ones that is not back-pressured itself).

More tasks of a stalling operator carry fewer records each, so each firing is shorter; but the job waits
on the slowest of its p firings, and with a heavy tail the slowest of p grows as p ** (1 / a) (the
fork-join bound, a the tail index). Its capacity then grows as p ** (1 - 1 / a), not as p. The testbed
measures it at one parallelism only, so the exponent is a stated prior, STALL_GROWTH.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from .query import SOURCE, Query

STALL_GROWTH = 0.5
"""Capacity of a stalling operator grows as (p / p0) ** STALL_GROWTH: a Pareto tail of index 2 (the slowest
of p firings lags as sqrt(p)), the heaviest tail whose lag still has a finite variance. A heavier one
needs more tasks; a lighter one (or no tail at all: 1) fewer."""
HELD_SHARE = 0.5
"""An operator counts as back-pressured in a failing window when its back-pressure is at least this share of
the source's shortfall in it (the source loses what the operators in front of a stall wait)..."""
HELD_FLOOR = 0.005
"""...and at least this much (a window that fell short by 0.1 % says nothing about 0.05 % of waiting)."""
NAMED_SHARE = 0.5
"""An operator is the stalling one when the failing windows near the MST name it in at least this share."""
NEAR_MST = 1.10
"""Failing windows up to this factor above the MST speak of the MST's bound; a window far above it may fail
on any operator's throughput."""


@dataclass(frozen=True)
class Stall:
    """An operator's stalls held the source at ``rate`` events/s while it ran ``parallelism`` tasks."""

    parallelism: int
    rate: float

    def capacity(self, parallelism: int) -> float:
        """The source rate ``parallelism`` tasks hold it to (module docstring)."""
        return stalled_capacity(self.rate, self.parallelism, parallelism)

    def fewest_tasks(self, rate: float) -> int:
        """The fewest tasks whose stalls hold the source at no less than ``rate``: the closed form's
        ceil(p0 (rate / rate0) ** (1 / growth)), its rounding checked either way."""
        p = max(1, math.ceil(self.parallelism * (max(rate, 0.0) / self.rate) ** (1.0 / STALL_GROWTH) - 1e-9))
        while p > 1 and self.capacity(p - 1) >= rate:
            p -= 1
        while self.capacity(p) < rate:
            p += 1
        return p

    def to_dict(self) -> dict:
        return {"parallelism": self.parallelism, "rate": self.rate}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Stall":
        return cls(int(d["parallelism"]), float(d["rate"]))


def stalled_capacity(rate: float, parallelism: int, at: int, growth: float = STALL_GROWTH) -> float:
    """The source rate ``at`` tasks of an operator sustain, its stalls having held the source at ``rate``
    with ``parallelism`` tasks: rate x (at / parallelism) ** growth."""
    return rate * (max(int(at), 1) / max(int(parallelism), 1)) ** growth


def held(backpressure: float, shortfall: float) -> bool:
    """Whether an operator waited on its outputs for its part of the source's ``shortfall`` (HELD_SHARE)."""
    return backpressure >= max(HELD_FLOOR, HELD_SHARE * shortfall)


def stalling_operators(query: Query, backpressure: Mapping[str, float], shortfall: float) -> set[str]:
    """The operators at the end of the back-pressured paths from the source in one failing window: reached
    from the source through operators that were ``held`` (by their ``backpressure``), and not held themselves.
    Empty where no operator fed by the source was held (the first operators are then the bound themselves,
    or the source is)."""
    found: set[str] = set()
    frontier = [op for op in query.outputs(SOURCE)]
    if not any(held(backpressure.get(op, 0.0), shortfall) for op in frontier):
        return found
    seen: set[str] = set()
    while frontier:
        op = frontier.pop()
        if op in seen:
            continue
        seen.add(op)
        if held(backpressure.get(op, 0.0), shortfall):
            frontier.extend(query.outputs(op))
        else:
            found.add(op)
    return found


def stalling(query: Query, windows: Sequence[Mapping], mst: float, busy_below: float) -> list[str]:
    """The operators the rate search's failing windows near the MST (``windows``: compact trace entries with
    per-operator metrics, exploration.compact_trace) name as stalling (stalling_operators) in at least
    NAMED_SHARE of them, every time less than ``busy_below`` busy (its busiest task). Back-pressure cannot
    tell apart two that end paths from the source in the same windows (a window and the join it feeds):
    each is named. Empty where no window near the MST failed, or its metrics are not recorded."""
    near = [w for w in windows if not w.get("success") and w.get("operators") and mst < w["rate"] <= NEAR_MST * mst]
    counts: dict[str, int] = {}
    for w in near:
        m = w["measurement"]
        shortfall = max(0.0, 1.0 - m["achieved_rate"] / m["target_rate"]) if m.get("target_rate") else 0.0
        ops = {o["operator"]: o for o in w["operators"]}
        for op in stalling_operators(query, {n: o["backpressure"] for n, o in ops.items()}, shortfall):
            if op in ops and ops[op]["busyness_max"] < busy_below:
                counts[op] = counts.get(op, 0) + 1
    return [op for op in query.operators if counts.get(op, 0) >= NAMED_SHARE * len(near) > 0]

"""A task's true rate that falls as its load grows: state that grows with the records a task takes.

DS2's true processing rate (a task's records/s over its busyness, paper section V) is taken as a
constant of the operator. It is not one where the operator's state grows with its load: a window
holds what its task took in the last window length, a join what it took in its retention, and when
that outgrows the task's memory, each record costs cache misses (RocksDB's block cache; the sim's
testbed/sim/formulas.working_set_mb and memory_slowdown). Then the rate read at a light load (the
mean task of a wide run, or the single-task run's) overstates what the same task sustains loaded
more, and a plan that gives the operator fewer, busier tasks than any run did under-provisions it.

Each measured run shows the operator at one or two loads: its busiest task (the most input records,
at the busiest task's busyness) and its mean task. Pooled over the runs of one memory per slot, they
show whether the rate falls with the load beyond the noise of the runs (``LOAD_DEPENDENT``). Where
it does, the most a task sustains is the fixed point of the rate's trend, where a task's load equals
the rate it sustains at that load, bounded by what was seen: at least the heaviest load a task took
(it took it), at most the rate read at that load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

LOAD_DEPENDENT = 0.15
"""The rate read at the heaviest load must fall this far below the rate read at the light loads for
the operator to count as slowed by its load: three standard deviations of a 5 % run-to-run noise."""
MIN_BUSYNESS = 0.05
"""A load whose task was busy less than this is not read: its busyness is mostly the floor's."""
LIGHT = 1.5
"""The light loads are those at most the heaviest over this factor."""
PROBE_SHORT = 0.9
"""A load probe whose MST falls this far short of the rate its configuration was sized for stopped at
its probed task (the others were given room for that rate)."""


@dataclass(frozen=True)
class LoadPoint:
    """One task's load (records/s in) and the true rate read at it (load over busyness)."""

    load: float
    rate: float


def points_of(operator_metrics: Iterable) -> list[LoadPoint]:
    """The load points of an operator's observations (OperatorMetrics of one memory per slot): the
    busiest task's (its input records where recorded, at the busiest busyness) and the mean task's,
    each where its task was busy at least MIN_BUSYNESS."""
    points = []
    for om in operator_metrics:
        if om.parallelism <= 0 or om.input_rate <= 0:
            continue
        mean = om.input_rate / om.parallelism
        if om.busyness >= MIN_BUSYNESS:
            points.append(LoadPoint(mean, mean / om.busyness))
        if om.parallelism > 1 and len(om.task_input) == om.parallelism and om.busyness_max >= MIN_BUSYNESS:
            heaviest = max(om.task_input)
            points.append(LoadPoint(heaviest, heaviest / om.busyness_max))
    return points


def probe_limit(mst: float, sized_for: float, input_ratio: float, short: float = PROBE_SHORT) -> float | None:
    """The load a load probe's task sustained at most (planner/probes.py): its MST x the probed operator's
    input ratio, where the MST fell ``short`` of the source rate the probe was sized for (the other
    operators had room for that rate, so the probed task stopped it, whatever its busyness read: a
    task whose state outgrows memory at a little more load fails there while busy well below 1).
    None where the probe reached the rate it was sized for (no limit shown)."""
    if sized_for <= 0 or input_ratio <= 0 or mst >= short * sized_for:
        return None
    return mst * input_ratio


def load_dependent(points: Sequence[LoadPoint], threshold: float = LOAD_DEPENDENT, read: float | None = None) -> bool:
    """Whether the rate read at the heaviest load is ``threshold`` below the median rate read at the
    light loads, ``read`` (the rate a plan would read otherwise, at a load too light to count) among
    them (False without both a heavy and a light reading)."""
    if not points:
        return False
    top = max(points, key=lambda p: p.load)
    light = [p.rate for p in points if p.load * LIGHT <= top.load] + ([read] if read else [])
    return bool(light) and top.rate < (1.0 - threshold) * float(np.median(light))


def sustained_load(points: Sequence[LoadPoint], read: float | None = None) -> float | None:
    """The most records/s one task sustains where its rate falls with its load (load_dependent, ``read``
    among the light readings): the fixed point x = a + b x of the rate's least-squares line over the
    points (b < 0), between the heaviest load seen and the rate read there. None where the readings do
    not show the rate falling with the load."""
    if not load_dependent(points, read=read):
        return None
    top = max(points, key=lambda p: p.load)
    x = np.array([p.load for p in points])
    y = np.array([p.rate for p in points])
    slope, intercept = np.polyfit(x, y, 1) if len(set(x.tolist())) > 1 else (0.0, float(y.mean()))
    fixed = intercept / (1.0 - slope) if slope < 0 else top.rate
    return float(min(max(fixed, top.load), top.rate))

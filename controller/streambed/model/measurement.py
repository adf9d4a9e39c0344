"""What a testbed measures and what the planner derives from it.

A *measurement* is one observation window (paper section IV); *single-task metrics* are BIDS2's input
(section V, Table I): per operator, the true processing rate of one task and its input rate relative
to the source; an *observation* is one point (memory per slot, slots, MST) of the Resource
Explorer's data set D (section VI).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from ..errors import UserError
from .query import Query

BUSYNESS_FLOOR = 0.01
"""Lowest busyness used to compute a true rate: below it the measurement says little."""


@dataclass(frozen=True)
class OperatorMetrics:
    """One operator over one observation window, aggregated from its tasks' samples."""

    operator: str
    parallelism: int
    input_rate: float
    """Records per second into the operator, summed over its tasks."""
    output_rate: float
    busyness: float
    """Mean over tasks of the fraction of time spent processing (busyTimeMsPerSecond / 1000)."""
    busyness_max: float
    """Busiest task's mean busyness: a keyed operator is limited by its most loaded task."""
    backpressure: float
    """Mean over tasks of the fraction of time back-pressured."""
    task_busyness: tuple[float, ...] = ()

    def to_dict(self) -> dict:
        return {
            "operator": self.operator,
            "parallelism": self.parallelism,
            "input_rate": self.input_rate,
            "output_rate": self.output_rate,
            "busyness": self.busyness,
            "busyness_max": self.busyness_max,
            "backpressure": self.backpressure,
            "task_busyness": list(self.task_busyness),
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> "OperatorMetrics":
        return cls(
            operator=d["operator"],
            parallelism=int(d["parallelism"]),
            input_rate=float(d["input_rate"]),
            output_rate=float(d["output_rate"]),
            busyness=float(d["busyness"]),
            busyness_max=float(d["busyness_max"]),
            backpressure=float(d["backpressure"]),
            task_busyness=tuple(float(x) for x in d.get("task_busyness", ())),
        )


@dataclass(frozen=True)
class Measurement:
    """One observation window (paper section IV): what the source achieved against its target,
    how pending records evolved, and per-operator busyness and rates."""

    target_rate: float
    achieved_rate: float
    pending_start: float
    pending_end: float
    pending_slope: float
    """Least-squares slope of pending records over the window, records per second."""
    achieved_cv: float
    """Coefficient of variation of the per-sample achieved rate: instability shows here first."""
    start: float
    end: float
    operators: tuple[OperatorMetrics, ...] = ()
    source_saturated: bool = False
    """True when the source's own capacity, not the job, limited emission: such a window says
    nothing about the job's capacity and must never be read as one."""

    @property
    def ratio(self) -> float:
        return self.achieved_rate / self.target_rate if self.target_rate > 0 else math.nan

    def sustained(self, threshold: float = 0.99) -> bool:
        """Success rule of the Capacity Estimator: achieved >= threshold x target (section IV)."""
        return self.target_rate > 0 and self.achieved_rate >= threshold * self.target_rate

    def operator(self, name: str) -> OperatorMetrics:
        for m in self.operators:
            if m.operator == name:
                return m
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {
            "target_rate": self.target_rate,
            "achieved_rate": self.achieved_rate,
            "ratio": self.ratio,
            "pending_start": self.pending_start,
            "pending_end": self.pending_end,
            "pending_slope": self.pending_slope,
            "achieved_cv": self.achieved_cv,
            "start": self.start,
            "end": self.end,
            "source_saturated": self.source_saturated,
            "operators": [m.to_dict() for m in self.operators],
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> "Measurement":
        return cls(
            target_rate=float(d["target_rate"]),
            achieved_rate=float(d["achieved_rate"]),
            pending_start=float(d["pending_start"]),
            pending_end=float(d["pending_end"]),
            pending_slope=float(d["pending_slope"]),
            achieved_cv=float(d["achieved_cv"]),
            start=float(d["start"]),
            end=float(d["end"]),
            source_saturated=bool(d.get("source_saturated", False)),
            operators=tuple(OperatorMetrics.from_dict(m) for m in d.get("operators", ())),
        )


@dataclass(frozen=True)
class OperatorRates:
    true_rate: float
    """o_i: records/s one task processes when fully busy."""
    input_ratio: float
    """r_i: records into the operator per source event."""


@dataclass(frozen=True)
class SingleTaskMetrics:
    """Configuration policies' input (section V): per operator, in the query's topological order."""

    query: str
    memory_mb: int
    operators: tuple[tuple[str, OperatorRates], ...]
    source_rate: float = 0.0
    """The source rate of the run the metrics come from (its MST)."""

    @classmethod
    def from_measurement(cls, query: Query, memory_mb: int, m: Measurement,
                         busyness_floor: float = BUSYNESS_FLOOR) -> "SingleTaskMetrics":
        """o_i = a task's observed input rate over its busyness (DS2's true processing rate, the
        busyness floored so that an idle operator does not look infinitely fast); r_i = the
        operator's input rate over the source's rate (a multi-input operator counts all its inputs)."""
        if m.achieved_rate <= 0:
            raise UserError(f"single-task metrics of {query.name}: the run sustained no rate at all")
        ops = []
        for name in query.operators:
            om = m.operator(name)
            per_task_in = om.input_rate / om.parallelism
            busy = max(om.busyness, busyness_floor)
            ops.append((name, OperatorRates(true_rate=per_task_in / busy, input_ratio=om.input_rate / m.achieved_rate)))
        return cls(query.name, int(memory_mb), tuple(ops), m.achieved_rate)

    def names(self) -> list[str]:
        return [n for n, _ in self.operators]

    def to_dict(self) -> dict:
        return {"query": self.query, "memory_mb": self.memory_mb, "source_rate": self.source_rate,
                "operators": [{"name": n, "true_rate_per_task": r.true_rate, "input_ratio": r.input_ratio}
                              for n, r in self.operators]}

    @classmethod
    def from_dict(cls, d: Mapping) -> "SingleTaskMetrics":
        return cls(d["query"], int(d["memory_mb"]),
                   tuple((o["name"], OperatorRates(float(o["true_rate_per_task"]), float(o["input_ratio"])))
                         for o in d["operators"]), float(d.get("source_rate", 0.0)))


@dataclass(frozen=True)
class Observation:
    """One point of the Resource Explorer's data set D: a budget and its measured MST.

    ``memory_mb`` is the memory per task slot in MB; ``slots`` the task slots P (the sum of the
    operators' parallelisms, sources excluded, paper section III); ``mst`` the maximum sustainable
    throughput measured by the Capacity Estimator, in events/s.
    """

    memory_mb: float
    slots: int
    mst: float

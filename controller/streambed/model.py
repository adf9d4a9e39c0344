"""Domain types shared by the algorithms and the testbeds.

Vocabulary (ARCHITECTURE.md): a *query* is a graph of *operators* (sources excluded, blackhole sinks
included); a *budget* is a number of task slots and the memory of each slot; a *configuration* maps
each operator to its parallelism, summing to the budget's slots (the source's parallelism is set
apart, as in the paper, section III); a *measurement* is one observation window.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Mapping

from .errors import UserError

SOURCE = "source"
"""Name of the (single) source in every query graph. Sources are outside the slot budget."""


@dataclass(frozen=True)
class Query:
    """A query as the planner sees it: operators in topological order and the edges between them.

    ``edges`` are (upstream, downstream) pairs; an upstream may be :data:`SOURCE`. An operator with
    several inputs (a join) lists several edges.
    """

    name: str
    operators: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        known = set(self.operators)
        if len(known) != len(self.operators):
            raise UserError(f"query {self.name}: operator names must be unique")
        seen = {SOURCE}
        for op in self.operators:
            ups = self.inputs(op)
            if not ups:
                raise UserError(f"query {self.name}: operator {op} has no input")
            for up in ups:
                if up not in seen:
                    raise UserError(
                        f"query {self.name}: operator {op} reads {up}, which is not an earlier operator"
                    )
            seen.add(op)
        for up, down in self.edges:
            if down not in known:
                raise UserError(f"query {self.name}: edge to unknown operator {down}")

    def inputs(self, operator: str) -> tuple[str, ...]:
        return tuple(up for up, down in self.edges if down == operator)

    def outputs(self, operator: str) -> tuple[str, ...]:
        return tuple(down for up, down in self.edges if up == operator)

    @property
    def size(self) -> int:
        """Number of operators: the smallest slot budget that can run the query."""
        return len(self.operators)


@dataclass(frozen=True)
class Budget:
    """Task slots and memory per slot (the slot *profile*), paper section VI."""

    slots: int
    memory_mb: int

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise UserError(f"slots: expected a positive integer, got {self.slots}")
        if self.memory_mb <= 0:
            raise UserError(f"memory: expected a positive number of MB per slot, got {self.memory_mb}")


@dataclass(frozen=True)
class Configuration:
    """Operator -> parallelism; the sum is the number of slots used (paper Eq. 4)."""

    parallelism: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, query: Query, mapping: Mapping[str, int]) -> "Configuration":
        missing = [op for op in query.operators if op not in mapping]
        extra = [op for op in mapping if op not in query.operators]
        if missing:
            raise UserError(f"configuration: no parallelism for operator(s) {', '.join(missing)}")
        if extra:
            raise UserError(f"configuration: unknown operator(s) {', '.join(extra)} for query {query.name}")
        items = []
        for op in query.operators:
            p = mapping[op]
            if isinstance(p, numbers.Integral) and not isinstance(p, bool) and p >= 1:
                items.append((op, int(p)))
            else:
                raise UserError(f"configuration: parallelism of {op} must be an integer >= 1, got {p!r}")
        return cls(tuple(items))

    @classmethod
    def single_task(cls, query: Query) -> "Configuration":
        """Parallelism 1 everywhere: the minimal configuration whose metrics feed BIDS2 (section V)."""
        return cls(tuple((op, 1) for op in query.operators))

    @property
    def slots(self) -> int:
        return sum(p for _, p in self.parallelism)

    def __getitem__(self, operator: str) -> int:
        for op, p in self.parallelism:
            if op == operator:
                return p
        raise KeyError(operator)

    def as_dict(self) -> dict[str, int]:
        return dict(self.parallelism)

    def key(self) -> str:
        """Stable text form, used as part of ledger keys."""
        return ",".join(f"{op}={p}" for op, p in self.parallelism)


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
class TestbedInfo:
    """What a testbed offers: the explorer's search space comes from here (section VI)."""

    name: str
    max_slots: int
    memory_per_slot: tuple[int, ...]
    """Memory per slot, MB, that the testbed can deploy."""
    sample_period: float = 5.0
    source_parallelism: int = 32
    """Source tasks, set apart from the budget (the paper: 32-64); cooldown rates are per source."""
    max_source_rate: float = 1e10
    """The most the sources can inject, events/s: the Capacity Estimator warms up at this rate."""
    notes: tuple[str, ...] = field(default=())

    __test__ = False


def parse_memory_list(text: str, field_name: str = "profiles") -> tuple[int, ...]:
    """'2048,4096' -> (2048, 4096), with a clear error otherwise."""
    values = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            v = int(float(part))
        except ValueError:
            raise UserError(f"{field_name}: expected MB per slot such as 2048,4096, got {part!r}") from None
        if v <= 0:
            raise UserError(f"{field_name}: memory per slot must be positive, got {part}")
        values.append(v)
    if not values:
        raise UserError(f"{field_name}: expected at least one memory profile (MB per slot)")
    return tuple(values)


def require_positive(value: float, field_name: str) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise UserError(f"{field_name}: expected a positive number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class PlanEntry:
    """The plan for one memory profile: budget and configuration (``slots`` None if unreachable)."""

    memory_mb: int
    slots: int | None
    predicted_mst: float | None
    """The surrogate model's capacity at that budget."""
    configuration: dict[str, int] | None
    """Per-operator parallelism from a last BIDS2 pass (sums to ``slots``)."""
    bids2_rate: float | None
    by_family: dict[str, int | None] = field(default_factory=dict)
    """The slots each candidate family, fitted on the same measurements, would plan (None: unreachable):
    how much the plan rests on the family choice."""
    configured_from: str | None = None
    """Which run's rates the last BIDS2 pass used (explorer.final_metrics), None if unreachable."""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Plan:
    """For a target rate: the budget per memory profile and its configuration, with the safety factor."""

    query: str
    rate: float
    safety: float
    family: str
    model: dict
    entries: tuple[PlanEntry, ...]

    def entry(self, memory_mb: int) -> PlanEntry:
        for e in self.entries:
            if e.memory_mb == memory_mb:
                return e
        raise KeyError(memory_mb)

    def to_dict(self) -> dict:
        return {"query": self.query, "rate": self.rate, "safety": self.safety, "family": self.family,
                "model": self.model, "entries": [e.to_dict() for e in self.entries]}

    @classmethod
    def from_dict(cls, d: Mapping, origin: str = "plan") -> "Plan":
        """A plan as ``to_dict`` (plan.json) writes it, validated: UserError naming ``origin`` and the field."""

        def fail(where: str, expected: str, got) -> UserError:
            return UserError(f"{origin}: {where}: expected {expected}, got {got!r:.80}")

        def number(where: str, v, *, optional: bool = False, positive: bool = True) -> float | None:
            if v is None and optional:
                return None
            ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
            if not ok or (v <= 0 if positive else v < 0):
                raise fail(where, "a positive number" if positive else "a non-negative number", v)
            return float(v)

        def integer(where: str, v, *, optional: bool = False) -> int | None:
            if v is None and optional:
                return None
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v != int(v) or v < 1:
                raise fail(where, "a positive integer", v)
            return int(v)

        if not isinstance(d, Mapping):
            raise UserError(f"{origin}: not a StreamBed plan (expected a JSON object with query, rate, safety, "
                            f"family, model and entries), got {type(d).__name__}")
        missing = [k for k in ("query", "rate", "entries") if k not in d]
        if missing:
            raise UserError(f"{origin}: not a StreamBed plan (missing {', '.join(missing)})")
        if not isinstance(d["query"], str) or not d["query"]:
            raise fail("query", "a query name", d["query"])
        rate = number("rate", d["rate"])
        safety = number("safety", d.get("safety", 1.0))
        family = d.get("family", "")
        if not isinstance(family, str):
            raise fail("family", "a family name", family)
        model = d.get("model") or {}
        if not isinstance(model, Mapping):
            raise fail("model", "an object", model)
        raw = d["entries"]
        if not isinstance(raw, list) or not raw:
            raise fail("entries", "a non-empty list of {memory_mb, slots, configuration}", raw)
        entries, seen = [], {}
        for i, e in enumerate(raw):
            at = f"entries[{i}]"
            if not isinstance(e, Mapping):
                raise fail(at, "an object {memory_mb, slots, configuration}", e)
            if "memory_mb" not in e:
                raise UserError(f"{origin}: {at}.memory_mb: missing (memory per slot, MB)")
            memory = integer(f"{at}.memory_mb", e["memory_mb"])
            if memory in seen:
                raise UserError(f"{origin}: {at}.memory_mb: {memory} MB is planned twice (also entries[{seen[memory]}])")
            seen[memory] = i
            slots = integer(f"{at}.slots", e.get("slots"), optional=True)
            config = e.get("configuration")
            if slots is not None:
                expected = "operator -> positive integer parallelism"
                if not isinstance(config, Mapping) or not config:
                    raise fail(f"{at}.configuration", expected, config)
                for op, p in config.items():
                    if isinstance(p, bool) or not isinstance(p, numbers.Integral) or p < 1:
                        raise UserError(f"{origin}: {at}.configuration: expected {expected}, got {op}: {p!r:.40}")
                config = {str(op): int(p) for op, p in config.items()}
                if sum(config.values()) != slots:
                    raise UserError(f"{origin}: {at}.configuration: the parallelism sums to {sum(config.values())}, "
                                    f"expected slots ({slots})")
            elif config is not None:
                raise UserError(f"{origin}: {at}.configuration: expected null, as slots is null (no budget found), "
                                f"got {config!r:.80}")
            by_family = e.get("by_family") or {}
            if not isinstance(by_family, Mapping):
                raise fail(f"{at}.by_family", "an object family -> slots", by_family)
            configured_from = e.get("configured_from")
            if configured_from is not None and not isinstance(configured_from, str):
                raise fail(f"{at}.configured_from", "text", configured_from)
            entries.append(PlanEntry(memory, slots, number(f"{at}.predicted_mst", e.get("predicted_mst"), optional=True,
                                                          positive=False),
                                     config, number(f"{at}.bids2_rate", e.get("bids2_rate"), optional=True,
                                                    positive=False), dict(by_family), configured_from))
        return cls(d["query"], rate, safety, family, dict(model), tuple(entries))

"""The Planner seam: a way to size a job (slots, memory per slot, per-operator parallelism) for a target rate.

StreamBed's own planner (explore over (memory, slots), fit a surrogate, inverse-solve; paper sections
IV-VI) is one implementation; DS2's scaling loop, the Flink autoscaler's rules, Justin, Imai et al.'s MST
models, Rafiki and learned cost models are others. Each is one module in this package plus one line in
``PLANNERS`` (planner/__init__.py), so that ``streambed compare`` can run them on the same work.

A planner works in two steps, as the paper's Resource Explorer does (section VI): ``explore`` measures on
the testbed (its testbed time is the method's cost) and returns evidence; ``plan`` turns that evidence into
a sizing for the rate without touching the testbed again, so one exploration can answer many rates where
the method allows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Mapping, Protocol, runtime_checkable

from .. import checks
from ..errors import UserError
from ..testbed.base import Testbed


@dataclass(frozen=True)
class PlanningRequest:
    """What every method is asked: a query, a target rate and the testbed's search space."""

    query: str
    rate: float
    """Target source rate, events/s."""
    memories: tuple[int, ...] = ()
    """Memory per slot (MB) the method may choose from; empty: the testbed's offer."""
    seed: int = 0
    """Every random draw of the method derives from this seed."""
    max_measurements: int | None = None
    """The method's measurement budget (estimator calls or runs); None: its own default."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Method-specific options (for example DS2's target utilization), named in the method's docstring."""


@dataclass(frozen=True)
class Step:
    """One thing a method did on the testbed: a measured or observed configuration."""

    slots: int
    memory_mb: int
    configuration: Mapping[str, int]
    rate: float | None
    """What the step found the configuration sustains (its MST) or ran at, events/s; None: not measured."""
    testbed_seconds: float = 0.0
    note: str = ""

    def to_dict(self) -> dict:
        return {"slots": self.slots, "memory_mb": self.memory_mb, "configuration": dict(self.configuration),
                "rate": self.rate, "testbed_seconds": self.testbed_seconds, "note": self.note}


@dataclass(frozen=True)
class Sizing:
    """A method's answer for one rate: what a user would deploy, and what it cost to find out."""

    method: str
    query: str
    rate: float
    slots: int | None
    """Total task slots planned; None when the method finds the rate out of reach (``unreachable`` says why)."""
    memory_mb: int | None
    """Memory per slot (MB); for per-operator memory, the largest, with ``memory_by_operator`` filled."""
    configuration: Mapping[str, int] | None
    """Per-operator parallelism (sums to ``slots`` with Flink's slot sharing off, as the testbeds deploy)."""
    testbed_seconds: float
    measurements: int
    """Configurations the method measured or observed on the testbed."""
    steps: tuple[Step, ...] = ()
    unreachable: str | None = None
    memory_by_operator: Mapping[str, int] | None = None
    notes: tuple[str, ...] = ()
    """What the method could not see or assumed, in one line each."""
    detail: Mapping[str, Any] = field(default_factory=dict)
    """The method's own record (StreamBed's plan.json, DS2's loop, a model's fit), JSON-ready."""

    @property
    def total_memory_mb(self) -> int | None:
        """Memory the sizing asks for over all its slots."""
        if self.slots is None or self.memory_mb is None:
            return None
        if self.memory_by_operator and self.configuration:
            return sum(self.configuration[op] * mb for op, mb in self.memory_by_operator.items())
        return self.slots * self.memory_mb

    def to_dict(self) -> dict:
        return {"method": self.method, "query": self.query, "rate": self.rate, "slots": self.slots,
                "memory_mb": self.memory_mb,
                "configuration": dict(self.configuration) if self.configuration is not None else None,
                "memory_by_operator": dict(self.memory_by_operator) if self.memory_by_operator else None,
                "total_memory_mb": self.total_memory_mb, "testbed_seconds": self.testbed_seconds,
                "measurements": self.measurements, "steps": [s.to_dict() for s in self.steps],
                "unreachable": self.unreachable, "notes": list(self.notes), "detail": dict(self.detail)}


def method_options(method: str, defaults: Any, given: Mapping[str, Any], check: Callable[[str, Any], Any]) -> Any:
    """A method's options: ``defaults`` (a dataclass) with the ones ``given``, each through ``check``
    (which raises checks.Invalid for a bad value); an unknown or bad option is one line naming it."""
    known = [f.name for f in fields(defaults)]
    values = {}
    for key, value in given.items():
        if key not in known:
            raise UserError(f"options: {method} has no option {key!r} (expected one of {', '.join(sorted(known))})")
        try:
            values[key] = check(key, value)
        except checks.Invalid as e:
            raise UserError(f"options: {method} option {key}: {e}") from None
    return replace(defaults, **values)


Log = Callable[[str], None]


def silent(message: str) -> None:
    """A log that says nothing."""


@runtime_checkable
class Planner(Protocol):
    """A way to size a job: measure on a testbed, then plan for the rate."""

    name: str

    def explore(self, testbed: Testbed, request: PlanningRequest, log: Log = silent) -> Any:
        """Measure on ``testbed`` what the method needs; returns its evidence (JSON-ready via ``to_dict``)."""

    def plan(self, evidence: Any, request: PlanningRequest) -> Sizing:
        """The sizing for ``request.rate`` from the evidence alone (no testbed call)."""

"""Queries, budgets and configurations (ARCHITECTURE.md, "Domain words").

A *query* is a graph of *operators* (sources excluded, blackhole sinks included); a *budget* is a
number of task slots and the memory of each slot; a *configuration* maps each operator to its
parallelism, summing to the budget's slots (the source's parallelism is set apart, as in the paper,
section III).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Mapping

from ..errors import UserError

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
    keyed: frozenset[str] = frozenset()
    """Operators whose input is hash-partitioned by key (Flink's keyBy): their tasks follow the key-group
    rule (model/keygroups.py). Empty when the testbed does not say."""
    max_parallelism: int | None = None
    """The job's max parallelism (key groups) when it sets one; None: Flink's default per operator."""
    state_span_s: float = 0.0
    """How long after a change of rate the query's time-based state (its windows) holds only records
    of the new rate: 1.2 x its longest window (state_span). Until then a window still holds the
    old rate's records, so a rate measured sooner is not the steady one. 0: no windows."""
    source_partitions: int | None = None
    """Partitions of the topic the source reads, where known: the operators reading the source run at
    most that many tasks (model/partitions.py). None: no bound."""

    def __post_init__(self) -> None:
        known = set(self.operators)
        unknown = set(self.keyed) - known
        if unknown:
            raise UserError(f"query {self.name}: keyed operator(s) {', '.join(sorted(unknown))} are not in its graph")
        if self.source_partitions is not None and not (isinstance(self.source_partitions, int)
                                                        and self.source_partitions >= 1):
            raise UserError(f"query {self.name}: source_partitions: expected a positive integer, "
                            f"got {self.source_partitions!r}")
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
    memory_by_operator: tuple[tuple[str, int], ...] = ()
    """Memory per slot (MB) of the named operators' tasks, on a testbed that deploys per-operator
    memory (TestbedInfo.operator_memory); the other operators' slots have ``memory_mb``."""

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise UserError(f"slots: expected a positive integer, got {self.slots}")
        if self.memory_mb <= 0:
            raise UserError(f"memory: expected a positive number of MB per slot, got {self.memory_mb}")
        for name, mb in self.memory_by_operator:
            if mb <= 0:
                raise UserError(f"memory of {name}: expected a positive number of MB per slot, got {mb}")


@dataclass(frozen=True)
class Configuration:
    """Operator -> parallelism; the sum is the number of slots used (paper Eq. 4)."""

    parallelism: tuple[tuple[str, int], ...]
    max_parallelism: int | None = None
    """The job's max parallelism (key groups of every keyed operator, Flink's pipeline.max-parallelism)
    when the configuration sets it; None: Flink's default per operator (model/keygroups.py)."""

    @classmethod
    def of(cls, query: Query, mapping: Mapping[str, int], max_parallelism: int | None = None) -> "Configuration":
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
        if max_parallelism is not None:
            too_many = [op for op, p in items if op in query.keyed and p > max_parallelism]
            if too_many:
                raise UserError(f"configuration: keyed operator(s) {', '.join(too_many)} have more tasks than the "
                                f"max parallelism {max_parallelism}")
        return cls(tuple(items), max_parallelism)

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
        text = ",".join(f"{op}={p}" for op, p in self.parallelism)
        return text if self.max_parallelism is None else f"{text}|max-parallelism={self.max_parallelism}"


def check_slots(slots: int, operators: int, *, query: str = "the query", field: str = "slots",
                error: type[UserError] = UserError) -> None:
    """The one rule every budget obeys: each operator gets at least one task slot (paper Eq. 4, pi_i >= 1).
    ``field`` names what the user gave (an option, a place in a file)."""
    if slots < operators:
        raise error(f"{field}: {query} has {operators} operators; a budget needs at least one slot each, "
                    f"got {slots}")


STATE_SPAN_FACTOR = 1.2
"""A window open when the rate changed closes within one window length; the fifth more lets its
firing be worked off before the observation starts. Measured on this machine: q5's 10-s windows read
19,890 events/s after a 3-s ramp-up and 11,776 after 12 s, which its validation confirmed (0.75-0.88 of
13,033 sustained; docs/planner.md)."""


def state_span(longest_window_s: float) -> float:
    """How long after a change of rate every window that fires holds only records of the new rate:
    STATE_SPAN_FACTOR x the longest window. (Twice, the first rule, held q11's tests on the local
    testbed 20 s each where 12 s do; docs/flink-testbed.md.)"""
    return STATE_SPAN_FACTOR * max(0.0, longest_window_s)

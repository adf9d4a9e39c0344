"""The source topic's partitions: how far a plan's source may be parallel.

A Kafka source task reads whole partitions, so tasks beyond the topic's partitions read nothing.
StreamBed's plans set the source apart from the budget and give its records to the operators that
read it; deployed, Flink chains the source with those operators at their parallelism (a forward edge,
no shuffle after the read), so their parallelism is the source's: it never exceeds the partitions, and
their tasks get floor/ceil(P/p) partitions each, the key-group rule's arithmetic (model/keygroups.py).
Partitions unknown (None): no bound.
"""

from __future__ import annotations

from .query import SOURCE, Query


def readers(query: Query) -> tuple[str, ...]:
    """The operators that read the source alone and not by key: chained with it when deployed, they run
    at its parallelism (a keyed reader gets its records through a shuffle, from any number of readers)."""
    return tuple(op for op in query.operators if query.inputs(op) == (SOURCE,) and op not in query.keyed)


def bounded(parallelism: int, partitions: int | None) -> int:
    """A source reader's parallelism, never above the topic's partitions (unknown: unchanged)."""
    return parallelism if partitions is None else min(parallelism, partitions)

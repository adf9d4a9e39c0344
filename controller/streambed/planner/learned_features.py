"""Features of a plan for the learned cost models (PDSP-Bench's operator and plan features): what a
testbed reveals, nothing more.

A plan is a query's operator graph (``Query``), the single-task measurements of the query at a memory
per slot (``SingleTaskMetrics``: each operator's true processing rate per task and input ratio, as the
Configuration Optimizer measures them), a configuration (parallelism per operator) and that memory per
slot. Every feature is a function of these four, so a model trained on one testbed's plans can be read
on another's: no sim profile, no hidden cost or state model.

Per operator (``OPERATOR_FEATURES``): its kind (from the name Flink's SQL planner gives it: Calc,
GroupWindowAggregate, ...), measured per-task rate, input ratio and selectivity, parallelism, whether it
is keyed and how many key groups each task owns, its tasks' capacity in source events/s (parallelism x
per-task rate / input ratio: DS2's linear law, measured), and the memory per slot. PDSP-Bench uses
operator type, selectivity and parallelism likewise; its tuple widths and data types are not exposed by
a StreamBed query.

Flat models read the graph aggregated (``plan_vector``: sums, means, minima and maxima of the operator
features, plus plan-level counts). The graph model reads ``propagate``d operator features: each round
appends to every operator the mean of its inputs' features, so an operator sees what flows into it
(a fixed mean aggregation along the DAG's edges, not learned weights), then pools over the graph.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from ..model import Query, SingleTaskMetrics, keygroups

KINDS = ("Calc", "GroupWindowAggregate", "GroupAggregate", "Join", "Sink")
"""Operator kinds, by the name prefix Flink's SQL planner gives them; any other is ``other``."""

OPERATOR_FEATURES = (*(f"kind_{k}" for k in KINDS), "kind_other", "log_task_rate", "log_input_ratio",
                     "log_selectivity", "log_parallelism", "keyed", "log_groups_per_task", "log_capacity",
                     "log2_memory_gb")
"""The columns of ``operator_matrix``, in order."""

TINY = 1e-12
"""Floor under a ratio before its logarithm (an operator no record reached has ratio 0)."""


def operator_kind(name: str) -> str:
    """The kind of an operator from its name ('GroupWindowAggregate#3' -> 'GroupWindowAggregate')."""
    prefix = name.split("#", 1)[0]
    return prefix if prefix in KINDS else "other"


def selectivities(query: Query, metrics: SingleTaskMetrics) -> dict[str, float]:
    """Records out per record in of each operator, from the measured input ratios: a downstream
    operator's input ratio shared among its inputs in proportion to theirs (a join's inputs are not
    told apart by its input counter). An operator with no downstream (the sink) gets 1."""
    ratio = {n: r.input_ratio for n, r in metrics.operators}
    out = {}
    for op in query.operators:
        downs = query.outputs(op)
        if not downs:
            out[op] = 1.0
            continue
        d = downs[0]
        total_in = sum(ratio[u] for u in query.inputs(d) if u in ratio) or TINY
        out[op] = ratio[d] / total_in if ratio[op] > 0 else 0.0
    return out


def operator_matrix(query: Query, metrics: SingleTaskMetrics, parallelism: Mapping[str, int],
                    memory_mb: float) -> np.ndarray:
    """One row per operator (topological order), the columns ``OPERATOR_FEATURES``."""
    rates = dict(metrics.operators)
    sel = selectivities(query, metrics)
    max_p = metrics.max_parallelism if metrics.max_parallelism is not None else query.max_parallelism
    rows = []
    for op in query.operators:
        r, p = rates[op], int(parallelism[op])
        kind = operator_kind(op)
        keyed = op in query.keyed
        groups = keygroups.max_parallelism(p, max_p) / p if keyed else 1.0
        ratio = max(r.input_ratio, TINY)
        rows.append([*(1.0 if kind == k else 0.0 for k in (*KINDS, "other")),
                     math.log10(max(r.true_rate, TINY)), math.log10(ratio), math.log10(max(sel[op], TINY)),
                     math.log10(p), 1.0 if keyed else 0.0, math.log10(max(groups, TINY)),
                     math.log10(max(p * r.true_rate / ratio, TINY)), math.log2(memory_mb / 1024.0)])
    return np.asarray(rows, dtype=float)


def plan_vector(query: Query, metrics: SingleTaskMetrics, parallelism: Mapping[str, int],
                memory_mb: float) -> np.ndarray:
    """The plan as one vector: the operator features' sum, mean, min and max over the graph, then the
    operator count, the slots (log10), the edges per operator and the weakest operator's capacity
    (log10 source events/s, the linear bound DS2 would read)."""
    x = operator_matrix(query, metrics, parallelism, memory_mb)
    slots = sum(int(parallelism[op]) for op in query.operators)
    capacity = x[:, OPERATOR_FEATURES.index("log_capacity")]
    return np.concatenate([x.sum(axis=0), x.mean(axis=0), x.min(axis=0), x.max(axis=0),
                           [len(query.operators), math.log10(slots), len(query.edges) / len(query.operators),
                            float(capacity.min())]])


def adjacency(query: Query) -> np.ndarray:
    """A[v, u] = 1 / (inputs of v) for each edge u -> v between operators (the source is left out):
    A @ H is each operator's mean over its upstream operators' rows (0 where it reads the source only)."""
    index = {op: i for i, op in enumerate(query.operators)}
    a = np.zeros((len(index), len(index)))
    for op in query.operators:
        ups = [u for u in query.inputs(op) if u in index]
        for u in ups:
            a[index[op], index[u]] = 1.0 / len(ups)
    return a


def propagate(h: np.ndarray, a: np.ndarray, rounds: int) -> np.ndarray:
    """``rounds`` rounds of message passing along the edges: H_{k+1} = [H_k, A H_k] (each operator's
    features with its inputs' mean appended), so after k rounds an operator holds what lies up to k
    edges upstream."""
    for _ in range(rounds):
        h = np.concatenate([h, a @ h], axis=1)
    return h


def pool(h: np.ndarray) -> np.ndarray:
    """The graph's vector from its operators' rows: mean, min and max of each column."""
    return np.concatenate([h.mean(axis=0), h.min(axis=0), h.max(axis=0)])


def graph_vector(query: Query, metrics: SingleTaskMetrics, parallelism: Mapping[str, int], memory_mb: float,
                 rounds: int = 2) -> np.ndarray:
    """The graph model's input: operator features propagated ``rounds`` times along the DAG, pooled."""
    h = operator_matrix(query, metrics, parallelism, memory_mb)
    return pool(propagate(h, adjacency(query), rounds))


def plan_vectors(plans: Sequence[tuple[Query, SingleTaskMetrics, Mapping[str, int], float]],
                 graph: bool = False, rounds: int = 2) -> np.ndarray:
    """One row per plan (query, metrics, parallelism, memory per slot)."""
    f = (lambda *p: graph_vector(*p, rounds=rounds)) if graph else plan_vector
    return np.vstack([f(*p) for p in plans])

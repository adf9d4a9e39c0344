"""Memory per operator: give each operator's tasks the memory per slot they need, not one size for all.

Where the measurements show an operator's rate depending on memory (state that does not fit), a plan
of one memory per slot gives every slot the memory its hungriest operator needs. Here, for a planned
configuration, each operator gets the smallest memory per slot measured whose capacity still keeps
the configuration at the rate; what that saves is the difference in total memory.

Flink deploys this with fine-grained resource management (FLIP-169): a slot sharing group per memory
size, each with a resource profile (DataStream API: ``SlotSharingGroup.newBuilder(name)
.setCpuCores(..).setTaskHeapMemoryMB(..).setManagedMemoryMB(..).build()``, then
``operator.slotSharingGroup(group)``); the TaskManagers cut slots of exactly that profile out of their
resources on demand. RocksDB's cache comes from managed memory, so the profile's managed memory is
the part that matters. The Table/SQL API exposes neither operators nor slot sharing groups, so a SQL
job (the testbeds' Nexmark queries) cannot be deployed this way as it stands; the simulated testbed
deploys it directly (Budget.memory_by_operator).

Pure functions over single-task metrics; nothing here touches a testbed.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..model import SingleTaskMetrics


MEMORY_INDIFFERENT = 0.05
"""A stateless operator whose single-task rate at a smaller memory is within this share of its rate at the
plan's memory is taken as one memory does not slow: the noise of two runs."""


def busiest_load(rate: float, input_ratio: float, share: float) -> float:
    """Records/s into an operator's busiest task: the source ``rate`` x its ``input_ratio`` x the
    ``share`` of the operator's input that task receives."""
    return rate * input_ratio * share


def heaviest_loads(metrics: SingleTaskMetrics, measurements=()) -> dict[str, float]:
    """Per operator, the most records/s one of its tasks was seen to take at a memory: the single-task
    run's (its source rate x the operator's input ratio) and, for each measurement of that memory, its
    busiest task's (``task_input``, or the mean task's where the run did not record its tasks)."""
    loads = {n: metrics.source_rate * r.input_ratio for n, r in metrics.operators}
    for m in measurements:
        for om in m.operators:
            if om.operator in loads and om.parallelism > 0:
                task = max(om.task_input) if om.task_input else om.input_rate / om.parallelism
                loads[om.operator] = max(loads[om.operator], task)
    return loads


def operator_memory(by_memory: Mapping[int, SingleTaskMetrics], configuration: Mapping[str, int], rate: float,
                    memory_mb: int, *, margin: float = 1.0, busiest_share: Mapping[str, float] | None = None,
                    seen_loads: Mapping[int, Mapping[str, float]] | None = None,
                    keyed: Iterable[str] = ()) -> dict[str, int]:
    """Per operator, the smallest memory per slot (MB) in ``by_memory``, at most ``memory_mb`` (the
    plan's one size), at which its busiest task still takes its load at ``margin`` x ``rate``: that
    task's share of the operator's input is ``busiest_share`` (the plan's policy, key skew and key
    groups counted; 1/p where not given), its true rate at that memory ``by_memory[m]``. A task's state
    grows with the records it takes (a window, a join's retention: testbed/sim/formulas.working_set_mb
    models it, RocksDB behaves so), so a rate read at a lighter load does not hold at a heavier one,
    even where it matched the plan's memory there: a stateful (``keyed``) operator gets m only where a
    task of it was seen taking at least that load at m (``seen_loads[m]``, heaviest_loads); a stateless
    one also where its rate at m is within MEMORY_INDIFFERENT of its rate at the plan's memory (it
    holds no state to outgrow memory). An operator no smaller memory
    keeps keeps ``memory_mb``. The input ratios are read at ``memory_mb`` (they follow the data, not the
    memory)."""
    if memory_mb not in by_memory:
        raise ValueError(f"no single-task metrics at the plan's memory per slot ({memory_mb} MB)")
    planned = dict(by_memory[memory_mb].operators)
    shares = busiest_share or {}
    seen = seen_loads or {}
    smaller = sorted(m for m in by_memory if m < memory_mb)
    chosen = {}
    for op, p in configuration.items():
        load = busiest_load(margin * rate, planned[op].input_ratio, shares.get(op, 1.0 / max(p, 1)))
        chosen[op] = memory_mb
        for m in smaller:
            rates = dict(by_memory[m].operators)
            if op not in rates or rates[op].true_rate < load:
                continue
            indifferent = op not in keyed and rates[op].true_rate >= (1.0 - MEMORY_INDIFFERENT) * planned[op].true_rate
            if indifferent or seen.get(m, {}).get(op, 0.0) >= load:
                chosen[op] = m
                break
    return chosen


def total_memory_mb(configuration: Mapping[str, int], memory_by_operator: Mapping[str, int], memory_mb: int) -> int:
    """Memory over all slots: each operator's tasks at its memory (``memory_mb`` where not named)."""
    return sum(p * memory_by_operator.get(op, memory_mb) for op, p in configuration.items())


def saving_line(per_operator_mb: int, single_size_mb: int, single_size: str) -> str:
    """What per-operator memory saves against one size for all, in one line."""
    saved = single_size_mb - per_operator_mb
    share = saved / single_size_mb if single_size_mb > 0 else 0.0
    return (f"memory per operator: {per_operator_mb:,} MB in total against {single_size_mb:,} MB for {single_size} "
            f"({saved:,} MB, {share:.0%} less)")

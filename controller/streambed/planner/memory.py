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

from typing import Mapping

from ..model import SingleTaskMetrics


def operator_capacity(parallelism: int, true_rate: float, imbalance: float = 1.0) -> float:
    """Records/s an operator of ``parallelism`` tasks of ``true_rate`` each sustains when its busiest
    task carries ``imbalance`` times the mean task's load."""
    return parallelism * true_rate / max(imbalance, 1.0)


def operator_memory(by_memory: Mapping[int, SingleTaskMetrics], configuration: Mapping[str, int], rate: float,
                    memory_mb: int, *, margin: float = 1.0,
                    imbalance: Mapping[str, float] | None = None) -> dict[str, int]:
    """Per operator, the smallest memory per slot (MB) in ``by_memory``, at most ``memory_mb`` (the
    plan's one size), at which its tasks in ``configuration`` still take ``margin`` x ``rate`` x its
    input ratio: the operator's true rate per task at that memory (``by_memory[m]``) times its tasks,
    over its busiest task's ``imbalance`` (1 where not given). An operator no smaller memory keeps at
    the rate keeps ``memory_mb``. The input ratios are read at ``memory_mb`` (they follow the data,
    not the memory)."""
    if memory_mb not in by_memory:
        raise ValueError(f"no single-task metrics at the plan's memory per slot ({memory_mb} MB)")
    ratios = {n: r.input_ratio for n, r in by_memory[memory_mb].operators}
    imbalance = imbalance or {}
    smaller = sorted(m for m in by_memory if m < memory_mb)
    chosen = {}
    for op, p in configuration.items():
        need = margin * rate * ratios[op]
        chosen[op] = memory_mb
        for m in smaller:
            rates = dict(by_memory[m].operators)
            if op in rates and operator_capacity(p, rates[op].true_rate, imbalance.get(op, 1.0)) >= need:
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

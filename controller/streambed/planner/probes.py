"""Skew probes: a keyed operator measured at the testbed's widest before a plan trusts its key skew.

The key skew a plan carries to its own parallelism is read from the testbed's runs' per-task input
records (model/keyskew.py). An operator whose input is small runs on one or two tasks in every run of
D, so no run shows its keys, and a hot key that caps it at the planned parallelism goes unseen. A
probe runs that operator alone at the widest parallelism the testbed holds, every other operator at
one task (the fewest the budget allows), and its measurement's per-task input records join D's
runs in the skew model: the widest run is the one the hot-key test reads (keyskew.estimate), so the
probe's tasks replace the narrow runs' view of the keys.

These functions choose what to probe and how; ResourceExplorer.probe measures.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ..model import keygroups

PROBE_RATIO = 4.0
"""A keyed operator is probed when its planned parallelism is more than this many times the widest it
ran on the testbed ("more than a few times": at 4 x the busiest task's excess over the mean grows by
about 2 x under the square-root law of model/keyskew.py, beyond what the testbed's spread shows)."""
PROBE_GAIN = 2.0
"""...and when the probe would run it at least this many times wider than any run did (a probe no
wider than D's runs shows nothing they did not)."""


def widest_runs(configurations: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Per operator, the most tasks it ran with over ``configurations`` (the testbed's runs)."""
    out: dict[str, int] = {}
    for cfg in configurations:
        for op, p in cfg.items():
            out[op] = max(out.get(op, 0), int(p))
    return out


def probe_width(testbed_slots: int, operators: int, max_parallelism: int | None = None) -> int:
    """The most tasks one operator can run on a testbed of ``testbed_slots`` with every other of the
    query's ``operators`` at one task, within its key groups (the job's max parallelism, else Flink's
    largest)."""
    return max(1, min(testbed_slots - (operators - 1), keygroups.parallelism_limit(max_parallelism)))


def probe_targets(planned: Iterable[Mapping[str, int]], widest: Mapping[str, int], keyed: Iterable[str],
                  width: int, ratio: float = PROBE_RATIO, gain: float = PROBE_GAIN) -> list[str]:
    """The keyed operators to probe: planned (in any of the ``planned`` configurations) at more than
    ``ratio`` x the widest they ran (``widest``), where a probe of ``width`` tasks would be at least
    ``gain`` x that widest. Sorted by name."""
    most = widest_runs(planned)
    out = []
    for op in sorted(set(keyed)):
        seen = max(1, widest.get(op, 1))
        if most.get(op, 0) > ratio * seen and width >= gain * seen:
            out.append(op)
    return out


def probe_configuration(operators: Sequence[str], target: str, width: int) -> dict[str, int]:
    """The probe's configuration: ``target`` at ``width`` tasks, every other operator at one."""
    return {op: (width if op == target else 1) for op in operators}

"""Skew and load probes: a keyed operator measured at the testbed's widest before a plan trusts its key
skew, and on one task loaded to its limit before a plan loads its tasks more than any run did.

The key skew a plan carries to its own parallelism is read from the testbed's runs' per-task input
records (model/keyskew.py). An operator whose input is small runs on one or two tasks in every run of
D, so no run shows its keys, and a hot key that caps it at the planned parallelism goes unseen. A
probe runs that operator alone at the widest parallelism the testbed holds, every other operator at
one task (the fewest the budget allows), and its measurement's per-task input records join D's
runs in the skew model: the widest run is the one the hot-key test reads (keyskew.estimate), so the
probe's tasks replace the narrow runs' view of the keys.

A load probe runs a keyed operator on one task and the others as wide as it takes to load that task
to its rate read so far: its state at the load a plan gives it (model/loadrate.py) is then seen, and
the probe's load points join the runs of its memory (ResourceExplorer.load_points).

These functions choose what to probe and how; ResourceExplorer.probe measures.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping, Sequence

from ..model import OperatorRates, SingleTaskMetrics, keygroups
from .policies import skew

PROBE_RATIO = 4.0
"""A keyed operator is probed when its planned parallelism is more than this many times the widest it
ran on the testbed ("more than a few times": at 4 x the busiest task's excess over the mean grows by
about 2 x under the square-root law of model/keyskew.py, beyond what the testbed's spread shows)."""
PROBE_GAIN = 2.0
"""...and when the probe would run it at least this many times wider than any run did (a probe no
wider than D's runs shows nothing they did not); a suspect the probe decides (decides), at all wider."""


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
                  width: int, ratio: float = PROBE_RATIO, gain: float = PROBE_GAIN,
                  suspects: Iterable[str] = (), decisive: Iterable[str] = ()) -> list[str]:
    """The keyed operators to probe: planned (in any of the ``planned`` configurations) at more than
    ``ratio`` x the widest they ran (``widest``), or named in ``suspects`` (a key the runs could not show
    may hold them below the rate at their planned parallelism: sizing.hidden_keys), where a probe of
    ``width`` tasks would be at least ``gain`` x that widest, or, for a suspect in ``decisive`` (the probe
    would show any key that holds it below the rate: decides), wider at all. Sorted by name."""
    most, suspects, decisive = widest_runs(planned), set(suspects), set(decisive)
    out = []
    for op in sorted(set(keyed)):
        seen = max(1, widest.get(op, 1))
        wide_enough = width >= gain * seen or (op in decisive and op in suspects and width > seen)
        if (most.get(op, 0) > ratio * seen or op in suspects) and wide_enough:
            out.append(op)
    return out


def decides(rates: OperatorRates, width: int, parallelism: int, rate: float, fixed: int | None = None) -> bool:
    """Whether a probe of ``width`` tasks would show every key hot enough to hold ``parallelism`` tasks of a
    keyed operator below ``rate``: the faintest key it could miss (skew.hidden_key, read at ``width``
    over its key groups) leaves them at or above the rate (skew.hidden_key_capacity). A probe only a little
    wider than D's runs then settles what the plan's key warning leaves open (a held-out join of 32,556
    Zipf 0.71 keys seen on 27 tasks, whose 1.5 % key a probe of 42 shows)."""
    if rates.key_skew is None:
        return False
    tested = replace(rates.key_skew, tested_parallelism=width,
                     tested_max_parallelism=keygroups.max_parallelism(width, fixed))
    return skew.hidden_key_capacity(replace(rates, key_skew=tested), parallelism, fixed) >= rate


def probe_configuration(operators: Sequence[str], target: str, width: int) -> dict[str, int]:
    """The probe's configuration: ``target`` at ``width`` tasks, every other operator at one."""
    return {op: (width if op == target else 1) for op in operators}


HEAVIER = 1.1
"""A task loaded this much more than the heaviest seen is beyond what the testbed showed (run-to-run noise
is a few percent)."""
LOAD_PROBE_GAIN = HEAVIER
"""A keyed operator is load-probed when a plan loads its busiest task more than this many times the
heaviest load a task of it took at that memory: its state at that load was never held (a task's state
grows with its load: model/loadrate.py). The caveat's own line (caveats.unseen_reasons): what a plan
would have to name as not seen, the testbed measures where it can."""
LOAD_PROBE_STEP = 0.8
"""The probe's source rate is lowered by this factor until its configuration fits the testbed."""


def load_probe_targets(loads: Mapping[str, tuple[float, float]], keyed: Iterable[str],
                       gain: float = LOAD_PROBE_GAIN) -> list[str]:
    """The keyed operators to load-probe: ``loads`` gives each operator's (load a plan puts on its busiest
    task, heaviest load a task of it took on the testbed at that memory); those planned more than
    ``gain`` x the heaviest. Sorted by name."""
    keyed = set(keyed)
    return sorted(op for op, (planned, heaviest) in loads.items()
                  if op in keyed and planned > gain * max(heaviest, 0.0))


def load_probe_configuration(metrics: SingleTaskMetrics, target: str, slots: int, floor: float,
                             step: float = LOAD_PROBE_STEP) -> dict[str, int] | None:
    """A load probe: ``target`` on one task and every other operator on the fewest tasks that carry the
    source rate at which that task is fully busy by its rate read so far (policies/skew.fewest_tasks,
    key skew counted); that source rate lowered by ``step`` until the configuration fits ``slots``.
    None when no configuration within ``slots`` loads the target's task with ``floor`` records/s (more
    than the heaviest a task of it took: a probe lighter shows nothing new)."""
    rates = dict(metrics.operators)
    r = rates[target]
    if r.input_ratio <= 0 or r.true_rate <= 0:
        return None
    source = r.true_rate / r.input_ratio
    while source * r.input_ratio >= floor:
        cfg: dict[str, int] | None = {target: 1}
        for op, rr in metrics.operators:
            if op == target:
                continue
            p = skew.fewest_tasks(rr, source, slots, metrics.max_parallelism)
            if p is None:
                cfg = None
                break
            cfg[op] = p
        if cfg is not None and sum(cfg.values()) <= slots:
            return {op: cfg[op] for op, _ in metrics.operators}
        source *= step
    return None

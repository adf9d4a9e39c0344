"""Rafiki (Pfister et al., "Rafiki: Task-level Capacity Planning in Distributed Stream Processing
Systems", Euro-Par 2021 workshops): profiling runs driven by back-pressure, a per-operator capacity
table, and parallelism sized for a utilization target, with the recovery time that target buys.

* Profiling loop (section 2.1, Fig. 2): every operator starts at parallelism 1; each run floods the job
  (the source is offered far more than it can take) and is observed; the operator after the last
  back-pressured one in data-flow order is the bottleneck, and its parallelism grows by one for the next
  run, until that would pass the maximum parallelism (a user's bound) or the testbed's slots. The
  source is outside the slot budget here, as in StreamBed: when no operator is back-pressured, the
  source is the one held back (it emits less than offered) and the bottleneck is the operator after it.
* Capacity (section 2.2, Table 1): an operator whose input is back-pressured while it is not ran at its
  maximum capacity (case 1); in every other case its throughput is a lower bound. The table keeps
  every (operator, parallelism) entry; an operator's capacity per task is throughput / parallelism of
  its case-1 entries at the largest parallelism that had one (the largest lower bound when it never
  was the bottleneck). Case 1 also asks that the operator's busiest task was busy (``saturated``).
* Utilization target (section 2.3): each operator gets the fewest tasks that carry its share of the
  rate at the target utilization (0.70 by default: "30 % processing capacity for recovery").
* Recovery time (``recovery_time``): a backlog of B seconds of input drains at the spare capacity,
  in B u / (1 - u) seconds at utilization u.

Options (``PlanningRequest.options``): ``utilization`` (0.70), ``max_parallelism`` (6, the paper's),
``backlog_s`` (60: the backlog whose recovery time the plan reports), ``warmup_s`` (60) and
``observe_s`` (60) of each run (the paper's 2-minute runs), ``busy`` (0.9) and ``backpressure`` (0.10):
the shares of time that make a task busy or back-pressured. ``PlanningRequest.max_measurements``
bounds the runs (60 by default).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from .. import checks
from ..errors import UserError
from ..model import SOURCE, Budget, Configuration, Measurement, Query
from ..testbed.base import Testbed
from .base import Log, PlanningRequest, Sizing, Step, method_options, silent

UTILIZATION = 0.70
"""The paper's example target: 30 % of the capacity left for recovery."""
MAX_PARALLELISM = 6
"""The paper's bound (its cluster's cores); a user's choice."""
BACKLOG_S = 60.0
BACKPRESSURED = 0.10
"""A task back-pressured more than this share of the time counts as back-pressured (Flink's web UI
calls 0-10 % OK)."""
BUSY = 0.9
"""An operator at its capacity: its busiest task was busy at least this share of the time."""
SOURCE_HELD = 0.99
"""A source that emits less than this share of its offer is held back by the job."""
FLOOD_RATE = 1e10
"""What a profiling run offers when the testbed does not cap its source: far above any capacity."""
MAX_RUNS = 60


# -- pure formulas ------------------------------------------------------------------------------------

def recovery_time(backlog_s: float, utilization: float) -> float:
    """Seconds to drain ``backlog_s`` seconds of input at ``utilization`` of the capacity: the backlog
    (B x rate records) drains at the spare capacity (rate / u - rate), so B u / (1 - u); inf at u >= 1."""
    if backlog_s < 0 or utilization < 0:
        raise UserError(f"recovery: expected a non-negative backlog and utilization, got {backlog_s}, {utilization}")
    return math.inf if utilization >= 1 else backlog_s * utilization / (1.0 - utilization)


def tasks_for(rate: float, input_ratio: float, per_task: float, utilization: float) -> int:
    """Fewest tasks of an operator that carry its input (rate x input_ratio) at ``utilization`` of
    their capacity ``per_task`` each."""
    if per_task <= 0 or not 0 < utilization <= 1:
        raise UserError(f"capacity: expected a positive capacity per task and a utilization in (0, 1], "
                        f"got {per_task} and {utilization}")
    return max(1, math.ceil(rate * input_ratio / (per_task * utilization) - 1e-9))


@dataclass(frozen=True)
class Entry:
    """One line of the capacity table: an operator at a parallelism in one run."""

    operator: str
    parallelism: int
    throughput: float
    """Records/s into the operator, over its tasks."""
    maximum: bool
    """Table 1, case 1: the throughput is the operator's maximum capacity (else a lower bound)."""
    run: int

    @property
    def per_task(self) -> float:
        return self.throughput / self.parallelism

    def to_dict(self) -> dict:
        return {"operator": self.operator, "parallelism": self.parallelism, "throughput": self.throughput,
                "per_task": self.per_task, "maximum": self.maximum, "run": self.run}


def backpressured(query: Query, m: Measurement, threshold: float = BACKPRESSURED) -> dict[str, bool]:
    """Per operator, and for the source: whether it was held back in the run."""
    held = {op.operator: op.backpressure > threshold for op in m.operators}
    held[SOURCE] = m.target_rate > 0 and m.achieved_rate < SOURCE_HELD * m.target_rate and not m.source_saturated
    return held


def saturated(query: Query, m: Measurement, threshold: float = BACKPRESSURED, busy: float = BUSY) -> list[str]:
    """Table 1, case 1, read with busy time: the operators not back-pressured, with a back-pressured
    input, whose busiest task was busy at least ``busy`` of the time, in data-flow order. Back-pressure
    alone misreads bursts: a window's firings fill the buffers after it for a moment, and on the sim the
    operators after q5's window read as case 1 at a fifth of their capacity."""
    held = backpressured(query, m, threshold)
    return [op for op in query.operators if not held[op] and any(held[up] for up in query.inputs(op))
            and m.operator(op).busyness_max >= busy]


def bottleneck(query: Query, m: Measurement, threshold: float = BACKPRESSURED, busy: float = BUSY) -> str | None:
    """The operator after the last back-pressured one in data-flow order (section 2.1): the last
    saturated operator; without one, the busiest operator with a back-pressured input. None when nothing
    is held back (the job took all it was offered)."""
    found = saturated(query, m, threshold, busy)
    if found:
        return found[-1]
    held = backpressured(query, m, threshold)
    fed = [op for op in query.operators if not held[op] and any(held[up] for up in query.inputs(op))]
    return max(fed, key=lambda op: m.operator(op).busyness_max) if fed else None


def table_entries(query: Query, m: Measurement, run: int, threshold: float = BACKPRESSURED,
                  busy: float = BUSY) -> list[Entry]:
    """Table 1 on one run: a saturated operator's throughput is its maximum, every other a lower bound."""
    top = set(saturated(query, m, threshold, busy))
    return [Entry(op, m.operator(op).parallelism, m.operator(op).input_rate, op in top, run)
            for op in query.operators]


def capacities(entries: Sequence[Entry]) -> dict[str, tuple[float, bool]]:
    """Per operator: capacity per task (records/s) and whether it is a maximum or only the largest lower
    bound seen. A maximum is read at the largest parallelism that reached one (the mean of its runs):
    a keyed operator's tasks share its input less evenly as they grow in number, and that row of the
    table is the nearest to the parallelism a plan deploys."""
    out: dict[str, tuple[float, bool]] = {}
    for op in dict.fromkeys(e.operator for e in entries):
        mine = [e for e in entries if e.operator == op]
        maxima = [e for e in mine if e.maximum]
        if maxima:
            top = max(e.parallelism for e in maxima)
            out[op] = (float(np.mean([e.per_task for e in maxima if e.parallelism == top])), True)
        else:
            out[op] = (max(e.per_task for e in mine), False)
    return out


def input_ratios(query: Query, runs: Sequence[Measurement]) -> dict[str, float]:
    """Per operator, records in per source event, pooled over the runs (total in / total emitted)."""
    emitted = sum(m.achieved_rate for m in runs)
    if emitted <= 0:
        raise UserError(f"{query.name}: no profiling run emitted any event")
    return {op: sum(m.operator(op).input_rate for m in runs) / emitted for op in query.operators}


# -- the planner -------------------------------------------------------------------------------------

@dataclass
class RafikiEvidence:
    query: str
    memory_mb: int
    entries: list[Entry]
    ratios: dict[str, float]
    steps: list[Step] = field(default_factory=list)
    stopped: str = ""
    testbed_seconds: float = 0.0

    def to_dict(self) -> dict:
        caps = capacities(self.entries)
        return {"query": self.query, "memory_mb": self.memory_mb, "stopped": self.stopped,
                "table": [e.to_dict() for e in self.entries], "input_ratios": self.ratios,
                "capacity_per_task": {op: {"records_per_s": c, "maximum": mx} for op, (c, mx) in caps.items()},
                "testbed_seconds": self.testbed_seconds, "steps": [s.to_dict() for s in self.steps]}


@dataclass(frozen=True)
class RafikiOptions:
    """The method's options (each a key of PlanningRequest.options)."""

    utilization: float = UTILIZATION
    max_parallelism: int = MAX_PARALLELISM
    backlog_s: float = BACKLOG_S
    warmup_s: float = 60.0
    observe_s: float = 60.0
    busy: float = BUSY
    backpressure: float = BACKPRESSURED


def _option(name: str, value: Any) -> Any:
    """One option's value in its type (checks.Invalid when it is not)."""
    if name in ("utilization", "busy"):
        return checks.number(value, minimum=0.0, strict=True, maximum=1.0)
    if name == "backpressure":
        return checks.number(value, minimum=0.0, maximum=1.0)
    if name == "max_parallelism":
        return checks.integer(value)
    if name in ("backlog_s", "warmup_s"):
        return checks.number(value, minimum=0.0, unit="seconds")
    if name == "observe_s":
        return checks.number(value, minimum=0.0, strict=True, unit="seconds")
    raise KeyError(name)


def rafiki_options(given: Mapping[str, Any]) -> RafikiOptions:
    """The defaults with the options ``given``; an unknown or bad one is one line naming it."""
    return method_options("rafiki", RafikiOptions(), given, _option)


class Rafiki:
    """Rafiki's profiling loop, capacity table and utilization targeting."""

    name = "rafiki"

    def options(self, request: PlanningRequest) -> RafikiOptions:
        """The request's options, checked (one line naming a bad one)."""
        return rafiki_options(request.options)

    def explore(self, testbed: Testbed, request: PlanningRequest, log: Log = silent) -> RafikiEvidence:
        o = self.options(request)
        info = testbed.info()
        query = testbed.query(request.query)
        max_p = o.max_parallelism
        warmup = max(o.warmup_s, query.state_span_s)
        max_runs = request.max_measurements or MAX_RUNS
        memory = _memory(request, info.memory_per_slot)
        flood = min(FLOOD_RATE, info.max_source_rate)
        parallelism = {op: 1 for op in query.operators}
        entries: list[Entry] = []
        runs: list[Measurement] = []
        steps: list[Step] = []
        spent = 0.0
        stopped = f"measurement budget ({max_runs} runs) spent"
        for i in range(max_runs):
            cfg = Configuration.of(query, parallelism)
            if cfg.slots > info.max_slots:
                stopped = f"the next run needs {cfg.slots} slots, the testbed has {info.max_slots}"
                break
            t0 = testbed.now()
            m = _profile(testbed, request.query, cfg, memory, flood, warmup, o.observe_s)
            spent += testbed.now() - t0
            runs.append(m)
            entries.extend(table_entries(query, m, i, o.backpressure, o.busy))
            neck = bottleneck(query, m, o.backpressure, o.busy)
            steps.append(Step(cfg.slots, memory, dict(parallelism), m.achieved_rate, testbed.now() - t0,
                              f"bottleneck {neck}" if neck else "no bottleneck"))
            log(f"rafiki: run {i + 1} {dict(parallelism)}: {m.achieved_rate:,.0f} events/s, bottleneck {neck}")
            if neck is None:
                stopped = "no operator held back (the source is the limit)"
                break
            if parallelism[neck] + 1 > max_p:
                stopped = f"{neck} would pass the maximum parallelism {max_p}"
                break
            parallelism[neck] += 1
        return RafikiEvidence(request.query, memory, entries, input_ratios(query, runs), steps, stopped, spent)

    def plan(self, evidence: RafikiEvidence, request: PlanningRequest) -> Sizing:
        o = self.options(request)
        u, backlog = o.utilization, o.backlog_s
        caps = capacities(evidence.entries)
        # an operator no record reached in any run (a filter that dropped all) says nothing: one task
        unseen = [op for op, (c, _) in caps.items() if c <= 0]
        parallelism = {op: 1 if op in unseen else tasks_for(request.rate, evidence.ratios[op], c, u)
                       for op, (c, _) in caps.items()}
        # the plan's utilization is its busiest operator's, what its recovery depends on
        load = max((request.rate * evidence.ratios[op] / (parallelism[op] * c) for op, (c, _) in caps.items()
                    if op not in unseen), default=0.0)
        bounds = [op for op, (_, mx) in caps.items() if not mx]
        notes = [f"at {load:.0%} utilization a failure with {backlog:g} s of backlog recovers in "
                 f"{recovery_time(backlog, load):,.0f} s"]
        if bounds:
            notes.append(f"capacity of {', '.join(bounds)} is a lower bound (never the bottleneck)")
        if unseen:
            notes.append(f"{', '.join(unseen)} received no record while profiled: one task each")
        detail = {**evidence.to_dict(), "utilization_target": u, "utilization": load, "backlog_s": backlog,
                  "recovery_s": recovery_time(backlog, load)}
        return Sizing(self.name, request.query, request.rate, sum(parallelism.values()), evidence.memory_mb,
                      parallelism, evidence.testbed_seconds, len(evidence.steps), steps=tuple(evidence.steps),
                      notes=tuple(notes), detail=detail)


def _profile(testbed: Testbed, query: str, cfg: Configuration, memory: int, flood: float,
             warmup: float, observe: float) -> Measurement:
    """One profiling run: the job flooded, warmed up, observed."""
    testbed.prepare(Budget(cfg.slots, memory))
    run = testbed.start(query, cfg, flood)
    try:
        testbed.wait(run, warmup)
        return testbed.observe(run, observe)
    finally:
        testbed.stop(run)


def _memory(request: PlanningRequest, offered: Sequence[int]) -> int:
    """The request's first memory per slot, else the largest offered (profiling needs one)."""
    if request.memories:
        if request.memories[0] not in offered:
            raise UserError(f"memory: {request.memories[0]} MB per slot is not offered "
                            f"(expected one of {', '.join(map(str, offered))})")
        return int(request.memories[0])
    return int(max(offered))

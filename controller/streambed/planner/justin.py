"""Justin's hybrid CPU/memory scaling (Schmitz, Rosinosky, Rivière), as a planner: DS2's loop
(planner/ds2.py) where an operator slow because its state does not fit gets more memory instead of
more tasks.

Each stateful operator has a memory level: level x gives its tasks ``base x 2**x`` MB per slot (the
paper's managed-memory levels, doubling from a minimum, below ``max_level``). Each step runs the
configuration with those memories, reads the operators' state signals (cache hit rate theta, state
access latency tau; model/measurement.OperatorMetrics), and applies the paper's Algorithm 1 to DS2's
proposal (``justin_step``): an operator DS2 would rescale whose hit rate is below ``hit_rate`` or whose
latency is above ``latency_ms`` keeps its parallelism and moves one level up; one scaled up last
time keeps climbing while its signals improve, and steps back down when they did not; otherwise
DS2's parallelism applies. Stateless operators (no state signal) stay at the smallest memory: the
paper strips their managed memory (level ⊥), which a testbed of whole slots cannot deploy.

The state signals come from RocksDB (block-cache hits and misses, keyed-state access latency): the
simulated testbed derives them from its state model; the Flink testbed does not report them, and
Justin there would be DS2. Per-operator memory needs a testbed that deploys it
(TestbedInfo.operator_memory): the simulated one does; on Flink it takes fine-grained resource
profiles on slot sharing groups (planner/memory.py), which the testbeds' SQL jobs cannot set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from .. import checks
from ..errors import UserError
from ..model import Budget, Configuration, Measurement, Query, SingleTaskMetrics
from ..model.catchup import catch_up_factor
from ..testbed.base import Testbed
from .base import Log, PlanningRequest, Sizing, Step, silent
from .ds2 import Ds2Loop, LoopOptions, loop_options, observe_once, operator_metrics, scaling_target
from .memory import total_memory_mb
from .policies.ds2 import ds2

# -- formulas ------------------------------------------------------------------------------------


def level_memory(base_mb: int, level: int | None) -> int:
    """Memory per slot of a memory level: ``base_mb`` x 2 ** level (level None, stateless: the base)."""
    return base_mb if level is None else base_mb * 2 ** level


def memory_starved(hit_rate: float | None, latency_ms: float | None, min_hit_rate: float,
                   max_latency_ms: float) -> bool:
    """Could more memory help? The hit rate below its threshold or the state access latency above its
    own (the paper's Delta_theta = 80 %, Delta_tau = 1 ms); a signal not reported says nothing."""
    return ((hit_rate is not None and hit_rate < min_hit_rate)
            or (latency_ms is not None and latency_ms > max_latency_ms))


def improved(now: tuple[float | None, float | None], before: tuple[float | None, float | None],
             margin: float = 0.0) -> bool:
    """Did the last scale-up help? The hit rate rose or the latency fell, each by more than
    ``margin`` of its previous value (0: any change, the paper's strict inequalities)."""
    (hit, lat), (hit0, lat0) = now, before
    rose = hit is not None and hit0 is not None and hit > hit0 * (1.0 + margin)
    fell = lat is not None and lat0 is not None and lat < lat0 * (1.0 - margin)
    return rose or fell


@dataclass(frozen=True)
class OperatorState:
    """One operator in one step of the loop: its tasks, memory level, and state signals."""

    parallelism: int
    level: int | None
    """None: stateless (no state signal), at the smallest memory."""
    scaled_up: bool = False
    """Whether the step that led here raised its memory level (the paper's o_i.v)."""
    hit_rate: float | None = None
    latency_ms: float | None = None


def justin_step(current: Mapping[str, OperatorState], proposed: Mapping[str, int], max_level: int,
                min_hit_rate: float, max_latency_ms: float, margin: float = 0.0,
                previous: Mapping[str, OperatorState] | None = None) -> dict[str, OperatorState]:
    """Algorithm 1: DS2's ``proposed`` parallelism, with scale-ups of memory where they may help.

    ``current`` holds each operator's parallelism, level, whether its level was raised to get here,
    and the signals this step measured; ``previous`` the signals measured before that raise (for the
    improvement test). Returns the next step's parallelism and levels (signals empty)."""
    out = {}
    for op, now in current.items():
        p = proposed[op]
        if now.hit_rate is None and now.latency_ms is None:  # no state read: stateless
            out[op] = OperatorState(p, None)
            continue
        level = now.level or 0
        if p == now.parallelism:
            out[op] = OperatorState(p, level)
        elif now.scaled_up and previous is not None and op in previous:
            before = previous[op]
            if improved((now.hit_rate, now.latency_ms), (before.hit_rate, before.latency_ms), margin):
                out[op] = (OperatorState(now.parallelism, level + 1, True) if level + 1 < max_level
                           else OperatorState(p, level))
            else:  # the last scale-up did not help: roll it back, DS2's parallelism applies
                out[op] = OperatorState(p, max(level - 1, 0))
        elif memory_starved(now.hit_rate, now.latency_ms, min_hit_rate, max_latency_ms) and level + 1 < max_level:
            out[op] = OperatorState(now.parallelism, level + 1, True)
        else:
            out[op] = OperatorState(p, level)
    return out


# -- options -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JustinOptions:
    """Justin's own options (PlanningRequest.options; the rest are DS2's, planner/ds2.py:LoopOptions)."""

    hit_rate: float = 0.80
    latency_ms: float = 1.0
    max_level: int = 3
    base_memory: int | None = None
    improvement: float = 0.0

    def to_dict(self) -> dict:
        return {"hit_rate": self.hit_rate, "latency_ms": self.latency_ms, "max_level": self.max_level,
                "base_memory": self.base_memory, "improvement": self.improvement}


def justin_options(given: Mapping[str, Any]) -> tuple[JustinOptions, dict[str, Any]]:
    """Justin's options from ``given``, and the rest (DS2's); a bad value is one line naming it."""
    own, rest = {}, {}
    for key, value in given.items():
        try:
            if key in ("hit_rate", "improvement"):
                own[key] = checks.number(value, minimum=0.0, maximum=1.0)
            elif key == "latency_ms":
                own[key] = checks.number(value, minimum=0.0, strict=True, unit="ms")
            elif key == "max_level":
                own[key] = checks.integer(value, minimum=1)
            elif key == "base_memory":
                own[key] = None if value is None else checks.integer(value, minimum=1)
            else:
                rest[key] = value
        except checks.Invalid as e:
            raise UserError(f"options: justin option {key}: {e}") from None
    return JustinOptions(**own), rest


# -- the planner ---------------------------------------------------------------------------------


@dataclass
class JustinEvidence:
    """What the loop saw: every run with its per-operator memory, and where it stopped."""

    query: str
    rate: float
    base_memory: int
    options: LoopOptions
    justin: JustinOptions
    runs: list[dict] = field(default_factory=list)
    """Per run: configuration, memory_by_operator, levels, measurement, metrics, testbed seconds."""
    final: dict[str, int] | None = None
    final_memory: dict[str, int] | None = None
    converged: bool = False
    stop_reason: str = ""
    testbed_seconds: float = 0.0
    max_parallelism: int | None = None

    @property
    def scale_ups(self) -> int:
        """Memory-level raises over the loop."""
        return sum(1 for r in self.runs for v in r["scaled_up"].values() if v)

    def to_dict(self) -> dict:
        return {"query": self.query, "rate": self.rate, "base_memory": self.base_memory,
                "options": self.options.to_dict(), "justin": self.justin.to_dict(), "runs": self.runs,
                "final": self.final, "final_memory": self.final_memory, "converged": self.converged,
                "stop_reason": self.stop_reason, "scale_ups": self.scale_ups,
                "testbed_seconds": self.testbed_seconds, "max_parallelism": self.max_parallelism}


class Justin:
    """Justin's loop as a planner: ``explore`` runs it at the target rate, ``plan`` reports where it
    stopped, with each operator's memory per slot.

    Options (PlanningRequest.options): DS2's (planner/ds2.py:Ds2Loop), and ``hit_rate`` (0.80) and
    ``latency_ms`` (1.0): the thresholds below/above which an operator's memory level goes up;
    ``max_level`` (3): levels 0 .. max_level - 1; ``base_memory`` (the smallest memory per slot the
    testbed offers, or ``request.memories``' smallest): level 0; ``improvement`` (0): the share by
    which a scale-up must raise the hit rate or cut the latency to count as an improvement.
    """

    name = "justin"

    def options(self, request: PlanningRequest) -> tuple[LoopOptions, JustinOptions]:
        own, rest = justin_options(request.options)
        o = loop_options(rest, Ds2Loop.defaults, self.name)
        if request.max_measurements is not None:
            o = replace(o, max_steps=request.max_measurements)
        return o, own

    def explore(self, testbed: Testbed, request: PlanningRequest, log: Log = silent) -> JustinEvidence:
        o, j = self.options(request)
        if not (request.rate > 0 and math.isfinite(request.rate)):
            raise UserError(f"rate: expected a positive number of events/s, got {request.rate}")
        query, info = testbed.query(request.query), testbed.info()
        if not info.operator_memory:
            raise UserError(f"justin: the {info.name} testbed deploys one memory per slot for every operator; "
                            f"Justin's memory levels need per-operator memory (the simulated testbed deploys it)")
        base = j.base_memory or min(request.memories or info.memory_per_slot)
        info.check_memory(base, "base_memory")
        levels = [level_memory(base, x) for x in range(j.max_level)]
        offered = [m for m in levels if m in info.memory_per_slot]
        if len(offered) < len(levels):
            j = replace(j, max_level=len(offered))  # the levels stop where the testbed's offer does
        loop = Ds2Loop()
        start = Configuration.of(query, o.initial, query.max_parallelism) if o.initial is not None \
            else Configuration.single_task(query)
        evidence = JustinEvidence(query.name, request.rate, base, o, j, max_parallelism=query.max_parallelism)
        states = {op: OperatorState(start[op], 0) for op in query.operators}
        previous: dict[str, OperatorState] | None = None
        for k in range(o.max_steps):
            config = Configuration.of(query, {op: s.parallelism for op, s in states.items()}, query.max_parallelism)
            memory = {op: level_memory(base, s.level) for op, s in states.items()}
            if config.slots > info.max_slots:
                evidence.stop_reason = f"the next configuration needs {config.slots} slots; the testbed offers {info.max_slots}"
                break
            m = self._run(testbed, query, config, base, memory, request.rate, o, evidence, states)
            metrics = operator_metrics(query, base, m, o.busy)
            evidence.runs[-1]["metrics"] = metrics.to_dict()
            evidence.final, evidence.final_memory = config.as_dict(), memory
            keeps_up = bool(loop.keeps_up(m, o))
            log(f"step {k + 1}: {config.slots} slots, {total_memory_mb(config.as_dict(), memory, base):,} MB -> "
                f"{m.achieved_rate:,.0f} of {request.rate:,.0f} events/s{'' if keeps_up else ' (behind)'}")
            if keeps_up:
                evidence.converged, evidence.stop_reason = True, "the job keeps up without back-pressure"
                break
            proposed = loop.next_configuration(query, config, metrics, request.rate, o).as_dict()
            measured = {op: replace(s, hit_rate=m.operator(op).cache_hit_rate,
                                    latency_ms=m.operator(op).state_latency_ms) for op, s in states.items()}
            nxt = justin_step(measured, proposed, j.max_level, j.hit_rate, j.latency_ms, j.improvement, previous)
            if all(nxt[op].parallelism == s.parallelism and nxt[op].level == s.level for op, s in states.items()):
                evidence.stop_reason = "the rule proposes the same configuration and memory, and the job does not keep up"
                break
            previous, states = measured, nxt
        else:
            evidence.stop_reason = f"no stable configuration within {o.max_steps} runs"
        return evidence

    def _run(self, testbed: Testbed, query: Query, config: Configuration, base: int, memory: Mapping[str, int],
             rate: float, o: LoopOptions, evidence: JustinEvidence, states: Mapping[str, OperatorState]) -> Measurement:
        """Run ``config`` with each operator's memory at ``rate``: stabilize, observe one window, stop.
        A window the testbed could not measure (a restart) is observed once more."""
        own = tuple((op, mb) for op, mb in memory.items() if mb != base)
        m, seconds = observe_once(testbed, query, config, Budget(config.slots, base, own), rate, o)
        evidence.testbed_seconds += seconds
        evidence.runs.append({"configuration": config.as_dict(), "memory_by_operator": dict(memory),
                              "levels": {op: s.level for op, s in states.items()},
                              "scaled_up": {op: s.scaled_up for op, s in states.items()},
                              "measurement": m.to_dict(), "testbed_seconds": seconds})
        return m

    def plan(self, evidence: JustinEvidence, request: PlanningRequest) -> Sizing:
        base = evidence.base_memory
        steps = tuple(Step(slots=sum(r["configuration"].values()), memory_mb=max(r["memory_by_operator"].values()),
                           configuration=r["configuration"], rate=r["measurement"]["achieved_rate"],
                           testbed_seconds=r["testbed_seconds"],
                           note=f"memory {', '.join(f'{op} {mb}' for op, mb in r['memory_by_operator'].items() if mb != base) or 'base'}")
                      for r in evidence.runs)
        notes = [f"{len(evidence.runs)} run(s), {evidence.scale_ups} memory scale-up(s); stopped: {evidence.stop_reason}",
                 f"stateless operators at {base} MB (Justin strips their managed memory; whole slots here)"]
        common = dict(method=self.name, query=request.query, rate=request.rate, testbed_seconds=evidence.testbed_seconds,
                      measurements=len(evidence.runs), steps=steps, detail=evidence.to_dict())
        if evidence.final is None or evidence.final_memory is None:
            return Sizing(slots=None, memory_mb=None, configuration=None, unreachable=evidence.stop_reason or
                          "the loop ran no configuration", notes=tuple(notes), **common)
        configuration, memory = dict(evidence.final), dict(evidence.final_memory)
        if not math.isclose(request.rate, evidence.rate, rel_tol=1e-9):
            last = evidence.runs[-1]
            metrics = SingleTaskMetrics.from_dict(last["metrics"])
            o = evidence.options
            catch = catch_up_factor(*o.catch_up) if o.catch_up else 1.0
            configuration = ds2(metrics, scaling_target(request.rate, o.utilization, catch))
            notes.append(f"for {request.rate:,.0f} events/s: DS2's rule on the last run's rates at its memories (the "
                         f"loop ran at {evidence.rate:,.0f}); not run")
        elif not evidence.converged:
            notes.append("the configuration running when the loop stopped; it did not keep up")
        return Sizing(slots=sum(configuration.values()), memory_mb=max(memory.values()), configuration=configuration,
                      memory_by_operator=memory, notes=tuple(notes), **common)

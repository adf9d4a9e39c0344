"""DS2's scaling loop (Kalavri et al., OSDI'18; recapped in the Justin paper, section 4) and the Flink
Kubernetes operator autoscaler built on it, as planners.

DS2 runs the job at the target rate, reads each operator's true processing rate (records a task takes
in per second of busy time), gives every operator the parallelism its share of the target needs at
that rate (policies/ds2.py:ds2, the one-pass rule), reconfigures, and repeats until no operator is
back-pressured. The autoscaler adds a utilization target and band, catch-up headroom, detection of
scale-ups that did not help, alignment of parallelism to key groups or partitions, and limits on how
far one step may move. Each addition is an option here, and each formula a small function below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from .. import checks
from ..errors import TestbedError, UserError
from ..model import Budget, Configuration, Measurement, Query, SingleTaskMetrics, keygroups
from ..model.catchup import catch_up_factor, parse_catch_up  # shared with StreamBed's plans (plan --catch-up)
from .policies.ds2 import ds2
from ..testbed.base import Testbed
from .base import Log, PlanningRequest, Sizing, Step, silent

# -- formulas ------------------------------------------------------------------------------------


def scaling_target(rate: float, utilization: float = 1.0, catch_up: float = 1.0) -> float:
    """The source rate to size every operator for: the rate with its catch-up headroom, at the target
    utilization (a task sized for utilization u processes the rate in u of its time)."""
    return rate * catch_up / utilization


def utilization(required: float, capacity: float) -> float:
    """Share of an operator's capacity (records/s at full busyness) the required records/s take."""
    return math.inf if capacity <= 0 else required / capacity


def within_band(required: float, capacity: float, target: float, boundary: float) -> bool:
    """Whether the operator's utilization lies in [target - boundary, target + boundary]: the
    autoscaler leaves such an operator as it is (load fluctuations do not rescale it)."""
    u = utilization(required, capacity)
    return target - boundary <= u <= target + boundary


def aligned(parallelism: int, divisible: int) -> int:
    """The smallest divisor of ``divisible`` (key groups, or the source's partitions) at least
    ``parallelism``, so that every task owns as many groups; the parallelism unchanged when no divisor
    up to half of ``divisible`` reaches it (the next divisor would be all of them: a jump the load does
    not ask for)."""
    for p in range(parallelism, divisible // 2 + 1):
        if divisible % p == 0:
            return p
    return parallelism


def scale_up_effective(before: int, capacity_before: float, after: int, capacity_after: float,
                       threshold: float) -> bool:
    """Whether a scale-up from ``before`` to ``after`` tasks gained at least ``threshold`` of the
    capacity it was expected to add (linear in tasks): a scale-up that did not is not repeated."""
    expected = capacity_before * (after / before - 1.0)
    if expected <= 0:
        return True
    return capacity_after - capacity_before >= threshold * expected


def bounded_scale_down(current: int, proposed: int, max_factor: float) -> int:
    """The proposed parallelism, but no lower than ``current`` x (1 - max_factor): one step scales an
    operator down by at most that share."""
    return max(proposed, math.ceil(current * (1.0 - max_factor) - 1e-9), 1)


# -- options -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoopOptions:
    """What the loop does on top of DS2's rule (each a key of PlanningRequest.options)."""

    utilization: float = 1.0
    boundary: float | None = None
    catch_up: tuple[float, float] | None = None
    effectiveness: float | None = None
    align_key_groups: bool = False
    partitions: int | None = None
    max_parallelism: int | None = None
    scale_down_max_factor: float | None = None
    busy: str = "avg"
    max_steps: int = 10
    warmup_s: float = 60.0
    window_s: float = 120.0
    initial: Mapping[str, int] | None = None
    memory_tolerance: float = 0.10
    sustained_share: float = 0.99
    backpressure: float | None = 0.10

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["initial"] = dict(self.initial) if self.initial is not None else None
        d["catch_up"] = list(self.catch_up) if self.catch_up is not None else None
        return d


def _option(name: str, value: Any) -> Any:
    """One option's value in its type (checks.Invalid when it is not)."""
    if name in ("utilization", "sustained_share"):
        return checks.number(value, minimum=0.0, strict=True, maximum=1.0)
    if name in ("boundary", "effectiveness", "scale_down_max_factor", "memory_tolerance", "backpressure"):
        return None if value is None else checks.number(value, minimum=0.0, maximum=1.0)
    if name == "catch_up":
        return None if value is None else parse_catch_up(value)
    if name == "align_key_groups":
        return checks.boolean(value)
    if name in ("partitions", "max_parallelism"):
        return None if value is None else checks.integer(value)
    if name == "max_steps":
        return checks.integer(value)
    if name in ("warmup_s", "window_s"):
        return checks.number(value, minimum=0.0, strict=name == "window_s", unit="seconds")
    if name == "busy":
        if value not in ("avg", "max"):
            raise checks.Invalid(f"expected avg or max, got {value!r:.40}")
        return value
    if name == "initial":
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise checks.Invalid(f"expected operator=parallelism pairs, got {value!r:.60}")
        return {checks.name(k): checks.integer(v) for k, v in value.items()}
    raise KeyError(name)


def loop_options(given: Mapping[str, Any], defaults: LoopOptions, method: str) -> LoopOptions:
    """``defaults`` with the options ``given`` (PlanningRequest.options); an unknown or bad one is one
    line naming it."""
    known = {f.name for f in fields(LoopOptions)}
    values = {}
    for key, value in given.items():
        if key not in known:
            raise UserError(f"options: {method} has no option {key!r} (expected one of {', '.join(sorted(known))})")
        try:
            values[key] = _option(key, value)
        except checks.Invalid as e:
            raise UserError(f"options: {method} option {key}: {e}") from None
    return replace(defaults, **values)


# -- the loop ------------------------------------------------------------------------------------


@dataclass
class Ds2Evidence:
    """What the loop saw: every run (configuration, measurement) and where it stopped."""

    query: str
    rate: float
    memory_mb: int
    options: LoopOptions
    runs: list[dict] = field(default_factory=list)
    """Per run: phase (probe or step), configuration, memory_mb, measurement, testbed seconds, note."""
    final: dict[str, int] | None = None
    converged: bool = False
    stop_reason: str = ""
    testbed_seconds: float = 0.0
    blocked: list[str] = field(default_factory=list)
    """Operators whose scale-up did not help: not scaled up again."""
    max_parallelism: int | None = None

    @property
    def reconfigurations(self) -> int:
        """Scaling steps: the configurations the loop moved to after its first."""
        return max(0, sum(1 for r in self.runs if r["phase"] == "step") - 1)

    def to_dict(self) -> dict:
        return {"query": self.query, "rate": self.rate, "memory_mb": self.memory_mb, "options": self.options.to_dict(),
                "runs": self.runs, "final": self.final, "converged": self.converged, "stop_reason": self.stop_reason,
                "reconfigurations": self.reconfigurations, "testbed_seconds": self.testbed_seconds,
                "blocked": self.blocked, "max_parallelism": self.max_parallelism}


def operator_metrics(query: Query, memory_mb: int, m: Measurement, busy: str) -> SingleTaskMetrics:
    """DS2's true processing rates and input ratios of a window (SingleTaskMetrics.from_measurement),
    with each operator's busyness its tasks' mean (DS2) or its busiest task's (``max``: the autoscaler's
    default aggregator, which sizes a skewed operator for its most loaded task)."""
    if busy == "max":
        m = replace(m, operators=tuple(replace(om, busyness=om.busyness_max) for om in m.operators))
    return SingleTaskMetrics.from_measurement(query, memory_mb, m)


def keyed_limit(query: Query, operator: str, parallelism: int) -> int | None:
    """The key groups a keyed operator at ``parallelism`` owns (None: not keyed)."""
    if operator not in query.keyed:
        return None
    return keygroups.max_parallelism(parallelism, query.max_parallelism)


def observe_once(testbed: Testbed, query: Query, config: Configuration, budget: Budget, rate: float,
                 o: LoopOptions) -> tuple[Measurement, float]:
    """Run ``config`` on ``budget`` at ``rate``: stabilize, observe one window, stop; the window and the
    testbed seconds it took. A window the testbed could not measure (a restart) is observed once more."""
    t0 = testbed.now()
    testbed.prepare(budget)
    run = testbed.start(query.name, config, rate)
    try:
        testbed.wait(run, max(o.warmup_s, query.state_span_s))
        try:
            m = testbed.observe(run, o.window_s)
        except TestbedError:
            m = testbed.observe(run, o.window_s)
    finally:
        testbed.stop(run)
    return m, testbed.now() - t0


class Ds2Loop:
    """DS2's scaling loop as a planner: ``explore`` runs it at the target rate, ``plan`` reports where it
    stopped.

    Options (PlanningRequest.options; defaults DS2's own, ``Autoscaler`` below sets Flink's):

    * ``utilization`` (1.0): size each operator so that the target takes this share of its capacity.
    * ``boundary`` (None): leave an operator whose utilization lies within utilization +- boundary
      (the autoscaler's band); None: DS2's trigger, rescale all until the job keeps up without
      back-pressure.
    * ``catch_up`` (None): 'B/T', for example '300s/1800s': size for rate x (1 + B/T), so a backlog of
      B seconds drains within T.
    * ``effectiveness`` (None): a scale-up that gained less than this share of the capacity it was
      expected to add blocks further scale-ups of that operator; None: no detection.
    * ``align_key_groups`` (false): round a keyed operator's parallelism up to a divisor of its key
      groups (max parallelism), and, with ``partitions``, the operators reading the source up to a
      divisor of the source's partitions.
    * ``partitions`` (None): the source topic's partitions.
    * ``max_parallelism`` (None): the most tasks the loop gives one operator.
    * ``scale_down_max_factor`` (None): one step lowers an operator's parallelism by at most this share.
    * ``busy`` ('avg'): the operator's busyness is its tasks' mean (DS2) or its busiest task's ('max').
    * ``max_steps`` (10; ``request.max_measurements`` when given): runs of the loop at most.
    * ``warmup_s`` (60), ``window_s`` (120): each run's stabilization and metrics window (the Justin
      paper's DS2 settings: 1-minute stabilization, 2-minute decision windows), seconds.
    * ``initial`` (None): the first configuration (operator -> parallelism); None: one task each.
    * ``memory_tolerance`` (0.10): without ``request.memories``, the memory per slot is the smallest the
      testbed offers whose true rates in the first configuration are within this share of those at the
      largest (the state fits): the loop probes the memories first.
    * ``sustained_share`` (0.99), ``backpressure`` (0.10): the job keeps up when its source emits this
      share of the rate and no operator is back-pressured more than this share of the time (None: the
      source alone says; the autoscaler decides on busy time and rates, never on back-pressure).
    """

    name = "ds2"
    defaults = LoopOptions()

    def options(self, request: PlanningRequest) -> LoopOptions:
        o = loop_options(request.options, self.defaults, self.name)
        if request.max_measurements is not None:
            o = replace(o, max_steps=request.max_measurements)
        return o

    # -- explore -----------------------------------------------------------------------------

    def explore(self, testbed: Testbed, request: PlanningRequest, log: Log = silent) -> Ds2Evidence:
        o = self.options(request)
        if not (request.rate > 0 and math.isfinite(request.rate)):
            raise UserError(f"rate: expected a positive number of events/s, got {request.rate}")
        query, info = testbed.query(request.query), testbed.info()
        start = Configuration.of(query, o.initial, query.max_parallelism) if o.initial is not None \
            else Configuration.single_task(query)
        evidence = Ds2Evidence(query.name, request.rate, 0, o, max_parallelism=query.max_parallelism)
        probed: dict[int, Measurement] = {}
        if request.memories:
            info.check_memory(request.memories[0], "memories")
            evidence.memory_mb = request.memories[0]
        else:
            evidence.memory_mb = self._probe_memory(testbed, query, start, request.rate, o, evidence, probed, log)
        config, previous = start, None
        for k in range(o.max_steps):
            if config.slots > info.max_slots:
                evidence.stop_reason = (f"the next configuration needs {config.slots} slots; the testbed offers "
                                        f"{info.max_slots}")
                break
            if k == 0 and evidence.memory_mb in probed:  # the probe ran the first step already
                m = probed[evidence.memory_mb]
                run = next(r for r in evidence.runs if r["phase"] == "probe" and r["memory_mb"] == evidence.memory_mb)
                run["phase"], run["note"] = "step", run["note"] + "; the loop's first step"
                evidence.runs.remove(run)
                evidence.runs.append(run)
            else:
                m = self._run(testbed, query, config, evidence.memory_mb, request.rate, o, evidence, "step")
            metrics = operator_metrics(query, evidence.memory_mb, m, o.busy)
            evidence.runs[-1]["metrics"] = metrics.to_dict()
            keeps_up = bool(self.keeps_up(m, o))  # a numpy bool from a testbed's numbers is not JSON
            evidence.final = config.as_dict()
            if previous is not None:
                self._detect_ineffective(previous, config, metrics, o, evidence)
            log(f"step {k + 1}: {config.slots} slots x {evidence.memory_mb} MB -> {m.achieved_rate:,.0f} of "
                f"{request.rate:,.0f} events/s{'' if keeps_up else ' (behind)'}")
            nxt = self.next_configuration(query, config, metrics, request.rate, o, evidence.blocked)
            if o.boundary is None and keeps_up:
                evidence.converged, evidence.stop_reason = True, "the job keeps up without back-pressure"
                break
            if nxt == config:
                evidence.converged = keeps_up
                evidence.stop_reason = ("every operator within the utilization band" if keeps_up else
                                        "the rule proposes the same configuration, and the job does not keep up")
                break
            previous, config = (config, metrics), nxt
        else:
            evidence.stop_reason = f"no stable configuration within {o.max_steps} runs"
        return evidence

    @staticmethod
    def keeps_up(m: Measurement, o: LoopOptions) -> bool:
        """DS2's trigger does not fire: the source emits the rate and nothing is back-pressured."""
        return m.sustained(o.sustained_share) and (
            o.backpressure is None or all(om.backpressure <= o.backpressure for om in m.operators))

    def next_configuration(self, query: Query, config: Configuration, metrics: SingleTaskMetrics, rate: float,
                           o: LoopOptions, blocked: list[str] = ()) -> Configuration:
        """DS2's rule for the next configuration, with the options' additions."""
        catch = catch_up_factor(*o.catch_up) if o.catch_up else 1.0
        proposed = ds2(metrics, scaling_target(rate, o.utilization, catch))
        rates = dict(metrics.operators)
        feeds_source = {op for op in query.operators if query.inputs(op) == ("source",)}
        out = {}
        for op in query.operators:
            current, p = config[op], proposed[op]
            if o.boundary is not None:
                r = rates[op]
                required = rate * catch * r.input_ratio
                if within_band(required, current * r.true_rate, o.utilization, o.boundary):
                    p = current
            if op in blocked and p > current:
                p = current
            if o.scale_down_max_factor is not None and p < current:
                p = bounded_scale_down(current, p, o.scale_down_max_factor)
            if o.max_parallelism is not None:
                p = min(p, o.max_parallelism)
            if o.align_key_groups and p != current:
                groups = keyed_limit(query, op, p)
                if groups is not None:
                    p = aligned(p, groups)
                elif o.partitions is not None and op in feeds_source:
                    p = aligned(p, o.partitions)
            groups = keyed_limit(query, op, p)
            out[op] = min(p, keygroups.parallelism_limit(query.max_parallelism)) if groups is not None else p
        return Configuration.of(query, out, config.max_parallelism)

    def _detect_ineffective(self, previous, config: Configuration, metrics: SingleTaskMetrics, o: LoopOptions,
                            evidence: Ds2Evidence) -> None:
        if o.effectiveness is None:
            return
        before_config, before = previous
        old, new = dict(before.operators), dict(metrics.operators)
        for op in config.as_dict():
            a, b = before_config[op], config[op]
            if b > a and op not in evidence.blocked and not scale_up_effective(
                    a, a * old[op].true_rate, b, b * new[op].true_rate, o.effectiveness):
                evidence.blocked.append(op)

    def _run(self, testbed: Testbed, query: Query, config: Configuration, memory_mb: int, rate: float,
             o: LoopOptions, evidence: Ds2Evidence, phase: str, note: str = "") -> Measurement:
        """Run ``config`` at ``rate``: stabilize, observe one window, stop; recorded in the evidence.
        A window the testbed could not measure (a restart) is observed once more."""
        m, seconds = observe_once(testbed, query, config, Budget(config.slots, memory_mb), rate, o)
        evidence.testbed_seconds += seconds
        evidence.runs.append({"phase": phase, "configuration": config.as_dict(), "memory_mb": memory_mb,
                              "measurement": m.to_dict(), "testbed_seconds": seconds, "note": note})
        return m

    def _probe_memory(self, testbed: Testbed, query: Query, config: Configuration, rate: float, o: LoopOptions,
                      evidence: Ds2Evidence, probed: dict[int, Measurement], log: Log) -> int:
        """The smallest memory per slot whose true rates, in ``config`` at ``rate``, are all within the
        tolerance of those at the largest memory the testbed offers (the state fits)."""
        offered = sorted(testbed.info().memory_per_slot)
        largest = offered[-1]
        if len(offered) == 1:
            return largest
        if config.slots > testbed.info().max_slots:
            return largest

        def rates(memory: int) -> dict[str, float]:
            m = probed[memory] = self._run(testbed, query, config, memory, rate, o, evidence, "probe",
                                           f"memory probe at {memory} MB")
            return {n: r.true_rate for n, r in operator_metrics(query, memory, m, o.busy).operators}

        reference = rates(largest)
        for memory in offered[:-1]:
            got = rates(memory)
            if all(got[n] >= (1.0 - o.memory_tolerance) * reference[n] for n in reference):
                log(f"memory per slot: {memory} MB (true rates within {o.memory_tolerance:.0%} of {largest} MB)")
                return memory
        return largest

    # -- plan --------------------------------------------------------------------------------

    def plan(self, evidence: Ds2Evidence, request: PlanningRequest) -> Sizing:
        steps = tuple(Step(slots=sum(r["configuration"].values()), memory_mb=r["memory_mb"],
                           configuration=r["configuration"], rate=r["measurement"]["achieved_rate"],
                           testbed_seconds=r["testbed_seconds"],
                           note=r["note"] or f"{r['phase']}: ran at {r['measurement']['target_rate']:,.0f} events/s")
                      for r in evidence.runs)
        notes = [f"{evidence.reconfigurations} reconfiguration(s); stopped: {evidence.stop_reason}"]
        detail = evidence.to_dict()
        common = dict(method=self.name, query=request.query, rate=request.rate, testbed_seconds=evidence.testbed_seconds,
                      measurements=len(evidence.runs), steps=steps, detail=detail)
        if evidence.final is None:
            return Sizing(slots=None, memory_mb=None, configuration=None, unreachable=evidence.stop_reason or
                          "the loop ran no configuration", notes=tuple(notes), **common)
        configuration = dict(evidence.final)
        if not math.isclose(request.rate, evidence.rate, rel_tol=1e-9):
            configuration = self._one_pass(evidence, request.rate)
            notes.append(f"for {request.rate:,.0f} events/s: DS2's rule on the last run's rates (the loop ran at "
                         f"{evidence.rate:,.0f}); not run")
        elif not evidence.converged:
            notes.append("the configuration running when the loop stopped; it did not keep up")
        return Sizing(slots=sum(configuration.values()), memory_mb=evidence.memory_mb, configuration=configuration,
                      notes=tuple(notes), **common)

    def _one_pass(self, evidence: Ds2Evidence, rate: float) -> dict[str, int]:
        o = evidence.options
        last = next(r for r in reversed(evidence.runs) if r["phase"] == "step")
        metrics = SingleTaskMetrics.from_dict(last["metrics"])
        catch = catch_up_factor(*o.catch_up) if o.catch_up else 1.0
        return ds2(metrics, scaling_target(rate, o.utilization, catch))


class Autoscaler(Ds2Loop):
    """The Flink Kubernetes operator's autoscaler: DS2's loop with the operator's default options
    (flink-kubernetes-operator, docs/layouts/shortcodes/generated/auto_scaler_configuration.html):
    job.autoscaler.target.utilization 0.7 and .boundary 0.3; catch-up of job.autoscaler.restart.time
    (5 min) of backlog within job.autoscaler.catch-up.duration (30 min); busy time aggregated by MAX
    (metrics.busy-time.aggregator); vertex.max-parallelism 200; scale-down.max-factor 0.6;
    stabilization.interval 5 min and metrics.window 15 min per run; parallelism aligned to key groups.
    Detection of ineffective scale-ups is off by default there (scaling.effectiveness.detection.enabled
    false; its threshold 0.1 when enabled: ``effectiveness=0.1``)."""

    name = "autoscaler"
    defaults = LoopOptions(utilization=0.7, boundary=0.3, catch_up=(300.0, 1800.0), busy="max",
                           max_parallelism=200, scale_down_max_factor=0.6, align_key_groups=True,
                           warmup_s=300.0, window_s=900.0, backpressure=None)

"""What a testbed measures and what the planner derives from it.

A *measurement* is one observation window (paper section IV); *single-task metrics* are BIDS2's input
(section V, Table I): per operator, the true processing rate of one task and its input rate relative
to the source; an *observation* is one point (memory per slot, slots, MST) of the Resource
Explorer's data set D (section VI).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping

from ..errors import UserError
from .keyskew import KeySkew
from .query import Query
from .stalls import Stall

BUSYNESS_FLOOR = 0.01
"""Lowest busyness used to compute a true rate: below it the measurement says little."""


@dataclass(frozen=True)
class OperatorMetrics:
    """One operator over one observation window, aggregated from its tasks' samples."""

    operator: str
    parallelism: int
    input_rate: float
    """Records per second into the operator, summed over its tasks."""
    output_rate: float
    busyness: float
    """Mean over tasks of the fraction of time spent processing (busyTimeMsPerSecond / 1000)."""
    busyness_max: float
    """Busiest task's mean busyness: a keyed operator is limited by its most loaded task."""
    backpressure: float
    """Mean over tasks of the fraction of time back-pressured."""
    task_busyness: tuple[float, ...] = ()
    task_input: tuple[float, ...] = ()
    """Records per second into each task: they follow the keys alone (not the tasks' speed), so a
    keyed operator's key concentration is read from them (model/keyskew.py); empty where a ledger
    predates them."""
    offered_rate: float | None = None
    """Records per second its inputs sent it (metrics/window.with_offered); what it did not take in
    piled up in the buffers in front of it (queued_share). None where the testbed or an older
    ledger does not say."""
    cache_hit_rate: float | None = None
    """Share of the operator's state reads served from memory, mean over its tasks. Flink's source:
    RocksDB's block-cache counters, ``state.backend.rocksdb.metrics.block-cache-hit`` and
    ``...block-cache-miss`` (hit / (hit + miss)), reported only by a job on the RocksDB state backend
    with those metrics enabled; the simulated testbed derives it from its state model (the share of
    the working set that fits the task's state memory). None: stateless, or not reported (the Flink
    testbed does not read these metrics)."""
    state_latency_ms: float | None = None
    """Mean time a record spends on state reads that miss memory, ms. Flink's source: keyed-state
    latency tracking (``state.latency-track.keyed-state-enabled``: per-state get/put latency
    histograms); the sim's, its memory law. None: stateless, or not reported."""

    def to_dict(self) -> dict:
        return {
            "operator": self.operator,
            "parallelism": self.parallelism,
            "input_rate": self.input_rate,
            "output_rate": self.output_rate,
            "busyness": self.busyness,
            "busyness_max": self.busyness_max,
            "backpressure": self.backpressure,
            "task_busyness": list(self.task_busyness),
            "task_input": list(self.task_input),
            "offered_rate": self.offered_rate,
            **({"cache_hit_rate": self.cache_hit_rate} if self.cache_hit_rate is not None else {}),
            **({"state_latency_ms": self.state_latency_ms} if self.state_latency_ms is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> "OperatorMetrics":
        return cls(
            operator=d["operator"],
            parallelism=int(d["parallelism"]),
            input_rate=float(d["input_rate"]),
            output_rate=float(d["output_rate"]),
            busyness=float(d["busyness"]),
            busyness_max=float(d["busyness_max"]),
            backpressure=float(d["backpressure"]),
            task_busyness=tuple(float(x) for x in d.get("task_busyness", ())),
            task_input=tuple(float(x) for x in d.get("task_input", ())),
            offered_rate=None if d.get("offered_rate") is None else float(d["offered_rate"]),
            cache_hit_rate=None if d.get("cache_hit_rate") is None else float(d["cache_hit_rate"]),
            state_latency_ms=None if d.get("state_latency_ms") is None else float(d["state_latency_ms"]),
        )


@dataclass(frozen=True)
class CpuContention:
    """How short of CPU the testbed was during a window: what its CPU groups (one per TaskManager,
    each held to a quota) wanted and did not get, and the host's CPU pressure.

    A slot's quota is a ceiling; on a shared host the slots can also get less than it, and then the
    window measures the host's load, not the job (docs/flink-testbed.md, "Measurements that know
    they were disturbed")."""

    seconds: float
    """Length of the window the reading covers."""
    shortfall: float
    """Cores the groups waited for and did not get, summed over the groups (each at most its quota
    less what it used)."""
    quota: float
    """Cores the groups may use, summed (their quotas)."""
    groups: int
    """Groups read."""
    pressure: float | None = None
    """Share of the window in which some task of the host waited for a CPU (``/proc/pressure/cpu``
    "some"); None where the kernel does not report it."""
    throttled: float = 0.0
    """Mean over the groups of the share of their CFS periods in which they used up their quota."""

    @property
    def shortfall_share(self) -> float:
        """The groups' shortfall as a share of their quota (0 without groups)."""
        return self.shortfall / self.quota if self.quota > 0 else 0.0

    def to_dict(self) -> dict:
        return {"seconds": self.seconds, "shortfall": self.shortfall, "quota": self.quota, "groups": self.groups,
                "pressure": self.pressure, "throttled": self.throttled}

    @classmethod
    def from_dict(cls, d: Mapping) -> "CpuContention":
        return cls(seconds=float(d["seconds"]), shortfall=float(d["shortfall"]), quota=float(d["quota"]),
                   groups=int(d["groups"]), pressure=None if d.get("pressure") is None else float(d["pressure"]),
                   throttled=float(d.get("throttled", 0.0)))


@dataclass(frozen=True)
class Measurement:
    """One observation window (paper section IV): what the source achieved against its target,
    how pending records evolved, and per-operator busyness and rates."""

    target_rate: float
    achieved_rate: float
    pending_start: float
    pending_end: float
    pending_slope: float
    """Least-squares slope of pending records over the window, records per second."""
    achieved_cv: float
    """Coefficient of variation of the per-sample achieved rate: instability shows here first."""
    start: float
    end: float
    operators: tuple[OperatorMetrics, ...] = ()
    source_saturated: bool = False
    """True when the source's own capacity, not the job, limited emission: such a window says
    nothing about the job's capacity and must never be read as one."""
    cpu: CpuContention | None = None
    """How short of CPU the testbed was during the window; None where the testbed does not read it."""
    discarded: tuple["Measurement", ...] = ()
    """Windows observed before this one in its place and discarded, the host being short of CPU
    (each with its ``cpu`` reading): the testbed observed again instead."""

    @property
    def ratio(self) -> float:
        return self.achieved_rate / self.target_rate if self.target_rate > 0 else math.nan

    def sustained(self, threshold: float = 0.99) -> bool:
        """Success rule of the Capacity Estimator: achieved >= threshold x target (section IV)."""
        return self.target_rate > 0 and self.achieved_rate >= threshold * self.target_rate

    @property
    def shortfall(self) -> float:
        """Share of the offered events the source could not emit in this window (its pending records
        grew by as much): 0 for a job that kept up, and never negative."""
        return max(0.0, 1.0 - self.ratio) if self.target_rate > 0 else 1.0

    def then(self, later: "Measurement") -> "Measurement":
        """This window and ``later``, which follows it directly at the same target rate, as one window:
        rates and busyness are time-weighted means, pending records run from this start to that end."""
        a, b = self.end - self.start, later.end - later.start
        if a <= 0 or b <= 0:
            raise ValueError("windows to join must have a positive length")
        w = a / (a + b)

        def mean(x: float, y: float) -> float:
            return w * x + (1 - w) * y

        ops = []
        for om in self.operators:
            lo = later.operator(om.operator)
            tasks = tuple(mean(x, y) for x, y in zip(om.task_busyness, lo.task_busyness))
            ops.append(replace(
                om, input_rate=mean(om.input_rate, lo.input_rate), output_rate=mean(om.output_rate, lo.output_rate),
                busyness=mean(om.busyness, lo.busyness), backpressure=mean(om.backpressure, lo.backpressure),
                busyness_max=max(tasks) if tasks else mean(om.busyness_max, lo.busyness_max), task_busyness=tasks,
                task_input=tuple(mean(x, y) for x, y in zip(om.task_input, lo.task_input)),
                offered_rate=None if om.offered_rate is None or lo.offered_rate is None
                else mean(om.offered_rate, lo.offered_rate)))
        return Measurement(
            target_rate=mean(self.target_rate, later.target_rate),
            achieved_rate=mean(self.achieved_rate, later.achieved_rate),
            pending_start=self.pending_start, pending_end=later.pending_end,
            pending_slope=mean(self.pending_slope, later.pending_slope),
            achieved_cv=max(self.achieved_cv, later.achieved_cv),
            # as long as both (a resumed campaign measures ``later`` on another job and clock)
            start=self.start, end=self.start + a + b,
            operators=tuple(ops), source_saturated=self.source_saturated or later.source_saturated,
            cpu=_worse(self.cpu, later.cpu), discarded=self.discarded + later.discarded)

    def operator(self, name: str) -> OperatorMetrics:
        for m in self.operators:
            if m.operator == name:
                return m
        raise KeyError(name)

    def to_dict(self) -> dict:
        d = {
            "target_rate": self.target_rate,
            "achieved_rate": self.achieved_rate,
            "ratio": self.ratio,
            "pending_start": self.pending_start,
            "pending_end": self.pending_end,
            "pending_slope": self.pending_slope,
            "achieved_cv": self.achieved_cv,
            "start": self.start,
            "end": self.end,
            "source_saturated": self.source_saturated,
            "operators": [m.to_dict() for m in self.operators],
        }
        # only when present: a window without them is recorded exactly as before (ledger checksums)
        if self.cpu is not None:
            d["cpu"] = self.cpu.to_dict()
        if self.discarded:
            d["discarded"] = [m.to_dict() for m in self.discarded]
        return d

    @classmethod
    def from_dict(cls, d: Mapping) -> "Measurement":
        return cls(
            target_rate=float(d["target_rate"]),
            achieved_rate=float(d["achieved_rate"]),
            pending_start=float(d["pending_start"]),
            pending_end=float(d["pending_end"]),
            pending_slope=float(d["pending_slope"]),
            achieved_cv=float(d["achieved_cv"]),
            start=float(d["start"]),
            end=float(d["end"]),
            source_saturated=bool(d.get("source_saturated", False)),
            operators=tuple(OperatorMetrics.from_dict(m) for m in d.get("operators", ())),
            cpu=CpuContention.from_dict(d["cpu"]) if d.get("cpu") is not None else None,
            discarded=tuple(Measurement.from_dict(m) for m in d.get("discarded", ())),
        )


def _worse(a: CpuContention | None, b: CpuContention | None) -> CpuContention | None:
    """Of two windows' CPU readings, the one whose groups were shorter of CPU."""
    if a is None or b is None:
        return a or b
    return a if a.shortfall_share >= b.shortfall_share else b


QUEUED_BUSY = 0.9
"""An operator whose busiest task was at least this busy over a window can be queueing its input;
below it a short intake is the counters' timing, not a queue (on 0.12-core slots an idle Sink read
3.8 % short of its upstream's output, docs/flink-testbed.md)."""
QUEUED_IDLE = 0.25
"""An operator, busy or not, that left this share of the job's flow untaken (of what it was sent, or of
the events the source emitted, whichever is more) is queueing: only buffers hold a quarter. On the
sim, a map in front of a join's hot-key task, itself idle, took in 24 % of the 218,000 records/s the
source sent it while its 739 tasks' buffers held the rest for a whole window: the 2,000-slot run's MST
read 4 x its truth (a generated profile's, 2026-11-27). Against the operator's own offer alone, a
trickle's shortfall is its timing: operators behind a straggling window, at a few records/s, read a
third short while a firing's burst was in flight. On the local Flink testbed an operator below
QUEUED_BUSY left at most 11.8 % of the job's flow untaken in 44 windows of q11's plans and estimates
(bench/experiments/queue_gaps.py). Below a quarter an idle operator's queue still passes: an MST read
up to 1 / 0.75 x high where only it shows one."""


def queued_share(m: Measurement) -> float:
    """The largest share of what its inputs sent an operator during the window that piled up in front
    of it instead: (offered - taken in) / offered, over the operators whose offer the testbed measured
    (OperatorMetrics.offered_rate) and whose busiest task was busy (QUEUED_BUSY), or, busy or not,
    that left QUEUED_IDLE of the job's flow untaken.

    The paper's MST admits "no piling up of unprocessed records between the Source operator and the
    rest of the job" (section IV). The source's pending records show a pile-up only once the buffers
    between the source and the slow operator are full; until then those buffers take it in. On 0.12-core
    slots they took a 5-30 % shortfall of q11's window aggregate for a whole 6-s window, with the
    aggregate busy and the source keeping up (docs/flink-testbed.md). 0 where no operator was busy
    or nothing was offered."""
    worst = 0.0
    for om in m.operators:
        if not om.offered_rate:
            continue
        left = om.offered_rate - om.input_rate
        if om.busyness_max >= QUEUED_BUSY or left >= QUEUED_IDLE * max(om.offered_rate, m.achieved_rate):
            worst = max(worst, left / om.offered_rate)
    return worst


@dataclass(frozen=True)
class OperatorRates:
    true_rate: float
    """o_i: records/s one task processes when fully busy."""
    input_ratio: float
    """r_i: records into the operator per source event."""
    keyed: bool = False
    """Its input is partitioned by key: its tasks follow Flink's key-group rule (model/keygroups.py)."""
    imbalance: float = 1.0
    """The busiest task's load over the mean task's (busyness max / mean) in the run the metrics come
    from; 1 for a single task."""
    measured_parallelism: int = 1
    """The operator's parallelism in that run."""
    input_imbalance: float = 1.0
    """The busiest task's input records over the mean task's in that run (1 where not measured): the
    part of ``imbalance`` the data explains; the rest is the tasks' speed."""
    key_skew: KeySkew | None = None
    """A keyed operator's key concentration, pooled over the runs measured (model/keyskew.py); None:
    unknown, and the measured imbalance is carried unchanged."""
    stall: Stall | None = None
    """Where its pauses, not its busy time, held the testbed's largest budget (model/stalls.py): the source
    rate its tasks then hold the job to, at any parallelism (the default policy, policies/skew.py, sizes by
    it; the paper's BIDS2 and DS2 read busy time alone); None: no such bound seen."""
    memo: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    """Answers of pure functions of these rates, by argument (policies/skew.busiest_share: a plan asks
    for the same parallelism thousands of times, every budget's configuration bisecting on the rate and
    every rate on the parallelism)."""


def input_imbalance(om: OperatorMetrics) -> float:
    """The busiest task's input records over the mean task's (1 for one task or none recorded)."""
    x = om.task_input
    if om.parallelism <= 1 or len(x) != om.parallelism or sum(x) <= 0:
        return 1.0
    return max(1.0, max(x) * len(x) / sum(x))


def imbalance(om: OperatorMetrics, busyness_floor: float = BUSYNESS_FLOOR) -> float:
    """The busiest task's load over the mean task's: tasks of one operator work at the same speed, so
    busyness is load (as Flink's autoscaler reads it when it sizes by the busiest subtask)."""
    if om.parallelism <= 1 or om.busyness < busyness_floor:
        return 1.0
    return max(1.0, om.busyness_max / om.busyness)


@dataclass(frozen=True)
class SingleTaskMetrics:
    """Configuration policies' input (section V): per operator, in the query's topological order."""

    query: str
    memory_mb: int
    operators: tuple[tuple[str, OperatorRates], ...]
    source_rate: float = 0.0
    """The source rate of the run the metrics come from (its MST)."""
    max_parallelism: int | None = None
    """The job's max parallelism (key groups) when it sets one; None: Flink's default per operator."""

    @classmethod
    def from_measurement(cls, query: Query, memory_mb: int, m: Measurement,
                         busyness_floor: float = BUSYNESS_FLOOR) -> "SingleTaskMetrics":
        """o_i = a task's observed input rate over its busyness (DS2's true processing rate, the
        busyness floored so that an idle operator does not look infinitely fast); r_i = the
        operator's input rate over the source's rate (a multi-input operator counts all its inputs);
        and, from a run of several tasks per operator, how much more the busiest task carries."""
        if m.achieved_rate <= 0:
            raise UserError(f"single-task metrics of {query.name}: the run sustained no rate at all")
        ops = []
        for name in query.operators:
            om = m.operator(name)
            per_task_in = om.input_rate / om.parallelism
            busy = max(om.busyness, busyness_floor)
            ops.append((name, OperatorRates(true_rate=per_task_in / busy, input_ratio=om.input_rate / m.achieved_rate,
                                            keyed=name in query.keyed, imbalance=imbalance(om, busyness_floor),
                                            measured_parallelism=om.parallelism, input_imbalance=input_imbalance(om))))
        return cls(query.name, int(memory_mb), tuple(ops), m.achieved_rate, query.max_parallelism)

    def with_imbalance(self, query: Query, m: Measurement) -> "SingleTaskMetrics":
        """These rates, with the imbalance of each operator's tasks in another run (a larger one)."""
        ops = tuple((n, replace(r, keyed=n in query.keyed, imbalance=imbalance(m.operator(n)),
                                measured_parallelism=m.operator(n).parallelism,
                                input_imbalance=input_imbalance(m.operator(n)))) for n, r in self.operators)
        return replace(self, operators=ops, max_parallelism=query.max_parallelism)

    def with_load_limits(self, limits: Mapping[str, float]) -> "SingleTaskMetrics":
        """These rates, each operator ``limits`` names at most that many records/s a task (the load its
        task sustains where its rate falls with its load, model/loadrate.py). The busiest task's
        slowness is then in the limit: only the part of its imbalance its input records explain stays."""
        ops = tuple((n, replace(r, true_rate=limits[n], imbalance=max(1.0, r.input_imbalance))
                     if n in limits and limits[n] < r.true_rate else r) for n, r in self.operators)
        return replace(self, operators=ops)

    def with_key_skew(self, skews: Mapping[str, KeySkew]) -> "SingleTaskMetrics":
        """These rates, with the key concentration of the keyed operators ``skews`` names."""
        ops = tuple((n, replace(r, key_skew=skews[n]) if r.keyed and n in skews else r) for n, r in self.operators)
        return replace(self, operators=ops)

    def with_stalls(self, stalls: Mapping[str, Stall]) -> "SingleTaskMetrics":
        """These rates, with the stall bound of the operators ``stalls`` names (model/stalls.py)."""
        ops = tuple((n, replace(r, stall=stalls[n]) if n in stalls else r) for n, r in self.operators)
        return replace(self, operators=ops)

    def names(self) -> list[str]:
        return [n for n, _ in self.operators]

    def to_dict(self) -> dict:
        def operator(n: str, r: OperatorRates) -> dict:
            d = {"name": n, "true_rate_per_task": r.true_rate, "input_ratio": r.input_ratio}
            if r.keyed:
                d["keyed"] = True
            if r.measured_parallelism > 1:
                d.update(imbalance=r.imbalance, measured_parallelism=r.measured_parallelism,
                         input_imbalance=r.input_imbalance)
            if r.key_skew is not None:
                d["key_skew"] = r.key_skew.to_dict()
            if r.stall is not None:
                d["stall"] = r.stall.to_dict()
            return d

        d = {"query": self.query, "memory_mb": self.memory_mb, "source_rate": self.source_rate,
             "operators": [operator(n, r) for n, r in self.operators]}
        if self.max_parallelism is not None:
            d["max_parallelism"] = self.max_parallelism
        return d

    @classmethod
    def from_dict(cls, d: Mapping) -> "SingleTaskMetrics":
        def rates(o: Mapping) -> OperatorRates:
            skew, stall = o.get("key_skew"), o.get("stall")
            return OperatorRates(float(o["true_rate_per_task"]), float(o["input_ratio"]), bool(o.get("keyed", False)),
                                 float(o.get("imbalance", 1.0)), int(o.get("measured_parallelism", 1)),
                                 float(o.get("input_imbalance", 1.0)), KeySkew.from_dict(skew) if skew else None,
                                 Stall.from_dict(stall) if stall else None)

        return cls(d["query"], int(d["memory_mb"]), tuple((o["name"], rates(o)) for o in d["operators"]),
                   float(d.get("source_rate", 0.0)), d.get("max_parallelism"))


@dataclass(frozen=True)
class Observation:
    """One point of the Resource Explorer's data set D: a budget and its measured MST.

    ``memory_mb`` is the memory per task slot in MB; ``slots`` the task slots P (the sum of the
    operators' parallelisms, sources excluded, paper section III); ``mst`` the maximum sustainable
    throughput measured by the Capacity Estimator, in events/s.
    """

    memory_mb: float
    slots: int
    mst: float


def key_samples(query: Query, runs) -> dict[str, list[tuple[tuple[float, ...], int, float]]]:
    """Per keyed operator of ``query``, each run's (per-task input rates, the max parallelism it ran with,
    records counted), for ``runs`` (measurements at an MST, each with the max parallelism its configuration
    set, or None: the query's own, else Flink's default) that measured it on two tasks or more."""
    from . import keyskew

    out = {}
    for name in sorted(query.keyed):
        samples = []
        for m, fixed in runs:
            try:
                om = m.operator(name)
            except KeyError:
                continue
            if len(om.task_input) == om.parallelism > 1:
                # None ran with the job's own key groups: a generated profile's fixed 158 read as Flink's
                # 128 showed a 784,168-key join a 0.7 % hot key it does not have (docs/evaluation.md, G)
                own = fixed if fixed is not None else query.max_parallelism
                samples.append((om.task_input, keyskew.run_max_parallelism(om.parallelism, own),
                                om.input_rate * max(0.0, m.end - m.start)))
        out[name] = samples
    return out


def key_skews(query: Query, runs) -> dict[str, KeySkew]:
    """The key concentration of each keyed operator of ``query``, pooled over ``runs`` (key_samples;
    model/keyskew.py). An operator no run measured with two tasks or more is left out."""
    from . import keyskew

    out = {}
    for name, samples in key_samples(query, runs).items():
        skew = keyskew.estimate(samples)
        if skew is not None:
            out[name] = skew
    return out

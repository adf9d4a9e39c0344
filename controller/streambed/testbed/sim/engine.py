"""A time-stepped fluid model of a deployed Flink job under rate-limited load.

Every step of ``dt`` seconds, for all tasks of all operators at once (numpy arrays):

1. each task's speed (records/s when busy) follows its operator's base rate, the memory law (working
   set against the slot's state memory), the warm-up law and its own AR(1) noise;
2. a windowed task first pays its firing debt (a firing blocks the task thread; stragglers stretch
   it), then processes input; its fired results wait in an output queue and leave in a burst as fast
   as downstream accepts (the saw-tooth); it stops taking input only while a previous burst is
   still undelivered when the next one fires;
3. credit-based flow control, as in Flink: records may only be sent into free buffer space of the
   downstream task they hash to; an operator sends to all downstream tasks in fixed shares, so it is
   blocked by its *fullest* channel (one hot or stalled task back-pressures the whole upstream);
4. the source emits what its rate limiter allows and its downstream accepts; what it cannot emit
   becomes pending records (by default never caught up: the paper's limiter never exceeds 100 %).

Records sent in a step land in downstream buffers at the next step (one hop per step).
Per-task busy / back-pressured time and records in/out are accumulated and sampled every
``sample_period`` seconds, in the units of Flink's task metrics: busy and back-pressured time in ms per
second (``busyTimeMsPerSecond``, ``backPressuredTimeMsPerSecond``, 0-1000), records in / out per second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ...model import Configuration
from . import formulas
from .partitioning import KeyedStream, keyed_streams as make_keyed_streams, uniform_shares
from .profile import SimProfile

SLOW_UPDATE_S = 1.0
"""Period of the slow laws (noise, memory, warm-up): they change over seconds, not steps."""
RATE_EMA_S = 10.0
"""Time constant of the per-task rate average that sizes the working set."""
MIN_BUFFER_STEPS = 3.0
"""Numerical floor: a buffer holds at least this many steps of the flow offered to it (at most of the
task's own speed), or the step size, not the job, would cap throughput (one hop per step)."""
INFLOW_EMA_S = 1.0
"""Time constant of the offered-inflow average behind that floor."""

MS_PER_S = 1000.0
"""Busy and back-pressured time are reported as Flink does: milliseconds per second."""


@dataclass
class SampleLog:
    """Per-sample, per-task metrics (rows = samples, columns = tasks) and per-sample source metrics.

    Units as Flink's task metrics: ``busy_ms_per_s`` and ``backpressured_ms_per_s`` in ms per second
    (0-1000, Flink's busyTimeMsPerSecond and backPressuredTimeMsPerSecond), ``records_in`` /
    ``records_out`` in records/s (numRecordsInPerSecond, numRecordsOutPerSecond); source metrics
    ``emitted`` and ``offered`` in events/s, ``pending`` in records, ``saturated`` as the fraction
    of the sample period the source was at its own limit."""

    time: list
    busy_ms_per_s: list
    backpressured_ms_per_s: list
    records_in: list
    records_out: list
    emitted: list
    offered: list
    pending: list
    saturated: list
    cache_hit_rate: list = field(default_factory=list)
    """Per task, the share of its state accesses served from memory at the sample (NaN: stateless)."""
    state_latency_ms: list = field(default_factory=list)
    """Per task, the time a record spent on state reads that missed the cache, ms (NaN: stateless)."""

    @classmethod
    def empty(cls) -> "SampleLog":
        return cls([], [], [], [], [], [], [], [], [])

    def __len__(self) -> int:
        return len(self.time)


class Engine:
    """One running job: a configuration of a profile on slots of ``memory_mb`` each, or, for the
    operators ``memory_by_operator`` names, slots of the memory it gives them (per-operator memory, as
    Flink's fine-grained resource management deploys it)."""

    def __init__(self, profile: SimProfile, configuration: Configuration, memory_mb: float, *,
                 seed: int, dt: float = 0.1, sample_period: float = 5.0, catch_up: float = 0.0,
                 speed_scale: float = 1.0, keyed_streams: dict[str, KeyedStream] | None = None,
                 noise: bool = True, state_age_s: float = 0.0,
                 memory_by_operator: Mapping[str, float] | None = None):
        steps = sample_period / dt
        if abs(steps - round(steps)) > 1e-9:
            raise ValueError("sample_period must be a multiple of dt")
        self.profile = profile
        self.configuration = configuration
        self.memory_mb = float(memory_mb)
        self.memory_by_operator = {k: float(v) for k, v in (memory_by_operator or {}).items()}
        unknown = sorted(set(self.memory_by_operator) - {o.name for o in profile.operators})
        if unknown:
            raise ValueError(f"memory_by_operator names operators the profile does not have: {', '.join(unknown)}")
        self.dt = dt
        self._ema_weight = min(1.0, dt / INFLOW_EMA_S)
        self.sample_period = sample_period
        self.steps_per_sample = int(round(steps))
        self.catch_up = catch_up
        self.rng = np.random.default_rng(seed)
        self.noise_enabled = noise
        self.target_rate = 0.0
        self._step_index = 0
        self.samples = SampleLog.empty()
        self.restarts = 0
        self.offered_total = 0.0
        self.emitted_total = 0.0
        self._build(keyed_streams if keyed_streams is not None else make_keyed_streams(profile), speed_scale)
        self._reset_state(state_age_s)

    # ------------------------------------------------------------------------------------------
    # Layout: tasks of all operators in one flat array, operators contiguous in topological order.

    def _build(self, keyed_streams: dict[str, KeyedStream], speed_scale: float) -> None:
        prof = self.profile
        ops = prof.operators
        self.op_names = [o.name for o in ops]
        index = {o.name: k for k, o in enumerate(ops)}
        par = np.array([self.configuration[o.name] for o in ops], dtype=np.int64)
        self.parallelism = par
        self.op_start = np.concatenate([[0], np.cumsum(par)[:-1]]).astype(np.int64)
        self.op_end = self.op_start + par
        n = int(par.sum())
        self.n_tasks = n
        self.task_op = np.repeat(np.arange(len(ops)), par)
        self._theta_index = 1 + self.task_op  # each task's operator in the theta array (0: the source)

        def per_task(values):
            return np.repeat(np.asarray(values, dtype=np.float64), par)

        self.base_rate = per_task([o.rate for o in ops]) * speed_scale
        self.noise_sigma = per_task([o.noise if self.noise_enabled else 0.0 for o in ops])
        self.noise_phi = per_task([formulas.ar1_coefficient(SLOW_UPDATE_S, o.noise_correlation_s) for o in ops])
        self.buffer_records = per_task([o.buffer_records for o in ops])

        # Edges (source = external index 0, operator k = k + 1), sorted by upstream so that
        # reduceat can take the minimum over an operator's outputs.
        ratios = prof.input_ratios()
        edges = []
        for o in ops:
            for i in o.inputs:
                p = self.configuration[o.name]
                shares = (np.asarray(keyed_streams[o.name].shares(p)) if i.partitioning == "hash"
                          else uniform_shares(p))
                src = 0 if i.source == "source" else index[i.source] + 1
                up_ratio = 1.0 if src == 0 else ratios[i.source]
                edges.append((src, index[o.name], i.selectivity, shares, up_ratio * i.selectivity * shares))
        edges.sort(key=lambda e: e[0])
        self.edge_src = np.array([e[0] for e in edges], dtype=np.int64)
        self.edge_sigma = np.array([e[2] for e in edges])
        slot_task, slot_share, slot_edge, starts = [], [], [], []
        for e_idx, (_, dst, _, shares, _) in enumerate(edges):
            starts.append(len(slot_task))
            base = self.op_start[dst]
            slot_task.extend(range(base, base + len(shares)))
            slot_share.extend(shares)
            slot_edge.extend([e_idx] * len(shares))
        self.slot_task = np.array(slot_task, dtype=np.int64)
        self.slot_share = np.array(slot_share)
        self.slot_edge = np.array(slot_edge, dtype=np.int64)
        self.edge_slot_start = np.array(starts, dtype=np.int64)
        # Per slot (edge x downstream task): records arriving per record sent by the upstream, and
        # the upstream's index; slots that receive nothing never limit their edge.
        self.slot_coef = self.edge_sigma[self.slot_edge] * self.slot_share
        self.slot_src = self.edge_src[self.slot_edge]
        self.slot_never = np.where(self.slot_share > 0, 0.0, np.inf)
        srcs = sorted(set(self.edge_src.tolist()))
        self.src_with_out = np.array(srcs, dtype=np.int64)
        self.src_seg_start = np.array([int(np.searchsorted(self.edge_src, s)) for s in srcs], dtype=np.int64)
        # Records out per record processed (Flink's numRecordsOut counts each record once).
        out_sigma = np.zeros(len(ops))
        for src, _, sigma, _, _ in edges:
            if src > 0:
                out_sigma[src - 1] = max(out_sigma[src - 1], sigma)
        self.out_sigma = np.repeat(out_sigma, par)
        # Source events per record waiting at each task (0 where an operator receives nothing): the
        # job's backlog in the source's units, whatever the selectivities between.
        op_ratio = np.array([ratios[o.name] for o in ops])
        self.events_per_record = np.repeat(np.where(op_ratio > 0, 1.0 / np.where(op_ratio > 0, op_ratio, 1.0), 0.0),
                                           par)

        # Windows.
        self.is_window = per_task([o.window is not None for o in ops]) > 0
        self.window_ops = [(k, o.window) for k, o in enumerate(ops) if o.window is not None]
        self.op_is_window = np.array([o.window is not None for o in ops])
        self.has_windows = bool(self.window_ops)
        self._demand = np.zeros(len(ops) + 1)
        self._theta = np.ones(len(ops) + 1)
        self.fire_cost = per_task([(o.window.fire_cost_s if o.window else 0.0) for o in ops]) * self.out_sigma

        # State and memory.
        self.task_memory_mb = per_task([self.memory_by_operator.get(o.name, self.memory_mb) for o in ops])
        self.available_mb = formulas.state_memory_mb(self.task_memory_mb, prof.state_fraction)
        self.stateful = per_task([o.state is not None for o in ops]) > 0
        st = [o.state for o in ops]
        self.ws_base = per_task([s.working_set_mb if s else 0.0 for s in st])
        self.ws_bpr = per_task([s.bytes_per_record if s else 0.0 for s in st])
        self.ws_retention = per_task([s.retention_s if s else 0.0 for s in st])
        self.miss_penalty = per_task([s.miss_penalty if s else 0.0 for s in st])
        self.miss_exponent = per_task([s.miss_exponent if s else 1.0 for s in st])
        self.warmup_s = per_task([s.warmup_s if s else math.inf for s in st])
        self.warmup_speedup = per_task([s.warmup_speedup if s else 1.0 for s in st])
        self.source_cap = prof.source_max_rate if prof.source_max_rate else math.inf

    def _reset_state(self, state_age_s: float = 0.0) -> None:
        n = self.n_tasks
        self._state_age = state_age_s  # age of the job's state at the (re)start: drives warm-up
        self._restart_step = self._step_index
        self.buf = np.zeros(n)
        self.inflow_ema = np.zeros(n)
        self.gate_ema = np.zeros(n)  # unknown at start: buffers begin at buffer_records and open with the flow
        self.acc = np.zeros(n)
        self.emit_queue = np.zeros(n)
        self.emit_hold = np.zeros(n)  # a window task above this undelivered burst takes no input
        self.fire_debt = np.zeros(n)
        self.fire_count = 0
        self.straggler_start = self.rng.random(n)
        self.noise_z = self.rng.standard_normal(n) if self.noise_enabled else np.zeros(n)
        self.rate_ema = np.zeros(n)
        self._slow_in = np.zeros(n)
        self._slow_elapsed = 0.0
        self._new_sample()
        self._update_slow_factors()

    def set_memory_by_operator(self, memory_by_operator: Mapping[str, float]) -> None:
        """Give the named operators' tasks slots of their own memory (the others keep ``memory_mb``),
        effective at once (no random draw: a reference run stays the same run)."""
        unknown = sorted(set(memory_by_operator) - set(self.op_names))
        if unknown:
            raise ValueError(f"memory_by_operator names operators the profile does not have: {', '.join(unknown)}")
        self.memory_by_operator = {k: float(v) for k, v in memory_by_operator.items()}
        self.task_memory_mb = np.repeat(np.array([self.memory_by_operator.get(n, self.memory_mb)
                                                  for n in self.op_names]), self.parallelism)
        self.available_mb = formulas.state_memory_mb(self.task_memory_mb, self.profile.state_fraction)
        self._apply_laws()

    def clear_samples(self) -> None:
        self.samples = SampleLog.empty()

    def restart(self) -> None:
        """A job restart: in-flight records and state are lost, warm-up starts over; the offered
        stream keeps flowing (pending records keep what the source could not emit)."""
        self.restarts += 1
        self._reset_state()

    # ------------------------------------------------------------------------------------------

    @property
    def time(self) -> float:
        """Seconds since the job started (counted in steps: no drift from adding dt)."""
        return self._step_index * self.dt

    @property
    def run_time(self) -> float:
        """Age of the job's state: seconds since its (re)start, plus its initial age."""
        return self._state_age + (self._step_index - self._restart_step) * self.dt

    @property
    def pending(self) -> float:
        return self.offered_total - self.emitted_total

    @property
    def backlog(self) -> float:
        """Records inside the job (input buffers and undelivered window bursts), in source events: what
        the source emitted that the job has not processed yet. A job that keeps up holds it steady; an
        overloaded one grows it until its buffers are full, and only then holds back the source."""
        return float(np.dot(self.buf + self.emit_queue, self.events_per_record))

    def set_rate(self, rate: float) -> None:
        self.target_rate = max(0.0, float(rate))

    def queue_backlog(self, events: float) -> None:
        """Events already waiting in the source's topic (a restart's backlog): pending records the
        source works off as far as its catch-up lets it."""
        if not (math.isfinite(events) and events >= 0):
            raise ValueError(f"backlog: expected a non-negative number of events, got {events}")
        self.offered_total += float(events)

    def _update_slow_factors(self) -> None:
        if self._slow_elapsed > 0:
            rate = self._slow_in / self._slow_elapsed
            a = min(1.0, self._slow_elapsed / RATE_EMA_S)
            self.rate_ema += a * (rate - self.rate_ema)
        self._slow_in[:] = 0.0
        self._slow_elapsed = 0.0
        if self.noise_enabled:
            phi = self.noise_phi
            self.noise_z = phi * self.noise_z + np.sqrt(1 - phi * phi) * self.rng.standard_normal(self.n_tasks)
        sig = self.noise_sigma
        self._noise_factor = np.exp(sig * self.noise_z - 0.5 * sig * sig)
        self._apply_laws()

    def _apply_laws(self) -> None:
        """Each task's speed from its noise, warm-up and memory, at the last slow update's rates."""
        noise = self._noise_factor
        # Stateless tasks have warmup_s = inf and speedup 1, so their fill does not matter.
        fill = formulas.state_fill(self.run_time, self.warmup_s)
        warm = formulas.warmup_speed(fill, self.warmup_speedup)
        ws = formulas.working_set_mb(self.ws_base, self.ws_bpr, self.rate_ema, self.ws_retention, fill)
        miss = formulas.miss_ratio(self.available_mb, ws)
        self._miss = miss  # the state signals are derived from it when sampled (every few slow updates)
        self.memory_factor = 1.0 / formulas.memory_slowdown(miss, self.miss_penalty, self.miss_exponent)
        self.speed = self.base_rate * noise * warm * self.memory_factor
        self._inv_speed = 1.0 / np.maximum(self.speed, 1e-12)

    @property
    def cache_hit_rate(self) -> np.ndarray:
        """Per task, the share of state accesses served from memory (formulas.cache_hit_rate; NaN: stateless),
        a RocksDB job's block-cache hit rate, at the last slow update."""
        return np.where(self.stateful, 1.0 - self._miss, np.nan)

    @property
    def state_latency_ms(self) -> np.ndarray:
        """Per task, the time a record spends on state reads that miss the cache, ms (NaN: stateless), at
        the last slow update."""
        return np.where(self.stateful, formulas.state_access_latency_ms(
            self._miss, self.miss_penalty, self.miss_exponent, self.base_rate), np.nan)

    def advance(self, seconds: float) -> None:
        """Run the job for ``seconds`` (rounded to whole steps)."""
        for _ in range(int(round(seconds / self.dt))):
            self._step()

    def step(self) -> None:
        """Run the job for one step of ``dt`` (``advance(dt)``, without its rounding)."""
        self._step()

    def _step(self) -> None:
        dt = self.dt
        windows = self.has_windows
        if windows:
            # A firing blocks the task thread: its debt is paid before any input is processed.
            fire_spend = np.minimum(self.fire_debt, dt)
            self.fire_debt -= fire_spend
            cap = self.speed * (dt - fire_spend)
            # A window task whose previous burst is still undelivered takes no input (back-pressured).
            # (only window tasks ever queue a burst: elsewhere both sides are 0)
            held = self.emit_queue > self.emit_hold
            desired = np.minimum(self.buf, cap)
            desired[held] = 0.0
        else:
            cap = self.speed * dt
            desired = np.minimum(self.buf, cap)

        # Source: the rate limiter allows target x dt per step (more only with catch-up).
        offer = self.target_rate * dt
        self.offered_total += offer
        behind = self.offered_total - self.emitted_total
        allowance = min(behind, offer * (1.0 + self.catch_up)) if math.isfinite(self.catch_up) else behind
        src_limit = self.source_cap * dt
        saturated = allowance > src_limit
        demand = self._demand
        demand[0] = min(allowance, src_limit)
        # What each operator wants to send, in records processed (windows: records fired).
        demand[1:] = np.add.reduceat(np.where(self.is_window, self.emit_queue, desired) if windows else desired,
                                     self.op_start)

        need = demand[self.slot_src] * self.slot_coef
        offered_in = np.bincount(self.slot_task, weights=need, minlength=self.n_tasks)
        self.inflow_ema += self._ema_weight * (offered_in / dt - self.inflow_ema)
        # The floor follows the steady inflow, but never exceeds a few steps of what the task can
        # pass on: its speed, times the share its downstream lets through (a fast task stuck
        # behind a slow one, or a burst offered in one step, must not inflate the buffer that
        # should stop it).
        floor_rate = np.minimum(self.inflow_ema, self.speed * self.gate_ema)
        buf_cap = np.maximum(self.buffer_records, MIN_BUFFER_STEPS * dt * floor_rate)
        free = np.maximum(buf_cap - self.buf, 0.0)
        # A task shares its free space among its inputs in proportion to what each offers now, so
        # every channel into task j may deliver the same fraction free_j / offered_j of its records;
        # an operator sends at the pace of its most constrained channel.
        room = free / np.maximum(offered_in, 1e-300)
        theta_e = np.minimum.reduceat(room[self.slot_task] + self.slot_never, self.edge_slot_start)
        theta = self._theta
        theta[self.src_with_out] = np.minimum(np.minimum.reduceat(theta_e, self.src_seg_start), 1.0)

        th_task = theta[self._theta_index]
        # Windows take input whatever their emission does: only a hold gates them.
        gate = np.where(self.is_window, np.where(held, 0.0, 1.0), th_task) if windows else th_task
        self.gate_ema += self._ema_weight * (gate - self.gate_ema)
        if windows:
            # Windows keep taking input while their burst drains; others emit as they process.
            proc = np.where(self.is_window, desired, desired * th_task)
            delivered = self.emit_queue * th_task
            self.emit_queue -= delivered
            self.acc += proc
        else:
            proc = desired * th_task
        arrivals = np.bincount(self.slot_task, weights=need * theta[self.slot_src], minlength=self.n_tasks)
        self.buf += arrivals - proc
        emitted = demand[0] * theta[0]
        self.emitted_total += emitted

        inv = self._inv_speed
        if windows:
            busy = proc * inv + fire_spend
            blocked = np.where(held, np.minimum(self.buf, cap), desired - proc)
            self._acc_out += np.where(self.is_window, delivered, proc) * self.out_sigma
        else:
            busy = proc * inv
            blocked = desired - proc
            self._acc_out += proc * self.out_sigma
        self._acc_busy += busy
        # np.clip's values, without its Python-level overhead (this runs every step)
        self._acc_bp += np.minimum(np.maximum(0.0, blocked * inv), np.maximum(dt - busy, 0.0))
        self._acc_in += proc
        self._acc_emitted += emitted
        self._acc_offered += offer
        self._acc_saturated += dt if saturated else 0.0
        self._slow_in += proc

        t0 = self.run_time
        self._step_index += 1
        self._slow_elapsed += dt
        t1 = self.run_time
        for k, w in self.window_ops:
            if math.floor(t1 / w.slide_s + 1e-9) > math.floor(t0 / w.slide_s + 1e-9):
                self._fire(k, w)
        if self._slow_elapsed >= SLOW_UPDATE_S - 1e-9:
            self._update_slow_factors()
        if self._step_index % self.steps_per_sample == 0:
            self._sample()

    def _fire(self, k: int, w) -> None:
        """Window boundary: every task of operator k queues its results for emission and pays the
        firing cost, stretched by its own straggler draw and by its current slowdown."""
        sl = slice(self.op_start[k], self.op_end[k])
        fired = self.acc[sl].copy()
        self.acc[sl] = 0.0
        self.emit_queue[sl] += fired
        self.emit_hold[sl] = fired * (1.0 + 1e-9)
        self.fire_count += 1
        u = formulas.golden_quantiles(self.straggler_start[sl], self.fire_count)
        xi = formulas.straggler_stretch(u, w.straggler_mean, w.straggler_tail, w.straggler_cap)
        slowdown = self.base_rate[sl] / np.maximum(self.speed[sl], 1e-12)
        self.fire_debt[sl] += fired * self.fire_cost[sl] * (1.0 + xi) * slowdown

    def _new_sample(self) -> None:
        n = self.n_tasks
        self._acc_busy = np.zeros(n)
        self._acc_bp = np.zeros(n)
        self._acc_in = np.zeros(n)
        self._acc_out = np.zeros(n)
        self._acc_emitted = 0.0
        self._acc_offered = 0.0
        self._acc_saturated = 0.0

    def _sample(self) -> None:
        period = self.sample_period
        s = self.samples
        s.time.append(self.time)
        s.busy_ms_per_s.append(self._acc_busy * (MS_PER_S / period))
        s.backpressured_ms_per_s.append(self._acc_bp * (MS_PER_S / period))
        s.records_in.append(self._acc_in / period)
        s.records_out.append(self._acc_out / period)
        s.emitted.append(self._acc_emitted / period)
        s.offered.append(self._acc_offered / period)
        s.pending.append(self.pending)
        s.saturated.append(self._acc_saturated / period)
        s.cache_hit_rate.append(self.cache_hit_rate)
        s.state_latency_ms.append(self.state_latency_ms)
        self._new_sample()

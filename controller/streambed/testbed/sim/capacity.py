"""Steady-state capacity of a configuration, from the same laws the engine runs.

The sim's own model of what a configuration can sustain, used to search the best configuration of a
budget (ground truth, ``streambed sim truth``). It knows what the planner does not: skew, memory
per task at the operating point, window firing costs. Transient effects (warm-up, stragglers,
buffers, noise) are left to the engine; the ground-truth MST is then measured on the engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ...model import SOURCE, Configuration, check_slots
from . import formulas
from .engine import MIN_BUFFER_STEPS
from .partitioning import KeyedStream, keyed_streams
from .profile import OperatorSpec, SimProfile


@dataclass(frozen=True)
class Capacity:
    mst: float
    bottleneck: str
    operators: dict[str, float]
    """Per operator: the source rate it alone would sustain (events/s)."""


STRAGGLER_QUANTILES = 2000
"""Quantiles at which the slowest firing's distribution is evaluated."""
_QUANTILES = (np.arange(STRAGGLER_QUANTILES) + 0.5) / STRAGGLER_QUANTILES


class CapacityModel:
    """Capacity of any configuration of one profile at one memory per slot.

    ``threshold`` is the share of its target the source must emit (the MST definition; stalls
    caused by straggling window firings may cost at most 1 - threshold of the time), and ``dt`` the
    engine step, whose few-step buffer floor is part of the slack that absorbs a stall."""

    def __init__(self, profile: SimProfile, memory_mb: float, streams: dict[str, KeyedStream] | None = None,
                 *, threshold: float = 0.998, dt: float = 0.1,
                 memory_by_operator: Mapping[str, float] | None = None):
        self.profile = profile
        self.memory_mb = float(memory_mb)
        self.memory_by_operator = dict(memory_by_operator or {})
        """Memory per slot of the named operators' tasks (per-operator memory); the others' is ``memory_mb``."""
        self.streams = streams if streams is not None else keyed_streams(profile)
        self.threshold = threshold
        self.dt = dt
        self.ratios = profile.input_ratios()
        self._out_sigma = self._output_selectivities()
        self.rates = {op.name: self._task_rate(op) for op in profile.operators}
        self._depth = self._upstream_depth()
        self._keyed_cache: dict[tuple[str, int], float] = {}
        self._slowest_cache: dict[tuple[str, int], np.ndarray] = {}
        self._window_names = [op.name for op in profile.operators if op.window is not None]

    def _upstream_depth(self) -> dict[str, int]:
        """Operators between the source and each operator on the shortest path (the stages whose
        buffers fill before a stall reaches the source)."""
        depth: dict[str, int] = {}
        for op in self.profile.operators:
            depth[op.name] = min(0 if i.source == SOURCE else depth[i.source] + 1 for i in op.inputs)
        return depth

    def _output_selectivities(self) -> dict[str, float]:
        out = {op.name: 0.0 for op in self.profile.operators}
        for op in self.profile.operators:
            for i in op.inputs:
                if i.source != SOURCE:
                    out[i.source] = max(out[i.source], i.selectivity)
        return out

    def _task_rate(self, op: OperatorSpec) -> float:
        if op.window is not None:
            # Firing cost per input record = fire cost per emitted record x records emitted per input.
            w = op.window
            divisor = 1.0 + op.rate * w.fire_cost_s * self._out_sigma[op.name] * (1.0 + w.straggler_mean)
        else:
            divisor = 1.0
        if op.state is None:
            return op.rate / divisor
        s = op.state
        return formulas.sustainable_task_rate(
            op.rate / divisor,
            formulas.state_memory_mb(self.memory_by_operator.get(op.name, self.memory_mb), self.profile.state_fraction),
            s.working_set_mb, s.bytes_per_record, s.retention_s, s.miss_penalty, s.miss_exponent)

    def _max_share(self, op: OperatorSpec, parallelism: int) -> float:
        """Share of the operator's input that its most loaded task receives."""
        if not self._is_keyed(op):
            return 1.0 / parallelism
        load = np.zeros(parallelism)
        for i in op.inputs:
            up = 1.0 if i.source == SOURCE else self.ratios[i.source]
            shares = self.streams[op.name].shares(parallelism) if i.partitioning == "hash" else np.full(
                parallelism, 1.0 / parallelism)
            load += up * i.selectivity * shares
        return float(load.max()) / self.ratios[op.name]

    def _slowest(self, name: str, parallelism: int) -> np.ndarray:
        """The largest straggler stretch among ``parallelism`` tasks, at evenly spread quantiles: a
        deterministic quadrature of its distribution, monotone in the parallelism."""
        key = (name, parallelism)
        if key not in self._slowest_cache:
            w = self.profile.operator(name).window
            self._slowest_cache[key] = formulas.slowest_stretch(
                _QUANTILES, parallelism, w.straggler_mean, w.straggler_tail, w.straggler_cap)
        return self._slowest_cache[key]

    def straggler_loss(self, name: str, parallelism: int, rate: float) -> float:
        """Fraction of time the source is blocked by straggling firings of window operator ``name``
        at source rate ``rate``.

        Each firing, every task is busy for a = x T c_fire (1 + xi) (x its input rate, T the slide,
        c_fire the firing cost per input record, xi its straggler draw). While a task fires, its
        input buffer and the buffers upstream absorb its stream; beyond that slack the source is
        blocked, because an upstream task blocks on its fullest channel. The loss is the expected
        excess of the slowest task over the slack, per slide."""
        op = self.profile.operator(name)
        w = op.window
        fire_in = w.fire_cost_s * self._out_sigma[name] if w is not None else 0.0
        if w is None or fire_in <= 0 or w.straggler_mean <= 0 or rate <= 0:
            return 0.0
        x = rate * self.ratios[name] * self._max_share(op, parallelism)
        slow = op.rate / self.rates[name] if op.state is not None else 1.0
        firing = x * w.slide_s * fire_in * slow * (1.0 + self._slowest(name, parallelism))
        # In steady flow a buffer holds one step of arrivals, and a channel throttles as soon as less
        # than one step of room is left: the stalled task's own buffer absorbs its capacity less a
        # step; each upstream stage then adds about one step (measured on the engine: 0.25-0.35 s).
        own = max(op.buffer_records / x, MIN_BUFFER_STEPS * self.dt) - self.dt
        slack = own + self.dt * self._depth[name]
        return float(np.mean(np.maximum(firing - slack, 0.0))) / w.slide_s

    def _stalls(self, configuration: Configuration, rate: float) -> float:
        """Total fraction of time lost to stragglers: stalls of different window operators add up."""
        return sum(self.straggler_loss(n, configuration[n], rate) for n in self._window_names)

    def _loss_budget(self) -> float:
        return 1.0 - self.threshold

    def _is_keyed(self, op: OperatorSpec) -> bool:
        return any(i.partitioning == "hash" for i in op.inputs)

    def parallelism_limit(self, name: str, slots: int) -> int:
        """The most tasks operator ``name`` may get in a budget of ``slots``: one slot for each other
        operator, and for a keyed operator no more than its max parallelism (Flink refuses more)."""
        limit = slots - len(self.profile.operators) + 1
        if self._is_keyed(self.profile.operator(name)):
            limit = min(limit, self.streams[name].parallelism_limit)
        return limit

    def operator_capacity(self, name: str, parallelism: int) -> float:
        """Source rate (events/s) that operator ``name`` at ``parallelism`` sustains alone: its task
        rate over the load its most loaded task receives per source event (stragglers aside)."""
        op = self.profile.operator(name)
        rho = self.ratios[name]
        if rho <= 0:
            return math.inf
        key = (name, parallelism)
        if key not in self._keyed_cache:
            self._keyed_cache[key] = self.rates[name] / (rho * self._max_share(op, parallelism))
        return self._keyed_cache[key]

    def capacity(self, configuration: Configuration) -> Capacity:
        caps = {op.name: self.operator_capacity(op.name, configuration[op.name]) for op in self.profile.operators}
        bottleneck = min(caps, key=caps.get)
        mst = caps[bottleneck]
        if self.profile.source_max_rate:
            mst = min(mst, self.profile.source_max_rate)
        budget = self._loss_budget()
        if self._window_names and self._stalls(configuration, mst) > budget:
            lo, hi = 0.0, mst
            for _ in range(50):
                mid = 0.5 * (lo + hi)
                if self._stalls(configuration, mid) <= budget:
                    lo = mid
                else:
                    hi = mid
            mst = lo
            bottleneck = max(self._window_names, key=lambda n: self.straggler_loss(n, configuration[n], hi))
        return Capacity(mst=mst, bottleneck=bottleneck, operators=caps)

    # ------------------------------------------------------------------------------------------
    # Best configuration of a slot budget.

    def _min_parallelism(self, name: str, rate: float, slots: int) -> int | None:
        """Smallest parallelism (within parallelism_limit) at which operator ``name`` sustains ``rate``."""
        op = self.profile.operator(name)
        limit = self.parallelism_limit(name, slots)
        if not self._is_keyed(op):
            need = max(1, math.ceil(rate * self.ratios[name] / self.rates[name] - 1e-9))
            return need if need <= limit else None
        if self.operator_capacity(name, limit) < rate:
            return None
        lo, hi = 1, limit  # capacity grows with parallelism (up to key-group steps)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.operator_capacity(name, mid) >= rate:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _smallest_configuration(self, names: list[str], rate: float, slots: int) -> dict[str, int] | None:
        """Fewest slots per operator that sustain ``rate``, or None if more than ``slots`` are needed.

        Each operator first gets the least parallelism its task rate and skew allow; then, while
        straggling firings cost more than the loss budget, window operators gain slots one at a time
        where a slot removes the most loss (fewer records per task make shorter firings)."""
        need = {}
        for n in names:
            p = self._min_parallelism(n, rate, slots)
            if p is None:
                return None
            need[n] = p
        if sum(need.values()) > slots:
            return None
        budget = self._loss_budget()
        loss = {n: self.straggler_loss(n, need[n], rate) for n in self._window_names}
        while sum(loss.values()) > budget:
            spare = slots - sum(need.values())
            best = None  # (loss removed per slot, operator, slots to add, new loss)
            for n in self._window_names:
                # Key-group plateaus can make one more task useless (same hottest share, one more
                # chance of a straggler): look ahead to the next parallelism that helps.
                for k in range(1, min(spare, self.parallelism_limit(n, slots) - need[n]) + 1):
                    after = self.straggler_loss(n, need[n] + k, rate)
                    if after < loss[n]:
                        gain = (loss[n] - after) / k
                        if best is None or gain > best[0]:
                            best = (gain, n, k, after)
                        break
                    if k >= max(8, need[n]):
                        break
            if best is None:
                return None
            _, n, k, after = best
            need[n] += k
            loss[n] = after
        return need

    def best_configuration(self, slots: int) -> tuple[Configuration, Capacity]:
        """The configuration of exactly ``slots`` slots with the highest capacity.

        Bisection on the rate: a rate is feasible if the smallest parallelisms that sustain it sum to
        at most ``slots``. Spare slots go where they help most."""
        slots = int(slots)
        query = self.profile.query()
        names = list(query.operators)
        check_slots(slots, len(names), query=query.name)
        hi = min(self.operator_capacity(n, self.parallelism_limit(n, slots)) for n in names)
        lo = 0.0
        best = {n: 1 for n in names}
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            need = self._smallest_configuration(names, mid, slots)
            if need is not None:
                lo, best = mid, need
            else:
                hi = mid
            if hi - lo <= 1e-9 * max(hi, 1.0):
                break
        spare = slots - sum(best.values())
        candidates = []
        for n in names:
            room = self.parallelism_limit(n, slots) - best[n]
            if room < spare:
                continue  # a keyed operator at its max parallelism takes no more tasks
            trial = dict(best)
            trial[n] += spare
            cfg = Configuration.of(query, trial)
            candidates.append((self.capacity(cfg).mst, -names.index(n), cfg))
        if not candidates:  # every operator keyed and at its limit: the spare slots stay unused
            cfg = Configuration.of(query, best)
        else:
            _, _, cfg = max(candidates, key=lambda c: (c[0], c[1]))
        return cfg, self.capacity(cfg)


class AnalyticCapacityModel:
    """Capacity of an analytic profile: its best configuration of P slots sustains f(M, P) exactly."""

    def __init__(self, profile: SimProfile, memory_mb: float, **kwargs):
        assert profile.analytic is not None
        self.profile = profile
        self.memory_mb = float(memory_mb)
        self.law = profile.analytic
        self.linear = CapacityModel(profile, memory_mb, **kwargs)
        self._scale: dict[int, float] = {}

    def speed_scale(self, slots: int) -> float:
        """Factor applied to every task's speed so that the best configuration reaches f(M, P)."""
        if slots not in self._scale:
            _, cap = self.linear.best_configuration(slots)
            self._scale[slots] = self.law.capacity(self.memory_mb, slots) / cap.mst
        return self._scale[slots]

    def capacity(self, configuration: Configuration) -> Capacity:
        cap = self.linear.capacity(configuration)
        s = self.speed_scale(configuration.slots)
        return Capacity(cap.mst * s, cap.bottleneck, {k: v * s for k, v in cap.operators.items()})

    def best_configuration(self, slots: int) -> tuple[Configuration, Capacity]:
        cfg, _ = self.linear.best_configuration(slots)
        return cfg, self.capacity(cfg)


def capacity_model(profile: SimProfile, memory_mb: float, **kwargs) -> CapacityModel | AnalyticCapacityModel:
    """The capacity model that fits the profile (keyword arguments go to CapacityModel)."""
    cls = AnalyticCapacityModel if profile.analytic else CapacityModel
    return cls(profile, memory_mb, **kwargs)

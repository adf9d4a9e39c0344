"""Ground truth: what the sim itself says a budget can sustain, for judging plans at any scale.

``true_mst``: the capacity model proposes the best configuration of the budget (it knows skew and
memory), then the engine measures that configuration's MST by bisection on fresh copies of a
warmed-up job, in reference mode (no speed noise; stragglers are still drawn, from a fixed seed).
A rate is sustained when, after a ramp, the source emits at least ``threshold`` of its target over a
long observation: the Capacity Estimator's own success rule (paper section IV), without its haste.

``min_slots``: the smallest slot count whose best configuration the engine sees sustain a rate.
None of this is visible to the planner.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from ...errors import UserError
from ...model import Configuration, keygroups
from ...model.slo import STEADY_SHARE
from .capacity import AnalyticCapacityModel, capacity_model
from .engine import Engine
from .partitioning import keyed_streams
from .profile import SimProfile


@dataclass(frozen=True)
class TruthSettings:
    warmup_s: float = 90.0
    """Buffers and working sets settle; state starts full (see STATE_AGE_S)."""
    ramp_s: float = 30.0
    observe_s: float = 300.0
    threshold: float = STEADY_SHARE
    """The source must emit this share of its target: sustained means (almost) nothing piles up."""
    sensibility: float = 0.002
    """Bisection stops when the bracket is narrower than this fraction of the rate."""
    dt: float = 0.1
    seed: int = 12345
    max_slots: int = 100_000


def backlog_growth(backlog: Sequence[float], dt: float, slides_s: Sequence[float] = ()) -> float:
    """How much a job's backlog grew over an observation, with the swings of its window firings removed.

    ``backlog``: the backlog (source events) at the observation's start and after each step of ``dt``
    seconds. A window operator fires every slide: its burst fills the buffers downstream, which drain
    before the next firing when the job keeps up, so the backlog swings within each slide whether or not
    it falls behind. A moving average over one slide removes a swing that repeats every slide, so the
    series is averaged over each distinct slide in ``slides_s`` in turn, and the growth is the
    least-squares trend of what remains, times the observation's length. The trend spans every window
    period observed (a straggling firing near either end weighs as little as one in the middle), as the
    estimator judges a window over at least the query's state span rather than at one instant.
    Negative growth (a backlog draining) is returned as it is; the caller decides what it counts for."""
    y = np.asarray(backlog, dtype=np.float64)
    observed_s = (len(y) - 1) * dt
    for width in sorted({max(1, round(s / dt)) for s in slides_s if s > 0}):
        if width > 1:
            if len(y) <= width:
                raise ValueError(f"an observation of {observed_s:g} s cannot average out a {width * dt:g}-s slide")
            y = np.convolve(y, np.full(width, 1.0 / width), mode="valid")
    if len(y) < 2:
        return 0.0
    t = np.arange(len(y), dtype=np.float64) * dt
    slope = float(np.polyfit(t, y, 1)[0])
    return slope * observed_s


LOST_MARGIN = 1e-9
"""``observation_lost`` decides only when the bound misses the threshold by more than this share of the
offer: sums of a few thousand steps differ from their bound by far less (float rounding), so an early
verdict is always the one the whole observation would give."""


def observation_lost(emitted: float, offered: float, offered_total: float, emit_per_offer: float,
                     threshold: float) -> bool:
    """Whether an observation is already lost: even if the source emitted ``emit_per_offer`` x every
    event still to be offered (its most: 1 with the paper's strict limiter, 1 + catch-up otherwise), it
    would emit less than ``threshold`` of ``offered_total``, and what piles up in the job only counts
    against it. ``emitted`` and ``offered`` are so far, ``offered_total`` over the whole observation.
    A rate far beyond the MST is thus refused after a few seconds instead of a whole observation."""
    if not math.isfinite(emit_per_offer):
        return False
    best = emitted + max(offered_total - offered, 0.0) * emit_per_offer
    return best < threshold * offered_total * (1.0 - LOST_MARGIN)


LOST_CHECK_STEPS = 10
"""Steps between two ``observation_lost`` checks (1 s of simulated time)."""


OBSERVED_SLIDES = 3.0
"""The observation spans at least this many times the sum of the job's window slides (the averages
over each slide consume one slide each and the trend needs the rest)."""


def observation_s(observe_s: float, slides_s: Sequence[float], dt: float) -> float:
    """The observation's length: at least ``observe_s`` and OBSERVED_SLIDES x the sum of the distinct
    slides, rounded up to whole periods of the longest slide (so the source's losses at firings are
    counted over whole periods too) and to whole steps."""
    slides = sorted({s for s in slides_s if s > 0})
    length = max(observe_s, OBSERVED_SLIDES * sum(slides))
    if slides:
        length = math.ceil(length / slides[-1] - 1e-9) * slides[-1]
    return math.ceil(length / dt - 1e-9) * dt


STATE_AGE_S = 1e6
"""Ground truth is about steady state: jobs start with state as after a long run (no warm-up bonus)."""


@dataclass(frozen=True)
class Truth:
    profile: str
    slots: int
    memory_mb: int
    configuration: Configuration
    mst: float
    """Measured on the engine."""
    model_mst: float
    """The capacity model's steady-state estimate for the same configuration."""
    bottleneck: str

    def to_dict(self) -> dict:
        return {
            "profile": self.profile,
            "slots": self.slots,
            "memory_mb": self.memory_mb,
            "mst": self.mst,
            "model_mst": self.model_mst,
            "bottleneck": self.bottleneck,
            "configuration": self.configuration.as_dict(),
            "max_parallelism": self.configuration.max_parallelism,
        }


class GroundTruth:
    """Ground-truth queries for one profile; caches models per memory profile."""

    def __init__(self, profile: SimProfile, settings: TruthSettings | None = None):
        self.profile = profile
        self.settings = settings or TruthSettings()
        self._streams = keyed_streams(profile)
        self._models: dict[float, object] = {}
        self._siblings: dict[int, GroundTruth] = {}

    def _sibling(self, profile: SimProfile) -> "GroundTruth":
        """A ground truth of the same kind and settings for ``profile`` (the same query partitioned
        with other key groups)."""
        return GroundTruth(profile, self.settings)

    def with_max_parallelism(self, max_parallelism: int) -> "GroundTruth":
        """The ground truth of this profile run with ``max_parallelism`` key groups; built once, so that its
        key distributions and capacity models (costly for millions of keys) are shared by every query."""
        if max_parallelism == self.profile.max_parallelism:
            return self
        if max_parallelism not in self._siblings:
            self._siblings[max_parallelism] = self._sibling(replace(self.profile, max_parallelism=max_parallelism))
        return self._siblings[max_parallelism]

    def model(self, memory_mb: float):
        if memory_mb not in self._models:
            self._models[memory_mb] = capacity_model(self.profile, memory_mb, streams=self._streams,
                                                     threshold=self.settings.threshold, dt=self.settings.dt)
        return self._models[memory_mb]

    def _engine(self, configuration: Configuration, memory_mb: float) -> Engine:
        model = self.model(memory_mb)
        scale = model.speed_scale(configuration.slots) if isinstance(model, AnalyticCapacityModel) else 1.0
        return Engine(self.profile, configuration, memory_mb, seed=self.settings.seed, dt=self.settings.dt,
                      speed_scale=scale, keyed_streams=self._streams, noise=False, state_age_s=STATE_AGE_S)

    def _warmed(self, configuration: Configuration, memory_mb: float, rate: float) -> Engine:
        eng = self._engine(configuration, memory_mb)
        eng.set_rate(rate)
        eng.advance(self.settings.warmup_s)
        eng.clear_samples()  # copies need not carry the warm-up's samples
        return eng

    def _sustains(self, warmed: Engine, rate: float) -> bool:
        """Whether the source emits ``threshold`` of what it is offered over the observation, and the job
        processes it: a backlog that grows over the observation counts as not processed (a large job's
        buffers can take minutes of an overload before they hold the source back: q5 at 20,000 slots
        absorbed 300 s of a 10 % overload). The growth is the backlog's trend over whole window periods
        (``backlog_growth``), not its swing within one: a window burst in flight when the observation
        ends is not falling behind. A backlog that shrinks does not count in favour: it was offered
        before."""
        s = self.settings
        eng = copy.deepcopy(warmed, memo={id(warmed.profile): warmed.profile})
        eng.set_rate(rate)
        eng.advance(s.ramp_s)
        slides = [o.window.slide_s for o in self.profile.operators if o.window is not None]
        steps = round(observation_s(s.observe_s, slides, s.dt) / s.dt)
        e0, o0 = eng.emitted_total, eng.offered_total
        offered_total = steps * eng.target_rate * s.dt
        emit_per_offer = 1.0 + eng.catch_up
        backlog = [eng.backlog]
        for k in range(1, steps + 1):
            eng.step()
            backlog.append(eng.backlog)
            if k % LOST_CHECK_STEPS == 0 and observation_lost(eng.emitted_total - e0, eng.offered_total - o0,
                                                                offered_total, emit_per_offer, s.threshold):
                return False
        offered = eng.offered_total - o0
        emitted = eng.emitted_total - e0
        piled = max(0.0, backlog_growth(backlog, s.dt, slides))
        return offered > 0 and emitted - piled >= s.threshold * offered

    def engine_mst(self, configuration: Configuration, memory_mb: float, estimate: float) -> float:
        """MST of one configuration measured on the engine by bisection around ``estimate``."""
        warmed = self._warmed(configuration, memory_mb, 0.95 * estimate)
        lo, hi = 0.0, None
        r = estimate
        for _ in range(12):  # bracket
            if self._sustains(warmed, r):
                lo = r
                r *= 1.25
            else:
                hi = r
                if lo > 0:
                    break
                r *= 0.7
            if hi is not None and lo > 0:
                break
        if hi is None or lo == 0:
            return lo if hi is None else 0.0
        while hi - lo > self.settings.sensibility * hi:
            mid = 0.5 * (lo + hi)
            if self._sustains(warmed, mid):
                lo = mid
            else:
                hi = mid
        return lo

    def true_mst(self, slots: int, memory_mb: float) -> Truth:
        """The MST of the best configuration of ``slots`` slots of ``memory_mb`` each."""
        model = self.model(memory_mb)
        config, cap = model.best_configuration(slots)
        mst = self.engine_mst(config, memory_mb, cap.mst)
        return Truth(self.profile.name, slots, int(memory_mb), config, mst, cap.mst, cap.bottleneck)

    def configuration_mst(self, configuration: Configuration, memory_mb: float) -> Truth:
        """The MST of a given configuration (a plan's own, say), measured as ``true_mst`` measures the best."""
        mp = configuration.max_parallelism
        if mp is not None and mp != self.profile.max_parallelism:  # the job partitions its keys otherwise
            return self.with_max_parallelism(mp).configuration_mst(configuration, memory_mb)
        cap = self.model(memory_mb).capacity(configuration)
        mst = self.engine_mst(configuration, memory_mb, cap.mst)
        return Truth(self.profile.name, configuration.slots, int(memory_mb), configuration, mst, cap.mst,
                     cap.bottleneck)

    def sustains(self, slots: int, memory_mb: float, rate: float) -> bool:
        config, _ = self.model(memory_mb).best_configuration(slots)
        return self._sustains(self._warmed(config, memory_mb, rate), rate)

    def model_min_slots(self, rate: float, memory_mb: float) -> int | None:
        """Smallest slot count whose best configuration the capacity model says sustains ``rate``."""
        model = self.model(memory_mb)
        n = len(self.profile.operators)
        limit = self.settings.max_slots

        def ok(p: int) -> bool:
            return model.best_configuration(p)[1].mst >= rate

        if ok(n):
            return n
        lo, hi = n, n
        while not ok(hi):
            lo = hi
            if hi >= limit:
                return None
            hi = min(limit, hi * 2)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid
        return hi

    def min_slots(self, rate: float, memory_mb: float) -> tuple[int, Truth] | None:
        """Smallest slot count whose best configuration sustains ``rate`` on the engine, with that
        configuration's truth (its MST measured); None as ``min_budget``."""
        found = self.min_budget(rate, memory_mb)
        return None if found is None else (found[0], self.true_mst(found[0], memory_mb))

    def min_budget(self, rate: float, memory_mb: float) -> tuple[int, Configuration] | None:
        """Smallest slot count whose best configuration sustains ``rate`` on the engine, and that
        configuration (its MST not measured: a caller that needs only the budget saves a bisection).

        Starts from the capacity model's answer and walks to the engine's boundary; returns None when
        even ``max_slots`` slots cannot reach the rate (e.g. skew caps a keyed operator)."""
        if rate <= 0 or not math.isfinite(rate):
            raise UserError(f"rate: expected a positive number of events/s, got {rate}")
        p0 = self.model_min_slots(rate, memory_mb)
        if p0 is None:
            return None
        n = len(self.profile.operators)
        step = max(1, math.ceil(0.02 * p0))
        if self.sustains(p0, memory_mb, rate):
            hi, lo = p0, p0 - step
            while lo >= n and self.sustains(lo, memory_mb, rate):
                hi, lo = lo, lo - step
            lo = max(lo, n - 1)
        else:
            lo, hi = p0, p0 + step
            while not self.sustains(hi, memory_mb, rate):
                lo, hi = hi, hi + step
                step = max(step, math.ceil(0.05 * hi))
                if hi > self.settings.max_slots:
                    return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.sustains(mid, memory_mb, rate):
                hi = mid
            else:
                lo = mid
        return hi, self.model(memory_mb).best_configuration(hi)[0]

    def least_slots(self, rate: float, memory_mb: float) -> tuple[int, Truth] | None:
        """``least_budget`` with the budget's truth (its configuration's MST measured)."""
        found = self.least_budget(rate, memory_mb)
        if found is None:
            return None
        slots, configuration = found
        truth = self.with_max_parallelism(configuration.max_parallelism or self.profile.max_parallelism).true_mst(
            slots, memory_mb)
        return slots, replace(truth, configuration=configuration)

    def least_budget(self, rate: float, memory_mb: float) -> tuple[int, Configuration] | None:
        """``min_budget`` over the key groups a job may set: the profile's own (Flink's default rule when
        it sets none) and the most Flink allows, whose finer ranges balance a keyed operator best. The
        configuration names the max parallelism it was found with when it is not the profile's.

        A plan sets its own max parallelism (sizing.planned_max_parallelism), so the minimum it is
        judged against must be allowed the same: q11 at 25 x the 48-slot MST needs 1,447 slots of
        4 GB under Flink's default rule and 1,330 with 32,768 key groups, and a plan below the first
        was read as below the "true minimum"."""
        found = self.min_budget(rate, memory_mb)
        if not self.profile.query().keyed or self.profile.max_parallelism == keygroups.MAX_MAX_PARALLELISM:
            return found
        fine = self.with_max_parallelism(keygroups.MAX_MAX_PARALLELISM).min_budget(rate, memory_mb)
        if fine is not None:  # the configuration says which key groups it was found with
            slots, configuration = fine
            fine = slots, replace(configuration, max_parallelism=keygroups.MAX_MAX_PARALLELISM)
        candidates = [f for f in (found, fine) if f is not None]
        return min(candidates, key=lambda f: f[0]) if candidates else None

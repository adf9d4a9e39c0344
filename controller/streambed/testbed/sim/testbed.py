"""The simulated testbed: the Testbed protocol over the time-stepped engine.

STAND-IN: this is not Apache Flink. It is a digital twin whose laws are documented in docs/sim.md
and calibrated against the StreamBed paper's measurements; the real engine is the Flink testbed.
Time is simulated: ``wait`` and ``observe`` advance the clock instead of sleeping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ...errors import JobRestarted, UserError
from ...metrics import window
from ...model import Budget, Configuration, Measurement, Query, TestbedInfo, check_slots
from ..base import Run, TestbedRequest, check_start
from .capacity import AnalyticCapacityModel
from .engine import MS_PER_S, Engine
from .partitioning import keyed_streams
from .profile import SimProfile, load_profile

DEFAULT_MEMORY_PER_SLOT = (512, 1024, 2048, 4096)
"""The paper's testbed: 0.5 to 4 GB per slot (section VIII)."""
DEFAULT_MAX_SLOTS = 48
"""The paper's testbed: 3 servers, 48 task slots."""


@dataclass(frozen=True)
class SimSettings:
    max_slots: int = DEFAULT_MAX_SLOTS
    memory_per_slot: tuple[int, ...] = DEFAULT_MEMORY_PER_SLOT
    seed: int = 0
    dt: float = 0.1
    sample_period: float = 5.0
    """Metric aggregation period, as the paper's Prometheus (5 s)."""
    noise: bool = True
    catch_up: float = 0.0
    """How far above its target the source may emit to work off pending records (0: never, as the
    paper's rate limiter; inf: a replayed stream such as Kafka, read as fast as the job accepts)."""
    source_parallelism: int = 32
    """Source tasks (outside the budget); with no profile limit the sources never cap a rate."""


class SimTestbed:
    """A simulated Flink deployment of one query (the profile's)."""

    name = "sim"

    def __init__(self, profile: SimProfile, settings: SimSettings | None = None):
        self.profile = profile
        self.settings = settings or SimSettings()
        check_slots(self.settings.max_slots, len(profile.operators), query=profile.name, field="max slots")
        self._query = profile.query()
        self._edge_shares = profile.edge_shares()
        self._streams = keyed_streams(profile)
        self._fixed_streams: dict[int, dict] = {}
        self._analytic: dict[int, AnalyticCapacityModel] = {}
        self._budget: Budget | None = None
        self._runs: dict[str, Engine] = {}
        self._restart_at: dict[str, float] = {}
        self._counter = 0
        self._clock = 0.0

    # -- Testbed protocol ------------------------------------------------------------------------

    def info(self) -> TestbedInfo:
        return TestbedInfo(
            name=f"sim:{self.profile.name}",
            max_slots=self.settings.max_slots,
            memory_per_slot=tuple(self.settings.memory_per_slot),
            sample_period=self.settings.sample_period,
            source_parallelism=self.settings.source_parallelism,
            max_source_rate=self.profile.source_max_rate or TestbedInfo.max_source_rate,
            notes=("simulated testbed (stand-in for Flink): see docs/sim.md",),
            reproducible=True,
            operator_memory=True,
            backlog_start=True,
        )

    def query(self, name: str) -> Query:
        if name != self.profile.name:
            raise UserError(f"query: the simulated testbed runs {self.profile.name}, not {name!r}")
        return self._query

    def prepare(self, budget: Budget) -> None:
        self.info().check_budget(budget)
        self._budget = budget

    def start(self, query: str, configuration: Configuration, rate: float, backlog_s: float = 0.0) -> Run:
        """The Testbed protocol's start; ``backlog_s`` > 0 starts the job behind, with that many seconds
        of input at ``rate`` already queued (a restart's backlog), and its source reads them as fast as
        the job accepts, as a replayed Kafka topic would (a strict rate limiter would never drain them)."""
        if not (math.isfinite(backlog_s) and backlog_s >= 0):
            raise UserError(f"backlog: expected a non-negative number of seconds, got {backlog_s}")
        q = self.query(query)
        check_start(self._budget, configuration)
        streams = self._streams_for(configuration.max_parallelism)
        for name, stream in streams.items():
            if configuration[name] > stream.parallelism_limit:
                # Flink refuses to submit such a job: a keyed operator has at most max-parallelism tasks
                raise UserError(f"configuration: {name} is keyed and Flink allows it at most {stream.parallelism_limit:,} "
                                f"tasks (its max parallelism), got {configuration[name]:,}")
        # A run's random draws come from the campaign seed and the run's ordinal in the campaign. A
        # resumed campaign re-runs its recorded steps here (TestbedInfo.reproducible), so every run
        # gets the ordinal, and the draws, it had in the uninterrupted campaign.
        self._counter += 1
        run_id = f"sim-{self._counter}"
        seed = int(np.random.SeedSequence([self.settings.seed, self._counter]).generate_state(1)[0])
        scale = self._speed_scale(configuration, seed)
        engine = Engine(self.profile, configuration, self._budget.memory_mb, seed=seed, dt=self.settings.dt,
                        sample_period=self.settings.sample_period,
                        catch_up=math.inf if backlog_s > 0 else self.settings.catch_up, speed_scale=scale, keyed_streams=streams, noise=self.settings.noise,
                        memory_by_operator=dict(self._budget.memory_by_operator))
        engine.set_rate(rate)
        engine.queue_backlog(backlog_s * rate)
        self._runs[run_id] = engine
        return Run(run_id, q, configuration, self._budget, self._clock, rate)

    def set_rate(self, run: Run, rate: float) -> None:
        if not (math.isfinite(rate) and rate >= 0):
            raise UserError(f"rate: expected a non-negative number of events/s, got {rate}")
        self._engine(run).set_rate(rate)
        run.rate = rate

    def wait(self, run: Run, seconds: float) -> None:
        self._advance(run, seconds)

    def observe(self, run: Run, seconds: float) -> Measurement:
        eng = self._engine(run)
        restarts = eng.restarts
        first = len(eng.samples)
        t0, e0, p0 = eng.time, eng.emitted_total, eng.pending
        self._advance(run, seconds)
        if eng.restarts != restarts:
            raise JobRestarted(f"{run.id}: the job restarted during the observation window")
        s = eng.samples
        # A window shorter than the sample period holds no sample of its own: report the latest one,
        # as Prometheus would return the last scraped value of a gauge.
        idx = slice(first, len(s)) if len(s) > first else slice(max(0, len(s) - 1), len(s))
        if idx.start == idx.stop:
            self._advance(run, self.settings.sample_period)
            idx = slice(first, len(s))
        # The engine reports Flink's units (ms per second); a Measurement holds fractions of time.
        busy = np.mean(s.busy_ms_per_s[idx], axis=0) / MS_PER_S
        bp = np.mean(s.backpressured_ms_per_s[idx], axis=0) / MS_PER_S
        rin = np.mean(s.records_in[idx], axis=0)
        rout = np.mean(s.records_out[idx], axis=0)
        ops = window.operator_metrics(eng.op_names, eng.parallelism, busy, bp, rin, rout)
        ops = window.with_offered(ops, self._edge_shares, {om.operator: om.output_rate for om in ops},
                                  (eng.emitted_total - e0) / max(eng.time - t0, 1e-9))
        ops = state_signals(ops, eng.parallelism, s.cache_hit_rate[idx], s.state_latency_ms[idx])
        return window.measurement(
            start=t0, end=eng.time, target_rate=eng.target_rate,
            # the rate is constant over the window: its offer is exact, free of summation noise
            emitted=eng.emitted_total - e0, offered=eng.target_rate * (eng.time - t0),
            sample_times=s.time[idx], sample_emitted_rates=s.emitted[idx], sample_pending=s.pending[idx],
            pending_start=p0, operators=ops, source_saturated=any(x > 0 for x in s.saturated[idx]),
        )

    def stop(self, run: Run) -> None:
        self._runs.pop(run.id, None)
        self._restart_at.pop(run.id, None)

    def now(self) -> float:
        return self._clock

    # -- Simulation extras (tests and diagnostics) ------------------------------------------------

    def _streams_for(self, max_parallelism: int | None):
        """The key distributions as a job with this max parallelism partitions them (None: the profile's)."""
        if max_parallelism is None or max_parallelism == self.profile.max_parallelism:
            return self._streams
        if max_parallelism not in self._fixed_streams:
            self._fixed_streams[max_parallelism] = keyed_streams(replace(self.profile, max_parallelism=max_parallelism))
        return self._fixed_streams[max_parallelism]

    def engine(self, run: Run) -> Engine:
        """The engine behind a run (its full sample log, for plots and tests)."""
        return self._engine(run)

    def schedule_restart(self, run: Run, after_seconds: float) -> None:
        """Fault injection: the job restarts ``after_seconds`` from now (as after a task failure)."""
        self._restart_at[run.id] = self._engine(run).time + after_seconds

    # ------------------------------------------------------------------------------------------

    def _engine(self, run: Run) -> Engine:
        try:
            return self._runs[run.id]
        except KeyError:
            raise UserError(f"run {run.id} is not running") from None

    def _advance(self, run: Run, seconds: float) -> None:
        if not (math.isfinite(seconds) and seconds >= 0):
            raise UserError(f"duration: expected a non-negative number of seconds, got {seconds}")
        eng = self._engine(run)
        end = eng.time + seconds
        restart = self._restart_at.get(run.id)
        if restart is not None and restart <= end:
            eng.advance(max(0.0, restart - eng.time))
            eng.restart()
            del self._restart_at[run.id]
        eng.advance(end - eng.time)
        self._clock = max(self._clock, run.started_at + eng.time)

    def _speed_scale(self, configuration: Configuration, seed: int) -> float:
        """Analytic profiles: scale task speeds so the best configuration of P slots reaches f(M, P),
        times a per-run noise factor (the run-to-run variation the paper saw)."""
        law = self.profile.analytic
        if law is None:
            return 1.0
        memory = self._budget.memory_mb
        if memory not in self._analytic:
            self._analytic[memory] = AnalyticCapacityModel(self.profile, memory, dt=self.settings.dt)
        scale = self._analytic[memory].speed_scale(configuration.slots)
        if law.noise > 0 and self.settings.noise:
            rng = np.random.default_rng(seed)
            scale *= float(np.exp(law.noise * rng.standard_normal() - 0.5 * law.noise ** 2))
        return scale


def state_signals(ops, parallelism, hit_samples, latency_samples):
    """The operators' metrics with their state signals: the window's mean over samples and tasks of
    the cache hit rate and the state access latency (None for a stateless operator, which reports no
    state metrics, as a Flink operator without keyed state reports no RocksDB metrics)."""
    if not len(hit_samples):
        return ops
    hit, latency = np.mean(hit_samples, axis=0), np.mean(latency_samples, axis=0)
    out, start = [], 0
    for om, p in zip(ops, parallelism):
        h, t = hit[start:start + p], latency[start:start + p]
        start += p
        stateless = bool(np.all(np.isnan(h)))
        out.append(om if stateless else replace(om, cache_hit_rate=float(np.nanmean(h)),
                                                state_latency_ms=float(np.nanmean(t))))
    return tuple(out)


def create(request: TestbedRequest, log: Callable[[str], None] | None = None) -> SimTestbed:
    """The simulated testbed of a campaign (the registry's "sim"): the profile of ``request.query`` (or
    ``request.profile``, which must describe that query), ``request.max_slots`` slots (default
    DEFAULT_MAX_SLOTS), seeded with the campaign's seed."""
    if request.replay is not None:
        raise UserError(f"--input {request.replay.dataset.name}: the simulated testbed models a query profile and "
                        f"replays no data; replay on --testbed flink")
    option, ref = ("--profile", request.profile) if request.profile else ("--query", request.query)
    profile = load_profile(ref, option=option)
    if profile.name != request.query:
        if request.profile:
            raise UserError(f"--profile: {request.profile} describes query {profile.name}, not --query {request.query}")
        raise UserError(f"--query: {request.query} describes query {profile.name}; give --query {profile.name} "
                        f"--profile {request.query}")
    slots = request.max_slots or SimSettings.max_slots
    check_slots(slots, len(profile.operators), query=profile.name, field="--max-slots")
    return SimTestbed(profile, SimSettings(seed=request.seed, max_slots=slots))


def run_once(profile: SimProfile, memory_mb: int, rate: float, seconds: float, *, seed: int = 0,
             configuration: Configuration | None = None, slots: int | None = None):
    """One configuration (default: the capacity model's best of ``slots``, or the single task) run at
    ``rate`` for ``seconds``: (configuration, the window's measurement, the engine's samples)."""
    from .capacity import capacity_model

    query = profile.query()
    if configuration is None:
        configuration, _ = capacity_model(profile, memory_mb).best_configuration(slots or query.size)
    tb = SimTestbed(profile, SimSettings(max_slots=max(configuration.slots, query.size), memory_per_slot=(memory_mb,),
                                         seed=seed))
    tb.info().check_window(seconds, "--duration")
    tb.prepare(Budget(configuration.slots, memory_mb))
    run = tb.start(profile.name, configuration, rate)
    measurement = tb.observe(run, seconds)
    return configuration, measurement, tb.engine(run).samples

"""Validation at production scale (paper section VIII, Fig. 9 and 11).

A plan is run at 100 % of its rate, and at 120 % and 150 %, each after a ramp-up that is not judged.
A run is judged from the achieved/target ratio, its variation between windows, and the slope of
pending records (an ever-increasing pending count is "a clear sign of an under-provisioned
system"). The plan is under-provisioned when 100 % is not sustained, over-provisioned when 120 %
or 150 % is sustained without instability, and right otherwise. A run that fell short because the testbed's own source could not emit its
target judges the source, not the plan (section VIII: sources must never be the limiting factor):
it is "source-limited", and a plan that rests on such a run is "inconclusive".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from .estimator import NO_PHASES, Phases
from ..ledger import Ledger
from ..metrics.window import coefficient_of_variation, slope
from ..model import Budget, Configuration, Measurement
from ..model.catchup import CatchUp
from ..model.slo import (DRAIN_TOLERANCE, MAX_CV, MAX_PENDING_GROWTH, SUSTAINED_RATIO, drain_verdict,
                         mostly_source_saturated, plan_verdict, run_verdict)
from ..model.verdict import (DOES_NOT_DRAIN, DRAINS, INCONCLUSIVE, NO_BASE, NOT_SUSTAINED, OVER, RIGHT, SOURCE_LIMITED,
                             SUSTAINED, UNDER, UNSTABLE)
from ..testbed.base import Testbed

@dataclass(frozen=True)
class ValidationSettings:
    multipliers: tuple[float, ...] = (1.0, 1.2, 1.5)
    ramp_s: float = 300.0
    """The paper: 5 minutes of ramp-up before judging."""
    duration_s: float = 1800.0
    """The paper: 30 minutes (q1, q2, q11), 90 (q5), 120 (q8)."""
    window_s: float = 60.0
    ratio: float = SUSTAINED_RATIO
    """A run is sustained when its achieved/target ratio reaches this."""
    max_cv: float = MAX_CV
    """Above this variation of the per-window ratio, a run that keeps up is unstable."""
    max_pending_growth: float = MAX_PENDING_GROWTH
    """Pending records may grow by at most this fraction of the target rate per second."""


@dataclass
class RunVerdict:
    multiplier: float
    target_rate: float
    ratio: float
    cv: float
    pending_growth: float
    """Slope of pending records over the judged windows, as a fraction of the target rate per second."""
    verdict: str
    windows: list[Measurement] = field(default_factory=list)

    @property
    def source_saturated(self) -> bool:
        """Whether the source could not emit its target in most judged windows."""
        return mostly_source_saturated(self.windows)

    def to_dict(self) -> dict:
        return {"multiplier": self.multiplier, "target_rate": self.target_rate, "ratio": self.ratio, "cv": self.cv,
                "pending_growth": self.pending_growth, "verdict": self.verdict,
                "source_saturated": self.source_saturated, "windows": [w.to_dict() for w in self.windows]}

    @classmethod
    def from_dict(cls, d: dict) -> "RunVerdict":
        return cls(d["multiplier"], d["target_rate"], d["ratio"], d["cv"], d["pending_growth"], d["verdict"],
                   [Measurement.from_dict(w) for w in d["windows"]])


def judge_run(windows: Sequence[Measurement], multiplier: float, settings: ValidationSettings) -> RunVerdict:
    """Verdict of one run from its judged windows (pure)."""
    target = sum(w.target_rate for w in windows) / len(windows)
    achieved = sum(w.achieved_rate for w in windows) / len(windows)
    ratio = achieved / target
    cv = coefficient_of_variation([w.ratio for w in windows])
    times = [w.start for w in windows] + [windows[-1].end]
    pending = [w.pending_start for w in windows] + [windows[-1].pending_end]
    growth = slope(times, pending) / target
    verdict = run_verdict(ratio, cv, growth, mostly_source_saturated(windows), min_ratio=settings.ratio,
                          max_cv=settings.max_cv, max_pending_growth=settings.max_pending_growth)
    return RunVerdict(multiplier, target, ratio, cv, growth, verdict, list(windows))


def judge_plan(runs: Sequence[RunVerdict]) -> str:
    """The plan's verdict from its runs (``model/slo.py:plan_verdict``)."""
    return plan_verdict({r.multiplier: r.verdict for r in runs})


@dataclass
class ValidationReport:
    rate: float
    configuration: Configuration
    memory_mb: int
    runs: list[RunVerdict]
    verdict: str
    drain: DrainVerdict | None = None
    """The catch-up run of a plan sized to drain a backlog (drain_run); None: none run."""

    def to_dict(self) -> dict:
        d = {"rate": self.rate, "slots": self.configuration.slots, "memory_mb": self.memory_mb,
             "configuration": self.configuration.as_dict(), "verdict": self.verdict,
             "runs": [r.to_dict() for r in self.runs]}
        if self.drain is not None:
            d["catch_up"] = self.drain.to_dict()
        return d


def validate(testbed: Testbed, ledger: Ledger, query: str, budget: Budget, configuration: Configuration, rate: float,
             settings: ValidationSettings, key: str = "validate",
             on_run: Callable[[RunVerdict, bool], None] | None = None,
             phases: Phases = NO_PHASES) -> ValidationReport:
    """Run the configuration at each multiple of ``rate``; each run is one ledger step (a phase told to
    ``phases``, its judged windows another)."""
    runs = []
    for mult in settings.multipliers:
        step = f"{key}/{mult:g}x"
        replayed = ledger.has(step)

        def one_run(mult=mult) -> dict:
            testbed.prepare(budget)
            with phases.phase("validation", f"{step}: {mult * 100:g} % of the rate, {rate * mult:,.0f} events/s"):
                run = testbed.start(query, configuration, rate * mult)
                try:
                    testbed.wait(run, settings.ramp_s)
                    windows = []
                    elapsed = 0.0
                    with phases.phase("observation", f"{step}: judged windows at {rate * mult:,.0f} events/s"):
                        while elapsed < settings.duration_s - 1e-9:
                            w = min(settings.window_s, settings.duration_s - elapsed)
                            windows.append(testbed.observe(run, w))
                            elapsed += w
                finally:
                    testbed.stop(run)
            return judge_run(windows, mult, settings).to_dict()

        verdict = RunVerdict.from_dict(ledger.step(step, one_run, rerun=testbed.info().reproducible,
                                                   check=RunVerdict.from_dict))
        runs.append(verdict)
        if on_run:
            on_run(verdict, replayed)
    return ValidationReport(rate, configuration, budget.memory_mb, runs, judge_plan(runs))


# -- catch-up: a run that starts behind and measures the drain time ----------------------------

@dataclass(frozen=True)
class DrainSettings:
    """How the catch-up run observes a backlog draining."""

    window_s: float = 10.0
    """Pending records are read at the end of each window of this length."""
    horizon: float = 2.0
    """Observe up to this many times T, so a drain slower than T is still measured."""
    tolerance: float = DRAIN_TOLERANCE
    """Drained: pending records at most this share of the backlog injected."""
    settle_windows: int = 3
    """Stop early once pending records stayed drained at this many window ends."""


@dataclass
class DrainVerdict:
    backlog_s: float
    within_s: float
    rate: float
    drain_s: float | None
    """Seconds from the start until pending records fell to the tolerance for good; None: not within the run."""
    observed_s: float
    verdict: str
    times: list[float] = field(default_factory=list)
    pending: list[float] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"backlog_s": self.backlog_s, "within_s": self.within_s, "rate": self.rate, "drain_s": self.drain_s,
                "observed_s": self.observed_s, "verdict": self.verdict, "times": self.times, "pending": self.pending}

    @classmethod
    def from_dict(cls, d: dict) -> "DrainVerdict":
        return cls(d["backlog_s"], d["within_s"], d["rate"], d["drain_s"], d["observed_s"], d["verdict"],
                   list(d["times"]), list(d["pending"]))


def judge_drain(times: Sequence[float], pending: Sequence[float], catch_up: CatchUp,
                settings: DrainSettings) -> DrainVerdict:
    """The catch-up run's verdict from its pending records over time (pure): "drains within T" when
    they fell to the tolerance for good no later than T after the start."""
    drained, verdict = drain_verdict(times, pending, backlog_events=catch_up.backlog_events,
                                     within_s=catch_up.within_s, tolerance=settings.tolerance)
    return DrainVerdict(catch_up.backlog_s, catch_up.within_s, catch_up.rate, drained, times[-1] - times[0],
                        verdict, list(times), list(pending))


def drain_run(testbed: Testbed, ledger: Ledger, query: str, budget: Budget, configuration: Configuration,
              catch_up: CatchUp, settings: DrainSettings = DrainSettings(), key: str = "validate/catch-up",
              phases: Phases = NO_PHASES) -> DrainVerdict | None:
    """Start the configuration ``catch_up.backlog_s`` seconds behind at ``catch_up.rate`` (a restart's
    backlog, read as fast as the job accepts) and read pending records until they drain; one ledger
    step. None when the testbed cannot start behind (``TestbedInfo.backlog_start``)."""
    info = testbed.info()
    if not info.backlog_start:
        return None

    def one_run() -> dict:
        testbed.prepare(budget)
        horizon = settings.horizon * catch_up.within_s
        with phases.phase("validation", f"{key}: {catch_up.backlog_s:g} s of backlog at {catch_up.rate:,.0f} events/s, "
                                        f"to drain within {catch_up.within_s:g} s"):
            run = testbed.start(query, configuration, catch_up.rate, backlog_s=catch_up.backlog_s)
            try:
                times, pending, settled = [], [], 0
                tolerance = settings.tolerance * catch_up.backlog_events
                elapsed = 0.0
                while elapsed < horizon - 1e-9 and settled < settings.settle_windows:
                    w = testbed.observe(run, min(settings.window_s, horizon - elapsed))
                    if not times:
                        times.append(w.start)
                        pending.append(w.pending_start)
                    times.append(w.end)
                    pending.append(w.pending_end)
                    settled = settled + 1 if w.pending_end <= tolerance else 0
                    elapsed = w.end - times[0]
            finally:
                testbed.stop(run)
        return judge_drain(times, pending, catch_up, settings).to_dict()

    return DrainVerdict.from_dict(ledger.step(key, one_run, rerun=info.reproducible, check=DrainVerdict.from_dict))

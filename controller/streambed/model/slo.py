"""The service-level rules: when a window, a run and a plan sustained their rate (paper sections IV and VIII).

Every layer judges by these: the Capacity Estimator a window (``window_sustained``), validation a run
(``run_verdict``), a plan (``plan_verdict``) and a catch-up run (``drain_verdict``), the sim's ground truth a rate (``STEADY_SHARE``).
The thresholds are the defaults of their settings (``planner/estimator.py:Timing``,
``planner/validation.py:ValidationSettings``, ``testbed/sim/truth.py:TruthSettings``); the functions
are pure and take the thresholds they apply.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from .catchup import drain_time
from .measurement import Measurement, queued_share
from .verdict import (DOES_NOT_DRAIN, DRAINS, INCONCLUSIVE, NO_BASE, NOT_SUSTAINED, OVER, RIGHT, SOURCE_LIMITED,
                      SUSTAINED, UNDER, UNSTABLE)

SUSTAINED_RATIO = 0.99
"""The paper's test: a window or run sustains its rate when achieved >= this x target (the rate
limiter never exceeds 100 %)."""
STEADY_SHARE = 0.998
"""Steady state: over a long observation the source emits at least this share of its offer (the
estimator's steady test and the sim's ground truth)."""
MAX_CV = 0.05
"""Above this variation of the per-window ratio, a run that keeps up is unstable."""
MAX_PENDING_GROWTH = 0.002
"""Pending records may grow by at most this fraction of the target rate per second in a validated run."""
DRAIN_TOLERANCE = 0.01
"""A catch-up run has drained when its pending records are at most this share of the backlog injected."""


def mostly_source_saturated(windows: Sequence[Measurement]) -> bool:
    """Whether the source could not emit its target in most of ``windows``."""
    return 2 * sum(w.source_saturated for w in windows) > len(windows)


def window_sustained(m: Measurement, *, threshold: float, max_queued: float, span_s: float,
                     observed_s: float, steady_observe_s: float, flat_shortfall: float,
                     steady_share: float) -> bool | None:
    """Whether an observation at one rate sustained it: True, False, or None to observe longer.

    The paper's test first (section IV: achieved >= ``threshold`` x target, and never a window the
    source capped); then nothing may pile up in front of an operator (``queued_share`` within
    ``max_queued``), judged over at least the query's state span ``span_s``;
    then steady state: a flat observation (shortfall within ``flat_shortfall``) passes at once, one
    whose source fell behind is observed until ``steady_observe_s`` and then must keep the shortfall
    within 1 - ``steady_share``. ``steady_observe_s`` <= 0: the paper's rule alone."""
    if m.source_saturated or not m.sustained(threshold):
        return False
    if queued_share(m) > max_queued:
        return None if observed_s + 1e-9 < span_s else False
    if steady_observe_s <= 0 or m.shortfall <= flat_shortfall:
        return True
    if observed_s + 1e-9 < steady_observe_s:
        return None
    return m.shortfall <= 1.0 - steady_share


def run_verdict(ratio: float, cv: float, pending_growth: float, source_saturated: bool, *, min_ratio: float,
                max_cv: float, max_pending_growth: float) -> str:
    """The verdict of one validation run from its achieved/target ``ratio``, the variation ``cv`` of its
    per-window ratios and the slope of its pending records (a fraction of the target per second): an
    ever-increasing pending count is "a clear sign of an under-provisioned system" (section VIII).
    A run that fell short while its source mostly could not emit (``source_saturated``) judges the
    source, not the plan: source-limited."""
    if ratio >= min_ratio and pending_growth <= max_pending_growth:
        return SUSTAINED if cv <= max_cv else UNSTABLE
    if source_saturated:
        return SOURCE_LIMITED
    return NOT_SUSTAINED


def plan_verdict(runs: Mapping[float, str]) -> str:
    """The plan's verdict from its runs' verdicts by rate multiplier (section VIII): "not under-provisioned
    if it sustainably supports the requested rate", "not over-provisioned if, when injecting a higher
    rate, the query shows signs of instability or insufficient capacity".

    * Under-provisioned: 100 % not sustained. A run that keeps up but wavers (unstable) still counts
      as sustained at 100 % (the paper's q5 at 2 GB: instabilities later absorbed).
    * Over-provisioned: a higher rate sustained without instability. An unstable run above 100 % is
      a sign of instability, so it does not make the plan over-provisioned.
    * A source-limited run says nothing about the plan: a verdict that depends on it is inconclusive,
      as is one without a 100 % run that no higher run decides."""
    above = [v for m, v in sorted(runs.items()) if m > 1.0]
    if SUSTAINED in above:
        return OVER  # sustaining more than 100 % sustains 100 %
    base = runs.get(1.0)
    if base is None:
        return NO_BASE
    if base == NOT_SUSTAINED:
        return UNDER
    if base == SOURCE_LIMITED or SOURCE_LIMITED in above:
        return INCONCLUSIVE
    return RIGHT


def drain_verdict(times: Sequence[float], pending: Sequence[float], *, backlog_events: float, within_s: float,
                  tolerance: float) -> tuple[float | None, str]:
    """A catch-up run's drain time and verdict from its pending records over time: it drains within T
    (``within_s``) when they fell to ``tolerance`` x ``backlog_events`` for good no later than T after
    the start (``catchup.drain_time``; None: not within the run)."""
    drained = drain_time(times, pending, tolerance=tolerance * backlog_events)
    return drained, DRAINS if drained is not None and drained <= within_s else DOES_NOT_DRAIN

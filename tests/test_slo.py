"""The service-level rules (model/slo.py): a window, a run and a plan judged by one module."""

import pytest

from streambed.model import Measurement, OperatorMetrics
from streambed.model.slo import (DRAIN_TOLERANCE, MAX_CV, MAX_PENDING_GROWTH, STEADY_SHARE, SUSTAINED_RATIO,
                                 drain_verdict, mostly_source_saturated, plan_verdict, run_verdict, window_sustained)
from streambed.model.verdict import (DOES_NOT_DRAIN, DRAINS, INCONCLUSIVE, NO_BASE, NOT_SUSTAINED, OVER, RIGHT,
                                     SOURCE_LIMITED, SUSTAINED, UNDER, UNSTABLE)
from streambed.planner.estimator import Timing
from streambed.planner.validation import DrainSettings, ValidationSettings
from streambed.testbed.sim.truth import TruthSettings


def window(offered, emitted, seconds, saturated=False, operators=()):
    return Measurement(offered, emitted, 0.0, (offered - emitted) * seconds, 0.0, 0.0, 0.0, seconds,
                       source_saturated=saturated, operators=operators)


RULE = dict(threshold=0.99, max_queued=0.03, span_s=0.0, steady_observe_s=90.0, flat_shortfall=1e-4,
            steady_share=0.998)


def judge(m, observed_s=None, **over):
    return window_sustained(m, observed_s=m.end - m.start if observed_s is None else observed_s, **{**RULE, **over})


def test_a_window_passes_the_papers_test_then_the_steady_share():
    assert judge(window(100, 100, 30)) is True  # flat
    assert judge(window(100, 98.9, 30)) is False  # below 99 %
    assert judge(window(100, 100, 30, saturated=True)) is False  # the source capped it
    assert judge(window(100, 99.5, 30)) is None  # fell behind a little: observe longer
    assert judge(window(100, 99.5, 90)) is False  # and kept falling behind past 0.2 %
    assert judge(window(100, 99.9, 90)) is True  # within the steady share
    assert judge(window(100, 99.5, 30), steady_observe_s=0) is True  # the paper's rule alone


def test_a_window_with_a_queue_inside_the_job_is_observed_over_the_state_span_then_fails():
    busy_b = OperatorMetrics("b", 1, 90, 90, 1.0, 1.0, 0.0, (1.0,), (90,), offered_rate=100)
    queued = window(1000, 1000, 6, operators=(busy_b,))
    assert judge(queued) is False
    assert judge(queued, span_s=12) is None
    assert judge(queued, span_s=12, observed_s=12) is False
    assert judge(queued, max_queued=0.15) is True


@pytest.mark.parametrize("ratio, cv, growth, saturated, expected", [
    (1.0, 0.0, 0.0, False, SUSTAINED),
    (0.99, 0.05, 0.002, False, SUSTAINED),  # every threshold is inclusive
    (1.0, 0.06, 0.0, False, UNSTABLE),
    (0.98, 0.0, 0.0, False, NOT_SUSTAINED),
    (1.0, 0.0, 0.003, False, NOT_SUSTAINED),  # pending records keep growing
    (0.9, 0.0, 0.0, True, SOURCE_LIMITED),
    (1.0, 0.0, 0.0, True, SUSTAINED),  # keeping up says something whatever the source's load
])
def test_run_verdict(ratio, cv, growth, saturated, expected):
    assert run_verdict(ratio, cv, growth, saturated, min_ratio=SUSTAINED_RATIO, max_cv=MAX_CV,
                       max_pending_growth=MAX_PENDING_GROWTH) == expected


def test_most_windows_saturated_is_more_than_half():
    w, s = window(100, 90, 60), window(100, 90, 60, saturated=True)
    assert mostly_source_saturated([s, s, w])
    assert not mostly_source_saturated([s, w])
    assert not mostly_source_saturated([s, w, w])


@pytest.mark.parametrize("runs, expected", [
    ({1.0: NOT_SUSTAINED, 1.2: NOT_SUSTAINED}, UNDER),
    ({1.0: SUSTAINED, 1.2: SUSTAINED, 1.5: NOT_SUSTAINED}, OVER),
    ({1.0: UNSTABLE, 1.2: NOT_SUSTAINED}, RIGHT),
    ({1.0: SOURCE_LIMITED, 1.2: NOT_SUSTAINED}, INCONCLUSIVE),
    ({1.0: SUSTAINED, 1.2: SOURCE_LIMITED, 1.5: NOT_SUSTAINED}, INCONCLUSIVE),
    ({1.0: SUSTAINED, 1.2: UNSTABLE, 1.5: NOT_SUSTAINED}, RIGHT),
    ({1.2: SUSTAINED}, OVER),
    ({1.2: NOT_SUSTAINED}, NO_BASE),
])
def test_plan_verdict(runs, expected):
    assert plan_verdict(runs) == expected


def test_a_catch_up_run_drains_when_its_backlog_falls_to_the_tolerance_for_good_within_t():
    times = [0, 10, 20, 30, 40, 50]
    rule = dict(backlog_events=10_000, tolerance=0.01)
    assert drain_verdict(times, [10_000, 6_000, 2_000, 100, 50, 0], within_s=30, **rule) == (30, DRAINS)
    assert drain_verdict(times, [10_000, 6_000, 2_000, 100, 50, 0], within_s=20, **rule) == (30, DOES_NOT_DRAIN)
    # drained once, then fell behind again: not drained
    assert drain_verdict(times, [10_000, 50, 3_000, 4_000, 5_000, 6_000], within_s=60, **rule) == (None, DOES_NOT_DRAIN)


def test_every_judge_defaults_to_the_shared_thresholds():
    timing = Timing("t", 1, 1, 1, 1, 1, 1)
    assert (timing.threshold, timing.steady_threshold) == (SUSTAINED_RATIO, STEADY_SHARE)
    v = ValidationSettings()
    assert (v.ratio, v.max_cv, v.max_pending_growth) == (SUSTAINED_RATIO, MAX_CV, MAX_PENDING_GROWTH)
    assert TruthSettings().threshold == STEADY_SHARE
    assert DrainSettings().tolerance == DRAIN_TOLERANCE

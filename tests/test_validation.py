"""Validation at production scale (paper section VIII): run verdicts and the plan's verdict."""

import pytest

from streambed.ledger import Ledger
from streambed.model import Budget, Configuration, Measurement
from streambed.testbed.sim.profile import parse_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed
from streambed.planner.validation import (INCONCLUSIVE, NO_BASE, NOT_SUSTAINED, OVER, RIGHT, SOURCE_LIMITED, SUSTAINED, UNDER,
                                  UNSTABLE, RunVerdict, ValidationSettings, judge_plan, judge_run, validate)

S = ValidationSettings()


def windows(ratios, target=1000.0, pending_growth=0.0, length=60.0, source_saturated=False):
    out, pending = [], 0.0
    for i, r in enumerate(ratios):
        start = i * length
        new = pending + pending_growth * target * length
        out.append(Measurement(target, r * target, pending, new, pending_growth * target, 0.0, start, start + length,
                               source_saturated=source_saturated))
        pending = new
    return out


def test_run_verdicts():
    assert judge_run(windows([1.0] * 10), 1.0, S).verdict == SUSTAINED
    assert judge_run(windows([1.0, 0.9, 1.0, 1.1] * 3), 1.0, S).verdict == UNSTABLE  # keeps up, but jumps about
    assert judge_run(windows([0.9] * 10), 1.0, S).verdict == NOT_SUSTAINED
    growing = judge_run(windows([0.995] * 10, pending_growth=0.005), 1.0, S)
    assert growing.verdict == NOT_SUSTAINED and growing.pending_growth == pytest.approx(0.005)


def test_a_run_the_source_could_not_feed_judges_the_source_not_the_plan():
    capped = judge_run(windows([0.9] * 10, source_saturated=True), 1.2, S)
    assert capped.verdict == SOURCE_LIMITED and capped.source_saturated
    # a run that keeps up is sustained whatever the source's load
    assert judge_run(windows([1.0] * 10, source_saturated=True), 1.0, S).verdict == SUSTAINED
    # one saturated window of ten does not make the run source-limited
    mixed = windows([0.9] * 9) + windows([0.9], source_saturated=True)
    assert judge_run(mixed, 1.0, S).verdict == NOT_SUSTAINED


def verdict(v, m):
    return RunVerdict(m, 1000.0, 1.0, 0.0, 0.0, v)


def test_plan_verdicts():
    assert judge_plan([verdict(NOT_SUSTAINED, 1.0), verdict(NOT_SUSTAINED, 1.2)]) == UNDER
    assert judge_plan([verdict(SUSTAINED, 1.0), verdict(SUSTAINED, 1.2), verdict(NOT_SUSTAINED, 1.5)]) == OVER
    assert judge_plan([verdict(UNSTABLE, 1.0), verdict(NOT_SUSTAINED, 1.2), verdict(NOT_SUSTAINED, 1.5)]) == RIGHT
    # source-limited runs: the verdict stands only where it does not depend on them
    assert judge_plan([verdict(SOURCE_LIMITED, 1.0), verdict(NOT_SUSTAINED, 1.2)]) == INCONCLUSIVE
    assert judge_plan([verdict(SUSTAINED, 1.0), verdict(SOURCE_LIMITED, 1.2), verdict(NOT_SUSTAINED, 1.5)]) \
        == INCONCLUSIVE
    assert judge_plan([verdict(SUSTAINED, 1.0), verdict(SUSTAINED, 1.2), verdict(SOURCE_LIMITED, 1.5)]) == OVER
    # instability at a higher rate is a sign the plan is not over-provisioned (section VIII)
    assert judge_plan([verdict(SUSTAINED, 1.0), verdict(UNSTABLE, 1.2), verdict(NOT_SUSTAINED, 1.5)]) == RIGHT
    assert judge_plan([verdict(SUSTAINED, 1.0), verdict(UNSTABLE, 1.2), verdict(SUSTAINED, 1.5)]) == OVER
    # without a 100 % run: a higher rate sustained still decides; otherwise nothing does
    assert judge_plan([verdict(SUSTAINED, 1.2), verdict(SUSTAINED, 1.5)]) == OVER
    assert judge_plan([verdict(NOT_SUSTAINED, 1.2), verdict(NOT_SUSTAINED, 1.5)]) == NO_BASE


@pytest.mark.parametrize("fraction, expected", [(0.95, RIGHT), (0.6, OVER), (1.15, UNDER)])
def test_validate_on_the_sim(tmp_path, fraction, expected):
    prof = parse_profile({"name": "toy", "operators": [
        {"name": "m", "kind": "map", "rate": 1e7, "inputs": [{"from": "source"}]},
        {"name": "agg", "kind": "aggregate", "rate": 50_000, "keys": {"count": 100_000, "zipf": 0},
         "inputs": [{"from": "m", "partitioning": "hash"}]},
        {"name": "s", "kind": "sink", "rate": 1e7, "inputs": [{"from": "agg"}]}]}, "toy.yaml")
    tb = SimTestbed(prof, SimSettings(noise=True, seed=2, max_slots=1000))
    cfg = Configuration.of(prof.query(), {"m": 1, "agg": 8, "s": 1})
    capacity = 8 * 50_000 * 128 / (8 * 16)  # 8 tasks x 16 of 128 key groups each: even
    settings = ValidationSettings(ramp_s=60, duration_s=600, window_s=60)
    with Ledger.open(tmp_path, "v", {}, resume=False) as ledger:
        report = validate(tb, ledger, "toy", Budget(cfg.slots, 4096), cfg, fraction * capacity, settings)
    assert report.verdict == expected
    assert [r.multiplier for r in report.runs] == [1.0, 1.2, 1.5]

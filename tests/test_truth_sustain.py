"""The truth's sustain rule: a backlog that grows over the run falls behind; the swing of window bursts does not."""

import math
from dataclasses import replace

import numpy as np
import pytest

from streambed.model import Configuration
from streambed.testbed.sim.profile import parse_profile
from streambed.testbed.sim.truth import GroundTruth, TruthSettings, backlog_growth, observation_s

DT = 0.1


def sawtooth(slide_s: float, seconds: float, amplitude: float, phase_s: float = 0.0) -> np.ndarray:
    """A backlog that jumps by ``amplitude`` at each firing and drains linearly until the next one
    (in whole steps, as the engine fires)."""
    period = round(slide_s / DT)
    k = np.arange(round(seconds / DT) + 1) + round(phase_s / DT)
    return amplitude * (1.0 - np.mod(k, period) / period)


# -- backlog_growth: synthetic series ----------------------------------------------------------------


@pytest.mark.parametrize("phase", [0.0, 0.4, 1.1, 1.9])
@pytest.mark.parametrize("seconds", [60.0, 61.1, 62.2])
def test_the_swing_of_a_window_that_keeps_up_is_not_growth(phase, seconds):
    y = sawtooth(2.3, seconds, 1e6, phase)
    # the end-minus-start rule reads up to the whole swing, depending on where the run ends
    assert backlog_growth(y, DT, [2.3]) == pytest.approx(0.0, abs=0.01 * 1e6)


def test_the_swing_hides_the_old_rule_s_answer():
    """The same series read at its ends grows or shrinks by most of a burst: the reason for the trend."""
    ends = [sawtooth(2.3, s, 1e6)[-1] - sawtooth(2.3, s, 1e6)[0] for s in (60.0, 61.1, 62.2)]
    assert max(ends) - min(ends) > 0.5e6


@pytest.mark.parametrize("phase", [0.0, 0.7, 1.5])
def test_a_backlog_that_grows_under_the_swing_is_counted(phase):
    seconds, growth_per_s = 61.1, 3_000.0  # a fraction of the swing per slide, invisible in any one slide
    y = sawtooth(2.3, seconds, 1e6, phase) + growth_per_s * np.arange(round(seconds / DT) + 1) * DT
    assert backlog_growth(y, DT, [2.3]) == pytest.approx(growth_per_s * seconds, rel=0.05)


def test_two_windows_swings_are_both_removed():
    y = sawtooth(2.0, 120.0, 1e6, 0.3) + sawtooth(9.3, 120.0, 3e6, 4.0)
    assert abs(backlog_growth(y, DT, [9.3, 2.0])) < 1e-6 * 3e6
    assert abs(backlog_growth(y, DT, [9.3])) > 5e-5 * 1e6  # the short window's swing leaks without its own average


def test_without_windows_the_growth_is_the_trend():
    t = np.arange(601) * DT
    assert backlog_growth(5e4 + 2e3 * t, DT) == pytest.approx(2e3 * 60.0)
    assert backlog_growth(np.full(601, 7e5), DT) == pytest.approx(0.0, abs=1e-6)
    assert backlog_growth(9e5 - 1e3 * t, DT) == pytest.approx(-1e3 * 60.0)  # the caller ignores a drain


def test_an_observation_shorter_than_a_slide_is_refused():
    with pytest.raises(ValueError, match="slide"):
        backlog_growth(np.zeros(20), DT, [2.3])


def test_the_observation_covers_whole_periods_of_the_longest_slide():
    assert observation_s(300.0, [], DT) == pytest.approx(300.0)
    assert observation_s(300.0, [9.3, 2.3], DT) == pytest.approx(33 * 9.3)
    assert observation_s(100.0, [60.0, 40.0], DT) == pytest.approx(300.0)  # 3 x (60 + 40), whole minutes


# -- the rule on the sim: a window bursting into a slow operator --------------------------------------

SLOW_RATE = 4e5
SELECTIVITY = 0.5
NEEDED = SLOW_RATE / SELECTIVITY
"""The source rate at which the slow operator is busy all the time: the job's capacity without stragglers."""
FAST = TruthSettings(warmup_s=40, ramp_s=10, observe_s=60)
PHASES = [(60.0, 10.0), (61.1, 10.0), (62.2, 11.3), (61.1, 11.3)]
"""(observation, ramp) pairs: where in its slide the observation starts and ends."""


def bursty(stragglers: bool):
    """A sliding window whose results arrive downstream in one burst every 2.3 s, into a single slow task
    that needs most of a slide to work through them."""
    window = {"size_s": 9.2, "slide_s": 2.3, "fire_cost_us": 0.2, "straggler_mean": 0.0}
    if stragglers:  # firings straggle, but the window has the slack to catch up before the next one
        window.update(straggler_mean=0.2, straggler_tail=2.0)
    profile = parse_profile({"name": "bursty", "operators": [
        {"name": "m", "kind": "map", "rate": 2e6, "inputs": [{"from": "source"}]},
        {"name": "w", "kind": "window", "rate": 4e6, "keys": {"count": 100_000, "zipf": 0}, "window": window,
         "inputs": [{"from": "m", "partitioning": "hash"}]},
        {"name": "slow", "kind": "map", "rate": SLOW_RATE, "inputs": [{"from": "w", "selectivity": SELECTIVITY}]},
        {"name": "s", "kind": "sink", "rate": 1e7, "inputs": [{"from": "slow"}]},
    ]}, "bursty.yaml")
    return profile, Configuration.of(profile.query(), {"m": 1, "w": 1, "slow": 1, "s": 1})


def verdicts(profile, config, rate: float) -> list[bool]:
    out = []
    for observe, ramp in PHASES:
        gt = GroundTruth(profile, replace(FAST, observe_s=observe, ramp_s=ramp))
        out.append(gt._sustains(gt._warmed(config, 4096, 0.95 * rate), rate))
    return out


def end_minus_start(profile, config, rate: float, observe: float, ramp: float) -> float:
    """The former rule's reading: the backlog at the observation's end less at its start."""
    gt = GroundTruth(profile, FAST)
    eng = gt._warmed(config, 4096, 0.95 * rate)
    eng.set_rate(rate)
    eng.advance(ramp)
    b0 = eng.backlog
    eng.advance(observe)
    return eng.backlog - b0


def test_a_bursty_window_that_keeps_up_is_sustained_wherever_the_observation_ends():
    profile, config = bursty(stragglers=False)
    rate = 0.97 * NEEDED
    assert verdicts(profile, config, rate) == [True] * len(PHASES)
    # the swing is real: read at its ends, some observation piles up more than the 0.2 % allowed
    piled = [end_minus_start(profile, config, rate, o, r) for o, r in PHASES]
    assert max(piled) > 0.002 * rate * 60.0


def test_a_slightly_overloaded_window_job_is_not_sustained_wherever_the_observation_ends():
    """The slow operator at 0.97 of the capacity the rate needs."""
    profile, config = bursty(stragglers=False)
    assert verdicts(profile, config, NEEDED / 0.97) == [False] * len(PHASES)


def test_a_window_with_straggling_firings_that_keeps_up_is_sustained_wherever_the_observation_ends():
    """A straggling firing blocks the window task, and the paper's rate limiter loses what the source
    could not emit meanwhile: stragglers lower the MST well below the slow operator's bound. Below that
    MST the swings of the bursts and of the stragglers do not count, wherever the observation ends."""
    profile, config = bursty(stragglers=True)
    gt = GroundTruth(profile, FAST)
    mst = gt.engine_mst(config, 4096, gt.model(4096).capacity(config).mst)
    assert mst < 0.8 * NEEDED
    assert verdicts(profile, config, 0.97 * mst) == [True] * len(PHASES)
    piled = [end_minus_start(profile, config, 0.97 * mst, o, r) for o, r in PHASES]
    assert max(piled) > 0.002 * 0.97 * mst * 60.0

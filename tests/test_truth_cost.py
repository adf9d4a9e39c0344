"""What makes the ground truth cheaper must not change its answers: an observation refused early, the
budget searched without measuring its MST, the truths of other key groups built once."""

import pytest

from streambed.model import keygroups
from streambed.testbed.sim import truth as truth_module
from streambed.testbed.sim.engine import Engine
from streambed.testbed.sim.operator_memory import OperatorMemoryTruth
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.truth import GroundTruth, TruthSettings, observation_lost

FAST = TruthSettings(observe_s=120, ramp_s=20, warmup_s=40, sensibility=0.005)


# -- observation_lost ---------------------------------------------------------------------------------

def test_an_observation_whose_deficit_no_longer_fits_the_threshold_is_lost():
    # 1,000 events offered over the whole observation, 100 so far of which 90 emitted: at most 990
    assert observation_lost(90.0, 100.0, 1000.0, 1.0, 0.998)
    assert not observation_lost(99.0, 100.0, 1000.0, 1.0, 0.998)  # at most 999: still possible


def test_an_observation_that_ends_exactly_at_the_threshold_is_not_lost():
    assert not observation_lost(98.0, 100.0, 1000.0, 1.0, 0.98)


def test_catch_up_lets_the_source_make_up_a_deficit():
    assert observation_lost(50.0, 100.0, 1000.0, 1.0, 0.998)
    assert not observation_lost(50.0, 100.0, 1000.0, 1.2, 0.998)
    assert not observation_lost(0.0, 999.0, 1000.0, float("inf"), 0.998)


def test_nothing_offered_is_not_decided_early():
    assert not observation_lost(0.0, 0.0, 0.0, 1.0, 0.998)


# -- an early refusal gives the whole observation's verdict ------------------------------------------

class WholeObservation(GroundTruth):
    """The truth as it was before observations could end early."""

    def _sustains(self, warmed, rate):
        original = truth_module.observation_lost
        truth_module.observation_lost = lambda *args: False
        try:
            return super()._sustains(warmed, rate)
        finally:
            truth_module.observation_lost = original


@pytest.mark.parametrize("name,slots", [("q8", 12), ("q11", 8)])
def test_the_mst_is_the_same_with_and_without_early_refusals(name, slots):
    profile = load_profile(name)
    early, whole = GroundTruth(profile, FAST), WholeObservation(profile, FAST)
    assert early.true_mst(slots, 4096).mst == whole.true_mst(slots, 4096).mst


def test_a_rate_far_beyond_the_mst_is_refused_after_a_few_seconds(monkeypatch):
    gt = GroundTruth(load_profile("q1"), FAST)
    config, cap = gt.model(4096).best_configuration(4)
    steps = []
    advance = Engine.advance
    monkeypatch.setattr(Engine, "advance", lambda self, seconds: (steps.append(seconds), advance(self, seconds))[1])
    assert not gt._sustains(gt._warmed(config, 4096, 2 * cap.mst), 2 * cap.mst)
    observed = sum(steps[2:])  # after the warm-up and the ramp
    assert observed < 0.1 * FAST.observe_s


# -- the budget without its MST -----------------------------------------------------------------------

def test_min_budget_is_min_slots_without_the_measurement():
    gt = GroundTruth(load_profile("q11"), FAST)
    slots, configuration = gt.min_budget(1.0e6, 4096)
    found_slots, truth = gt.min_slots(1.0e6, 4096)
    assert (slots, configuration) == (found_slots, truth.configuration)


def test_least_budget_is_least_slots_without_the_measurement():
    gt = GroundTruth(load_profile("q11"), FAST)
    slots, configuration = gt.least_budget(3.0e6, 4096)
    found_slots, truth = gt.least_slots(3.0e6, 4096)
    assert (slots, configuration) == (found_slots, truth.configuration)
    assert configuration.max_parallelism == keygroups.MAX_MAX_PARALLELISM
    # the truth of the least budget is measured with the key groups it was found with
    assert truth.mst == gt.with_max_parallelism(keygroups.MAX_MAX_PARALLELISM).true_mst(slots, 4096).mst


def test_min_budget_reports_a_rate_no_budget_reaches():
    gt = GroundTruth(load_profile("q5"), TruthSettings(max_slots=200, observe_s=60, ramp_s=10, warmup_s=20))
    assert gt.min_budget(1e9, 4096) is None
    assert gt.least_budget(1e9, 4096) is None


# -- truths of other key groups, built once ---------------------------------------------------------------

def test_the_truth_of_other_key_groups_is_built_once_per_max_parallelism():
    gt = GroundTruth(load_profile("q11"), FAST)
    fine = gt.with_max_parallelism(32768)
    assert fine is gt.with_max_parallelism(32768)
    assert fine.profile.max_parallelism == 32768 and fine.settings == gt.settings
    other = gt.with_max_parallelism(4096)  # another input misses the cache
    assert other is not fine and other.profile.max_parallelism == 4096
    assert gt.with_max_parallelism(gt.profile.max_parallelism) is gt


def test_a_truth_with_memory_per_operator_keeps_it_for_other_key_groups():
    gt = OperatorMemoryTruth(load_profile("q11"), {"GroupWindowAggregate#2": 512}, FAST)
    fine = gt.with_max_parallelism(32768)
    assert isinstance(fine, OperatorMemoryTruth) and fine.memory_by_operator == gt.memory_by_operator


# -- the engine's shortcut: only window tasks queue bursts ---------------------------------------------------

def test_only_window_tasks_ever_hold_an_undelivered_burst():
    """The engine tests every task's burst queue against its hold level without masking window tasks:
    that is right only while every other task's queue stays exactly empty."""
    profile = load_profile("q8")
    gt = GroundTruth(profile, FAST)
    config, cap = gt.model(4096).best_configuration(20)
    engine = Engine(profile, config, 4096, seed=1)
    engine.set_rate(1.2 * cap.mst)
    bursts = False
    for _ in range(600):
        engine.advance(0.1)
        assert not engine.emit_queue[~engine.is_window].any()
        bursts = bursts or bool(engine.emit_queue[engine.is_window].any())
    assert bursts  # the windows did fire and queue their results


# -- section G's target basis, measured once per profile and truth settings ----------------------------------

class CountingTruth:
    """A ground truth's face as testbed_basis sees it: counts its measurements."""

    def __init__(self, profile, settings):
        self.profile, self.settings, self.measured = profile, settings, 0

    def true_mst(self, slots, memory_mb):
        self.measured += 1
        return type("Truth", (), {"mst": 1234567.891011 + slots + memory_mb / 7})()


def test_the_basis_is_measured_once_and_read_back_exactly(tmp_path):
    from dataclasses import replace

    from evaluate import testbed_basis

    profile = load_profile("q11")
    first = CountingTruth(profile, FAST)
    value = testbed_basis(first, tmp_path)
    second = CountingTruth(profile, FAST)  # another case's process: a new truth, the same inputs
    assert testbed_basis(second, tmp_path) == value and second.measured == 0
    changed_profile = CountingTruth(replace(profile, max_parallelism=4096), FAST)
    testbed_basis(changed_profile, tmp_path)
    changed_settings = CountingTruth(profile, replace(FAST, observe_s=121))
    testbed_basis(changed_settings, tmp_path)
    assert changed_profile.measured == 1 and changed_settings.measured == 1  # other inputs miss it
    uncached = CountingTruth(profile, FAST)
    testbed_basis(uncached)
    assert uncached.measured == 1

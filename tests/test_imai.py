"""Imai et al.'s MST models (planner/imai.py): the two fits, the flat after the peak, Algorithm 1's
validation points, the model choice, Phase 1's training subset, and the planner on testbeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fake_testbed import FakeTestbed

from streambed.errors import UserError
from streambed.model import Configuration, Query
from streambed.planner import PLANNERS, PlanningRequest, planner_named
from streambed.planner.imai import (Fit, fit_model1, fit_model2, intersections, mape, scale_offset, select_model,
                                    smallest_scale, training_slots, training_subset, validation_points)
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed
from streambed.testbed.sim.truth import GroundTruth, TruthSettings

SCALES = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]


# -- the models ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("weights", [(0.01, 2.0, 0.0005, 0.00001), (0.0, 1.5, 0.0, 0.0), (0.2, 0.0, 0.003, 0.0)])
def test_model1_fit_recovers_known_coefficients(weights):
    msts = Fit(1, weights, "paper").raw(np.array(SCALES, dtype=float))
    fit = fit_model1(SCALES, msts, "paper")
    assert fit.model == 1
    assert np.allclose(fit.weights, weights, rtol=1e-6, atol=1e-9)


def test_model1_with_ernests_terms_recovers_a_log_term():
    weights = (0.01, 1.0, 0.02, 0.0)  # 1, 1/m, log m, m
    msts = Fit(1, weights, "ernest").raw(np.array(SCALES, dtype=float))
    assert np.allclose(fit_model1(SCALES, msts, "ernest").weights, weights, rtol=1e-6, atol=1e-9)
    assert fit_model1(SCALES, msts).terms == "ernest"  # the default


@pytest.mark.parametrize("weights", [(5.0, 3.0, 0.01), (0.0, 100.0, 0.0), (40.0, 0.0, 0.0)])
def test_model2_fit_recovers_known_coefficients(weights):
    msts = Fit(2, weights).raw(np.array(SCALES, dtype=float))
    assert np.allclose(fit_model2(SCALES, msts).weights, weights, rtol=1e-6, atol=1e-9)


def test_fits_keep_every_weight_non_negative():
    # a falling MST pulls an unconstrained fit's growth term below 0; NNLS keeps it at 0
    msts = [100.0, 90.0, 80.0, 70.0]
    for fit in (fit_model1([1, 2, 3, 4], msts), fit_model2([1, 2, 3, 4], msts)):
        assert all(w >= 0 for w in fit.weights)


def test_the_prediction_is_flat_after_the_peak():
    two = Fit(2, (0.0, 10.0, 0.1))  # 10 m - 0.1 m^2 peaks at m = 50
    assert two.peak() == pytest.approx(50.0)
    assert two.raw(80) < two.raw(50)
    assert float(two.predict(80)) == pytest.approx(float(two.raw(50)))
    one = Fit(1, (0.0, 4.0, 0.01, 0.0), "paper")  # time 4/m + 0.01 m is least at m = sqrt(400) = 20
    assert one.peak() == pytest.approx(20.0, rel=1e-4)
    assert float(one.predict(1000)) == pytest.approx(float(one.raw(20.0)), rel=1e-6)
    log = Fit(1, (0.0, 4.0, 0.01, 0.0), "ernest")  # time 4/m + 0.01 log m is least at m = 4 / 0.01 = 400
    assert log.peak() == pytest.approx(400.0, rel=1e-4)
    m = np.arange(1, 300)
    for fit in (one, two):
        assert np.all(np.diff(fit.predict(m)) >= -1e-9)
    assert Fit(2, (1.0, 2.0, 0.0)).peak() == math.inf


# -- Algorithm 1 -------------------------------------------------------------------------------------

def test_validation_starts_after_the_training_range_where_the_models_diverge():
    linear = Fit(2, (0.0, 10.0, 0.0))       # 10 m
    saturating = Fit(1, (0.001, 0.1, 0.0, 0.0))  # 10 m / (1 + 0.01 m): d(m) = 0.01 m
    assert intersections(saturating, linear, 1, 200) == []
    assert validation_points(saturating, linear, [1, 2, 4], max_m=200, tau=0.105) == [11]
    assert validation_points(saturating, linear, [1, 2, 4], max_m=200, tau=0.505) == [51]
    assert validation_points(saturating, linear, [1, 2, 4], max_m=40, tau=0.505) == []


def test_validation_searches_again_after_each_crossing():
    curved = Fit(2, (2.0, 10.0, 0.05))  # crosses 10 m at m = sqrt(40) = 6.3, then falls behind
    linear = Fit(1, (0.0, 0.1, 0.0, 0.0))  # 10 m
    assert intersections(curved, linear, 1, 50) == [7]
    # from 5 to 6 they differ by under 2 %; after the crossing, d(m) = (0.05 m^2 - 2) / (2 + 10 m - 0.05 m^2)
    # first passes 0.10 at m = 21 (0.1056; 0.099 at 20)
    assert validation_points(curved, linear, [1, 2, 4], max_m=50, tau=0.10) == [21]


def test_the_model_with_the_lower_validation_error_is_chosen_else_the_training_error_decides():
    one, two = Fit(1, (0.0, 0.1, 0.0, 0.0)), Fit(2, (5.0, 9.0, 0.0))
    training = ([1, 2, 3], [14.0, 23.0, 32.0])  # Model 2 fits these exactly
    assert select_model([one, two], training, ([], [])) == (two, "training")
    assert select_model([one, two], training, ([40], [400.0])) == (one, "validation")


# -- training scales ---------------------------------------------------------------------------------

def test_phase1_scores_a_subset_by_the_rmse_of_both_models_on_the_other_scales():
    # Linear applications: any subset of 1-4 fits both models exactly, so the error is the spread of the
    # samples at 6 (1.1 and 0.9 x the line): normalised by 1.1 x the line there, +-0.1/1.1 on each of
    # them, and 0 at the scale of 1-4 left out: RMSE = sqrt(2 (0.1/1.1)^2 / 4) = (0.1/1.1) / sqrt(2).
    scales = [1, 2, 3, 4, 6]
    samples = {app: {m: [k * m * 1.1, k * m * 0.9] if m == 6 else [k * m, k * m] for m in scales}
               for app, k in (("a", 1.0), ("b", 2.5))}
    subset, score = training_subset(samples, size=3, max_train=4)
    assert set(subset) <= {1, 2, 3, 4} and len(subset) == 3
    assert score == pytest.approx(0.1 / 1.1 / math.sqrt(2), rel=1e-6)
    with pytest.raises(UserError, match=r"^training: 2 scales up to 2, fewer than the 3 asked$"):
        training_subset(samples, size=3, max_train=2)


def test_phase1_prefers_the_scales_that_show_a_saturation():
    # MST = min(m, 4): trained on 1-3 alone both models keep rising, trained with 4 or 6 they flatten
    scales = [1, 2, 3, 4, 6, 8, 12]
    samples = {"a": {m: [float(min(m, 4))] for m in scales}}
    subset, _ = training_subset(samples, size=3, max_train=6)
    assert max(subset) >= 4


def test_training_slots_take_one_slot_per_operator_at_least_and_the_testbed_at_most():
    assert training_slots((6, 8, 12, 16, 48), operators=2, max_slots=48) == (6, 8, 12, 16, 48)
    assert training_slots((6, 8, 12, 16, 48), operators=9, max_slots=48) == (9, 12, 16, 48)
    assert training_slots((6, 8, 12, 16, 48), operators=9, max_slots=20) == (9, 12, 16, 20)
    assert scale_offset("spare", 9) == 8 and scale_offset("slots", 9) == 0


def test_the_smallest_scale_reaching_a_rate_and_none_above_the_peak():
    linear = Fit(2, (0.0, 10.0, 0.0))
    assert smallest_scale(linear, 95.0, 1, 1000) == 10
    assert smallest_scale(linear, 5.0, 3, 1000) == 3
    peaked = Fit(2, (0.0, 10.0, 0.1))  # peaks at 250 events/s at m = 50
    assert smallest_scale(peaked, 250.0, 1, 1000) == 50
    assert smallest_scale(peaked, 251.0, 1, 1000) is None


# -- the planner -------------------------------------------------------------------------------------

CHAIN = Query("chain", ("parse", "agg", "sink"), (("source", "parse"), ("parse", "agg"), ("agg", "sink")))
QUICK = {"timing": "quick"}


def saturating(cfg, memory):
    """10,000 events/s per spare slot at first, levelling off at 400,000 (Model 1's shape)."""
    x = cfg.slots - 2
    return 1.0 / (1.0 / (10_000.0 * x) + 1.0 / 400_000.0)


def test_imai_is_registered():
    assert PLANNERS["imai"] == "imai:Imai"
    assert planner_named("imai").name == "imai"


def test_a_saturating_job_validates_beyond_the_training_range_and_chooses_model1():
    tb = FakeTestbed(CHAIN, capacity=saturating, max_slots=200)
    request = PlanningRequest("chain", 200_000.0, options=QUICK)
    planner = planner_named("imai")
    ev = planner.explore(tb, request)
    assert [m for m, _ in ev.training] == [6, 8, 12, 16, 48]
    assert ev.validation and all(m > 48 for m, _ in ev.validation)
    assert ev.chosen.model == 1 and ev.decided_by == "validation"
    sizing = planner.plan(ev, request)
    assert sizing.measurements == 5 + len(ev.validation) + 1  # and the single-task run of the policy
    assert sizing.slots is not None and saturating(type("C", (), {"slots": sizing.slots})(), 0) >= 200_000.0
    assert sum(sizing.configuration.values()) == sizing.slots
    far = planner.plan(ev, PlanningRequest("chain", 390_000.0, options=QUICK))
    assert far.slots is None and far.unreachable.startswith("Model 1 peaks at")


def test_on_the_sim_a_linear_query_gets_a_plan_its_truth_sustains():
    profile = load_profile("q1")
    tb = SimTestbed(profile, SimSettings(max_slots=64))
    rate = 2.0e7
    request = PlanningRequest("q1", rate, options=QUICK)
    planner = planner_named("imai")
    ev = planner.explore(tb, request)
    sizing = planner.plan(ev, request)
    truth = GroundTruth(profile, TruthSettings(warmup_s=30, observe_s=60)).configuration_mst(Configuration.of(tb.query("q1"), sizing.configuration),
                                                   sizing.memory_mb)
    assert rate <= truth.mst <= 1.5 * rate
    assert mape(ev.chosen, [m - ev.shift for m, _ in ev.training], [y for _, y in ev.training]) < 10.0


@pytest.mark.parametrize("options, message", [
    ({"tau": -1}, r"^options: imai option tau: expected a number > 0, got -1$"),
    ({"model1_terms": "cubic"}, r"^options: imai option model1_terms: expected one of ernest, paper, got 'cubic'$"),
    ({"training": "6,eight"}, r"^options: imai option training: expected an integer >= 1, got 'eight'$"),
    ({"training": {"a": 1}}, r"^options: imai option training: expected a list of slot counts such as 6,8,12,16,48, got"),
    ({"max_slots": 500}, r"^options: imai option max_slots: expected 3 to 16 \(.*\), got 500$"),
    ({"training": [5]}, r"^options: imai option training: chain needs at least two distinct slot counts"),
    ({"speed": 2}, r"^options: imai has no option 'speed' \(expected one of .*tau.*\)$"),
])
def test_bad_options_are_one_line_naming_the_option(options, message):
    tb = FakeTestbed(CHAIN, capacity=saturating)
    with pytest.raises(UserError, match=message):
        planner_named("imai").explore(tb, PlanningRequest("chain", 1e5, options={**QUICK, **options}))

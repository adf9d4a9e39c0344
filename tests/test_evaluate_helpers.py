"""The pure helpers of bench/evaluate.py: section B's noise sweep and section D's configuration text."""

import argparse
import importlib.util
import math

import pytest

from conftest import REPO
from streambed.model import Configuration
from streambed.testbed.sim.profile import load_profile


def _load_evaluate():
    spec = importlib.util.spec_from_file_location("bench_evaluate", REPO / "bench" / "evaluate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


evaluate = _load_evaluate()


def test_noise_levels_are_percentages_and_shipped_stands_for_the_profiles_own():
    assert evaluate.parse_noise_levels("0, 0.5,1 %,shipped") == [0.0, 0.005, 0.01, None]
    assert evaluate.parse_noise_levels(evaluate.DEFAULT_NOISE)[-1] is None


@pytest.mark.parametrize("text", ["", "a", "-1", "100", "nan", "1,,2"])
def test_bad_noise_levels_are_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        evaluate.parse_noise_levels(text)


def test_a_requested_level_equal_to_the_shipped_one_runs_once_and_is_marked_shipped():
    levels = evaluate.parse_noise_levels("2,0,shipped,0.5")
    assert evaluate.resolve_noise_levels(levels, 0.02) == [(0.0, False), (0.005, False), (0.02, True)]
    assert evaluate.resolve_noise_levels(levels, 0.04) == [(0.0, False), (0.005, False), (0.02, False),
                                                           (0.04, True)]


def test_slot_error_is_the_worst_memory_profile_and_a_missing_plan_never_passes():
    paper = {2048: 1000, 4096: 200}
    assert evaluate.max_slot_error({2048: 1010, 4096: 196}, paper) == pytest.approx(0.02)
    assert math.isinf(evaluate.max_slot_error({2048: 1000, 4096: None}, paper))


def _run(profile, noise, seed, family, error):
    return {"query": "q5", "profile": profile, "noise": noise, "shipped_noise": noise == 0.04, "seed": seed,
            "paper_family": "log", "family": family, "max_abs_error": error}


def test_the_target_holds_up_to_the_last_level_before_the_first_failure():
    runs = [_run("p", 0.0, 0, "log", 0.01), _run("p", 0.0, 1, "log", 0.02),
            _run("p", 0.01, 0, "log", 0.015), _run("p", 0.01, 1, "sqrt", 0.01),  # wrong family
            _run("p", 0.04, 0, "log", 0.0), _run("p", 0.04, 1, "log", 0.0),  # passes only by luck
            _run("r", 0.0, 0, "log", 0.03),  # fails at once
            _run("s", 0.0, 0, "log", 0.0), _run("s", 0.02, 0, "log", 0.02)]  # never fails
    groups = evaluate.noise_groups(runs)
    by_level = {(g["profile"], g["noise"]): g for g in groups}
    assert by_level[("p", 0.0)]["target_met"] and by_level[("p", 0.0)]["within_tolerance"] == 2
    one = by_level[("p", 0.01)]
    assert not one["target_met"] and one["paper_family_picked"] == 1 and one["other_families"] == ["sqrt"]
    assert by_level[("p", 0.04)]["shipped"]
    assert evaluate.target_holds_up_to(groups) == {"p": (0.0, 0.01), "r": (None, 0.0), "s": (0.02, None)}


def test_noise_is_overridden_in_memory_only():
    shipped = load_profile("paper-q5-log")
    quiet = evaluate.with_noise(shipped, 0.005)
    assert quiet.analytic.noise == 0.005 and quiet.analytic.family == shipped.analytic.family
    assert load_profile("paper-q5-log").analytic.noise == shipped.analytic.noise == 0.04


def test_configurations_print_in_operator_order():
    cfg = Configuration((("a", 1), ("b", 3), ("c", 2)))
    assert evaluate.compact(cfg) == "1-3-2"


@pytest.mark.parametrize("planned, own, true_min, limit, verdict", [
    (110, 1.05e6, 100, None, "right"),
    (125, 1.05e6, 100, None, "right"),          # 1.25x the true minimum still counts
    (126, 1.05e6, 100, None, "over"),
    (100, 0.99e6, 100, None, "under"),          # its own configuration falls short, whatever its size
    (5000, 0.5e6, None, None, "under"),         # a plan for a rate no budget reaches
    (None, None, None, None, "unreachable (truth agrees)"),
    (None, None, 3000, 2400, "unreachable (beyond the stated limit)"),
    (None, None, 2000, 2400, "unreachable (truth reaches it)"),
    (None, None, 2000, None, "unreachable (truth reaches it)"),
])
def test_a_plan_is_judged_by_the_truth_of_its_own_configuration(planned, own, true_min, limit, verdict):
    assert evaluate.plan_verdict(planned, own, 1e6, true_min, limit) == verdict


def test_the_summary_counts_verdicts_and_slot_ratios():
    rows = [{"verdict": "right", "planned_slots": 110, "true_min": 100},
            {"verdict": "under", "planned_slots": 90, "true_min": 100},
            {"verdict": "over", "planned_slots": 300, "true_min": 100},
            {"verdict": "unreachable (truth agrees)", "planned_slots": None, "true_min": None},
            {"verdict": "unreachable (truth reaches it)", "planned_slots": None, "true_min": 50}]
    s = evaluate.summary(rows)
    assert (s["plans"], s["under"], s["over"], s["right"], s["unreachable_agreed"], s["unreachable_wrong"]) == \
        (5, 1, 1, 1, 1, 1)
    assert s["median_slots_over_truth"] == pytest.approx(1.1) and s["worst_slots_over_truth"] == pytest.approx(3.0)
    assert "1 under-provisioned" in evaluate.summary_line(s)

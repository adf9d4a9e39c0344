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

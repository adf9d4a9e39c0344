"""The pure helpers of bench/evaluate.py: section A's verdicts and summaries, section B's noise sweep and section D's
configuration text."""

import argparse
import importlib.util
import json
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


def _entry(planned, own_over_rate, true_min, verdict):
    return {"planned": planned, "own_mst": None if own_over_rate is None else own_over_rate * 1e6,
            "own_over_rate": own_over_rate, "true_min": true_min, "limit": 2400, "verdict": verdict}


def _row(profile, multiple, memories):
    four = memories[4096]
    return {"profile": profile, "multiple": multiple, "planned_slots": four["planned"], "true_min": four["true_min"],
            "own_over_rate": four["own_over_rate"], "verdict": four["verdict"], "memories": memories}


def test_every_memory_is_counted_and_an_under_provisioned_cheap_entry_shows_beside_a_right_4gb_row():
    rows = [_row("q11", 25, {512: _entry(1458, 0.86, 1600, "under"), 1024: _entry(1368, 0.99, 1420, "under"),
                             2048: _entry(1368, 1.01, 1300, "right"), 4096: _entry(1414, 1.05, 1300, "right")}),
            _row("q5", 3, {m: _entry(None, None, None, "unreachable (truth agrees)") for m in (512, 1024, 2048, 4096)}),
            _row("q8", 3, {512: _entry(None, None, 500, "unreachable (truth reaches it)"),
                           4096: _entry(None, None, 3000, "unreachable (beyond the stated limit)")})]
    four_gb = evaluate.summary(rows)
    assert (four_gb["plans"], four_gb["under"], four_gb["right"], four_gb["unreachable_agreed"],
            four_gb["unreachable_wrong"]) == (3, 0, 1, 2, 0)
    records = evaluate.memory_records(rows)
    assert [(r["profile"], r["memory_mb"]) for r in records] == [
        ("q11", 512), ("q11", 1024), ("q11", 2048), ("q11", 4096),
        ("q5", 512), ("q5", 1024), ("q5", 2048), ("q5", 4096), ("q8", 512), ("q8", 4096)]
    every = evaluate.summary(records)
    assert (every["plans"], every["under"], every["over"], every["right"], every["unreachable_agreed"],
            every["unreachable_wrong"]) == (10, 2, 0, 2, 5, 1)
    # slots over the true minimum at each entry's own memory: 1458/1600, 1368/1420, 1368/1300, 1414/1300
    assert every["worst_slots_over_truth"] == pytest.approx(1414 / 1300)
    assert every["median_slots_over_truth"] == pytest.approx((1368 / 1420 + 1368 / 1300) / 2)
    assert "2 under-provisioned" in evaluate.summary_line(every)
    under = [evaluate.under_line(r) for r in records if r["verdict"] == "under"]
    assert under == ["q11 x25 at 512 MB: 1458 slots, own MST / target 0.860",
                     "q11 x25 at 1024 MB: 1368 slots, own MST / target 0.990"]


def test_memory_records_read_back_from_json_have_int_memories_in_order():
    row = _row("q1", 3, {4096: _entry(167, 1.18, 142, "right"), 512: _entry(164, 1.2, 140, "right"),
                         1024: _entry(165, 1.19, 141, "right")})
    back = json.loads(json.dumps(row))
    assert set(back["memories"]) == {"512", "1024", "4096"}  # what evaluation.json holds
    assert [r["memory_mb"] for r in evaluate.memory_records([back])] == [512, 1024, 4096]
    assert evaluate.memory_records([back]) == evaluate.memory_records([row])

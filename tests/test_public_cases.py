"""bench/public_cases.py: issue 35's bar for each public case, the cases a run may be limited to, and a case read
from a section A row as evaluation.json stores it."""

import pytest

from public_cases import (CASES, PLAN, UNREACHABLE, PublicCase, bar_verdict, case_record, chosen_cases,
                          operator_lines)


def test_a_plan_meets_the_bar_when_it_sustains_the_rate_within_the_tolerance_of_the_true_minimum():
    assert bar_verdict(PLAN, 125, 1.1e6, 1e6, 100) == "meets"
    assert bar_verdict(PLAN, 126, 1.1e6, 1e6, 100) == "1.26 x the true minimum (at most 1.25 x)"
    assert bar_verdict(PLAN, 100, 0.97e6, 1e6, 93) == "own configuration sustains 0.970 of the rate"
    assert bar_verdict(PLAN, None, None, 1e6, 224) == "no plan (unreachable); the truth reaches it with 224 slots"


def test_an_unreachable_case_meets_the_bar_only_without_a_plan():
    assert bar_verdict(UNREACHABLE, None, None, 2.5e6, None) == "meets"
    assert bar_verdict(UNREACHABLE, 300, 2.6e6, 2.5e6, None) == "planned 300 slots where unreachable is expected"


def test_cases_are_chosen_by_profile_and_multiple_in_the_issues_order():
    assert chosen_cases(None) == CASES
    assert chosen_cases("q5:3, q8:3.0") == (PublicCase("q8", 3, PLAN), PublicCase("q5", 3, UNREACHABLE))
    with pytest.raises(ValueError, match="'q5:2' is not a public case"):
        chosen_cases("q5:2")
    with pytest.raises(ValueError, match="'q5' is not a public case"):
        chosen_cases("q5")


def test_a_case_reads_the_4_gb_entry_of_a_row_read_back_from_json():
    entry = {"planned": 140, "true_min": 100, "own_mst": 1.2e6, "own_over_rate": 1.2, "limit": 400,
             "verdict": "over", "configuration": {"source": 20, "join": 120}, "max_parallelism": 4096,
             "true_min_configuration": {"source": 10, "join": 90}, "true_min_max_parallelism": 32768}
    small = dict(entry, planned=101, verdict="right")
    row = {"rate": 1e6, "family": "log", "memories": {"512": small, "4096": entry}}
    record = case_record(PublicCase("q5", 1.4, PLAN), row, "section A run")
    assert (record["planned"], record["verdict"]) == (140, "over")
    assert record["bar"] == "1.40 x the true minimum (at most 1.25 x)"


def test_a_missed_case_lists_every_operator_of_the_plan_and_of_the_true_minimum():
    record = {"configuration": None, "true_min_configuration": {"Calc#1": 2, "Join#7": 3}, "max_parallelism": None,
              "true_min_max_parallelism": 32768, "own_bottleneck": None, "limit": 196, "family": "log"}
    lines = operator_lines(record)
    assert lines[:2] == ["  Calc#1: planned -, true minimum 2", "  Join#7: planned -, true minimum 3"]
    assert "true minimum 32768" in lines[2] and "stated limit 196 slots" in lines[2]

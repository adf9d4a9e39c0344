"""bench/methods_compare.py's tables: which plan is the cheapest that sustains, and the per-method summary."""

from __future__ import annotations

import pytest

from methods_compare import cheapest_sustaining, markdown_rows, method_summary


def row(profile, method, verdict, slots=None, mb=None, over=None, seconds=None):
    return {"profile": profile, "method": method, "verdict": verdict, "slots": slots, "memory_mb": mb,
            "total_memory_mb": None if slots is None else slots * mb, "mst_over_rate": over,
            "testbed_seconds": seconds, "rate": 1e6}


ROWS = [row("q1", "ds2", "sustains", 13, 512, 1.03, 540), row("q1", "justin", "sustains", 13, 512, 1.03, 360),
        row("q1", "imai", "sustains", 15, 4096, 1.24, 5850),
        row("q5", "ds2", "under-provisioned", 18, 1024, 0.08, 720), row("q5", "justin", "sustains", 40, 512, 1.1, 900),
        row("q5", "imai", "failed"), row("g", "ds2", "unreachable"), row("g", "justin", "stopped"),
        row("g", "imai", "sustains", 30, 1024, 1.5, 60)]


def test_the_cheapest_plan_that_sustains_by_total_memory_then_slots_then_testbed_time():
    # q1: ds2 and justin tie on memory and slots, justin spent less testbed time; q5: ds2 is smaller but short
    assert cheapest_sustaining(ROWS) == {"q1": "justin", "q5": "justin", "g": "imai"}
    assert cheapest_sustaining([r for r in ROWS if r["verdict"] != "sustains"]) == {}


def test_the_summary_counts_verdicts_and_takes_medians_over_planned_rows_only():
    by = {s["method"]: s for s in method_summary(ROWS, ("ds2", "justin", "imai"))}
    assert (by["ds2"]["sustains"], by["ds2"]["under"], by["ds2"]["unreachable"], by["ds2"]["failed"]) == (1, 1, 1, 0)
    assert by["justin"]["failed"] == 1 and by["justin"]["cheapest"] == 2 and by["ds2"]["cheapest"] == 0
    assert by["ds2"]["median_slots"] == pytest.approx(15.5) and by["ds2"]["median_testbed_min"] == pytest.approx(10.5)
    assert by["imai"]["median_total_mb"] == pytest.approx((15 * 4096 + 30 * 1024) / 2)
    assert by["imai"]["profiles"] == 3 and by["imai"]["failed"] == 1


def test_markdown_rows_show_a_dash_where_a_row_has_no_plan_or_no_rate():
    lines = markdown_rows([row("g", "ds2", "stopped") | {"rate": None}, ROWS[0]])
    assert lines[2] == "| g | - | ds2 | - | - | - | - | - | stopped |"
    assert lines[3] == "| q1 | 1,000,000 | ds2 | 13 | 512 | 6,656 | 1.03 | 9 | sustains |"

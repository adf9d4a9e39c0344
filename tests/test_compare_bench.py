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


def test_a_case_past_its_wall_time_is_stopped_and_a_crash_is_not_kept(tmp_path, monkeypatch):
    import time

    import methods_compare

    def fake(out_dir, name, profile, rate, method, seed, options):
        if method == "slow":
            time.sleep(30)
        if method == "broken":
            raise AttributeError("a bug")
        return row(name, method, "sustains", 3, 512, 1.2, 60)

    monkeypatch.setattr(methods_compare, "compare_row", fake)
    cases = [(tmp_path, "q1", None, 1e6, m, 0, {}) for m in ("slow", "broken", "fine")]
    started = time.time()
    rows = methods_compare.run_cases(cases, tmp_path, timeout_s=1.0)
    assert time.time() - started < 20
    assert [(r["method"], r["verdict"]) for r in rows] == [("slow", "stopped"), ("broken", "failed"), ("fine", "sustains")]
    assert "a bug" in rows[1]["error"] and rows[1]["crashed"]
    assert sorted(p.name for p in (tmp_path / "q1").iterdir()) == ["fine.json", "slow.json"]  # the crash runs again

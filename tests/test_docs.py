"""The docs' own rules: every measured figure in one doc (bench/doc_numbers.py), a short README and
a Flink testbed page that explains rather than logs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import doc_numbers

REPO = Path(__file__).resolve().parent.parent


def make_repo(tmp_path: Path, docs: dict[str, str]) -> Path:
    (tmp_path / "docs").mkdir()
    for name, text in docs.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def run_checker(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "bench" / "doc_numbers.py"), "--root", str(root)],
                          capture_output=True, text=True, timeout=60)


def test_the_repository_states_each_figure_in_one_doc():
    result = run_checker(REPO)
    assert result.returncode == 0, result.stdout


def test_a_figure_in_two_docs_is_reported_with_both_places(tmp_path):
    root = make_repo(tmp_path, {
        "README.md": "# S\n\nq11 at 10 slots measured 26,618 events/s.\n",
        "docs/results.md": "# R\n\nintro\n\n- q11, 10 slots: 26618 events/s (`streambed estimate ...`).\n",
    })
    result = run_checker(root)
    assert result.returncode == 1
    assert "26618 events/s: README.md:3, docs/results.md:5" in result.stdout


def test_a_figure_in_one_doc_only_passes(tmp_path):
    root = make_repo(tmp_path, {
        "README.md": "# S\n\nThe figures: [results](docs/results.md).\n",
        "docs/results.md": "q11 at 10 slots: 26,618 events/s, twice 26,618 in this doc.\n",
    })
    assert run_checker(root).returncode == 0


def test_code_and_allowed_settings_are_not_reported(tmp_path):
    root = make_repo(tmp_path, {
        "docs/a.md": "Run `plan --rate 26618`.\n\n```\nMST 31,012\n```\nREST on 8081.\n",
        "docs/b.md": "Run `plan --rate 26618`.\n\n```\nMST 31,012\n```\nport 8081.\n",
    })
    result = run_checker(root)
    assert result.returncode == 0, result.stdout


def test_a_named_coincidence_passes_in_its_docs_only(tmp_path):
    root = make_repo(tmp_path, {"docs/compare.md": "| q1 | 7,680 |\n", "docs/methods.md": "| justin | 7,680 |\n"})
    assert run_checker(root).returncode == 0
    (root / "docs" / "results.md").write_text("a total of 7,680\n", encoding="utf-8")
    result = run_checker(root)
    assert result.returncode == 1
    assert "7680: docs/compare.md:1, docs/methods.md:1, docs/results.md:1" in result.stdout


def test_a_root_without_docs_is_one_line_and_status_2(tmp_path):
    result = run_checker(tmp_path / "missing")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--root" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("number, digits", [
    ("26,618", 5), ("1024", 4), ("100", 1), ("2,000", 1), ("0.012", 2), ("1.10", 3), ("12.5", 3),
])
def test_significant_digits(number, digits):
    assert doc_numbers.significant_digits(number) == digits


@pytest.mark.parametrize("line, keys", [
    ("measured 4,913-7,040 events/s", ["4913", "7040 events/s"]),
    ("run 2026-11-27, in 2024, FLINK-38558, q11, 127.0.0.1, Tansu 0.6.0, --rate 5e5", []),
    ("1.32 × apart, 12.5 % of it, 15.2 M events/s", ["1.32 ×", "12.5 %", "15.2 M"]),
    ("3 %, 15 min, 48 slots and a ratio of 1.03", []),
    ("objectives within 4.7e-8 at a target of 4.37e+08", ["4.7e-8", "4.37e8"]),
    ("the `--memory 1024` option and 0.12-core slots", ["0.12 core"]),
])
def test_figures_of_a_line(line, keys):
    assert [key for key, _ in doc_numbers.figures(line)] == keys


def test_readme_is_short():
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 120


def test_flink_testbed_page_explains_under_250_lines():
    assert len((REPO / "docs" / "flink-testbed.md").read_text(encoding="utf-8").splitlines()) < 250

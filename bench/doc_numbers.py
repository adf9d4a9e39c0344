"""Which measured figures appear in more than one doc.

Every measured number has one home (docs/results.md for the headline figures, docs/evaluation.md for
the evaluation's tables) with the command that measured it; other docs link to it. A figure copied
into a second doc goes stale there when it is measured again, so this lists every figure that occurs
in two or more of README.md and docs/*.md. A figure is an integer of at least three significant
digits, a decimal of at least four, or a number with a unit (events/s, %, ×, s, MB, slots, M, ...)
that has a fraction or three significant digits: values such as 3 %, 15 min or a ratio of 1.03
recur by chance in unrelated sentences and name no one figure. Text in code spans and code blocks
(commands, options, sample output), dates, years, versions, addresses and identifiers (q11,
FLINK-38558) are skipped; ALLOWED lists settings and the paper's published figures, COINCIDENT the
different figures that share a value, each with its docs and why.

Run: .venv/bin/python bench/doc_numbers.py [--root DIR]   (exit 1 when a number repeats)
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# Units that make even a small number a figure; spellings of one unit map to one name.
UNITS = {
    "events/s": "events/s", "ev/s": "events/s", "records/s": "records/s", "bids/s": "bids/s",
    "%": "%", "×": "×", "ms": "ms", "s": "s", "min": "min", "h": "h",
    "KB": "KB", "MB": "MB", "GB": "GB", "core": "core", "cores": "core", "slot": "slot", "slots": "slot",
    "tests": "tests", "M": "M",
}

# Not measurements: settings, defaults and the paper's published figures, each with why it may repeat.
# A key is a number without its commas, or "number unit" for a number read by its unit.
ALLOWED = {
    "128": "Flink's least default max parallelism, and a memory size", "512": "a memory-per-slot setting",
    "4096": "a memory-per-slot setting", "32768": "Flink's largest max parallelism",
    "0.5 GB": "a memory-per-slot setting", "128 slot": "a budget size",
    "0.2 %": "the steady-state shortfall threshold", "99.8 %": "the steady-state threshold",
    "1.5 ×": "a setting (a target multiple, a spread or skew threshold)",
    "1.4 ×": "a target multiple (issue 35's public case q5 at 1.4 x)",
    "179": "the paper's Table IV", "565": "the paper's Table IV", "1069": "the paper's Table IV",
    "1079 slot": "the paper's Table IV", "1.2 M": "the paper's Kafka rate per node",
    "324": "the paper's BIDS2 solves (a count of its data)",
    "1024": "the default memory per slot, MB", "1024 MB": "the default memory per slot",
    "512 MB": "a memory-per-slot setting", "2048 MB": "a memory-per-slot setting",
    "4096 MB": "a memory-per-slot setting", "2048": "a memory-per-slot setting, MB",
    "0.12 core": "cpu_per_slot of the local inventory", "1.32 core": "the local testbed's cores (11 x 0.12)",
    "262144": "the testbed parent's cpu.shares, the kernel's largest",
    "1.10 ×": "the safety factor", "1.25 ×": "the evaluation's rule for a right plan",
    "8081": "Flink's REST port", "9090": "Prometheus's port", "9250": "the reporter ports",
    "9279": "the reporter ports",
}

# Different figures that share a value by chance, allowed only in the docs named here: the same value
# anywhere else is still reported.
COINCIDENT = {
    "12288": ({"docs/compare.md", "docs/methods.md"}, "totals of slots x 512 MB: a generated plan's; Justin's one size"),
    "17408": ({"docs/compare.md", "docs/methods.md"}, "totals of slots x 512 MB: generated plans'; Justin's at 1,024 MB"),
    "134": ({"docs/compare.md", "docs/sim-profiles.md", "docs/planner.md"},
            "a learned plan's slots; the generated aggregates; skew_law's predictions under 0.95"),
    "178": ({"docs/evaluation.md", "docs/methods.md"}, "a probe's testbed minutes; Imai's validation slots for q11"),
    "113": ({"docs/compare.md", "docs/results.md"}, "a q8 plan's slots; the Flink tests that passed"),
    "473": ({"docs/compare.md", "docs/evaluation.md"}, "StreamBed's testbed minutes on q2; a q2 plan's slots"),
    "438": ({"docs/compare.md", "docs/evaluation.md"}, "StreamBed's median testbed minutes; a generated plan's true least slots"),
    "739": ({"docs/compare.md", "docs/evaluation.md"}, "StreamBed's testbed minutes on q8; a pile-up's task count"),
    "265": ({"docs/compare.md", "docs/evaluation.md"}, "an autoscaler plan's slots; the estimator's testbed minutes"),
    "0.1 s": ({"docs/robustness.md", "docs/sim-profiles.md", "docs/sim.md"},
              "a refusal's time; a window grid; the sim's step"),
    "0.4 %": ({"docs/data.md", "docs/evaluation.md"}, "a key's share of the bids; noise levels"),
    "0.5 %": ({"docs/evaluation.md", "docs/planner.md"}, "a source's loss; a risk"),
    "1.002": ({"docs/compare.md", "docs/sim.md"}, "labels on held-out plans; the capacity model over budgets"),
    "1.3 ×": ({"docs/evaluation.md", "docs/planner.md", "docs/results.md"},
              "a right-plan bound; the hot-key threshold; one job's throughput swing on Flink"),
    "1.32 ×": ({"docs/evaluation.md", "docs/results.md"}, "rates held on the sim; the spread of quick on Flink"),
    "1.5 %": ({"docs/evaluation.md", "docs/planner.md"}, "an analytic profile's error; bids2's prediction error"),
    "1.7 %": ({"docs/evaluation.md", "docs/methods.md"}, "an analytic profile's error; Justin's error"),
    "104": ({"docs/compare.md", "docs/evaluation.md"}, "an Imai plan's slots; filter tasks of a generated configuration"),
    "119": ({"docs/evaluation.md", "docs/robustness.md"}, "wrongly unreachable entries; a fuzz run's failures"),
    "3.0 ×": ({"docs/evaluation.md", "docs/planner.md"}, "a hashing's busiest task over the mean; a plan over the truth's minimum"),
    "103": ({"docs/compare.md", "docs/evaluation.md", "docs/methods.md"}, "a profile id; filter tasks; Model 1's peak"),
    "159": ({"docs/evaluation.md", "docs/results.md"}, "a generated plan's slots; a Flink run's seconds"),
    "6.2 %": ({"docs/evaluation.md", "docs/records.md"}, "wrongly unreachable entries; a held-out prediction error"),
    "102": ({"docs/compare.md", "docs/evaluation.md"}, "Imai's median testbed minutes; entries over 1.25 x"),
    "117": ({"docs/compare.md", "docs/evaluation.md"}, "a learned plan's slots; a generated plan's slots"),
    "192": ({"docs/evaluation.md", "docs/methods.md"}, "a set's entries; a validation budget"),
    "1.6 %": ({"docs/compare.md", "docs/evaluation.md"}, "key-group rounding; a key's share"),
    "1.15 ×": ({"docs/evaluation.md", "docs/planner.md"}, "an own MST over the target; a memory's rate ratio"),
    "107": ({"docs/evaluation.md", "docs/sim-profiles.md"}, "q8's plan; the generated joins"),
    "158": ({"docs/evaluation.md", "docs/results.md"}, "an analytic plan; Flink testbed seconds"),
    "166892": ({"docs/evaluation.md", "docs/methods.md"},
               "the sim truth of q5 at 12 slots (deterministic), a column of the estimator table and "
               "of the methods table, which judge different plans by it"),
    "166": ({"docs/compare.md", "docs/evaluation.md"}, "testbed minutes of a generated plan and of a probe's"),
    "188": ({"docs/compare.md", "docs/evaluation.md", "docs/sim-profiles.md"},
            "testbed minutes; a join's keys; profiles fitting 1 GB"),
    "2.4 %": ({"docs/evaluation.md", "docs/planner.md"}, "an analytic error; a warm-up reading"),
    "257": ({"docs/data.md", "docs/evaluation.md"}, "Spark's rate in k events/s; a probe's minimum"),
    "3.33 M": ({"docs/evaluation.md", "docs/methods.md"}, "the truth of DS2's and of Rafiki's q8 configurations"),
    "3.8 %": ({"docs/planner.md", "docs/records.md"}, "a sink's intake; a held-out error"),
    "4.5 %": ({"docs/evaluation.md", "docs/methods.md"}, "an analytic error; an operator's error"),
    "568": ({"docs/compare.md", "docs/evaluation.md"}, "q5's rate in k events/s; a probe's testbed minutes"),
    "6.1 %": ({"docs/evaluation.md", "docs/methods.md"}, "an analytic error; Imai's error"),
    "7680": ({"docs/compare.md", "docs/methods.md"}, "15 x 512 MB: the total memory of two different plans"),
    "8.1 M": ({"docs/evaluation.md", "docs/methods.md"}, "q8's MST at 48 slots; Rafiki's nominal rate"),
    "9.7 %": ({"docs/evaluation.md", "docs/methods.md"}, "wrongly unreachable entries; Imai's error"),
    "8192": ({"docs/compare.md", "docs/flink-testbed.md", "docs/methods.md"},
             "a TaskManager group's cpu.shares; plans' total MB"),
    "125 slot": ({"docs/compare.md", "docs/methods.md"}, "a plan's slots; a validation point"),
    "267": ({"docs/compare.md", "docs/data.md"}, "a controller's peak RSS, MB; a Spark job's seconds"),
    "271": ({"docs/compare.md", "docs/evaluation.md"}, "testbed minutes; an analytic plan's true minimum"),
    "65536": ({"docs/compare.md", "docs/sim-profiles.md"}, "16 x 4,096 MB of a plan; a formula's constant"),
}

CODE_BLOCK = re.compile(r"^(```|~~~)")
CODE_SPAN = re.compile(r"`[^`]*`")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
VERSION = re.compile(r"\b\d+(?:\.\d+){2,}\b")  # 127.0.0.1, 0.6.0: addresses and versions
# A number: thousands separated by commas or plain digits, an optional fraction, then an optional unit.
NUMBER = re.compile(r"(?<![\w.,/#])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:[eE]([+-]?\d+))?(?![\d\w])"
                    r"(?:[ -]?(events/s|ev/s|records/s|bids/s|%|×|ms|min|cores?|slots?|tests|KB|MB|GB|M|s|h)(?![\w/]))?")


@dataclass(frozen=True)
class Occurrence:
    doc: str
    line: int
    text: str


def significant_digits(number: str) -> int:
    """Digits that carry the value: leading zeros never, an integer's trailing zeros not either."""
    digits = number.replace(",", "")
    if "." in digits:
        whole, fraction = digits.split(".", 1)
        return len((whole + fraction).lstrip("0"))
    return len(digits.strip("0"))


def is_year(number: str) -> bool:
    return re.fullmatch(r"(19|20)\d\d", number) is not None


def figures(line: str) -> list[tuple[str, str]]:
    """The (key, text) of every figure on one line of prose: code, dates and identifiers left out."""
    prose = VERSION.sub(" ", DATE.sub(" ", CODE_SPAN.sub(" ", line)))
    found = []
    for match in NUMBER.finditer(prose):
        whole, fraction, exponent, unit = match.group(1), match.group(2) or "", match.group(3), match.group(4)
        start = match.start()
        if start >= 2 and prose[start - 1] == "-" and prose[start - 2].isalpha():
            continue  # an identifier such as FLINK-38558
        number = whole + fraction
        if exponent is not None:
            if fraction:  # 4.7e-8, 4.37e+08: a figure in scientific notation
                found.append((f"{number.replace(',', '')}e{int(exponent)}", match.group(0)))
            continue  # 5e5: a rate option, written as the command takes it
        digits = significant_digits(number)
        if unit and (digits >= 3 or fraction):
            key = f"{number.replace(',', '')} {UNITS[unit]}"
        elif digits >= (4 if fraction else 3) and not is_year(number):
            key = number.replace(",", "")
        else:
            # 3 %, 15 min, 48 slots, a bare ratio such as 1.03: too common to name one figure, they
            # collide by chance between unrelated sentences
            continue
        found.append((key, match.group(0)))
    return found


def doc_figures(path: Path, name: str) -> dict[str, list[Occurrence]]:
    """Every figure of one Markdown file, by key, with its line; code blocks skipped."""
    result: dict[str, list[Occurrence]] = {}
    in_code = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if CODE_BLOCK.match(line.strip()):
            in_code = not in_code
            continue
        if in_code:
            continue
        for key, text in figures(line):
            result.setdefault(key, []).append(Occurrence(name, number, text))
    return result


def repeated(docs: dict[str, Path], allowed: dict[str, str] | None = None,
             coincident: dict[str, tuple[set[str], str]] | None = None) -> dict[str, list[Occurrence]]:
    """Figures found in two or more docs, by key; allowed keys left out, and coincident ones while
    every doc that holds them is one of their named docs."""
    allowed = ALLOWED if allowed is None else allowed
    coincident = COINCIDENT if coincident is None else coincident
    by_key: dict[str, list[Occurrence]] = {}
    for name, path in docs.items():
        for key, places in doc_figures(path, name).items():
            if key not in allowed:
                by_key.setdefault(key, []).extend(places)
    found = {}
    for key, places in sorted(by_key.items()):
        holders = {place.doc for place in places}
        if len(holders) >= 2 and not (key in coincident and holders <= coincident[key][0]):
            found[key] = places
    return found


def repo_docs(root: Path) -> dict[str, Path]:
    docs = {"README.md": root / "README.md"} if (root / "README.md").is_file() else {}
    docs.update({f"docs/{path.name}": path for path in sorted((root / "docs").glob("*.md"))})
    return docs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="List measured figures that appear in more than one doc.")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the repository whose README.md and docs/*.md to read (default: this one)")
    args = parser.parse_args(argv)
    if not (args.root / "docs").is_dir():
        print(f"doc_numbers: --root {args.root}: expected a directory with docs/", file=sys.stderr)
        return 2
    found = repeated(repo_docs(args.root))
    for key, places in found.items():
        where = ", ".join(f"{place.doc}:{place.line}" for place in places)
        print(f"{key}: {where}")
    print(f"{len(found)} figures in two or more docs" if found else "no figure appears in two docs")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

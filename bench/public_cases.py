"""Issue 35's public cases: each plan judged against the bar the issue sets for it, on the simulated testbed.

The bar (issue 35, "Done when"): q1, q2 and q11 at 10x, q8 at 3x and q5 at 1.4x their 48-slot MST (4 GB per
slot) each get a plan whose own configuration sustains the rate with at most 1.25x the true minimum slots;
q5 at 3x (2.5 M events/s) is called unreachable. Every case is planned as section A of bench/evaluate.py
plans (same testbed, timing, seed and judge: ``evaluate.judged_plan``); cases already in a section A run's
evaluation.json (``--evaluation``) are read from it instead of planned again. Prints one table, and for a
case that misses the bar its plan's configuration against the true minimum's, operator by operator.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from evaluate import OVER_TOLERANCE, TESTBED_SLOTS, data_key_statistics, finite, judged_plan, table

PLAN, UNREACHABLE = "plan", "unreachable"
MEMORY_MB = 4096


@dataclass(frozen=True)
class PublicCase:
    profile: str
    multiple: float
    expect: str
    """PLAN: a plan that sustains the rate within the tolerance of the true minimum; UNREACHABLE: no plan."""


CASES = (PublicCase("q1", 10, PLAN), PublicCase("q2", 10, PLAN), PublicCase("q11", 10, PLAN),
         PublicCase("q8", 3, PLAN), PublicCase("q5", 1.4, PLAN), PublicCase("q5", 3, UNREACHABLE))


def bar_verdict(expect: str, planned: int | None, own_mst: float | None, rate: float, true_min: int | None,
                tolerance: float = OVER_TOLERANCE) -> str:
    """'meets', or why a case misses its bar: a plan expected and none given, a plan whose own configuration
    does not sustain the rate, or one beyond ``tolerance`` x the true minimum; or a plan where none was expected."""
    if expect == UNREACHABLE:
        return "meets" if planned is None else f"planned {planned} slots where unreachable is expected"
    if planned is None:
        return "no plan (unreachable)" + ("" if true_min is None else f"; the truth reaches it with {true_min} slots")
    if own_mst is None or own_mst < rate:
        share = "-" if own_mst is None else f"{own_mst / rate:.3f}"
        return f"own configuration sustains {share} of the rate"
    if true_min is None:
        return "meets"  # sustains, and the truth finds no smaller budget to hold it against
    if planned > tolerance * true_min:
        return f"{planned / true_min:.2f} x the true minimum (at most {tolerance:g} x)"
    return "meets"


def case_record(case: PublicCase, row: dict, source: str) -> dict:
    """One case's line from a section A row: the 4 GB entry, judged by section A's rule and by the case's bar."""
    entry = row["memories"].get(MEMORY_MB, row["memories"].get(str(MEMORY_MB)))
    return {"profile": case.profile, "multiple": case.multiple, "expect": case.expect, "rate": row["rate"],
            "planned": entry["planned"], "true_min": entry["true_min"], "own_mst": entry["own_mst"],
            "own_over_rate": entry["own_over_rate"], "limit": entry["limit"], "verdict": entry["verdict"],
            "family": row["family"], "bar": bar_verdict(case.expect, entry["planned"], entry["own_mst"], row["rate"],
                                                      entry["true_min"]),
            "configuration": entry.get("configuration"), "max_parallelism": entry.get("max_parallelism"),
            "true_min_configuration": entry.get("true_min_configuration"),
            "true_min_max_parallelism": entry.get("true_min_max_parallelism"),
            "own_bottleneck": entry.get("own_bottleneck"), "source": source}


def operator_lines(record: dict) -> list[str]:
    """A case that misses its bar, operator by operator: the plan's tasks against the true minimum's."""
    planned, best = record["configuration"] or {}, record["true_min_configuration"] or {}
    lines = [f"  {op}: planned {planned.get(op, '-')}, true minimum {best.get(op, '-')}"
             for op in dict.fromkeys(list(planned) + list(best))]
    lines.append(f"  max parallelism: planned {record['max_parallelism']}, true minimum "
                 f"{record['true_min_max_parallelism']}; own bottleneck {record['own_bottleneck']}; "
                 f"stated limit {record['limit']} slots; family {record['family']}")
    return lines


def section_a_rows(path: Path) -> dict[tuple[str, float], dict]:
    """Section A's rows of an evaluation.json, by (profile, multiple)."""
    data = json.loads(path.read_text())
    return {(r["profile"], float(r["multiple"])): r for r in data.get("A_plans", {}).get("rows", [])}


def chosen_cases(text: str | None) -> tuple[PublicCase, ...]:
    """The cases named by ``--cases`` ("q5:1.4,q8:3"), in CASES' order; all of them when ``text`` is empty.
    ValueError, naming the item, for one that is not a public case."""
    if not text:
        return CASES
    by_name = {f"{c.profile}:{c.multiple:g}": c for c in CASES}
    chosen = set()
    for item in (t.strip() for t in text.split(",") if t.strip()):
        profile, _, multiple = item.partition(":")
        try:
            name = f"{profile}:{float(multiple):g}"
        except ValueError:
            name = None
        if name not in by_name:
            raise ValueError(f"--cases: {item!r} is not a public case; expected profile:multiple, one of "
                             + ", ".join(by_name))
        chosen.add(by_name[name])
    return tuple(c for c in CASES if c in chosen)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="campaigns/public-cases", help="campaign ledgers and public_cases.json")
    parser.add_argument("--evaluation", default=None,
                        help="a section A run's evaluation.json: its rows are read instead of planning those cases again")
    parser.add_argument("--cases", default=None,
                        help="only these cases, comma-separated profile:multiple (e.g. q5:1.4); default: all")
    parser.add_argument("--key-stats", action="store_true",
                        help="plan with the data's key statistics (streambed sim keys, as plan --key-stats reads them)")
    parser.add_argument("--checkpoint-slots", type=int, default=None,
                        help="staged measurements on a simulated cluster of that many slots (plan --checkpoint-slots)")
    args = parser.parse_args()
    if args.checkpoint_slots is not None and args.checkpoint_slots <= TESTBED_SLOTS:
        print(f"--checkpoint-slots {args.checkpoint_slots}: expected more than the testbed's {TESTBED_SLOTS} slots",
              file=sys.stderr)
        return 2
    if args.checkpoint_slots and args.evaluation:
        print("--checkpoint-slots: plans here; a section A run's rows (--evaluation) were planned without", file=sys.stderr)
        return 2
    try:
        cases = chosen_cases(args.cases)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    known = {}
    if args.evaluation:
        path = Path(args.evaluation)
        try:
            known = section_a_rows(path)
        except (OSError, ValueError, AttributeError, KeyError, TypeError) as e:
            found = "no such file" if isinstance(e, FileNotFoundError) else "not readable as one"
            print(f"--evaluation {path}: expected the evaluation.json of a bench/evaluate.py run ({found})",
                  file=sys.stderr)
            return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records = []
    for case in cases:
        row = known.get((case.profile, float(case.multiple)))
        source = "section A run"
        if row is None:
            row, source = judged_plan(out, case.profile, case.multiple, checkpoint_slots=args.checkpoint_slots,
                                      explorer=data_key_statistics(case.profile) if args.key_stats else None), \
                "planned here" + (" with the data's key statistics" if args.key_stats else "") + \
                (f", a checkpoint on {args.checkpoint_slots:,} slots" if args.checkpoint_slots else "")
        records.append(case_record(case, row, source))
    table("Issue 35's public cases (4 GB per slot), judged by the sim's truth",
          ("case", "rate, ev/s", "planned slots", "true minimum", "own MST / target", "verdict", "bar", "from"),
          [(f"{r['profile']} {r['multiple']:g}x", r["rate"], r["planned"], r["true_min"] or "none",
            f"{r['own_over_rate']:.3f}" if r["own_over_rate"] is not None else "-", r["verdict"], r["bar"],
            r["source"]) for r in records])
    for r in records:
        if r["bar"] != "meets":
            print(f"{r['profile']} {r['multiple']:g}x misses the bar: {r['bar']}")
            print("\n".join(operator_lines(r)))
    (out / "public_cases.json").write_text(json.dumps(finite(records), indent=2, default=str) + "\n")
    print(f"{sum(r['bar'] == 'meets' for r in records)} of {len(records)} cases meet the bar; "
          f"written to {out / 'public_cases.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

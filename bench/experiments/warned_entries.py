"""How often a planned entry that carries a key warning (a key too faint for the testbed's tasks could hold a
keyed operator below the rate: PlanEntry.key_warning) falls short, against the entries without one, in
section G runs of `bench/evaluate.py`; the order of the prior planner/caveats.HIDDEN_KEY_RISK states.

    .venv/bin/python bench/experiments/warned_entries.py RUN [RUN ...]

RUN is a `bench/evaluate.py --out` directory (its evaluation.json) or an evaluation.json. Counts every
planned entry (profile x multiple x memory) by whether it carries a key warning and by its verdict, and
prints, per group, the share short (own configuration below 0.97 of the target) with the reported risk's
range. Asserts nothing.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path


USAGE = "usage: warned_entries.py RUN [RUN ...]  (RUN: a bench/evaluate.py --out directory or its evaluation.json)"


def entries(path: Path):
    """(key warning?, verdict, risk) of every planned entry of one run's section G."""
    file = path / "evaluation.json" if path.is_dir() else path
    try:
        doc = json.loads(file.read_text())
        rows = doc["G_generated"]["rows"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"{file}: expected a bench/evaluate.py evaluation.json with section G rows ({e})")
    for row in rows:
        for e in row["memories"].values():
            if e.get("planned"):
                yield bool(e.get("key_warning")), e["verdict"], e.get("risk")


def main(argv: list[str]) -> int:
    if not argv:
        print(USAGE, file=sys.stderr)
        return 2
    verdicts: dict[bool, Counter] = defaultdict(Counter)
    risks: dict[bool, list[float]] = defaultdict(list)
    for arg in argv:
        for warned, verdict, risk in entries(Path(arg)):
            verdicts[warned][verdict] += 1
            if risk is not None:
                risks[warned].append(risk)
    for warned in (True, False):
        c = verdicts[warned]
        total = sum(c.values())
        if not total:
            continue
        r = risks[warned]
        span = f"risk {min(r):.2f}-{max(r):.2f}" if r else "risk -"
        print(f"{'with' if warned else 'without'} a key warning: {total} planned entries, {c['under']} short "
              f"({100 * c['under'] / total:.0f} %), {c['right']} right, {c['over']} over 1.25 x; {span}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Whether two `bench/evaluate.py` runs gave the same results: every field of their evaluation.json
compared exactly, wall-clock fields left out (keys named ``wall_s``, ``wall_seconds`` or starting with
``wall_``, and the per-case ``median_case_wall_s``).

    .venv/bin/python bench/experiments/same_evaluation.py BEFORE/evaluation.json AFTER/evaluation.json

Prints each differing field's path with both values, then one line; exits 1 when anything differs.
Used to check that a change meant only to make the evaluation cheaper changed none of its results.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def is_wall_clock(key: str) -> bool:
    return key.startswith("wall_") or key.endswith("wall_s")


def differences(a, b, path: str = "") -> list[str]:
    """Paths where ``a`` and ``b`` differ (values compared exactly), wall-clock keys skipped."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b), key=str):
            if is_wall_clock(str(key)):
                continue
            if key not in a or key not in b:
                out.append(f"{path}/{key}: only in {'the second' if key not in a else 'the first'}")
            else:
                out.extend(differences(a[key], b[key], f"{path}/{key}"))
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items against {len(b)}"]
        return [d for k, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{k}]")]
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} against {b!r}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    args = parser.parse_args()
    found = differences(json.loads(args.first.read_text()), json.loads(args.second.read_text()))
    for line in found:
        print(line)
    print(f"{len(found)} fields differ" if found else "identical (wall-clock fields left out)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

"""The key skew of a data set slice by slice against the whole: what a replay's observation window sees
of a query's keyed operator, where `streambed data keys` counts the whole data set.

For each slice of ``--slice`` events (in event order, as a replay reads them) it prints the slice's
hottest key's share and the busiest of p tasks' share over Flink's key groups (``--max-parallelism``,
default Flink's 128 for small p), then the same for the whole data set. On real Flink, q11's window run
on 2 tasks put 64 % of its input on one where the whole data set's key groups give 52 % (docs/data.md,
"Key statistics"); this shows whether the slices do.

    .venv/bin/python bench/experiments/key_slices.py --input nexmark-3000000-seed0 --query q11

Reads the JSON lines in Python (no Spark): keyed operators whose key sides carry a filter (q3, q20) are
refused.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from streambed import dataset as ds
from streambed.errors import UserError
from streambed.model import keystats
from streambed.model.keygroups import MAX_MAX_PARALLELISM


def busiest_share(counts: collections.Counter, groups: dict, parallelism: int, max_parallelism: int) -> float:
    tasks = [0] * parallelism
    for key, n in counts.items():
        g = groups.get(key)
        if g is None:
            g = groups[key] = keystats.key_group(key, MAX_MAX_PARALLELISM)
        tasks[(g % max_parallelism) * parallelism // max_parallelism] += n
    return max(tasks) / max(1, sum(tasks))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--input", required=True, help="the data set (name in --lake, or a path)")
    p.add_argument("--lake", type=Path, default=ds.DEFAULT_LAKE)
    p.add_argument("--query", default="q11")
    p.add_argument("--slice", type=int, default=300_000, help="events per slice (default 300,000)")
    p.add_argument("--parallelisms", default="2,5,7")
    p.add_argument("--max-parallelism", type=int, default=128)
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()
    if args.slice < 1:
        sys.exit(f"--slice: expected a positive number of events, got {args.slice}")
    try:
        op = keystats.keyed_operators(args.query)[0]
        data = ds.load(args.input, args.lake)
    except UserError as e:
        sys.exit(str(e))
    if any(side.where for side in op.sides):
        sys.exit(f"--query {args.query}: {op.operator}'s key sides carry a filter; use streambed data keys")
    sides = {s.kind: s.columns for s in op.sides}
    ps = [int(x) for x in args.parallelisms.split(",")]
    groups: dict = {}
    slices, whole, current, n = [], collections.Counter(), collections.Counter(), 0

    def close():
        top = current.most_common(1)[0][1] / sum(current.values()) if current else 0.0
        slices.append({"records": sum(current.values()), "hottest": top,
                       "busiest": {q: busiest_share(current, groups, q, args.max_parallelism) for q in ps}})
        whole.update(current)
        current.clear()

    for f in sorted(data.replay_dir.glob("part-*.json")):
        with open(f) as lines:
            for line in lines:
                n += 1
                event = json.loads(line)
                for kind, columns in sides.items():
                    if event.get(kind):
                        current[tuple(event[kind][c] for c in columns)] += 1
                if n % args.slice == 0:
                    close()
    if current:
        close()
    total = {"records": sum(whole.values()), "hottest": whole.most_common(1)[0][1] / sum(whole.values()),
             "busiest": {q: busiest_share(whole, groups, q, args.max_parallelism) for q in ps}}
    print(f"{args.query} {op.operator} ({op.key}) in {data.name}, slices of {args.slice:,} events, "
          f"{args.max_parallelism} key groups")
    for i, s in enumerate([*slices, total]):
        name = "whole" if i == len(slices) else f"slice {i}"
        print(f"{name:>9}: {s['records']:>9,} records, hottest key {100 * s['hottest']:.2f} %, busiest of "
              + ", ".join(f"{q}: {100 * s['busiest'][q]:.1f} %" for q in ps))
    if args.json:
        args.json.write_text(json.dumps({"slices": slices, "whole": total}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

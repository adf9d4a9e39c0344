"""Benchmark: is a replay faithful? The same query and configuration estimated on the local Flink
testbed with the generator and with a replay of generated data at rest, alternating, so that
drift of the machine falls on both alike. Prints every MST, each input's spread (max / min) and
the ratio of the medians; a faithful replay's ratio lies within the run-to-run spread. Asserts
nothing. Needs the local Flink testbed (it deploys it if needed) and a quiet machine.

Run: .venv/bin/python bench/experiments/replay_faithfulness.py [--query q11] [--events 3000000] [--runs 3]
     [--lake /tmp/streambed-lake] [--out campaigns/faithfulness] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

STREAMBED = str(Path(sys.executable).with_name("streambed"))


def streambed(*args: str) -> dict:
    p = subprocess.run([STREAMBED, *args, "--json", "--quiet"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"streambed {' '.join(args)}: {p.stderr.strip().splitlines()[-1:]}")
    return json.loads(p.stdout)


def main() -> None:
    a = argparse.ArgumentParser(description=__doc__)
    a.add_argument("--query", default="q11")
    a.add_argument("--events", type=int, default=3_000_000)
    a.add_argument("--rate", type=float, default=6_000.0, help="nominal rate of the generated data set")
    a.add_argument("--runs", type=int, default=3, help="estimates per input")
    a.add_argument("--timing", default="quick")
    a.add_argument("--memory", default="1024", help="MB per slot (the local inventory offers 1024)")
    a.add_argument("--lake", default="/tmp/streambed-lake")
    a.add_argument("--out", default="campaigns/faithfulness")
    a.add_argument("--json", action="store_true")
    o = a.parse_args()
    name = f"faithfulness-{o.events}"
    streambed("data", "generate", "--events", str(o.events), "--rate", str(o.rate), "--formats", "json",
              "--name", name, "--lake", o.lake)
    out = Path(o.out)
    shutil.rmtree(out, ignore_errors=True)
    msts: dict[str, list[float]] = {"generator": [], "replay": []}
    for i in range(o.runs):
        for kind in ("generator", "replay"):
            extra = ["--input", name, "--lake", o.lake] if kind == "replay" else []
            t0 = time.time()
            r = streambed("estimate", "--testbed", "flink", "--query", o.query, "--timing", o.timing,
                          "--memory", o.memory, "--campaign-dir", str(out / f"{kind}-{i}"), *extra)
            msts[kind].append(r["mst"])
            print(f"{kind:9s} run {i + 1}: MST {r['mst']:,.0f} events/s ({time.time() - t0:.0f} s)", flush=True)
    summary = {k: {"msts": v, "median": statistics.median(v), "spread": max(v) / min(v) if min(v) > 0 else None}
               for k, v in msts.items()}
    summary["replay_over_generator"] = summary["replay"]["median"] / summary["generator"]["median"]
    summary.update(query=o.query, events=o.events, timing=o.timing)
    if o.json:
        print(json.dumps(summary))
    else:
        for k in ("generator", "replay"):
            s = summary[k]
            print(f"{k:9s} median {s['median']:,.0f}, spread {s['spread']:.2f} ({', '.join(f'{m:,.0f}' for m in s['msts'])})")
        print(f"replay / generator (medians): {summary['replay_over_generator']:.3f}")


if __name__ == "__main__":
    main()

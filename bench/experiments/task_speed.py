"""Benchmark: how fast a busy task of one operator is, job after job, on the local Flink testbed.
Runs a configuration several times (one job each) at a rate above its capacity, so that the operator's
busiest tasks are its bottleneck; after a ramp-up, observes three windows per job and prints, per
window, what the job achieved and the records/s its tasks at least 0.95 busy took in (their speed).
With --fresh the testbed is stopped first, so that the first job runs on TaskManagers just started.
Asserts nothing. Prints JSON lines, then one summary line per job.
Run: .venv/bin/python bench/experiments/task_speed.py --query q11 --operator GroupWindowAggregate#2 \\
       --config Calc#1=1,GroupWindowAggregate#2=4,Calc#3=1,Sink#4=1 --rate 40000 --jobs 3 --fresh
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from streambed.campaigns.testbeds import create
from streambed.commands import args as parse
from streambed.errors import StreamBedError, UserError
from streambed.model import Budget, Configuration
from streambed.testbed.base import TestbedRequest

REPO = Path(__file__).resolve().parents[2]
BUSY = 0.95
"""A task at least this busy is the bottleneck: what it takes in is its speed."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--query", default="q11")
    ap.add_argument("--operator", default="GroupWindowAggregate#2")
    ap.add_argument("--config", type=parse.operator_pairs, required=True, help="per-operator parallelism, NAME=N,...")
    ap.add_argument("--rate", type=parse.rate, required=True, help="events/s, above the configuration's capacity")
    ap.add_argument("--memory", type=parse.memory_mb, default=1024)
    ap.add_argument("--jobs", type=parse.count, default=3)
    ap.add_argument("--ramp", type=parse.non_negative_seconds, default=30.0, help="seconds before the first window")
    ap.add_argument("--window", type=parse.positive_number, default=12.0)
    ap.add_argument("--fresh", action="store_true", help="make stop first: the first job on fresh TaskManagers")
    a = ap.parse_args()
    try:
        measure(a)
    except StreamBedError as e:  # bad input or a testbed that fails: one line, no traceback
        sys.exit(f"task_speed: {e}")


def measure(a: argparse.Namespace) -> None:
    if a.fresh:
        subprocess.run(["make", "-C", str(REPO), "--no-print-directory", "stop"], check=True, capture_output=True)
    tb = create("flink", TestbedRequest(a.query), lambda m: None)
    query = tb.query(a.query)
    conf = Configuration.of(query, a.config)
    if a.operator not in query.operators:
        raise UserError(f"--operator: {a.operator!r} is not an operator of {a.query} "
                        f"(expected one of {', '.join(query.operators)})")
    summary = []
    for job in range(a.jobs):
        tb.prepare(Budget(conf.slots, a.memory))
        run = tb.start(a.query, conf, a.rate)
        speeds, achieved = [], []
        try:
            tb.wait(run, a.ramp)
            for window in range(3):
                m = tb.observe(run, a.window)
                om = next(o for o in m.operators if o.operator == a.operator)  # checked above
                busy = [i for i, b in zip(om.task_input, om.task_busyness) if b >= BUSY]
                speed = statistics.mean(busy) if busy else None
                print(json.dumps({"job": job, "window": window, "achieved": round(m.achieved_rate),
                                  "tasks": [[round(i), round(b, 2)] for i, b in zip(om.task_input, om.task_busyness)],
                                  "busy_speed": round(speed) if speed else None}), flush=True)
                achieved.append(m.achieved_rate)
                if speed:
                    speeds.append(speed)
        finally:
            tb.stop(run)
        summary.append((job, speeds, achieved))
    for job, speeds, achieved in summary:
        print(f"job {job}: busy task {min(speeds, default=0):,.0f}-{max(speeds, default=0):,.0f} records/s, "
              f"achieved {min(achieved):,.0f}-{max(achieved):,.0f} events/s", file=sys.stderr)


if __name__ == "__main__":
    main()

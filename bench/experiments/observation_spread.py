"""Benchmark (real Flink): how much one configuration's MST moves between estimates, for a given
observation window. Runs the Capacity Estimator RUNS times on the local Flink testbed with the quick
timing, its observation window replaced by --observe, and prints each MST, the windows behind it
and the spread (max / min). Asserts nothing. Do not run it beside make test or make evaluate: they
share the machine's two cores.
Run: .venv/bin/python bench/experiments/observation_spread.py --query q11 --config Calc#1=1,GroupWindowAggregate#2=4,Calc#3=1,Sink#4=1 --observe 18 --runs 3
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

from streambed.planner.estimator import TIMINGS, CapacityEstimator
from streambed.infra.local import LocalProvider, default_inventory
from streambed.infra.services import flink_testbed
from streambed.ledger import Ledger
from streambed.model import Budget, Configuration


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--query", default="q11")
    ap.add_argument("--config", required=True, help="operator=parallelism pairs, comma-separated")
    ap.add_argument("--memory", type=int, default=1024, help="MB per slot")
    ap.add_argument("--observe", type=float, default=TIMINGS["quick"].observe_s, help="observation window, s")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--inventory", type=Path, default=None)
    args = ap.parse_args()

    bed = flink_testbed(LocalProvider(args.inventory or default_inventory()).provision())
    query = bed.query(args.query)
    mapping = {op: int(p) for op, p in (pair.split("=") for pair in args.config.split(","))}
    configuration = Configuration.of(query, mapping)
    budget = Budget(sum(mapping.values()), args.memory)
    timing = dataclasses.replace(TIMINGS["quick"], observe_s=args.observe)
    msts = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory() as d:
            ledger = Ledger.open(d, "estimate", {}, resume=False)
            estimator = CapacityEstimator(bed, ledger, timing, log=lambda m: print(f"  {m}", flush=True))
            t0 = time.monotonic()
            est = estimator.estimate(args.query, budget, configuration, f"{args.query}/{i}")
            ledger.close()
        msts.append(est.mst)
        print(f"run {i + 1}/{args.runs}: MST {est.mst:,.0f} events/s ({len(est.windows)} windows, "
              f"{time.monotonic() - t0:.0f} s)", flush=True)
    spread = max(msts) / min(msts) if min(msts) > 0 else float("inf")
    print(json.dumps({"query": args.query, "configuration": mapping, "observe_s": args.observe,
                      "msts": [round(m) for m in msts], "spread": round(spread, 2)}))


if __name__ == "__main__":
    main()

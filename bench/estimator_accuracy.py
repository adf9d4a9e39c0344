"""Benchmark: the Capacity Estimator's MST against the sim's steady-state truth of the same configuration
(target: within +-5 % for q1, q5 and q8 at 8-48 slots), and the testbed time each estimate costs.
Prints numbers; asserts nothing.
Run: .venv/bin/python bench/estimator_accuracy.py [--queries q1,q5,q8] [--slots 8,16,32,48]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from streambed.planner.estimator import CapacityEstimator, Timing
from streambed.ledger import Ledger
from streambed.model import Budget
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed
from streambed.testbed.sim.truth import GroundTruth

MEMORY_MB = 4096
COMPLEX = {"q5", "q8"}


def timing_for(query: str) -> Timing:
    """The paper's timing for the query (section VIII): q5 and q8 get the long warm-up."""
    return Timing.named("paper-complex" if query in COMPLEX else "paper-simple")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default="q1,q5,q8")
    parser.add_argument("--slots", default="8,16,32,48")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    print(f"{'query':6s} {'slots':>5s} {'configuration':>22s} {'estimate':>12s} {'truth':>12s} "
          f"{'est/truth':>9s} {'testbed s':>9s} {'windows':>7s}")
    for name in args.queries.split(","):
        profile = load_profile(name)
        truth = GroundTruth(profile)
        for slots in (int(s) for s in args.slots.split(",")):
            if slots < len(profile.operators):
                continue  # a budget needs a slot per operator
            configuration, _ = truth.model(MEMORY_MB).best_configuration(slots)
            expected = truth.configuration_mst(configuration, MEMORY_MB).mst
            testbed = SimTestbed(profile, SimSettings(seed=args.seed))
            with tempfile.TemporaryDirectory() as d:
                ledger = Ledger.open(Path(d), "estimate", {}, resume=False)
                try:
                    estimator = CapacityEstimator(testbed, ledger, timing_for(name))
                    est = estimator.estimate(name, Budget(slots, MEMORY_MB), configuration, "bench")
                finally:
                    ledger.close()
            ratio = est.mst / expected if expected > 0 else float("nan")
            rows.append({"query": name, "slots": slots, "configuration": configuration.as_dict(),
                         "estimate": est.mst, "truth": expected, "ratio": ratio,
                         "testbed_seconds": est.testbed_seconds, "windows": len(est.windows)})
            print(f"{name:6s} {slots:5d} {configuration.key():>22s} {est.mst:12,.0f} {expected:12,.0f} "
                  f"{ratio:9.3f} {est.testbed_seconds:9,.0f} {len(est.windows):7d}", flush=True)
    worst = max(abs(r["ratio"] - 1) for r in rows)
    print(f"worst |estimate / truth - 1|: {worst:.3f}; testbed time {sum(r['testbed_seconds'] for r in rows):,.0f} s")
    print(json.dumps({"benchmark": "estimator_accuracy", "memory_mb": MEMORY_MB, "results": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

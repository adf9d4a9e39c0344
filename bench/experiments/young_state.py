"""How a stateful task's cache hit rate changes over one run on the simulated testbed: its state starts
empty and fills over its warm-up (testbed/sim/formulas.state_fill), so a run read early shows state
that fits memory where the same task, later, misses. Why a plan's memory per operator is measured
before it is planned (docs/planner.md, "A plan the testbed holds is measured").

    .venv/bin/python bench/experiments/young_state.py [--profile q8] [--operator Join#7] [--rate 3e5]

One task per operator at each memory, observed for 30 s at 1, 5 and 15 minutes into the run.
"""

from __future__ import annotations

import argparse

from streambed.model import Budget, Configuration
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed

MINUTES = (1, 5, 15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="q8")
    parser.add_argument("--operator", default="Join#7")
    parser.add_argument("--rate", type=float, default=3e5, help="events/s")
    parser.add_argument("--memories", default="1024,4096", help="MB per slot, comma-separated")
    args = parser.parse_args()
    profile = load_profile(args.profile)
    testbed = SimTestbed(profile, SimSettings(seed=0, max_slots=len(profile.operators)))
    query = testbed.query(profile.name)
    print(f"{'MB':>6} {'minute':>6} {'achieved':>12} {'cache hit rate':>15}")
    for memory in (int(m) for m in args.memories.split(",")):
        testbed.prepare(Budget(len(profile.operators), memory))
        run = testbed.start(profile.name, Configuration.single_task(query), args.rate)
        elapsed = 0.0
        for minute in MINUTES:
            testbed.wait(run, 60.0 * minute - elapsed)
            window = testbed.observe(run, 30.0)
            elapsed = 60.0 * minute + 30.0
            hit = window.operator(args.operator).cache_hit_rate
            print(f"{memory:>6} {minute:>6} {window.achieved_rate:>12,.0f} {hit:>15.2f}")
        testbed.stop(run)


if __name__ == "__main__":
    main()

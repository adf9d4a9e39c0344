"""Rafiki's capacity table on the sim's Nexmark profiles against the sim's true per-task capacities.

    .venv/bin/python bench/methods_rafiki.py [--profiles q1,q2,q5,q8,q11] [--max-parallelism 6]
        [--max-slots 256] [--runs 60] [--warmup 60] [--observe 60] [--busy 0.9] [--seed 0]

Per profile: the profiling loop's runs and why it stopped; per operator, the capacity per task Rafiki
reads (a maximum, or a lower bound when the operator never was the bottleneck) against the sim's truth
two ways: the nominal rate of one task (``CapacityModel.rates``: records/s a task processes when busy,
window firings and state misses included) and the rate per task its operator sustains at the
parallelism the table read it at (``operator_capacity`` x input ratio / parallelism: a keyed operator's
busiest task carries more than its share). Then a summary over the maxima: how many within 10 %.
"""

from __future__ import annotations

import argparse
import statistics
import time

from streambed.planner import PlanningRequest
from streambed.planner.rafiki import Rafiki, capacities
from streambed.testbed.sim.capacity import CapacityModel
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default="q1,q2,q5,q8,q11")
    parser.add_argument("--max-parallelism", type=int, default=6)
    parser.add_argument("--max-slots", type=int, default=256)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--warmup", type=float, default=60.0, help="each run's warm-up, s (the paper's runs: 2 min)")
    parser.add_argument("--observe", type=float, default=60.0, help="each run's observation, s")
    parser.add_argument("--busy", type=float, default=0.9,
                        help="busy share a maximum needs (1e-9: back-pressure alone, as the paper)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    nominal_errors, at_p_errors, bounds = [], [], 0
    for name in args.profiles.split(","):
        t0 = time.time()
        profile = load_profile(name)
        testbed = SimTestbed(profile, SimSettings(max_slots=args.max_slots, seed=args.seed))
        request = PlanningRequest(name, 1.0, seed=args.seed, max_measurements=args.runs,
                                  options={"max_parallelism": args.max_parallelism,
                                           "warmup_s": args.warmup, "observe_s": args.observe,
                                           "busy": args.busy})
        ev = Rafiki().explore(testbed, request)
        truth = CapacityModel(profile, ev.memory_mb)
        caps = capacities(ev.entries)
        print(f"\n{name}: {len(ev.steps)} runs, {ev.testbed_seconds:,.0f} s of testbed time; stopped: {ev.stopped} "
              f"({time.time() - t0:,.0f} s)", flush=True)
        print(f"  {'operator':26s} {'per task':>12s} {'kind':5s} {'at p':>4s} {'true task':>12s} {'err':>7s} "
              f"{'true at p':>12s} {'err':>7s}")
        for op, (per_task, maximum) in caps.items():
            p = max((e.parallelism for e in ev.entries if e.operator == op and e.maximum), default=None)
            nominal = truth.rates[op]
            e1 = 100 * (per_task / nominal - 1)
            if maximum:
                at_p = truth.operator_capacity(op, p) * truth.ratios[op] / p
                e2 = 100 * (per_task / at_p - 1)
                nominal_errors.append(e1)
                at_p_errors.append(e2)
                print(f"  {op:26s} {per_task:12,.0f} {'max':5s} {p:4d} {nominal:12,.0f} {e1:+6.1f}% {at_p:12,.0f} {e2:+6.1f}%")
            else:
                bounds += 1
                print(f"  {op:26s} {per_task:12,.0f} {'lower':5s} {'':4s} {nominal:12,.0f} {e1:+6.1f}%")
    within = lambda errs: sum(abs(e) <= 10 for e in errs)  # noqa: E731
    print(f"\nmaxima: {len(at_p_errors)} operators, {bounds} lower bounds only")
    if at_p_errors:
        print(f"  vs the true task rate: {within(nominal_errors)} within 10 %, median |error| "
              f"{statistics.median(abs(e) for e in nominal_errors):.1f} %")
        print(f"  vs the true rate per task at the parallelism read: {within(at_p_errors)} within 10 %, "
              f"median |error| {statistics.median(abs(e) for e in at_p_errors):.1f} %")


if __name__ == "__main__":
    main()

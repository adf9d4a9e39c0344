"""Benchmark: how far behind a straggler-bound job falls, rate by rate, with the paper's rate limiter
(lost emissions never caught up) and with a replayed source that catches up (Kafka in production).
Prints the shortfall (% of the offer) of consecutive 60 s windows at multiples of the truth's MST of
the best configuration of the budget, in the sim's steady-state mode. Asserts nothing.
Run: .venv/bin/python bench/stall_shortfall.py [--profile q8] [--slots 12]
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from streambed.testbed.sim.engine import Engine
from streambed.testbed.sim.partitioning import keyed_streams
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.truth import STATE_AGE_S, GroundTruth

MEMORY_MB = 4096
MULTIPLES = (0.9, 1.0, 1.1, 1.2, 1.35, 1.5)
WINDOWS = 5
WINDOW_S = 60.0


def shortfalls(profile, configuration, rate: float, warm_rate: float, catch_up: float) -> list[float]:
    """Shortfall of each window, after the truth's warm-up (90 s) and ramp (30 s)."""
    eng = Engine(profile, configuration, MEMORY_MB, seed=12345, dt=0.1, keyed_streams=keyed_streams(profile),
                 noise=False, state_age_s=STATE_AGE_S, catch_up=catch_up)
    eng.set_rate(warm_rate)
    eng.advance(90)
    eng.set_rate(rate)
    eng.advance(30)
    out = []
    for _ in range(WINDOWS):
        e0, o0 = eng.emitted_total, eng.offered_total
        eng.advance(WINDOW_S)
        # with catch-up the source may emit more than it is offered in a window: count that as 0 behind
        out.append(max(0.0, 1.0 - (eng.emitted_total - e0) / (eng.offered_total - o0)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="q8")
    parser.add_argument("--slots", type=int, default=12)
    args = parser.parse_args()
    profile = load_profile(args.profile)
    truth = GroundTruth(profile)
    configuration, _ = truth.model(MEMORY_MB).best_configuration(args.slots)
    mst = truth.configuration_mst(configuration, MEMORY_MB).mst
    print(f"{args.profile}, {args.slots} slots ({configuration.key()}): truth {mst:,.0f} events/s")
    rows = []
    for label, catch_up in (("limiter", 0.0), ("catch-up", math.inf)):
        for m in MULTIPLES:
            s = shortfalls(profile, configuration, m * mst, 0.95 * mst, catch_up)
            rows.append({"source": label, "multiple": m, "shortfall": s})
            print(f"{label:9s} x{m:4.2f}: " + " ".join(f"{100 * x:5.2f}" for x in s)
                  + f"   mean {100 * sum(s) / len(s):5.2f} %", flush=True)
    print(json.dumps({"benchmark": "stall_shortfall", "profile": args.profile, "slots": args.slots,
                      "truth_mst": mst, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

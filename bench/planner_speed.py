"""Benchmark: the planner's own computations (no testbed).

* BIDS2 (PuLP + CBC) for 8 operators at 2,000 slots; the paper reports about 100 ms.
* The inverse solve of a surrogate model up to 100,000 slots; the paper: "at most a few seconds".
Prints numbers; asserts nothing. Run: make bench
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from streambed.optimizer import OperatorRates, SingleTaskMetrics, bids2
from streambed.surrogates import Features, Surrogate, inverse_solve

# q8's single-task metrics at 4 GB, as the sim's estimator measures them (8 operators + sink)
Q8 = [("Calc#1", 4.6e6, 1.0), ("Calc#2", 4.2e6, 1.0), ("GroupWindowAggregate#3", 4.2e4, 0.02),
      ("GroupWindowAggregate#4", 1.05e5, 0.06), ("Calc#5", 1.3e6, 0.022), ("Calc#6", 2.2e6, 0.0096),
      ("Join#7", 4.6e4, 0.0316), ("Calc#8", 1.3e6, 0.0092), ("Sink#9", 3.0e6, 0.0092)]
PAPER_Q5 = Surrogate("log", -7696.083637421589, 577989.9092965364, -1201310.2297755824, Features())


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    metrics = SingleTaskMetrics("q8", 4096, tuple((n, OperatorRates(o, r)) for n, o, r in Q8))
    solve = timed(lambda: bids2(metrics, 2000), 20)
    inverse = timed(lambda: inverse_solve(PAPER_Q5, 4096, 2.5e6, min_slots=9, max_slots=100_000), 20)
    big = timed(lambda: inverse_solve(Surrogate("log", 0, 1e5, 0, Features()), 4096, 1.0e6, max_slots=100_000), 20)
    rows = {"bids2_9_operators_2000_slots_ms": 1e3 * statistics.median(solve),
            "inverse_solve_paper_q5_ms": 1e3 * statistics.median(inverse),
            "inverse_solve_unreachable_100000_slots_ms": 1e3 * statistics.median(big)}
    for k, v in rows.items():
        print(f"{k:45s} {v:10.2f} ms (median of 20)")
    print(json.dumps({"benchmark": "planner_speed", **rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

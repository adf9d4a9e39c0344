"""How well the planner's key-skew law predicts a keyed operator's busiest task beyond the testbed
(model/keyskew.py): key distributions hashed at random (the sim's hashing, Flink's key-group ranges),
measured at the testbed's parallelisms, predicted at 100-3,000 tasks, against the share the keys give.

    .venv/bin/python bench/experiments/skew_law.py [--measured 5,10,16,28,43] [--predicted 100,300,700,1400,3000] [--seeds 3,4,5,6]

Prints, per distribution and seed, the estimated concentration H (and the true one), the hot key found,
and predicted / true busiest share per predicted parallelism; then a summary (under 0.95, over 1.3).
"""

from __future__ import annotations

import argparse

import numpy as np

from streambed.model import keygroups
from streambed.model.keyskew import estimate
from streambed.testbed.sim.partitioning import KeyedStream

DISTRIBUTIONS = ((200_000, 0.3), (500_000, 0.2), (100_000, 0.5), (20_000, 0.6), (10_000, 0.7), (5_000, 0.8),
                 (100_000, 0.85), (50_000, 0.95), (1_000_000, 1.0), (2_000_000, 1.1), (40, 0.0), (300, 0.0),
                 (1_000, 0.0), (3_000, 0.0))
"""(keys, Zipf exponent): the sim's q11, q8, q5 keys and shapes around them."""


def ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measured", type=ints, default=[5, 10, 16, 28, 43])
    parser.add_argument("--predicted", type=ints, default=[100, 300, 700, 1400, 3000])
    parser.add_argument("--seeds", type=ints, default=[3, 4, 5, 6])
    args = parser.parse_args()
    ratios: dict[tuple[int, float], list[float]] = {}
    for count, exponent in DISTRIBUTIONS:
        w = np.arange(1, count + 1, dtype=float) ** -exponent
        w /= w.sum()
        for seed in args.seeds:
            stream = KeyedStream(count, exponent, seed)
            skew = estimate([(list(stream.shares(p)), keygroups.default_max_parallelism(p), 0.0)
                             for p in args.measured])
            rs = [skew.busiest_share(p, keygroups.default_max_parallelism(p)) / stream.max_share(p)
                  for p in args.predicted]
            ratios.setdefault((count, exponent), []).extend(rs)
            print(f"{count:>9,} keys, Zipf {exponent:<4g} seed {seed}: H {skew.concentration:.3g} (true "
                  f"{float((w ** 2).sum()):.3g}), hot key {skew.hottest:.3g} (true {w[0]:.3g}); predicted / true at "
                  + ", ".join(f"{p}: {r:.2f}" for p, r in zip(args.predicted, rs)))
    print()
    for (count, exponent), rs in ratios.items():
        print(f"{count:>9,} keys, Zipf {exponent:<4g}: predicted / true {min(rs):.2f}-{max(rs):.2f}")
    every = [r for rs in ratios.values() for r in rs]
    print(f"all: {len(every)} predictions, {sum(r < 0.95 for r in every)} under 0.95, {sum(r > 1.3 for r in every)} "
          f"over 1.3")


if __name__ == "__main__":
    main()

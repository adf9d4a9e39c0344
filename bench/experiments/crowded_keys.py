"""How often the hot-key test reads several keys sharing one task as one key: every keyed operator of
generated profiles (`streambed sim generate`'s draws), its keys hashed over the job's key groups (the
profile's max parallelism, else Flink's default) and measured at the testbed's parallelisms, the hot key
the skew model infers (model/keyskew.estimate) against the heaviest key the data has.

    .venv/bin/python bench/experiments/crowded_keys.py [--seed 0] [--count 60] [--measured 5,10,16,28,43]

Prints each operator whose inferred hot key is over 1.5 x the heaviest key (a key "invented": a crowded
task), then a summary. Asserts nothing.
"""

from __future__ import annotations

import argparse

from streambed.model.keyskew import estimate
from streambed.testbed.sim.generate import generate_profile
from streambed.testbed.sim.partitioning import keyed_streams
from streambed.testbed.sim.profile import parse_profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--measured", type=lambda t: [int(v) for v in t.split(",")], default=[5, 10, 16, 28, 43])
    args = parser.parse_args()
    operators = invented = 0
    for index in range(args.count):
        profile = parse_profile(generate_profile(args.seed, index))
        for name, stream in keyed_streams(profile).items():
            widths = [p for p in args.measured if p <= stream.parallelism_limit]
            if not widths:
                continue
            skew = estimate([(list(stream.shares(p)), stream.max_parallelism(p), 0.0) for p in widths])
            operators += 1
            heaviest = float(stream.weights.max())
            if skew is not None and skew.hottest > 1.5 * heaviest:
                invented += 1
                print(f"{profile.name} {name}: {stream.count:,} keys, Zipf {stream.exponent:g}, over "
                      f"{stream.max_parallelism(max(widths)):,} key groups: hot key read {100 * skew.hottest:.2f} %, "
                      f"the heaviest key {100 * heaviest:.2f} % (the busiest of {max(widths)} tasks "
                      f"{100 * float(stream.shares(max(widths)).max()):.2f} %)")
    print(f"{operators} keyed operators of {args.count} profiles (seed {args.seed}): {invented} read a hot key over "
          f"1.5 x the heaviest key they have")


if __name__ == "__main__":
    main()

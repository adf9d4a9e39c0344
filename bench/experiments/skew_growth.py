"""How a keyed operator's busiest task grows away from the mean as its parallelism grows, on the
sim's own key hashing (Flink's key-group rule, testbed/sim/partitioning.py): the measured
imbalance at the testbed's scale against the one 10-30x beyond it (docs/evaluation.md, section A).

    .venv/bin/python bench/experiments/skew_growth.py [--profile q11] [--parallelism 4,16,43,128,512,1366]
"""

from __future__ import annotations

import argparse

from streambed.model import keygroups
from streambed.testbed.sim.partitioning import keyed_streams
from streambed.testbed.sim.profile import load_profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="q11")
    parser.add_argument("--parallelism", default="4,16,43,128,512,1366")
    parser.add_argument("--max-parallelism", type=int, default=keygroups.MAX_MAX_PARALLELISM,
                        help="key groups (default 32,768: the key-group rule's own steps out of the way)")
    args = parser.parse_args()
    profile = load_profile(args.profile)
    ps = [int(p) for p in args.parallelism.split(",")]
    for name, stream in keyed_streams(profile).items():
        stream.fixed_max_parallelism = args.max_parallelism
        row = ", ".join(f"{p}: {stream.max_share(p) * p:.3f}" for p in ps if p <= stream.parallelism_limit)
        print(f"{profile.name} {name} ({stream.count:,} keys, Zipf {stream.exponent:g}), busiest / mean task: {row}")


if __name__ == "__main__":
    main()

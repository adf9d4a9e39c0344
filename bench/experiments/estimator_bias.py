"""The estimator's MST of D's runs over the sim truth's MST of the same configuration, for every recorded
section G case at one multiple: how far the efficiency a plan carries (measured over predicted) sits below
1 by the measurement alone.

    .venv/bin/python bench/experiments/estimator_bias.py RUN/G [--multiple 1.5] [--min-slots 24]

RUN/G: a section G case directory (its A-<profile>-<multiple>x cases and profiles/). Each case's explorations
hold the same runs at every multiple, so one multiple reads them all.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from streambed.model import Configuration
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.truth import GroundTruth


def ratios(cases: Path, multiple: float, min_slots: int) -> list[float]:
    """Measured MST over the truth's of the same configuration and memory, per run of ``min_slots`` or more."""
    out = []
    for case in sorted(cases.glob(f"A-*-{multiple:g}x")):
        name = case.name[2:].rsplit("-", 1)[0]
        profile = load_profile(str(cases / "profiles" / f"{name}.yaml"))
        truth, query = GroundTruth(profile), profile.query()
        for p in json.loads((case / "exploration.json").read_text())["points"]:
            if p["mst"] > 0 and p["slots"] >= min_slots:
                cfg = Configuration.of(query, p["configuration"], p.get("max_parallelism"))
                out.append(p["mst"] / truth.configuration_mst(cfg, p["memory_mb"]).mst)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", type=Path, help="a section G case directory (RUN/G)")
    parser.add_argument("--multiple", type=float, default=1.5, help="the multiple whose cases to read")
    parser.add_argument("--min-slots", type=int, default=24, help="runs of at least this many slots")
    args = parser.parse_args()
    if not (args.cases / "profiles").is_dir():
        sys.exit(f"{args.cases}: expected a section G case directory with profiles/")
    r = np.array(ratios(args.cases, args.multiple, args.min_slots))
    if not len(r):
        sys.exit(f"{args.cases}: no run of {args.min_slots}+ slots at {args.multiple:g} x")
    print(f"{len(r)} runs of {args.min_slots}+ slots, measured / truth: median {np.median(r):.3f}, "
          f"10th percentile {np.percentile(r, 10):.3f}, 90th {np.percentile(r, 90):.3f}, "
          f"min {r.min():.3f}, max {r.max():.3f}")


if __name__ == "__main__":
    main()

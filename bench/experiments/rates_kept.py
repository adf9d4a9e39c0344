"""How much of the smallest budget's efficiency the largest keeps (planner/sizing.rates_kept, the guard
ExplorerSettings.rates_hold_floor reads) in the recorded explorations of section G runs with the data's
key statistics: one line per profile and memory (its 1.5 x case's exploration), then the spread.

    PYTHONPATH=controller:bench .venv/bin/python bench/experiments/rates_kept.py RUN [RUN ...]

RUN: an evaluate --out directory of section G (RUN/G/A-<profile>-1.5x/exploration.json, RUN/G/profiles).
Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from streambed.ledger import Ledger
from streambed.planner.estimator import CapacityEstimator, Timing
from streambed.planner.exploration import RATES_HOLD, Exploration, ExplorerSettings
from streambed.planner.explorer import ResourceExplorer
from streambed.planner.optimizer import ConfigurationOptimizer
from streambed.planner.policies import DEFAULT_POLICY, policy_named
from streambed.planner.sizing import rates_kept
from streambed.testbed.sim.keys import key_statistics
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args()
    kept = []
    for run in args.runs:
        for case in sorted((run / "G").glob("A-*-1.5x")):
            name = case.name[len("A-"):].rsplit("-", 1)[0]
            profile = load_profile(str(run / "G" / "profiles" / f"{name}.yaml"))
            ex = Exploration.from_dict(json.loads((case / "exploration.json").read_text()))
            tb = SimTestbed(profile, SimSettings(seed=0, max_slots=48))
            query = tb.query(profile.name)
            keys = key_statistics(profile).operators if query.keyed else ()
            with tempfile.TemporaryDirectory() as d, Ledger.open(d, "plan", {}, resume=False) as ledger:
                optimizer = ConfigurationOptimizer(CapacityEstimator(tb, ledger, Timing.named("paper-complex")), query,
                                                   policy_named(DEFAULT_POLICY))
                explorer = ResourceExplorer(optimizer, tb.info(), ExplorerSettings(seed=0, key_statistics=keys))
                for m in sorted({p.memory_mb for p in ex.points}):
                    k = rates_kept(explorer.measured_from_smallest(ex, m))
                    if k is not None:
                        kept.append(k)
                    print(f"{name} {m} MB: {'-' if k is None else f'{k:.3f}'}", flush=True)
    r = np.array(kept)
    print(f"{len(r)} profile-memories: min {r.min():.3f}, median {np.median(r):.3f}; below {RATES_HOLD:g}: "
          f"{int((r < RATES_HOLD).sum())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The operators a recorded exploration's largest budgets read as stalling (ResourceExplorer.stalls,
model/stalls.py), per memory: what the stall bound would bound in a plan made from it.

    .venv/bin/python bench/experiments/stalling.py DIR/G/A-gen-20261218-0005-1.5x --profile DIR/G/profiles/gen-20261218-0005.yaml

An exploration recorded before the compact trace kept per-operator window metrics reads them from the
case's ledger (replan_recorded.window_metrics).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from replan_recorded import window_metrics  # noqa: E402

from streambed.errors import UserError  # noqa: E402
from streambed.model import TestbedInfo  # noqa: E402
from streambed.planner import caveats  # noqa: E402
from streambed.planner.exploration import CHECKPOINT, Exploration, ExplorerSettings  # noqa: E402
from streambed.planner.explorer import ResourceExplorer  # noqa: E402
from streambed.testbed.sim.profile import load_profile  # noqa: E402
from streambed.testbed.sim.testbed import SimSettings, SimTestbed  # noqa: E402


def growth(runs, op: str) -> dict[int, float]:
    """The best MST at each parallelism ``op`` ran with, over the budgets no operator was
    caveats.ATTRIBUTING_BUSY busy in: what the testbed shows of its stall bound's growth (confounded by
    the other operators' tasks, which change with the budget)."""
    best: dict[int, float] = {}
    for p in runs:
        if max(o["busyness_max"] for o in p.measurement["operators"]) < caveats.ATTRIBUTING_BUSY:
            best[p.configuration[op]] = max(best.get(p.configuration[op], 0.0), p.mst)
    return dict(sorted(best.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", type=Path, help="a case directory (exploration.json, ledger.sqlite)")
    parser.add_argument("--profile", required=True, help="the case's sim profile (a name or a YAML file)")
    args = parser.parse_args()
    if not (args.case / "exploration.json").is_file():
        sys.exit(f"{args.case}: no exploration.json (expected a plan's or an evaluation case's directory)")
    try:
        profile = load_profile(args.profile)
    except UserError as e:
        sys.exit(f"--profile: {e}")
    query = SimTestbed(profile, SimSettings(seed=0)).query(profile.name)
    ex = Exploration.from_dict(json.loads((args.case / "exploration.json").read_text()))
    window_metrics(args.case, ex)
    memories = sorted({p.memory_mb for p in ex.points})
    # stalls() reads the query and the settings alone
    explorer = ResourceExplorer(SimpleNamespace(query=query), TestbedInfo("recorded", 0, tuple(memories)),
                                ExplorerSettings())
    for m in memories:
        runs = [p for p in ex.points if p.memory_mb == m and p.mst > 0 and p.measurement and p.phase != CHECKPOINT]
        if not runs:
            continue
        top = max(p.slots for p in runs)
        point = min((p for p in runs if p.slots == top), key=lambda p: p.mst)
        busiest = max(o["busyness_max"] for o in point.measurement["operators"])
        stalls = explorer.stalls(ex, m)
        print(f"{m} MB, {top} slots: MST {point.mst:,.0f} events/s, busiest operator {100 * busiest:.0f} % busy; "
              + ("stalling: " + ", ".join(f"{op} ({s.parallelism} tasks)" for op, s in stalls.items())
                 if stalls else "no stalling operator"))
        for op in stalls:
            best = growth(runs, op)
            if len(best) >= 2:
                slope = float(np.polyfit(np.log(list(best)), np.log(list(best.values())), 1)[0])
                print(f"  {op}: best MST at each of its parallelisms, over the budgets with no operator 80 % busy, "
                      + ", ".join(f"{p}: {r:,.0f}" for p, r in best.items()) + f"; growth p^{slope:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

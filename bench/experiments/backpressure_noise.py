"""How much the operators fed by the source wait on their outputs in the rate search's windows near the MST:
the noise a stalling operator's back-pressure must stand out from (model/stalls.HELD_FLOOR).

    .venv/bin/python bench/experiments/backpressure_noise.py RUN [RUN ...]

RUN is a section G run directory (`bench/evaluate.py --sections G --out RUN`). Every point of every 1.5 x
case's exploration counts; explorations recorded before the compact trace kept per-operator window metrics
read them from the case's ledger (replan_recorded.window_metrics).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from replan_recorded import window_metrics  # noqa: E402

from streambed.model.stalls import HELD_FLOOR, NEAR_MST  # noqa: E402
from streambed.planner.exploration import CHECKPOINT, Exploration  # noqa: E402
from streambed.testbed.sim.profile import load_profile  # noqa: E402
from streambed.testbed.sim.testbed import SimSettings, SimTestbed  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="section G run directories")
    args = parser.parse_args()
    missing = [str(run) for run in args.runs if not (run / "G").is_dir()]
    if missing:
        sys.exit(f"not a section G run directory (no G/ in it): {', '.join(missing)}")
    kept, failed = [], []  # source-fed back-pressure; (shortfall, back-pressure)
    for run in args.runs:
        for case in sorted((run / "G").glob("A-*-1.5x")):
            name = case.name[2:].rsplit("-", 1)[0]
            profile = load_profile(str(run / "G" / "profiles" / f"{name}.yaml"))
            fed = SimTestbed(profile, SimSettings(seed=0)).query(profile.name).outputs("source")
            ex = Exploration.from_dict(json.loads((case / "exploration.json").read_text()))
            window_metrics(case, ex)
            for p in ex.points:
                if p.phase == CHECKPOINT or p.mst <= 0 or not p.trace or "operators" not in p.trace[0]:
                    continue
                for w in p.trace:
                    m = w["measurement"]
                    waited = max(o["backpressure"] for o in w["operators"] if o["operator"] in fed)
                    if w["success"] and p.mst / NEAR_MST <= w["rate"] <= p.mst:
                        kept.append(waited)
                    elif not w["success"] and p.mst < w["rate"] <= NEAR_MST * p.mst:
                        failed.append((1.0 - m["achieved_rate"] / m["target_rate"], waited))
    if not kept or not failed:
        sys.exit("no windows with per-operator metrics near an MST in those runs")
    q = np.quantile(kept, [0.5, 0.9, 0.99, 1.0])
    print(f"sustained windows up to {NEAR_MST:g} x below the MST: {len(kept)}; the source-fed operators' largest "
          f"back-pressure at the median {q[0]:.4f}, 90th percentile {q[1]:.4f}, 99th {q[2]:.4f}, max {q[3]:.4f}")
    f = np.array(failed)
    print(f"failing windows up to {NEAR_MST:g} x above it: {len(f)}; shortfall median {np.median(f[:, 0]):.4f}; "
          f"back-pressure at least {HELD_FLOOR:g}: {int((f[:, 1] >= HELD_FLOOR).sum())}, "
          f"from 0.002 to {HELD_FLOOR:g}: {int(((f[:, 1] >= 0.002) & (f[:, 1] < HELD_FLOOR)).sum())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

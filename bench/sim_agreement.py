"""Benchmark: how closely the sim's capacity model (which chooses configurations for ground truth)
agrees with the engine (which measures their MST). Prints numbers; asserts nothing.
Run: make bench   (or: .venv/bin/python bench/sim_agreement.py)
"""

from __future__ import annotations

import json
import sys

from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.truth import GroundTruth

CASES = {"q1": [2, 16, 48, 178], "q2": [2, 6, 48], "q5": [9, 16, 48, 200, 2000, 20000, 100000], "q8": [9, 12, 16, 24, 32, 48, 100, 176],
         "q11": [4, 16, 48, 541]}


def main() -> int:
    rows = []
    print(f"{'profile':8s} {'slots':>6s} {'engine MST':>14s} {'model MST':>14s} {'engine/model':>13s}")
    for name, grid in CASES.items():
        gt = GroundTruth(load_profile(name))
        for slots in grid:
            t = gt.true_mst(slots, 4096)
            ratio = t.mst / t.model_mst
            rows.append({"profile": name, "slots": slots, "engine_mst": t.mst, "model_mst": t.model_mst, "ratio": ratio})
            print(f"{name:8s} {slots:6d} {t.mst:14,.0f} {t.model_mst:14,.0f} {ratio:13.3f}", flush=True)
    print(json.dumps({"benchmark": "sim_agreement", "memory_mb": 4096, "results": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

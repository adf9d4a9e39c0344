"""Benchmark: how much faster than real time the simulated testbed runs a large job.

Target: an 8-operator job at 1,000 slots at 1,000x real time or faster on one core.
Prints numbers; asserts nothing (speed belongs in benchmarks, not in tests).
Run: make bench   (or: .venv/bin/python bench/sim_speed.py)
"""

from __future__ import annotations

import json
import os
import sys
import time

# One core: keep numpy's helper threads out of the measurement.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

from streambed.testbed.sim.capacity import capacity_model  # noqa: E402
from streambed.testbed.sim.engine import Engine  # noqa: E402
from streambed.testbed.sim.profile import load_profile  # noqa: E402
from streambed.testbed.sim.truth import GroundTruth  # noqa: E402

SIMULATED_S = 600.0


def measure(name: str, slots: int, memory: int = 4096) -> dict:
    profile = load_profile(name)
    config, cap = capacity_model(profile, memory).best_configuration(slots)
    engine = Engine(profile, config, memory, seed=1)
    engine.set_rate(0.9 * cap.mst)
    engine.advance(10)  # let numpy caches warm
    start = time.perf_counter()
    engine.advance(SIMULATED_S)
    wall = time.perf_counter() - start
    return {"profile": name, "operators": len(profile.operators), "slots": config.slots, "tasks": engine.n_tasks,
            "simulated_s": SIMULATED_S, "wall_s": round(wall, 3), "speedup": round(SIMULATED_S / wall, 1),
            "step_s": engine.dt}


def truth_cost(name: str, slots: int, multiple: float, memory: int = 4096) -> dict:
    """CPU seconds of the truth's two queries on ``name``: the MST of its best ``slots``-slot configuration,
    then the least budget for ``multiple`` x that MST (section G's target and true minimum)."""
    gt = GroundTruth(load_profile(name))
    start = time.process_time()
    mst = gt.true_mst(slots, memory).mst
    measured = time.process_time()
    found = gt.least_budget(multiple * mst, memory)
    done = time.process_time()
    return {"profile": name, "slots": slots, "true_mst_cpu_s": round(measured - start, 2), "multiple": multiple,
            "least_budget": found[0] if found else None, "least_budget_cpu_s": round(done - measured, 2)}


def main() -> int:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rows = [measure("q8", 1000), measure("q5", 1000), measure("q8", 2000), measure("q1", 48)]
    print(f"{'profile':8s} {'ops':>4s} {'slots':>6s} {'simulated s':>12s} {'wall s':>8s} {'x real time':>12s}")
    for r in rows:
        print(f"{r['profile']:8s} {r['operators']:4d} {r['slots']:6d} {r['simulated_s']:12.0f} {r['wall_s']:8.3f} "
              f"{r['speedup']:12.1f}")
    truths = [truth_cost("q11", 48, 3), truth_cost("q8", 48, 3)]
    print(f"{'profile':8s} {'slots':>6s} {'true_mst CPU s':>15s} {'x':>4s} {'least budget':>13s} {'CPU s':>7s}")
    for t in truths:
        print(f"{t['profile']:8s} {t['slots']:6d} {t['true_mst_cpu_s']:15.2f} {t['multiple']:4g} "
              f"{t['least_budget'] or '-':>13} {t['least_budget_cpu_s']:7.2f}")
    print(json.dumps({"benchmark": "sim_speed", "target_speedup": 1000, "results": rows, "truth": truths}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Imai et al.'s MST models on the sim's Nexmark profiles: which model the validation points choose, and
the prediction error beyond the training range against the sim's ground truth.

    .venv/bin/python bench/methods_imai.py [--profiles q1,q2,q5,q8,q11] [--max-slots 256]
        [--beyond 64,96,128,192,256] [--timing paper-simple] [--scale spare] [--model1-terms ernest] [--seed 0] [--truth-cache FILE]

Per profile: the MSTs measured at the training slot counts (and their error against the truth), the
validation slot counts of Algorithm 1, both fits, the model chosen and by which error; then the MAPE
(Eq. 10) of Model 1, Model 2, the model the training error alone would choose, and the model chosen,
at the --beyond slot counts against ``GroundTruth.true_mst`` (the best configuration's MST, measured
on the engine without noise; for an analytic profile, paper-q5-log say, its law f(M, P), which the
engine follows by construction). ``--truth-cache``: a JSON file of truths already measured
({"profile/memory/slots": MST}), read and extended, since each takes seconds to minutes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from streambed.model import Configuration
from streambed.planner import PlanningRequest
from streambed.planner.imai import Imai, mape, rmse
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed
from streambed.testbed.sim.truth import GroundTruth


def ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default="q1,q2,q5,q8,q11")
    parser.add_argument("--max-slots", type=int, default=256)
    parser.add_argument("--beyond", type=ints, default=[64, 96, 128, 192, 256])
    parser.add_argument("--timing", default="paper-simple")
    parser.add_argument("--scale", default="spare")
    parser.add_argument("--model1-terms", default="ernest", help="ernest (1, 1/m, log m, m) or paper (1, 1/m, m, m^2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--truth-cache", type=Path)
    args = parser.parse_args()
    cache = json.loads(args.truth_cache.read_text()) if args.truth_cache and args.truth_cache.exists() else {}
    rows = []
    for name in args.profiles.split(","):
        t0 = time.time()
        profile = load_profile(name)
        testbed = SimTestbed(profile, SimSettings(max_slots=args.max_slots, seed=args.seed))
        request = PlanningRequest(name, 1.0, seed=args.seed, options={"timing": args.timing, "scale": args.scale,
                                                                  "model1_terms": args.model1_terms})
        ev = Imai().explore(testbed, request)
        truth = GroundTruth(profile)

        def true_mst(m: int) -> float:
            key = f"{name}/{ev.memory_mb}/{m}"
            if profile.analytic is not None:
                return profile.analytic.capacity(ev.memory_mb, m)
            if key not in cache:
                cache[key] = truth.true_mst(m, ev.memory_mb).mst
                if args.truth_cache:
                    args.truth_cache.write_text(json.dumps(cache, indent=1))
            return cache[key]

        true = {m: true_mst(m) for m in [*args.beyond, *(m for m, _ in ev.training + ev.validation)]}
        shift = ev.shift
        one, two = ev.fits
        trained_pick = min(ev.fits, key=lambda f: rmse(f, [m - shift for m, _ in ev.training],
                                                       [y for _, y in ev.training]))
        xs, ys = [m - shift for m in args.beyond], [true[m] for m in args.beyond]
        print(f"\n{name} ({ev.operators} operators, {ev.memory_mb} MB per slot, models on slots - {shift}); "
              f"{ev.measurements} estimates, {ev.testbed_seconds:,.0f} s of testbed time, {time.time() - t0:,.0f} s",
              flush=True)
        for what, points in (("training", ev.training), ("validation", ev.validation)):
            for m, mst in points:
                print(f"  {what:10s} {m:4d} slots: MST {mst:14,.0f}  truth {true[m]:14,.0f}  "
                      f"({100 * (mst / true[m] - 1):+.1f} %)")
        for step in ev.steps:
            if step.note == "validate" and profile.analytic is None:
                # the truth of the configuration the policy chose, against the truth of the best one
                own = truth.configuration_mst(Configuration.of(testbed.query(name), step.configuration),
                                              ev.memory_mb).mst
                print(f"  validation {step.slots:4d} slots: the policy's configuration {dict(step.configuration)} "
                      f"sustains {own:,.0f} by the truth")
        if not ev.validation:
            print("  validation: none (the models never differ by more than tau beyond the training range)")
        for f in ev.fits:
            print(f"  Model {f.model}: weights {', '.join(f'{w:.4g}' for w in f.weights)}; "
                  f"peak {'none' if f.peak() == float('inf') else f'{f.peak() + shift:,.0f} slots'}")
        e1, e2 = mape(one, xs, ys), mape(two, xs, ys)
        et, ec = mape(trained_pick, xs, ys), mape(ev.chosen, xs, ys)
        print(f"  chosen: Model {ev.chosen.model} by its {ev.decided_by} error (training error alone: "
              f"Model {trained_pick.model})")
        print(f"  MAPE vs truth at {args.beyond} slots: Model 1 {e1:.1f} %, Model 2 {e2:.1f} %, "
              f"training pick {et:.1f} %, chosen {ec:.1f} %")
        rows.append((name, ev.chosen.model, ev.decided_by, len(ev.validation), e1, e2, et, ec))
    print("\nprofile  chosen  by          val.points  MAPE M1  MAPE M2  training pick  chosen")
    for r in rows:
        print(f"{r[0]:8s} Model {r[1]} {r[2]:11s} {r[3]:10d}  {r[4]:6.1f} %  {r[5]:6.1f} %  {r[6]:11.1f} %  {r[7]:5.1f} %")


if __name__ == "__main__":
    main()

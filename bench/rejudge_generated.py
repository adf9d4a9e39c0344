"""Section G's plans of an earlier run, judged again by the current sim truth: the targets' basis (each
profile's 48-slot MST at 4 GB, which fixes the rates the plans were made for) and every planned entry's
own configuration (docs/evaluation.md, section G).

    .venv/bin/python bench/rejudge_generated.py RUN_DIR {targets,short,rest}

RUN_DIR is a section G `--out` directory (evaluation.json and G/profiles/); ``short`` re-judges the
entries that run found below 0.97 of the target, ``rest`` the other planned ones.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from streambed.model import Configuration
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.truth import GroundTruth

SUSTAIN_FLOOR = 0.97


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("part", choices=("targets", "short", "rest"))
    args = parser.parse_args()
    records = json.loads((args.run / "evaluation.json").read_text())["G_generated"]["records"]
    profiles: dict[str, object] = {}

    def profile(name: str):
        if name not in profiles:
            profiles[name] = load_profile(str(args.run / "G" / "profiles" / f"{name}.yaml"))
        return profiles[name]

    if args.part == "targets":
        basis = {}
        for r in records:
            basis.setdefault(r["profile"], r["rate"] / r["multiple"])
        for name, recorded in basis.items():
            t0 = time.time()
            mst = GroundTruth(profile(name)).true_mst(48, 4096).mst
            print(f"{name}: 48-slot MST {mst:,.0f}, recorded {recorded:,.0f}, ratio {mst / recorded:.4f} "
                  f"[{time.time() - t0:.0f} s]", flush=True)
        return
    short = [r for r in records if r["own_over_rate"] is not None and r["own_over_rate"] < SUSTAIN_FLOOR]
    chosen = short if args.part == "short" else [r for r in records if r["planned_slots"] and r not in short]
    for r in chosen:
        t0 = time.time()
        p = profile(r["profile"])
        c = Configuration.of(p.query(), r["configuration"], max_parallelism=r["max_parallelism"])
        t = GroundTruth(p).configuration_mst(c, r["memory_mb"])
        print(f"{r['profile']} x{r['multiple']:g} {r['memory_mb']} MB: {r['planned_slots']} slots, own MST / target "
              f"{t.mst / r['rate']:.3f} (recorded {r['own_over_rate']:.3f}; capacity model {t.model_mst / r['rate']:.3f}), "
              f"bottleneck {t.bottleneck}, true minimum {r['true_min']} [{time.time() - t0:.0f} s]", flush=True)


if __name__ == "__main__":
    main()

"""Would fine key groups have saved the warned entries that fell short? For every planned entry of a section G
run that carries a key warning (PlanEntry.key_warning), the sim's truth of the plan's own configuration as
planned, and of the same parallelism with the job's max parallelism set as a plan sets it when Flink's
default would cost slots (sizing.planned_max_parallelism of the planned slots): the same slots, the key
groups of a possibly hot key's task fewer. Where the plan already set a max parallelism the entry is listed
unchanged.

    .venv/bin/python bench/experiments/warned_key_groups.py RUN PROFILE_SEED

RUN is a `bench/evaluate.py --out` directory (its evaluation.json) made with ``--generated-seed
PROFILE_SEED``: the profiles are regenerated from that seed. Prints one line per warned entry and the
counts short (own configuration below 0.97 of the target) before and after. Asserts nothing.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

USAGE = "usage: warned_key_groups.py RUN PROFILE_SEED  (RUN: a bench/evaluate.py --out directory of section G)"
SHORT = 0.97


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(USAGE, file=sys.stderr)
        return 2
    run, seed = Path(argv[0]), argv[1]
    file = run / "evaluation.json" if run.is_dir() else run
    try:
        rows = json.loads(file.read_text())["G_generated"]["rows"]
        profile_seed = int(seed)
        count = 1 + max(int(r["profile"].rsplit("-", 1)[1]) for r in rows)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        print(f"{file}, seed {seed!r}: expected a section G evaluation.json and an integer seed ({e})", file=sys.stderr)
        return 1

    from streambed.model import Configuration
    from streambed.planner.sizing import planned_max_parallelism
    from streambed.testbed.sim.generate import write_profiles
    from streambed.testbed.sim.profile import load_profile
    from streambed.testbed.sim.truth import GroundTruth

    with tempfile.TemporaryDirectory() as d:
        profiles = {p.stem: load_profile(str(p)) for p in write_profiles(Path(d), count, profile_seed)}
    before = after = warned = 0
    for row in rows:
        profile = profiles[row["profile"]]
        truth = GroundTruth(profile)
        for mem, e in row["memories"].items():
            if not (e.get("planned") and e.get("key_warning")):
                continue
            warned += 1
            own = e["own_over_rate"]
            mp = e.get("max_parallelism")
            if mp is None:
                mp = planned_max_parallelism(e["planned"])
                config = Configuration.of(profile.query(), e["configuration"], mp)
                fine = truth.configuration_mst(config, int(mem)).mst / row["rate"]
            else:
                fine = own
            before += own < SHORT
            after += fine < SHORT
            print(f"{row['profile']} x{row['multiple']:g} {mem} MB: {e['planned']} slots, own {own:.3f} "
                  f"(max parallelism {e.get('max_parallelism') or 'default'}) -> {fine:.3f} at {mp}")
    print(f"{warned} warned entries: {before} short as planned, {after} with the key groups set")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""How far the sim's measured per-task inputs lie from the data's key-group counts for the same runs
(keyskew.COUNT_AGREEMENT): every 1.5 x case of two section G runs made with --generated-key-stats.

    .venv/bin/python bench/experiments/count_agreement.py G_DIR [G_DIR ...]

G_DIR: a bench/evaluate.py --out directory's G/ (its profiles/ and A-*-1.5x/exploration.json). Prints the
runs checked and the worst deviation over the busiest task's share. Asserts nothing.
"""

import sys
import json, glob
import numpy as np
from pathlib import Path
from streambed.model import Measurement
from streambed.model.measurement import key_samples
from streambed.model.keystats import key_skew
from streambed.planner.exploration import Exploration
from streambed.testbed.sim.keys import key_statistics
from streambed.testbed.sim.profile import load_profile
if len(sys.argv) < 2 or not all(Path(d, 'profiles').is_dir() for d in sys.argv[1:]):
    sys.exit('usage: count_agreement.py G_DIR [G_DIR ...]  (G_DIR: an evaluate --out directory\'s G/, with profiles/)')
worst, n = 0.0, 0
for run in sys.argv[1:]:
    for case in sorted(glob.glob(run + "/A-*-1.5x")):
        name = Path(case).name[2:].rsplit("-", 1)[0]
        profile = load_profile(f"{run}/profiles/{name}.yaml")
        ex = Exploration.from_dict(json.loads(Path(case, "exploration.json").read_text()))
        runs = [(Measurement.from_dict(p.measurement), p.max_parallelism) for p in (*ex.points, *ex.probes) if p.measurement and p.mst > 0]
        stats = {s.operator: key_skew(s) for s in key_statistics(profile).operators}
        for op, samples in key_samples(profile.query(), runs).items():
            d = stats.get(op)
            if d is None or d.groups is None: continue
            for ti, m, _ in samples:
                if not d.groups.folds(m): continue
                meas = np.asarray(ti); meas = meas / meas.sum(); c = d.groups.tasks(len(ti), m)
                worst = max(worst, np.abs(meas - c).max() / c.max()); n += 1
print(n, "runs checked, worst deviation / busiest share %.4f" % worst)

"""Plans with the data's key statistics on profiles whose truth bends for a reason no configuration model
sees: keyed profiles under an analytic law f(M, P) that slows every task as P grows (``--profiles``: YAML
files with an ``analytic`` block and keyed ``operators``, e.g. q8's operators with paper-q8-sqrt's law),
under four settings: neither rule that trusts the configuration with the data's keys
(``beyond_trusted_keys`` "agree", ``below_model_with_keys`` 1), the beyond-trusted one, both, and both without
the guard of the runs' rates holding (``rates_hold_floor`` 0). A query that bends for another reason (the
network, coordination) must not be under-provisioned by them.

    PYTHONPATH=controller:bench .venv/bin/python bench/experiments/keys_on_concave.py --profiles A.yaml,B.yaml --out DIR

Prints one line per plan (profile, multiple, setting: planned slots at 4 GB, true minimum, own MST over the
target). Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from evaluate import data_key_statistics, judged_plan

SETTINGS = {"neither": {"beyond_trusted_keys": "agree", "below_model_with_keys": 1.0},
            "beyond-trusted": {"beyond_trusted_keys": "configured", "below_model_with_keys": 1.0},
            "both": {"beyond_trusted_keys": "configured", "below_model_with_keys": 1.5},
            "both-unguarded": {"beyond_trusted_keys": "configured", "below_model_with_keys": 1.5,
                               "rates_hold_floor": 0.0}}


def one(args: tuple[str, float, str, str]) -> dict:
    path, multiple, setting, out = args
    explorer = {**data_key_statistics(path), **SETTINGS[setting]}
    row = judged_plan(Path(out) / f"{Path(path).stem}-{multiple:g}x-{setting}", path, multiple, explorer=explorer,
                      memories=(4096,))
    e = row["memories"].get(4096, row["memories"].get("4096"))
    return {"profile": Path(path).stem, "multiple": multiple, "setting": setting, "planned": e["planned"],
            "true_min": e["true_min"], "own_over_rate": e["own_over_rate"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", required=True, help="profile YAML files, comma-separated")
    parser.add_argument("--out", required=True)
    parser.add_argument("--multiples", default="3,10,25")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    cases = [(p, float(m), setting, args.out) for p in args.profiles.split(",") for m in args.multiples.split(",")
             for setting in SETTINGS]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(one, cases))
    for r in rows:
        own = "-" if r["own_over_rate"] is None else f"{r['own_over_rate']:.3f}"
        print(f"{r['profile']} {r['multiple']:g}x {r['setting']}: planned {r['planned']}, "
              f"true minimum {r['true_min']}, own MST / target {own}")
    Path(args.out, "keys_on_concave.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

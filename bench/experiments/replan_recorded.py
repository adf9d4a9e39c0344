"""Plans of an earlier section A, E or G run made again by the current planner from the same recorded
explorations, and judged by the sim's truth on each entry's own configuration.

A section G case costs minutes of exploration and truth searches; most of a rule change in the plan's
last steps (sizing, skew probes, beyond-trusted plans) needs neither again. This script reads each
case's exploration.json, re-plans it for the recorded rate on a fresh simulated testbed (which measures
only what the current planner adds: a skew probe, a missing single-task run), and judges every entry
by the truth of its own configuration (``streambed sim truth --plan``) against the true minimum the
earlier run recorded. Run it with another checkout's code first on the PYTHONPATH to get the "before".

    .venv/bin/python bench/experiments/replan_recorded.py /tmp/evG10 --section G_generated --profiles /tmp/evG10/G/profiles

A section G run stopped before its end: `--rows /tmp/evG10/G/cases.jsonl` (the records it wrote as each
case ended) instead of its evaluation.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from streambed.ledger import Ledger
from streambed.model import Configuration, Measurement
from streambed.planner.estimator import CapacityEstimator, Timing
from streambed.planner.exploration import Exploration, ExplorerSettings
from streambed.planner.explorer import ResourceExplorer
from streambed.planner.optimizer import ConfigurationOptimizer
from streambed.planner.policies import DEFAULT_POLICY, policy_named
from streambed.testbed.sim.keys import key_statistics
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed
from streambed.testbed.sim.truth import GroundTruth

TESTBED_SLOTS = 48
FLOOR = 0.97


def window_metrics(case_dir: Path, ex: Exploration) -> None:
    """Each recorded point's rate-search windows with their per-operator metrics (exploration.compact_trace),
    from the case's ledger, where its exploration.json predates them: a point's windows are the ledger's
    ``coNN/<memory>MB/<slots>/w<i>`` steps (with their ``/more<j>`` observations merged) whose rates match."""
    path = case_dir / "ledger.sqlite"
    if not path.is_file():
        return
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        steps = {k: json.loads(d) for k, d in db.execute("select key, data from steps")}
    runs: dict[str, dict[int, Measurement]] = {}
    for key in sorted(steps):
        parts = key.split("/")
        if len(parts) < 4 or not parts[0].startswith("co") or not parts[3].startswith("w") or "measurement" not in steps[key]:
            continue
        m = Measurement.from_dict(steps[key]["measurement"])
        windows = runs.setdefault("/".join(parts[:3]), {})
        i = int(parts[3][1:])
        windows[i] = windows[i].then(m) if len(parts) > 4 and i in windows else m
    for p in ex.points:
        if not p.trace or "operators" in p.trace[0]:
            continue
        for key, windows in runs.items():
            if key.split("/")[1:] != [f"{p.memory_mb}MB", str(p.slots)] or len(windows) < len(p.trace):
                continue
            if all(math.isclose(windows[i].target_rate, w["rate"], rel_tol=1e-9) for i, w in enumerate(p.trace)):
                for i, w in enumerate(p.trace):
                    w["operators"] = [{"operator": o.operator, "busyness_max": o.busyness_max,
                                       "backpressure": o.backpressure} for o in windows[i].operators]
                break


def replan_case(case_dir: Path, row: dict, profile_path: str, explorer_settings: dict | None = None,
                reselect: bool = False, key_stats: bool = False) -> list[dict]:
    profile = load_profile(profile_path)
    if key_stats:  # the data's key statistics, as `streambed sim keys` writes them for --key-stats
        explorer_settings = {**(explorer_settings or {}), "key_statistics": key_statistics(profile).operators}
    ex = Exploration.from_dict(json.loads((case_dir / "exploration.json").read_text()))
    window_metrics(case_dir, ex)
    memories = sorted(int(m) for m in row["memories"])
    timing = "paper-complex" if any(o.kind == "join" for o in profile.operators) or any(
        q in profile.name for q in ("q5", "q8")) else "paper-simple"
    tb = SimTestbed(profile, SimSettings(seed=0, max_slots=TESTBED_SLOTS))
    query = tb.query(profile.name)
    with tempfile.TemporaryDirectory() as d, Ledger.open(d, "plan", {"query": profile.name}, resume=False) as ledger:
        est = CapacityEstimator(tb, ledger, Timing.named(timing))
        opt = ConfigurationOptimizer(est, query, policy_named(DEFAULT_POLICY))
        settings = ExplorerSettings(seed=0, **(explorer_settings or {}))
        explorer = ResourceExplorer(opt, tb.info(), settings)
        if reselect:  # the model chosen again from the recorded points by the current selection rules
            from streambed.planner.selection import select
            # the explorer's own view of D where it has one (ResourceExplorer.observations: key-group gains)
            select(ex, settings, *([explorer.observations(ex)] if hasattr(explorer, "observations") else []))
        rate = row["rate"]
        plan = explorer.plan(ex, rate, memories)
        if hasattr(explorer, "probe") and explorer.probe(ex, plan, est):
            plan = explorer.plan(ex, rate, memories)
        probe_s = sum(p.testbed_seconds for p in getattr(ex, "probes", ()))
    gt = GroundTruth(profile)
    out = []
    for e in plan.entries:
        recorded = row["memories"][str(e.memory_mb)] if str(e.memory_mb) in row["memories"] else row["memories"][e.memory_mb]
        own = None
        if e.slots:
            own = gt.configuration_mst(Configuration.of(query, e.configuration, e.max_parallelism), e.memory_mb).mst
        out.append({"profile": row["profile"], "multiple": row["multiple"], "memory_mb": e.memory_mb,
                    "planned": e.slots, "own_over_rate": own / rate if own is not None else None,
                    "true_min": recorded["true_min"], "beyond_trusted": getattr(e, "beyond_trusted", False),
                    "risk": e.risk, "unseen": list(getattr(e, "unseen", ())), "probe_s": probe_s,
                    "recorded_planned": recorded["planned"], "configuration": e.configuration,
                    "unreachable": e.unreachable})
    return out


def summary(records: list[dict]) -> str:
    ratios = [r["planned"] / r["true_min"] for r in records if r["planned"] and r["true_min"]]
    short = [r for r in records if r["own_over_rate"] is not None and r["own_over_rate"] < FLOOR]
    wrong = [r for r in records if r["planned"] is None and r["true_min"]]
    agreed = [r for r in records if r["planned"] is None and not r["true_min"]]
    over = [x for x in ratios if x > 1.25]
    reach = [r for r in records if r["true_min"]]
    pct = (lambda q: f"{np.percentile(ratios, q):.2f}") if ratios else (lambda q: "-")
    return (f"{len(records)} entries ({sum(r['planned'] is not None for r in records)} planned, "
            f"{sum(bool(r['beyond_trusted']) for r in records)} beyond the trusted range): {len(short)} whose own "
            f"configuration sustains < {FLOOR} of the target; {len(wrong)} unreachable where the truth reaches the rate "
            f"({len(wrong)}/{len(reach)} of those it reaches), {len(agreed)} where it agrees; {len(over)} over 1.25 x; "
            f"slots / true minimum median {pct(50)}, 95th percentile {pct(95)}, worst "
            f"{max(ratios) if ratios else float('nan'):.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="an evaluate --out directory (evaluation.json and the case directories)")
    parser.add_argument("--section", default="G_generated", help="evaluation.json's section key")
    parser.add_argument("--rows", type=Path, default=None,
                        help="the section's case records from this file instead of evaluation.json: section G's "
                             "cases.jsonl, written as each case ends (a run stopped before its end has no evaluation.json)")
    parser.add_argument("--cases", default=None, help="the section's case directory (default: run/<letter>)")
    parser.add_argument("--profiles", default=None, help="where the profiles' YAML files are (default: by name)")
    parser.add_argument("--skip", default="", help="profiles to leave out, comma-separated")
    parser.add_argument("--reselect", action="store_true",
                        help="choose the model's family and features again with the current selection rules")
    parser.add_argument("--key-stats", action="store_true",
                        help="plan with the data's key statistics (`streambed sim keys`, as --key-stats gives them)")
    parser.add_argument("--out", type=Path, default=None, help="write the records as JSON here")
    parser.add_argument("--explorer", action="append", default=[],
                        help="an ExplorerSettings field as name=value (text, or a number), repeatable")
    args = parser.parse_args()
    if args.rows and not args.rows.is_file():
        sys.exit(f"--rows: no such file {args.rows} (section G's cases.jsonl)")
    if args.rows:
        data = {"rows": [r for r in map(json.loads, args.rows.read_text().splitlines()) if "error" not in r]}
    else:
        data = json.loads((args.run / "evaluation.json").read_text())[args.section]
    cases = Path(args.cases) if args.cases else args.run / args.section[0]
    skip = set(filter(None, args.skip.split(",")))
    settings = {}
    for item in args.explorer:
        name, _, value = item.partition("=")
        try:
            settings[name] = float(value) if "." in value else int(value)
        except ValueError:
            settings[name] = value
    try:
        ExplorerSettings(**settings)
    except (TypeError, ValueError) as e:
        sys.exit(f"--explorer: {e}")
    records = []
    for row in data["rows"]:
        if row["profile"] in skip:
            continue
        t0 = time.time()
        path = str(Path(args.profiles) / f"{row['profile']}.yaml") if args.profiles else row["profile"]
        recs = replan_case(cases / f"A-{row['profile']}-{row['multiple']:g}x", row, path, settings, args.reselect,
                           args.key_stats)
        records += recs
        print(f"{row['profile']} x{row['multiple']:g}: " + ", ".join(
            f"{r['memory_mb']} MB {r['planned'] or 'unreachable'}{' (beyond)' if r['beyond_trusted'] else ''} "
            f"(was {r['recorded_planned'] or 'unreachable'}, truth {r['true_min'] or 'none'}, own/target "
            f"{r['own_over_rate']:.3f})" if r["own_over_rate"] is not None else
            f"{r['memory_mb']} MB unreachable (was {r['recorded_planned'] or 'unreachable'}, truth {r['true_min'] or 'none'})"
            for r in recs) + f" [{time.time() - t0:.0f} s]", flush=True)
    print("summary: " + summary(records))
    if args.out:
        args.out.write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

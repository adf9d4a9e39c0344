"""Every entry of StreamBed's plans for generated profiles judged by the sim's truth of its own
configuration: one memory per slot for all its slots, and, where the entry gives operators their own
memory, with each operator's tasks on theirs (OperatorMemoryTruth, as `streambed compare` judges).

    .venv/bin/python bench/experiments/plan_entries.py --profiles DIR --out OUT [--jobs 2] [--only 0009,0013]

DIR holds `streambed sim generate` profiles; each is planned (`streambed plan` on the sim, 2,000 slots)
at 10 x its single-task configuration's MST by the truth (bench/methods_compare.generated_rate, the
rate of docs/compare.md's generated rows; kept in DIR/../generated-rates.json where that exists). A
plan already under OUT/<profile>/plan.json is read, not made again. Prints one summary line and each
entry whose own configuration sustains less than 0.97 of the rate; writes OUT/rows.json. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHORT = 0.97
"""Issue 35's floor: an entry whose own configuration sustains less than this share of the rate is short."""


def rate_of(path: Path) -> float:
    kept = path.parent.parent / "generated-rates.json"
    if kept.is_file() and path.stem in (rates := json.loads(kept.read_text())):
        return float(rates[path.stem])
    sys.path.insert(0, str(REPO / "bench"))
    from methods_compare import generated_rate
    from streambed.testbed.sim.profile import load_profile

    return generated_rate(load_profile(str(path)))


def judged(case: tuple[Path, Path]) -> list[dict]:
    """The rows of one profile's plan entries (planned first where OUT has no plan)."""
    from streambed.model import Configuration
    from streambed.testbed.sim.operator_memory import OperatorMemoryTruth
    from streambed.testbed.sim.profile import load_profile
    from streambed.testbed.sim.truth import GroundTruth

    out, path = case
    name, rate = path.stem, rate_of(path)
    directory = out / name
    if not (directory / "plan.json").is_file():
        subprocess.run([sys.executable, "-m", "streambed", "plan", "--query", name, "--profile", str(path),
                        "--testbed", "sim", "--rate", repr(rate), "--max-slots", "2000", "--campaign-dir",
                        str(directory), "--quiet"], capture_output=True, env={**os.environ})
    if not (directory / "plan.json").is_file():
        return [{"profile": name, "error": "no plan.json"}]
    plan = json.loads((directory / "plan.json").read_text())
    profile = load_profile(str(path))
    query, truth = profile.query(), GroundTruth(profile)
    rows = []
    for e in plan["entries"]:
        row = {"profile": name, "rate": rate, "memory_mb": e["memory_mb"], "slots": e.get("slots"), "risk": e.get("risk")}
        if e.get("slots") is not None:
            config = Configuration.of(query, dict(e["configuration"]), e.get("max_parallelism"))
            row["one_size"] = truth.configuration_mst(config, e["memory_mb"]).mst / rate
            if e.get("memory_by_operator"):
                own = OperatorMemoryTruth(profile, e["memory_by_operator"]).configuration_mst(config, e["memory_mb"])
                row["per_operator"] = own.mst / rate
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", required=True, help="a directory of generated profiles (streambed sim generate)")
    ap.add_argument("--out", required=True, help="where the plans and rows.json go")
    ap.add_argument("--jobs", type=int, default=1, help="profiles planned at once")
    ap.add_argument("--only", default="", help="comma-separated profile numbers, e.g. 0009,0013")
    a = ap.parse_args()
    only = {n for n in a.only.split(",") if n}
    paths = sorted(p for p in Path(a.profiles).glob("*.yaml") if not only or p.stem[-4:] in only)
    if not paths:
        sys.exit(f"plan_entries: --profiles: no profile in {a.profiles}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    from streambed.errors import StreamBedError

    try:
        with ProcessPoolExecutor(max(1, a.jobs)) as pool:
            rows = [r for rs in pool.map(judged, [(out, p) for p in paths]) for r in rs]
    except StreamBedError as e:  # a profile that does not load: one line, no traceback
        sys.exit(f"plan_entries: {e}")
    (out / "rows.json").write_text(json.dumps(rows, indent=1) + "\n")
    planned = [r for r in rows if r.get("slots") is not None]
    short = [r for r in planned if min(r["one_size"], r.get("per_operator", r["one_size"])) < SHORT]
    median = statistics.median(r["one_size"] for r in planned) if planned else float("nan")
    print(f"{len(paths)} profiles, {len(rows)} entries: {len(planned)} planned, {len(rows) - len(planned)} "
          f"unreachable; {len(short)} short (own configuration under {SHORT} x the rate); "
          f"{sum(r['slots'] for r in planned):,} slots in all; median own MST / rate {median:.3f}")
    for r in short:
        per = f", per operator {r['per_operator']:.3f}" if "per_operator" in r else ""
        print(f"  short: {r['profile']} {r['memory_mb']} MB, {r['slots']} slots: one size {r['one_size']:.3f}{per}")


if __name__ == "__main__":
    main()

"""Benchmark: the held-out check of a finished plan. The explorer's model is fitted on every
measurement of the plan but those at its largest budget and predicts that budget; the prediction is
compared with the plan's own measurement there and with the same configuration measured again,
separately, --repeats times on the plan's testbed (each a campaign of its own under
<campaign-dir>/holdout/, resumed if it exists, with seed + 1 + i, so a rerun measures nothing twice).
A replay plan's data set is replayed again; a plan's ledger does not record its inventory or sim
profile, so give them after `--` as the plan had them (every argument there goes to each estimate).
Asserts nothing. Prints the repeats, the table of `streambed holdout`, and its JSON.
Run: .venv/bin/python bench/experiments/heldout.py --campaign-dir campaigns/plan-q11 --repeats 3 [-- --inventory DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from streambed.commands import args as parse
from streambed.errors import StreamBedError, UserError
from streambed.records import RecordError, read_campaign

REPO = Path(__file__).resolve().parents[2]
STREAMBED = Path(sys.executable).with_name("streambed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaign-dir", required=True, help="a finished plan campaign, e.g. campaigns/plan-q11")
    ap.add_argument("--repeats", type=parse.count, default=3, help="separate measurements of the largest budget")
    ap.add_argument("estimate_args", nargs="*", help="after --: more arguments for each streambed estimate")
    a = ap.parse_args()
    try:
        check(Path(a.campaign_dir).resolve(), a.repeats, a.estimate_args)
    except StreamBedError as e:  # bad input or a testbed that fails: one line, no traceback
        sys.exit(f"heldout: {e}")


def largest_point(campaign_dir: Path) -> tuple[dict, dict]:
    """The plan's parameters and its measurement at the largest budget (configuration, memory, MST)."""
    try:
        campaign = read_campaign(campaign_dir)
    except RecordError as e:
        raise UserError(f"--campaign-dir: {e}") from None
    if campaign.kind != "plan" or not campaign.result or "exploration" not in campaign.result:
        raise UserError(f"--campaign-dir: {campaign_dir} holds no finished plan campaign (kind {campaign.kind})")
    missing = [k for k in ("query", "testbed", "timing") if k not in campaign.params]
    if missing:
        raise UserError(f"--campaign-dir: {campaign.path} does not record the plan's {', '.join(missing)}")
    points = campaign.result["exploration"]["points"]
    return campaign.params, max(points, key=lambda p: (p["slots"], p["memory_mb"]))


def replay_args(params: dict) -> list[str]:
    """The data set a replay plan replayed, and its rate (campaigns/base.input_params)."""
    if not params.get("input"):
        return []
    return ["--input", str(params["input"])] + (["--input-rate", str(params["input_rate"])]
                                                if params.get("input_rate") else [])


def check(campaign_dir: Path, repeats: int, estimate_args: list[str]) -> None:
    params, point = largest_point(campaign_dir)
    config = ",".join(f"{op}={n}" for op, n in point["configuration"].items())
    print(f"{params['query']} at {point['slots']} slots ({config}), {point['memory_mb']} MB: the plan measured "
          f"{point['mst']:,.0f} events/s; measuring it {repeats} more time(s) with the {params['timing']} timing",
          file=sys.stderr)
    references = []
    for i in range(repeats):
        where = campaign_dir / "holdout" / str(i)
        cmd = [str(STREAMBED), "estimate", "--query", params["query"], "--testbed", params["testbed"],
               "--memory", str(point["memory_mb"]), "--config", config, "--timing", params["timing"],
               "--seed", str(int(params.get("seed", 0)) + 1 + i), "--campaign-dir", str(where), "--json",
               *replay_args(params), *estimate_args]
        if (where / "ledger.sqlite").exists():
            cmd.append("--resume")
        run = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=REPO)
        if run.returncode != 0:
            raise UserError(f"repeat {i + 1}: streambed estimate ended with exit {run.returncode} "
                            f"(its ledger: {where})")
        result = json.loads(run.stdout)
        references.append(result["mst"])
        print(f"repeat {i + 1}: {result['mst']:,.0f} events/s"
              + (" (source-capped)" if result.get("source_limited") else ""), file=sys.stderr)
    subprocess.run([str(STREAMBED), "holdout", "--measurements", str(campaign_dir), "--memory", str(point["memory_mb"]),
                    "--reference", *map(str, references), "--json"], check=True, cwd=REPO)


if __name__ == "__main__":
    main()

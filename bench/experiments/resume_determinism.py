"""Benchmark: does a killed campaign resume to the uninterrupted campaign's result? Runs a sim plan
once uninterrupted, then once per kill point: started, killed with SIGKILL once the ledger holds that
many steps, resumed; compares each resumed result with the uninterrupted one, field by field
(the ledger counts and file paths aside). Prints one line per kill and a summary. Asserts nothing.
Run: .venv/bin/python bench/experiments/resume_determinism.py [--kills 5,12,20,30,40] -- plan --query q8 --rate 1e7 --profiles 2048,4096 --timing quick --max-measurements 8
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STREAMBED = [sys.executable, "-m", "streambed"]


def steps(campaign: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{campaign / 'ledger.sqlite'}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT COUNT(*) FROM steps").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def result(argv: list[str], campaign: Path, *extra: str) -> dict:
    done = subprocess.run([*STREAMBED, *argv, "--json", "--campaign-dir", str(campaign), *extra],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"streambed failed: {done.stderr.strip()}")
    return {k: v for k, v in json.loads(done.stdout).items() if k not in ("ledger", "files")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", default="5,12,20,30,40", help="steps recorded before each kill")
    ap.add_argument("argv", nargs=argparse.REMAINDER, help="the streambed command, after --")
    args = ap.parse_args()
    argv = [a for a in args.argv if a != "--"] or ["plan", "--query", "q8", "--rate", "1e7", "--profiles",
                                                   "2048,4096", "--timing", "quick", "--max-measurements", "8"]
    kills = [int(k) for k in args.kills.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        whole = result(argv, work / "whole")
        same = 0
        for k in kills:
            campaign = work / f"kill-{k}"
            shutil.rmtree(campaign, ignore_errors=True)
            proc = subprocess.Popen([*STREAMBED, *argv, "--campaign-dir", str(campaign)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while proc.poll() is None and steps(campaign) < k:
                time.sleep(0.005)
            ended = proc.poll() is not None
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            at = steps(campaign)
            resumed = result(argv, campaign, "--resume")
            same += resumed == whole
            print(f"{'ended before the kill' if ended else 'killed'} after {at} steps: "
                  f"{'identical' if resumed == whole else 'DIFFERENT'}", flush=True)
        print(json.dumps({"argv": argv, "kills": len(kills), "identical": same}))


if __name__ == "__main__":
    main()

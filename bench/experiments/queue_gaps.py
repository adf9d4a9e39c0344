"""How far short of its offer each operator's intake read, window by window, in campaign ledgers: the
reading behind the estimator's pile-up rules (model/measurement.py: QUEUED_BUSY, QUEUED_IDLE).

    .venv/bin/python bench/experiments/queue_gaps.py CAMPAIGN_DIR [CAMPAIGN_DIR ...]

Prints one line per observed window (its target rate, then per operator the share it did not take in,
its busiest task's busyness and its intake in records/s), then, over all windows, the largest shortfall
an operator read while not busy, against its own offer and against the job's flow (its offer or the
source's events, whichever is more: QUEUED_IDLE's measure). Reads each ledger's steps read-only;
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

from streambed.ledger import Ledger
from streambed.model import Measurement
from streambed.model.measurement import QUEUED_BUSY, QUEUED_IDLE


def windows(data) -> list[dict]:
    """Every measurement a ledger step holds, however deep (estimates keep theirs in their windows)."""
    found = []
    if isinstance(data, dict):
        if "operators" in data and "target_rate" in data:
            found.append(data)
        for value in data.values():
            found.extend(windows(value))
    elif isinstance(data, list):
        for value in data:
            found.extend(windows(value))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaigns", nargs="+", type=Path)
    args = parser.parse_args()
    idle_worst, flow_worst = (0.0, ""), (0.0, "")
    for campaign in args.campaigns:
        if not (campaign / Ledger.FILENAME).is_file():
            raise SystemExit(f"queue_gaps.py: {campaign}: no {Ledger.FILENAME} (expected a campaign directory)")
        conn = sqlite3.connect(f"file:{campaign / Ledger.FILENAME}?mode=ro", uri=True)
        try:
            steps = conn.execute("SELECT key, data FROM steps ORDER BY seq").fetchall()
        finally:
            conn.close()
        for key, data in steps:
            for raw in windows(json.loads(data)):
                m = Measurement.from_dict(raw)
                cells = []
                for om in m.operators:
                    if not om.offered_rate:
                        continue
                    short = (om.offered_rate - om.input_rate) / om.offered_rate
                    cells.append(f"{om.operator} {short:+.3f} (busy {om.busyness_max:.2f}, {om.input_rate:,.0f}/s)")
                    where = f"{campaign} {key} {om.operator} at {om.input_rate:,.0f} records/s"
                    flow = (om.offered_rate - om.input_rate) / max(om.offered_rate, m.achieved_rate)
                    if om.busyness_max < QUEUED_BUSY and short > idle_worst[0]:
                        idle_worst = (short, where)
                    if om.busyness_max < QUEUED_BUSY and flow > flow_worst[0]:
                        flow_worst = (flow, where)
                print(f"{campaign.name} {m.target_rate:,.0f} events/s: " + "; ".join(cells))
    print(f"largest shortfall of an operator not busy: {idle_worst[0]:.3f} of its offer ({idle_worst[1] or 'none'})")
    print(f"largest share of the job's flow an operator not busy left untaken: {flow_worst[0]:.4f} "
          f"({flow_worst[1] or 'none'}; a pile-up from {QUEUED_IDLE})")


if __name__ == "__main__":
    main()

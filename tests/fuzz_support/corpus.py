"""Valid files to start from, made by the product itself once per session.

A tiny plan on the simulated testbed gives a real ledger, plan.json, exploration.json and
single-task-metrics.json; ``export`` gives measurements.csv and operator-rates.csv. The shipped sim
profiles, the local inventory and a data set manifest of a small lake complete the formats the
product reads. The fuzz copies and damages these, never the originals.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from streambed import dataset

from .forkserver import ForkServer

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "controller" / "streambed" / "testbed" / "sim" / "profiles"
PLAN_ARGV = ["plan", "--query", "q1", "--testbed", "sim", "--rate", "1e7", "--timing", "quick",
             "--max-measurements", "3", "--campaign-dir", "campaign"]
"""About 1 s in a warm fork: 30 ledger steps, every file a plan campaign writes."""
DATASET = "ds1"


@dataclass
class Corpus:
    root: Path
    files: dict[str, list[Path]] = field(default_factory=dict)
    """Format -> valid files of that format."""
    campaign: Path = Path()
    inventory: Path = Path()
    lake: Path = Path()
    queries: Path = Path()

    def of(self, fmt: str) -> list[Path]:
        return self.files[fmt]


def _run(server: ForkServer, root: Path, argv: list[str]) -> None:
    result = server.run(argv, str(root), str(root / "corpus.out"), str(root / "corpus.err"), str(root / "corpus.guard"),
                        120, 4 << 30)
    if result["exit"] != 0:
        raise RuntimeError(f"making the fuzz corpus: streambed {' '.join(argv)} -> {result}: "
                           f"{(root / 'corpus.err').read_text()[-2000:]}")


def build(root: Path, server: ForkServer) -> Corpus:
    root.mkdir(parents=True, exist_ok=True)
    c = Corpus(root)
    _run(server, root, PLAN_ARGV)
    _run(server, root, ["export", "--campaign-dir", "campaign", "--out", "export"])
    c.campaign = root / "campaign"
    profiles = root / "profiles"
    profiles.mkdir()
    for p in sorted(PROFILES.glob("*.yaml")):
        shutil.copy(p, profiles / p.name)
    c.files["profile"] = sorted(profiles.glob("*.yaml"))
    c.files["plan"] = [c.campaign / "plan.json"]
    c.files["exploration"] = [c.campaign / "exploration.json"]
    c.files["metrics"] = [c.campaign / "single-task-metrics.json", root / "export" / "single-task-metrics.json"]
    c.files["csv"] = [root / "export" / "measurements.csv", root / "export" / "operator-rates.csv"]
    c.files["ledger"] = [c.campaign / "ledger.sqlite"]

    c.inventory = root / "inventories" / "local"
    shutil.copytree(REPO / "inventories" / "local", c.inventory)
    c.files["inventory_yaml"] = [c.inventory / "testbed.yml", c.inventory / "hosts.yml",
                                 c.inventory / "group_vars" / "all.yml"]

    c.lake = root / "datalake"
    ds = c.lake / DATASET
    (ds / "json").mkdir(parents=True)
    (ds / "json" / "part-00000.json").write_text(
        '{"event_type": 2, "bid": {"auction": 1, "bidder": 1, "price": 10, "dateTime": "2026-01-01 00:00:00.000"}}\n')
    manifest = dataset.DataSet(DATASET, ds, 1000, {"person": 20, "auction": 60, "bid": 920},
                               {"json": {"files": 1, "bytes": 110}}, {"generator": "nexmark", "seed": 0})
    (ds / dataset.MANIFEST).write_text(json.dumps(manifest.to_dict(), indent=1))
    c.files["manifest"] = [ds / dataset.MANIFEST]

    c.queries = root / "queries"
    shutil.copytree(REPO / "flink" / "queries", c.queries)
    var_file = root / "vars.tfvars"
    var_file.write_text('workers = 2\ninstance_type = "m5.large"\n')
    c.files["text"] = [var_file]
    return c

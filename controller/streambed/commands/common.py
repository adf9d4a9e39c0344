"""Options shared by several commands, the settings they build, and running a campaign under a
progress display. Defaults come from campaigns/settings.py."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..campaigns.settings import CampaignSettings, GuardRails, TestbedSpec
from ..dataset import DEFAULT_LAKE
from ..planner.estimator import DEFAULT_TIMING, TIMINGS
from ..planner.policies import DEFAULT_POLICY, POLICIES
from ..report.grafana.annotations import GrafanaSettings, annotations
from ..report.console import Output
from .args import extrapolation, fraction, rate, seed, slots


def output_options(sp: argparse.ArgumentParser, json_flag: bool = True) -> None:
    if json_flag:
        sp.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    sp.add_argument("--quiet", action="store_true", help="nothing on stderr but errors (no progress, no warnings)")


def campaign_options(sp: argparse.ArgumentParser, kind: str, *, testbed_size: bool = False) -> None:
    """Where a campaign runs and keeps its ledger. ``testbed_size``: the command takes --max-slots (the
    simulated testbed's slots: explore and plan)."""
    sp.add_argument("--testbed", default=TestbedSpec.name, help="sim (the simulated testbed) or flink (the local "
                                                               "Flink cluster)")
    sp.add_argument("--profile", help="sim only: profile name or YAML path (default: the query's)")
    if testbed_size:
        sp.add_argument("--max-slots", type=slots, help="sim only: slots of the testbed (default 48)")
    sp.add_argument("--inventory", type=Path, help="flink only: the testbed's Ansible inventory (default: "
                                                   "$STREAMBED_INVENTORY, else inventories/local)")
    sp.add_argument("--seed", type=seed, default=CampaignSettings.seed,
                    help="every random draw of the campaign derives from it")
    sp.add_argument("--campaign-dir", type=Path, help=f"where the ledger and results live (default: "
                                                      f"campaigns/{kind}-<query>)")
    sp.add_argument("--resume", action="store_true", help="continue the campaign recorded in --campaign-dir")
    sp.add_argument("--grafana-url", help="post the campaign's phases to this Grafana as annotations (default: "
                                          "$STREAMBED_GRAFANA_URL, else none; token: $STREAMBED_GRAFANA_TOKEN)")
    sp.set_defaults(campaign_kind=kind)


def input_options(sp: argparse.ArgumentParser) -> None:
    """What the source emits: the generator, or a data set of the lake replayed (docs/data.md)."""
    sp.add_argument("--input", default="generator", help="generator (default) or a data set of the lake (name or "
                                                         "path) to replay; flink only")
    sp.add_argument("--lake", type=Path, default=Path(os.environ.get("DATALAKE") or DEFAULT_LAKE),
                    help="the data lake (default: $DATALAKE, else datalake)")
    sp.add_argument("--input-rate", type=rate, help="with --input: the most the replay is asked, events/s (default: "
                                                    "the fastest the data set holds for the longest job)")


def planner_options(sp: argparse.ArgumentParser, policy: bool = True) -> None:
    sp.add_argument("--timing", default=DEFAULT_TIMING, help=f"estimator timing: {', '.join(TIMINGS)}")
    if policy:
        sp.add_argument("--policy", default=DEFAULT_POLICY,
                        help=f"configuration policy: {', '.join(POLICIES)} (docs/planner.md)")
    sp.add_argument("--verbose", action="store_true", help="log every observation window")


def campaign_settings(ns: argparse.Namespace) -> CampaignSettings:
    """The settings every campaign shares, from the options of campaign_options."""
    spec = TestbedSpec(name=ns.testbed, profile=ns.profile, max_slots=getattr(ns, "max_slots", None),
                       inventory=ns.inventory)
    given = getattr(ns, "input", "generator")
    return CampaignSettings(query=ns.query, testbed=spec, seed=ns.seed, directory=ns.campaign_dir,
                            resume=ns.resume, input=None if given == "generator" else given,
                            lake=getattr(ns, "lake", DEFAULT_LAKE), input_rate=getattr(ns, "input_rate", None))


def logs(ns: argparse.Namespace, out: Output) -> dict:
    """A campaign's two logs: status (what is happening now) and the algorithms' lines (--verbose); and,
    with a Grafana URL, who posts its phases there (report/grafana/annotations.py)."""
    given = {"status": out.status, "log": out.info if getattr(ns, "verbose", False) else out.status}
    grafana = GrafanaSettings.resolve(getattr(ns, "grafana_url", None))
    phases = annotations(grafana, campaign=getattr(ns, "campaign_kind", "campaign"), query=getattr(ns, "query", ""),
                         warn=out.warn) if grafana else None
    return given | ({"phases": phases} if phases else {})


def run(campaign: Any, out: Output) -> Any:
    """Run a prepared campaign under a progress display of its title and number of steps."""
    with out.progress(campaign.title, total=getattr(campaign, "total", None)) as step:
        return campaign.run(lambda description: step.advance(description=description))


def guard_options(sp: argparse.ArgumentParser) -> None:
    """The plan's guard rails (docs/planner.md): how far a model may be extrapolated."""
    sp.add_argument("--max-extrapolation", type=extrapolation, default=GuardRails.max_extrapolation,
                    help="plan at most this many times the largest budget measured")
    sp.add_argument("--min-marginal", type=fraction, default=GuardRails.min_marginal,
                    help="stop where the model gains less per slot than this fraction of its gain at the largest "
                         "budget measured (0: no such limit, as the paper)")


def guard_rails(ns: argparse.Namespace) -> GuardRails:
    """The guard rails of guard_options."""
    return GuardRails(max_extrapolation=ns.max_extrapolation, min_marginal=ns.min_marginal)

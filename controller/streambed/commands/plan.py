"""``streambed plan``: exploration, then the budget and configuration for a target rate."""

from __future__ import annotations

from pathlib import Path

from ..campaigns.settings import PlanSettings
from ..report.console import Output
from .args import catch_up, multiple, rate, risk, safety, slots
from .common import (campaign_options, guard_options, guard_rails, input_options, logs, output_options,
                     planner_options, run)
from .explore import explorer_options, explorer_settings


def register(sub) -> None:
    sp = sub.add_parser("plan", help="plan the budget and configuration for a target rate")
    explorer_options(sp)
    sp.add_argument("--rate", type=rate,
                    help="target events/s, e.g. 2.5e6 (default: --rate-multiple x the MST measured on the testbed's "
                         "largest budget)")
    sp.add_argument("--rate-multiple", type=multiple, default=PlanSettings.rate_multiple,
                    help="without --rate, plan for this many times the MST measured on the testbed's largest budget")
    sp.add_argument("--safety", type=safety, default=PlanSettings.safety,
                    help="over-provisioning factor (paper: 1.10)")
    sp.add_argument("--risk", type=risk, default=PlanSettings.risk,
                    help="size for this risk of under-provisioning, from the fit's bootstrap (instead of --safety)")
    guard_options(sp)
    sp.add_argument("--catch-up", type=catch_up, metavar="B/T",
                    help="also drain B seconds of backlog within T after a restart, e.g. 300s/600s: sized for "
                         "rate x (1 + B/T) (default: the rate alone)")
    sp.add_argument("--checkpoint-slots", type=slots,
                    help="a cluster of this many slots (part of production) measures where the candidate families "
                         "disagree or the rate is unreachable, and the plan is made again (default: none)")
    sp.add_argument("--checkpoint-inventory", type=Path,
                    help="flink: the inventory of that cluster (default: the testbed's)")
    keys = sp.add_mutually_exclusive_group()
    keys.add_argument("--key-stats", type=Path,
                      help="key statistics of the data set replayed (streambed data keys): the skew model uses their "
                           "counted key groups where no run contradicts them, else the more pessimistic of them and "
                           "the skew inferred from the tasks (default: with --input, that data set's own, counted "
                           "with Spark where missing; else inferred only)")
    keys.add_argument("--no-key-stats", dest="data_keys", action="store_false",
                      help="with --input: infer the key skew from the runs alone, without the data set's key statistics")
    sp.add_argument("--no-skew-probes", dest="skew_probes", action="store_false",
                    help="do not measure a keyed operator planned far wider than the testbed ran it at the testbed's "
                         "widest before trusting its key skew")
    campaign_options(sp, "plan", testbed_size=True)
    input_options(sp)
    planner_options(sp)
    output_options(sp)
    sp.set_defaults(func=cmd_plan)


def cmd_plan(args, out: Output) -> None:
    from ..campaigns.plan import PlanCampaign, memory_saving_lines
    from ..report.tables import plan_tables

    settings = explorer_settings(PlanSettings, args, rate=args.rate, rate_multiple=args.rate_multiple,
                                 safety=args.safety, guards=guard_rails(args), risk=args.risk,
                                 checkpoint_slots=args.checkpoint_slots,
                                 checkpoint_inventory=args.checkpoint_inventory, key_stats=args.key_stats,
                                 data_keys=args.data_keys,
                                 skew_probes=args.skew_probes, catch_up=args.catch_up)
    result = run(PlanCampaign(settings, **logs(args, out)), out)
    data = result.to_dict()
    plan_tables(out, data["plan"], data["exploration"], replay=args.input != "generator")
    for line in memory_saving_lines(result.outcome.plan):
        out.info(line)
    out.info(f"ledger: {result.replayed} steps from the ledger, {result.executed} measured")
    out.info("written: " + ", ".join(result.outcome.files.values()))
    out.result(data)

"""``streambed explore`` and ``streambed plan``: the Resource Explorer, and the plan for a target rate."""

from __future__ import annotations

from pathlib import Path

from ..campaigns.settings import ExploreSettings, PlanSettings
from ..report.console import Output
from .args import count, memory_list, multiple, rate, risk, safety, slots
from .common import (campaign_options, campaign_settings, guard_options, input_options, logs, output_options,
                     planner_options, run)


def _explorer_options(sp) -> None:
    sp.add_argument("--query", required=True, help="the query to plan (a sim profile or a flink/queries/*.sql)")
    sp.add_argument("--memory", "--profiles", dest="memory", type=memory_list,
                    help="memory per slot to explore, MB, e.g. 2048,4096 (default: all the testbed offers; "
                         "--profiles is the former name)")
    sp.add_argument("--max-measurements", type=count, default=ExploreSettings.max_measurements,
                    help="the explorer stops at this many optimizer calls")


def register(sub) -> None:
    sp = sub.add_parser("explore", help="Resource Explorer alone: measurements and the surrogate model")
    _explorer_options(sp)
    campaign_options(sp, "explore", testbed_size=True)
    input_options(sp)
    planner_options(sp)
    output_options(sp)
    sp.set_defaults(func=cmd_explore)

    sp = sub.add_parser("plan", help="plan the budget and configuration for a target rate")
    _explorer_options(sp)
    sp.add_argument("--rate", type=rate,
                    help="target events/s, e.g. 2.5e6 (default: --rate-multiple x the MST measured on the testbed's "
                         "largest budget)")
    sp.add_argument("--rate-multiple", type=multiple, default=PlanSettings.rate_multiple,
                    help="without --rate, plan for this many times the MST measured on the testbed's largest budget")
    sp.add_argument("--safety", type=safety, default=PlanSettings.safety,
                    help="over-provisioning factor (paper: 1.10)")
    sp.add_argument("--risk", type=risk, default=PlanSettings.risk,
                    help="size for this risk of under-provisioning, from the fit's bootstrap (instead of --safety)")
    guard_options(sp, PlanSettings)
    sp.add_argument("--checkpoint-slots", type=slots,
                    help="a cluster of this many slots (part of production) measures where the candidate families "
                         "disagree or the rate is unreachable, and the plan is made again (default: none)")
    sp.add_argument("--checkpoint-inventory", type=Path,
                    help="flink: the inventory of that cluster (default: the testbed's)")
    sp.add_argument("--key-stats", type=Path,
                    help="key statistics of the data set replayed (streambed data keys): the skew model uses the more "
                         "pessimistic of them and the skew inferred from the tasks (default: inferred only)")
    sp.add_argument("--no-skew-probes", dest="skew_probes", action="store_false",
                    help="do not measure a keyed operator planned far wider than the testbed ran it at the testbed's "
                         "widest before trusting its key skew")
    campaign_options(sp, "plan", testbed_size=True)
    input_options(sp)
    planner_options(sp)
    output_options(sp)
    sp.set_defaults(func=cmd_plan)


def _settings(cls, args, **more):
    return cls(campaign_settings(args), memories=args.memory or (), timing=args.timing, policy=args.policy,
               max_measurements=args.max_measurements, **more)


def cmd_explore(args, out: Output) -> None:
    from ..campaigns.explore import ExploreCampaign
    from ..report.tables import exploration_table

    ex = run(ExploreCampaign(_settings(ExploreSettings, args), **logs(args, out)), out)
    data = ex.to_dict()
    exploration_table(out, data)
    out.info(f"stop: {ex.stop_reason}; model by the split rule: {ex.family}; "
             f"{ex.optimizer_calls} optimizer calls, {ex.estimator_calls} estimator calls, "
             f"{ex.testbed_seconds / 60:.0f} min of testbed")
    out.result(data)


def cmd_plan(args, out: Output) -> None:
    from ..campaigns.plan import PlanCampaign
    from ..report.tables import plan_tables

    settings = _settings(PlanSettings, args, rate=args.rate, rate_multiple=args.rate_multiple, safety=args.safety,
                         max_extrapolation=args.max_extrapolation, min_marginal=args.min_marginal, risk=args.risk,
                         checkpoint_slots=args.checkpoint_slots, checkpoint_inventory=args.checkpoint_inventory,
                         key_stats=args.key_stats, skew_probes=args.skew_probes)
    data = run(PlanCampaign(settings, **logs(args, out)), out)
    plan_tables(out, data["plan"], data["exploration"], replay=args.input != "generator")
    out.info(f"ledger: {data['ledger']['replayed']} steps from the ledger, {data['ledger']['executed']} measured")
    out.info("written: " + ", ".join(data["files"].values()))
    out.result(data)

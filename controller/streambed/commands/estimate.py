"""``streambed estimate``: the Capacity Estimator alone, on one budget."""

from __future__ import annotations

from ..campaigns.settings import DEFAULT_MEMORY_MB, EstimateSettings
from ..report.console import Output
from .args import memory_mb, operator_pairs
from .common import campaign_options, campaign_settings, input_options, logs, output_options, planner_options, run


def register(sub) -> None:
    sp = sub.add_parser("estimate", help="Capacity Estimator alone: the MST of one configuration")
    sp.add_argument("--query", required=True)
    sp.add_argument("--memory", type=memory_mb, default=DEFAULT_MEMORY_MB, help="MB per slot")
    sp.add_argument("--config", type=operator_pairs, help="operator=parallelism pairs (default: every operator at 1)")
    campaign_options(sp, "estimate")
    input_options(sp)
    planner_options(sp, policy=False)
    output_options(sp)
    sp.set_defaults(func=cmd_estimate)


def cmd_estimate(args, out: Output) -> None:
    from ..campaigns.estimate import EstimateCampaign
    from ..report.tables import estimate_table

    settings = EstimateSettings(campaign_settings(args), memory_mb=args.memory, configuration=args.config,
                                timing=args.timing)
    campaign = EstimateCampaign(settings, **logs(args, out))
    estimate = run(campaign, out)
    result = estimate.to_dict()
    estimate_table(out, result, f"{campaign.query.name}: MST {estimate.mst:,.0f} events/s ({len(estimate.windows)} "
                                f"windows, {estimate.testbed_seconds / 60:.1f} min of testbed; ledger "
                                f"{campaign.directory})", replay=args.input != "generator")
    out.result(result)

"""``streambed estimate`` and ``streambed optimize``: the Capacity Estimator and the Configuration
Optimizer alone, on one budget."""

from __future__ import annotations

from ..campaigns.settings import DEFAULT_MEMORY_MB, EstimateSettings, OptimizeSettings
from ..errors import UserError
from ..report.console import Output
from .args import memory_mb, operator_pairs, slots
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

    sp = sub.add_parser("optimize", help="Configuration Optimizer alone: BIDS2 for a budget, then its MST "
                                         "(with --from-metrics: BIDS2 from a file, no testbed)")
    sp.add_argument("--query", help="required on a testbed; with --from-metrics, keeps that query's metrics only")
    sp.add_argument("--slots", type=slots,
                    help="required, except with --from-metrics on a file that gives each solve's budget")
    sp.add_argument("--memory", type=memory_mb, help=f"MB per slot (default {DEFAULT_MEMORY_MB}; with "
                                                        f"--from-metrics: keeps that profile's metrics only)")
    sp.add_argument("--from-metrics", metavar="FILE",
                    help="single-task metrics recorded in FILE (docs/records.md): BIDS2 alone, no testbed")
    campaign_options(sp, "optimize")
    input_options(sp)
    planner_options(sp)
    output_options(sp)
    sp.set_defaults(func=cmd_optimize)


def cmd_estimate(args, out: Output) -> None:
    from ..campaigns.estimate import EstimateCampaign
    from ..report.tables import estimate_table

    settings = EstimateSettings(campaign_settings(args), memory_mb=args.memory, configuration=args.config,
                                timing=args.timing)
    campaign = EstimateCampaign(settings, **logs(args, out))
    result = run(campaign, out)
    estimate_table(out, result, f"{campaign.query.name}: MST {result['mst']:,.0f} events/s ({result['iterations']} "
                                f"windows, {result['testbed_seconds'] / 60:.1f} min of testbed; ledger "
                                f"{campaign.directory})", replay=args.input != "generator")
    out.result(result)


def cmd_optimize(args, out: Output) -> None:
    """optimize runs BIDS2 from a file (--from-metrics) or on a testbed, which needs --query and --slots."""
    if args.from_metrics:
        from .records import cmd_optimize_from_metrics

        return cmd_optimize_from_metrics(args, out)
    from ..campaigns.optimize import OptimizeCampaign
    from ..report.tables import optimize_tables

    missing = [opt for opt, v in (("--query", args.query), ("--slots", args.slots)) if v is None]
    if missing:
        raise UserError(f"the following arguments are required: {', '.join(missing)} (or --from-metrics FILE)")
    settings = OptimizeSettings(campaign_settings(args), slots=args.slots, memory_mb=args.memory or DEFAULT_MEMORY_MB,
                                timing=args.timing, policy=args.policy)
    campaign = OptimizeCampaign(settings, **logs(args, out))
    data = run(campaign, out)
    optimize_tables(out, campaign.query.name, data, replay=args.input != "generator")
    out.result(data)

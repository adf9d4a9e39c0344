"""``streambed optimize``: the Configuration Optimizer alone, on one budget (or from recorded metrics)."""

from __future__ import annotations

from ..campaigns.settings import DEFAULT_MEMORY_MB, OptimizeSettings
from ..errors import UserError
from ..report.console import Output
from .args import memory_mb, slots
from .common import campaign_options, campaign_settings, input_options, logs, output_options, planner_options, run


def register(sub) -> None:
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

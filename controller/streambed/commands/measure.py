"""``streambed measure``: a configuration observed at a list of rates (resumable campaign)."""

from __future__ import annotations

from ..campaigns.settings import DEFAULT_MEMORY_MB, MeasureSettings, WindowTiming
from ..report.console import Output
from .args import memory_mb, non_negative_seconds, number_list, operator_pairs
from .common import campaign_options, campaign_settings, logs, output_options, run


def register(sub) -> None:
    sp = sub.add_parser("measure", help="measure a configuration at a list of rates (resumable campaign)")
    sp.add_argument("--query", required=True)
    sp.add_argument("--memory", type=memory_mb, default=DEFAULT_MEMORY_MB, help="MB per slot")
    sp.add_argument("--config", type=operator_pairs, help="operator=parallelism pairs (default: every operator at 1)")
    sp.add_argument("--rates", required=True, type=number_list, help="events/s, e.g. 5e5,1e6,2e6")
    sp.add_argument("--warmup", type=non_negative_seconds, default=WindowTiming.warmup_s, help="seconds")
    sp.add_argument("--ramp", type=non_negative_seconds, default=WindowTiming.ramp_s, help="seconds before each window")
    sp.add_argument("--window", type=non_negative_seconds, default=WindowTiming.observe_s, help="seconds")
    campaign_options(sp, "measure")
    output_options(sp)
    sp.set_defaults(func=cmd_measure)


def cmd_measure(args, out: Output) -> None:
    from ..campaigns.measure import MeasureCampaign

    settings = MeasureSettings(campaign_settings(args), rates=args.rates, memory_mb=args.memory,
                               configuration=args.config,
                               timing=WindowTiming(args.warmup, args.ramp, args.window))
    campaign = MeasureCampaign(settings, **logs(args, out))
    windows = run(campaign, out)
    config, memory = campaign.configuration, args.memory
    out.table(f"Measurements of {campaign.query.name}: {config.key()} x {memory} MB (ledger: {campaign.directory})",
              ("target, events/s", "achieved, events/s", "ratio", "pending slope, rec/s", "verdict", "source"),
              [(f"{m.target_rate:,.0f}", m.achieved_rate, m.ratio, m.pending_slope,
                "sustained" if m.sustained() else "not sustained", "ledger" if replayed else "measured")
               for m, replayed in windows])
    out.result({"campaign_dir": str(campaign.directory), "configuration": config.as_dict(), "memory_mb": memory,
                "measurements": [m.to_dict() for m, _ in windows]})

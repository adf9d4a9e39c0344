"""``streambed validate``: a plan (or a configuration) run at 100/120/150 % of its rate (section VIII)."""

from __future__ import annotations

from pathlib import Path

from ..campaigns.settings import DEFAULT_MEMORY_MB, ValidateSettings
from ..report.console import Output
from ..planner.validation import ValidationSettings
from .args import catch_up, memory_mb, non_negative_seconds, number_list, operator_pairs, rate, slots
from .common import campaign_options, campaign_settings, logs, output_options, run


def register(sub) -> None:
    sp = sub.add_parser("validate", help="run a plan (or a configuration) at 100/120/150 %% of its rate")
    sp.add_argument("--query", required=True)
    sp.add_argument("--plan", type=Path, help="plan.json written by streambed plan")
    sp.add_argument("--config", type=operator_pairs, help="operator=parallelism pairs (instead of --plan)")
    sp.add_argument("--memory", type=memory_mb, help=f"MB per slot (default: the plan's cheapest reachable budget; "
                                                      f"with --config {DEFAULT_MEMORY_MB})")
    sp.add_argument("--rate", type=rate, help="events/s (default: the plan's)")
    sp.add_argument("--multipliers", type=number_list, default=ValidationSettings.multipliers,
                    help="multiples of the rate to run, e.g. 1,1.2,1.5")
    sp.add_argument("--ramp", type=non_negative_seconds, default=ValidationSettings.ramp_s, help="seconds")
    sp.add_argument("--duration", type=non_negative_seconds, default=ValidationSettings.duration_s, help="seconds")
    sp.add_argument("--window", type=non_negative_seconds, default=ValidationSettings.window_s, help="seconds")
    sp.add_argument("--production-slots", type=slots, default=ValidateSettings.production_slots,
                    help="sim only: slots of the production cluster")
    sp.add_argument("--within-cluster", action="store_true",
                    help="a plan unreachable or larger than the cluster: validate the plan for the highest rate it "
                         "serves within the cluster's slots (re-planned from the plan's ledger) instead of refusing")
    sp.add_argument("--catch-up", type=catch_up, metavar="B/T",
                    help="also start the job B seconds behind (a restart's backlog) and judge whether it drains "
                         "within T, e.g. 300s/600s (default: the plan's own --catch-up, if any)")
    campaign_options(sp, "validate")
    output_options(sp)
    sp.set_defaults(func=cmd_validate)


def cmd_validate(args, out: Output) -> None:
    from ..campaigns.validate import ValidateCampaign
    from ..report.tables import validation_table

    runs = ValidationSettings(multipliers=tuple(args.multipliers), ramp_s=args.ramp, duration_s=args.duration,
                              window_s=args.window)
    settings = ValidateSettings(campaign_settings(args), plan=args.plan, configuration=args.config,
                                memory_mb=args.memory, rate=args.rate, runs=runs,
                                production_slots=args.production_slots, within_cluster=args.within_cluster,
                                catch_up=args.catch_up)
    result = run(ValidateCampaign(settings, **logs(args, out)), out)
    data = result.to_dict()
    validation_table(out, data)
    catch_up_line = _catch_up_line(result)
    if catch_up_line:
        out.info(catch_up_line)
    out.result(data)


def _catch_up_line(result) -> str | None:
    """The catch-up run's console line: the backlog, the rate, the time to drain it in and the verdict."""
    if result.drain is not None:
        d = result.drain
        drained = f"drained in {d.drain_s:,.0f} s" if d.drain_s is not None else "not drained"
        backlog_s, rate, within_s, verdict, why = d.backlog_s, d.rate, d.within_s, d.verdict, drained
    elif result.catch_up_not_run is not None:
        n = result.catch_up_not_run
        backlog_s, rate, within_s, verdict, why = (n.catch_up.backlog_s, n.catch_up.rate, n.catch_up.within_s,
                                                   n.verdict, n.why)
    else:
        return None
    return (f"catch-up: {backlog_s:g} s of backlog at {rate:,.0f} events/s, to drain within {within_s:g} s: "
            f"{verdict} ({why})")

"""The ``streambed`` command: argument parsing and dispatch (implementations in commands/).

Every command that produces results accepts ``--json`` (the result as one JSON document on stdout,
progress on stderr). Bad input ends with one line naming the field and what is expected, exit
status 2, and no traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from . import __version__
from .commands.args import (Parser, memory_list, name_list, non_negative_int, non_negative_seconds, number_list,
                            positive_int, positive_number)
from .commands.campaign import (cmd_estimate, cmd_explore, cmd_measure, cmd_optimize, cmd_plan,
                                cmd_validate)
from .commands.records import MEMORY_FEATURES, TRAINING, cmd_export, cmd_fit, cmd_optimize_from_metrics
from .commands.sim import (cmd_sim_calibrate, cmd_sim_check, cmd_sim_min_slots, cmd_sim_profiles,
                           cmd_sim_run, cmd_sim_truth)
from .errors import StreamBedError, UserError
from .report.console import Output

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


# -- parser ---------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="streambed", description="Capacity planning for stream processing (StreamBed).")
    p.add_argument("--version", action="version", version=f"streambed {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    def common(sp, json_flag=True):
        if json_flag:
            sp.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
        sp.add_argument("--quiet", action="store_true", help="no progress output")

    sim = sub.add_parser("sim", help="the simulated testbed: profiles, ground truth, calibration")
    simsub = sim.add_subparsers(dest="sim_command", required=True, parser_class=Parser)

    sp = simsub.add_parser("profiles", help="list the shipped simulation profiles")
    common(sp)
    sp.set_defaults(func=cmd_sim_profiles)

    sp = simsub.add_parser("check", help="validate a profile YAML file")
    sp.add_argument("file")
    common(sp)
    sp.set_defaults(func=cmd_sim_check)

    sp = simsub.add_parser("truth", help="true MST of the best configuration of a budget")
    sp.add_argument("--profile", required=True, help="shipped profile name (q1, q5, ...) or YAML path")
    sp.add_argument("--slots", required=True, type=positive_int)
    sp.add_argument("--memory", required=True, type=positive_int, help="MB per slot")
    common(sp)
    sp.set_defaults(func=cmd_sim_truth)

    sp = simsub.add_parser("min-slots", help="smallest slot count that sustains a rate")
    sp.add_argument("--profile", required=True)
    sp.add_argument("--rate", required=True, type=positive_number, help="events/s, e.g. 2.5e6")
    sp.add_argument("--memory", required=True, type=positive_int, help="MB per slot")
    sp.add_argument("--max-slots", type=positive_int, default=None, help="search bound (default 100000)")
    common(sp)
    sp.set_defaults(func=cmd_sim_min_slots)

    sp = simsub.add_parser("calibrate", help="compare the Nexmark profiles with the paper (Table II, shapes, memory)")
    sp.add_argument("--profiles", type=name_list, default=["q1", "q2", "q5", "q8", "q11"],
                    help="comma-separated profile names or YAML paths")
    common(sp)
    sp.set_defaults(func=cmd_sim_calibrate)

    sp = simsub.add_parser("run", help="run one configuration at one rate and show its series")
    sp.add_argument("--profile", required=True)
    sp.add_argument("--memory", type=positive_int, default=4096)
    sp.add_argument("--rate", required=True, type=positive_number)
    g = sp.add_mutually_exclusive_group()
    g.add_argument("--config", help="operator=parallelism pairs; default: the sim's best configuration of --slots")
    g.add_argument("--slots", type=positive_int)
    sp.add_argument("--duration", type=non_negative_seconds, default=300.0)
    sp.add_argument("--seed", type=non_negative_int, default=0)
    common(sp)
    sp.set_defaults(func=cmd_sim_run)

    def campaign_args(sp, kind):
        sp.add_argument("--testbed", default="sim", help="sim (default) or flink (the local Flink cluster)")
        sp.add_argument("--profile", help="sim only: profile name or YAML path (default: the query's)")
        sp.add_argument("--seed", type=non_negative_int, default=0)
        sp.add_argument("--campaign-dir", help=f"where the ledger and results live (default: campaigns/{kind}-<query>)")
        sp.add_argument("--resume", action="store_true", help="continue the campaign recorded in --campaign-dir")

    def planner_args(sp):
        sp.add_argument("--timing", default="paper-simple",
                        help="estimator timing profile: paper-simple, paper-complex or quick")
        sp.add_argument("--verbose", action="store_true", help="log every observation window")

    sp = sub.add_parser("measure", help="measure a configuration at a list of rates (resumable campaign)")
    sp.add_argument("--query", required=True)
    sp.add_argument("--memory", type=positive_int, default=4096, help="MB per slot")
    sp.add_argument("--config", help="operator=parallelism pairs (default: every operator at 1)")
    sp.add_argument("--rates", required=True, type=number_list, help="events/s, e.g. 5e5,1e6,2e6")
    sp.add_argument("--warmup", type=non_negative_seconds, default=120.0)
    sp.add_argument("--ramp", type=non_negative_seconds, default=30.0)
    sp.add_argument("--window", type=non_negative_seconds, default=30.0)
    campaign_args(sp, "measure")
    common(sp)
    sp.set_defaults(func=cmd_measure)

    sp = sub.add_parser("estimate", help="Capacity Estimator alone: the MST of one configuration")
    sp.add_argument("--query", required=True)
    sp.add_argument("--memory", type=positive_int, default=4096, help="MB per slot")
    sp.add_argument("--config", help="operator=parallelism pairs (default: every operator at 1)")
    campaign_args(sp, "estimate")
    planner_args(sp)
    common(sp)
    sp.set_defaults(func=cmd_estimate)

    sp = sub.add_parser("optimize", help="Configuration Optimizer alone: BIDS2 for a budget, then its MST "
                                         "(with --from-metrics: BIDS2 from a file, no testbed)")
    sp.add_argument("--query", help="required on a testbed; with --from-metrics, keeps that query's metrics only")
    sp.add_argument("--slots", type=positive_int,
                    help="required, except with --from-metrics on a file that gives each solve's budget")
    sp.add_argument("--memory", type=positive_int,
                    help="MB per slot (default 4096; with --from-metrics: keeps that profile's metrics only)")
    sp.add_argument("--from-metrics", metavar="FILE",
                    help="single-task metrics recorded in FILE (docs/records.md): BIDS2 alone, no testbed")
    campaign_args(sp, "optimize")
    planner_args(sp)
    common(sp)
    sp.set_defaults(func=_optimize)

    def explorer_args(sp):
        sp.add_argument("--profiles", type=memory_list, help="memory per slot to explore, MB (default: the testbed's)")
        sp.add_argument("--max-slots", type=positive_int, help="sim only: slots of the testbed (default 48)")
        sp.add_argument("--max-measurements", type=positive_int, default=20)

    sp = sub.add_parser("explore", help="Resource Explorer alone: measurements and the surrogate model")
    sp.add_argument("--query", required=True)
    explorer_args(sp)
    campaign_args(sp, "explore")
    planner_args(sp)
    common(sp)
    sp.set_defaults(func=cmd_explore)

    sp = sub.add_parser("plan", help="plan the budget and configuration for a target rate")
    sp.add_argument("--query", required=True)
    sp.add_argument("--rate", type=positive_number,
                    help="target events/s, e.g. 2.5e6 (default: 10x the MST measured on the testbed's largest budget)")
    sp.add_argument("--safety", type=positive_number, default=1.10, help="over-provisioning factor (paper: 1.10)")
    explorer_args(sp)
    campaign_args(sp, "plan")
    planner_args(sp)
    common(sp)
    sp.set_defaults(func=cmd_plan)

    sp = sub.add_parser("validate", help="run a plan (or a configuration) at 100/120/150 %% of its rate")
    sp.add_argument("--query", required=True)
    sp.add_argument("--plan", help="plan.json written by streambed plan")
    sp.add_argument("--config", help="operator=parallelism pairs (instead of --plan)")
    sp.add_argument("--memory", type=positive_int, default=4096, help="MB per slot")
    sp.add_argument("--rate", type=positive_number, help="events/s (default: the plan's)")
    sp.add_argument("--multipliers", type=number_list, default=[1.0, 1.2, 1.5])
    sp.add_argument("--ramp", type=non_negative_seconds, default=300.0)
    sp.add_argument("--duration", type=non_negative_seconds, default=1800.0)
    sp.add_argument("--window", type=non_negative_seconds, default=60.0)
    sp.add_argument("--production-slots", type=positive_int, default=100_000,
                    help="sim only: slots of the production cluster")
    campaign_args(sp, "validate")
    common(sp)
    sp.set_defaults(func=cmd_validate)

    sp = sub.add_parser("fit", help="the explorer's model from recorded measurements, inverse-solved for a rate "
                                    "(no testbed)")
    sp.add_argument("--measurements", required=True, metavar="FILE",
                    help="a campaign's ledger or exploration.json, or the paper's runs/search_*.csv (docs/records.md)")
    sp.add_argument("--rate", required=True, type=positive_number, help="target events/s, e.g. 2.5e6")
    sp.add_argument("--profiles", type=memory_list, help="memory per slot to plan, MB (default: the measured ones)")
    sp.add_argument("--family", choices=("auto", "linear", "log", "sqrt"), default="auto",
                    help="surrogate family; auto: the explorer's own selection rule (default)")
    sp.add_argument("--safety", type=positive_number, default=1.10, help="over-provisioning factor (paper: 1.10)")
    sp.add_argument("--training", choices=TRAINING, default="all",
                    help="all measurements (the explorer), or paper-prefix: the paper's best first-k rows, k=5..20")
    sp.add_argument("--memory-feature", choices=tuple(MEMORY_FEATURES), default="taskmanager-mb",
                    help="how memory enters the model: TaskManager MB, 16 slots each (the paper's, default), or MB per slot")
    sp.add_argument("--log", choices=("log1p", "log"), default="log1p",
                    help="the log family's transform: log1p (the paper's, default) or log")
    common(sp)
    sp.set_defaults(func=cmd_fit)

    sp = sub.add_parser("export", help="write a campaign's measurements and single-task metrics as files "
                                       "fit and optimize --from-metrics read")
    sp.add_argument("--campaign-dir", required=True, help="a plan, explore or optimize campaign")
    sp.add_argument("--out", help="directory for the files (default: <campaign-dir>/export)")
    common(sp)
    sp.set_defaults(func=cmd_export)
    return p


def _optimize(args, out: Output) -> None:
    """optimize runs BIDS2 from a file (--from-metrics) or on a testbed, which needs --query and --slots."""
    if args.from_metrics:
        return cmd_optimize_from_metrics(args, out)
    missing = [opt for opt, v in (("--query", args.query), ("--slots", args.slots)) if v is None]
    if missing:
        raise UserError(f"the following arguments are required: {', '.join(missing)} (or --from-metrics FILE)")
    args.memory = args.memory or 4096
    return cmd_optimize(args, out)


def _file_error(e: OSError | UnicodeDecodeError) -> str:
    """'<filename>: <strerror>' of a file-system error, on one line."""
    if isinstance(e, UnicodeDecodeError):
        return f"a file is not UTF-8 text ({e.reason} at byte {e.start})"
    what = e.strerror or str(e) or type(e).__name__
    if e.filename is not None and e.filename2 is not None:
        return f"{e.filename} -> {e.filename2}: {what}"
    return f"{e.filename}: {what}" if e.filename is not None else what


def main(argv: Sequence[str] | None = None) -> int:
    json_mode = "--json" in (argv if argv is not None else sys.argv[1:])
    out = Output(json_mode=json_mode)
    try:
        args = build_parser().parse_args(argv)
        out = Output(json_mode=getattr(args, "json", False), quiet=getattr(args, "quiet", False))
        args.func(args, out)
        return 0
    except StreamBedError as e:
        out.err.print(f"streambed: error: {e}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_USER_ERROR
    except (OSError, UnicodeDecodeError) as e:
        # Last safety net: the commands name the option of every file they know to check; a file-system
        # error that still gets here is shown as one line, never as a traceback.
        out.err.print(f"streambed: error: {_file_error(e)}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        out.err.print("streambed: interrupted; finished measurements are in the ledger, continue with --resume",
                      markup=False)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())

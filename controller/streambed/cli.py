"""The ``streambed`` command: thin argument handling over the campaigns and the simulated testbed.

Every command that produces results accepts ``--json`` (the result as one JSON document on stdout,
progress on stderr). Bad input ends with one line naming the field and what is expected, exit
status 2, and no traceback.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Sequence

from . import __version__
from .errors import StreamBedError, UserError
from .model import Budget, Configuration
from .report.console import Output

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130

_SUFFIX = {"k": 1e3, "m": 1e6, "g": 1e9}


# -- argument types: each failure is one line naming what is expected -------------------------------

def positive_number(text: str) -> float:
    """'2.5e6', '2500000' or '2.5M' -> 2500000.0."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgG]?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected a positive number such as 2.5e6 or 2.5M, got {text!r}")
    value = float(m.group(1)) * _SUFFIX.get(m.group(2).lower(), 1.0)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def non_negative_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a non-negative number of seconds, got {text!r}")
    return value


def number_list(text: str) -> list[float]:
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected comma-separated numbers such as 1e6,2e6")
    return [positive_number(p) for p in parts]


def memory_list(text: str) -> list[int]:
    return [int(v) for v in number_list(text)]


def parse_configuration(text: str, query) -> Configuration:
    """'Calc#1=2,Sink#2=1' -> Configuration."""
    mapping = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise UserError(f"--config: expected operator=parallelism pairs such as Calc#1=2,Sink#2=1, got {part!r}")
        op, _, p = part.partition("=")
        if op.strip() in mapping:
            raise UserError(f"--config: operator {op.strip()} is given twice")
        try:
            mapping[op.strip()] = int(p)
        except ValueError:
            raise UserError(f"--config: parallelism of {op.strip()} must be an integer, got {p!r}") from None
    unknown = [op for op in mapping if op not in query.operators]
    if unknown:
        raise UserError(f"--config: unknown operator(s) {', '.join(unknown)} for query {query.name} "
                        f"(expected: {', '.join(query.operators)})")
    return Configuration.of(query, mapping)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints usage + message; we print one line
        raise UserError(message)


# -- commands -----------------------------------------------------------------------------------------

def cmd_sim_profiles(args, out: Output) -> None:
    from .testbed.sim.profile import load_profile, shipped_profiles

    rows, data = [], []
    for name in shipped_profiles():
        p = load_profile(name)
        kind = f"analytic {p.analytic.family}" if p.analytic else "nexmark"
        rows.append((name, kind, len(p.operators), p.description))
        data.append({"name": name, "kind": kind, "operators": len(p.operators), "description": p.description})
    out.table("Simulation profiles", ("profile", "kind", "operators", "description"), rows)
    out.result(data)


def cmd_sim_check(args, out: Output) -> None:
    from .testbed.sim.profile import load_profile

    p = load_profile(args.file)
    out.info(f"{args.file}: valid profile {p.name} ({len(p.operators)} operators)")
    out.result({"file": args.file, "name": p.name, "operators": [o.name for o in p.operators],
                "input_ratios": p.input_ratios()})


def _ground_truth(args):
    from .testbed.sim.profile import load_profile
    from .testbed.sim.truth import GroundTruth, TruthSettings

    settings = TruthSettings(max_slots=getattr(args, "max_slots", None) or TruthSettings().max_slots)
    return GroundTruth(load_profile(args.profile), settings)


def cmd_sim_truth(args, out: Output) -> None:
    gt = _ground_truth(args)
    Budget(args.slots, args.memory)  # validates
    if args.slots > gt.settings.max_slots:
        raise UserError(f"--slots: expected at most {gt.settings.max_slots} slots, got {args.slots}")
    with out.progress(f"ground truth of {args.profile}: {args.slots} slots x {args.memory} MB", total=None):
        truth = gt.true_mst(args.slots, args.memory)
    out.table(f"Ground truth: {args.profile}, {args.slots} slots of {args.memory} MB",
              ("quantity", "value"),
              [("MST (engine), events/s", truth.mst), ("MST (capacity model), events/s", truth.model_mst),
               ("bottleneck", truth.bottleneck)] + [(f"parallelism {op}", p) for op, p in truth.configuration.parallelism])
    out.result(truth.to_dict())


def cmd_sim_min_slots(args, out: Output) -> None:
    gt = _ground_truth(args)
    with out.progress(f"smallest budget of {args.profile} for {args.rate:,.0f} events/s at {args.memory} MB"):
        found = gt.min_slots(args.rate, args.memory)
    if found is None:
        out.info(f"[red]{args.profile} cannot sustain {args.rate:,.0f} events/s with {gt.settings.max_slots} slots "
                 f"of {args.memory} MB or fewer[/red]")
        out.result({"profile": args.profile, "rate": args.rate, "memory_mb": args.memory, "slots": None,
                    "reachable": False, "max_slots": gt.settings.max_slots})
        return
    slots, truth = found
    out.table(f"Smallest budget: {args.profile} at {args.rate:,.0f} events/s, {args.memory} MB per slot",
              ("quantity", "value"),
              [("slots", slots), ("MST at that budget, events/s", truth.mst), ("bottleneck", truth.bottleneck)]
              + [(f"parallelism {op}", p) for op, p in truth.configuration.parallelism])
    out.result({"profile": args.profile, "rate": args.rate, "memory_mb": args.memory, "slots": slots,
                "reachable": True, "truth": truth.to_dict()})


def cmd_sim_calibrate(args, out: Output) -> None:
    from .testbed.sim.calibration import calibrate

    rows = []
    with out.progress("calibrating profiles against the paper", total=len(args.profiles)) as step:
        for name in args.profiles:
            step.describe(f"calibrating {name}")
            rows.append(calibrate(name))
            step.advance()
    out.table("Calibration against the StreamBed paper (4 GB per slot unless noted)",
              ("profile", "single-task MST", "paper (Table II)", "ratio", "shape", "paper shape",
               "0.5 GB / 4 GB (1 task, 48 slots)", "1 GB / 4 GB (1 task, 48 slots)"),
              [(r.profile, r.single_task_mst, r.paper_mst, r.ratio, r.shape, r.paper_shape,
                f"{r.memory[512]['single']:.2f}, {r.memory[512]['testbed']:.2f}",
                f"{r.memory[1024]['single']:.2f}, {r.memory[1024]['testbed']:.2f}") for r in rows])
    out.result([r.to_dict() for r in rows])


def cmd_sim_run(args, out: Output) -> None:
    import numpy as np

    from .testbed.sim.profile import load_profile
    from .testbed.sim.testbed import SimSettings, SimTestbed

    profile = load_profile(args.profile)
    query = profile.query()
    if args.config:
        configuration = parse_configuration(args.config, query)
    else:
        from .testbed.sim.capacity import capacity_model

        configuration, _ = capacity_model(profile, args.memory).best_configuration(args.slots or query.size)
    tb = SimTestbed(profile, SimSettings(max_slots=max(configuration.slots, query.size), memory_profiles=(args.memory,),
                                         seed=args.seed))
    _check_window("--duration", args.duration, tb.info())
    tb.prepare(Budget(configuration.slots, args.memory))
    run = tb.start(profile.name, configuration, args.rate)
    m = tb.observe(run, args.duration)
    eng = tb.engine(run)
    s = eng.samples
    rows = [(f"{t:.0f}", r, p) for t, r, p in zip(s.time, s.emitted, s.pending)]
    out.table(f"{profile.name} at {args.rate:,.0f} events/s, {configuration.key()} x {args.memory} MB",
              ("time, s", "achieved, events/s", "pending records"), rows)
    out.table("Operators over the run", ("operator", "parallelism", "input, records/s", "busy (mean)",
                                         "busy (max task)", "back-pressured"),
              [(o.operator, o.parallelism, o.input_rate, o.busyness, o.busyness_max, o.backpressure) for o in m.operators])
    out.result({"measurement": m.to_dict(), "configuration": configuration.as_dict(),
                "series": {"time": list(s.time), "achieved": list(s.emitted), "pending": list(s.pending),
                           "busy": np.asarray(s.busy).round(4).tolist()}})


def _check_window(option: str, seconds: float, info) -> None:
    if seconds < info.sample_period:
        raise UserError(f"{option}: expected at least the testbed's metric sample period ({info.sample_period:g} s), "
                        f"got {seconds:g}")


def _check_budget(budget: Budget, info) -> None:
    """Refuse a budget the testbed cannot deploy before a campaign directory is created for it."""
    if budget.memory_mb not in info.memory_profiles:
        offered = ", ".join(str(m) for m in info.memory_profiles)
        raise UserError(f"--memory: the {info.name} testbed offers {offered} MB per slot, got {budget.memory_mb}")
    if budget.slots > info.max_slots:
        raise UserError(f"--config: uses {budget.slots} slots, the {info.name} testbed offers at most {info.max_slots}")


def _testbed_for(args):
    if args.testbed != "sim":
        raise UserError(f"--testbed: {args.testbed!r} is not available yet (expected: sim); the Flink testbed comes with issue #4")
    from .testbed.sim.profile import load_profile
    from .testbed.sim.testbed import SimSettings, SimTestbed

    profile = load_profile(args.profile or args.query)
    if profile.name != args.query:
        raise UserError(f"--profile: {args.profile} describes query {profile.name}, not --query {args.query}")
    return SimTestbed(profile, SimSettings(seed=args.seed)), profile.name


def cmd_measure(args, out: Output) -> None:
    from .campaigns.measure import WindowTiming, measure_rates
    from .ledger import Ledger

    testbed, query_name = _testbed_for(args)
    query = testbed.query(query_name)
    configuration = parse_configuration(args.config, query) if args.config else Configuration.single_task(query)
    budget = Budget(configuration.slots, args.memory)
    info = testbed.info()
    _check_budget(budget, info)
    _check_window("--window", args.window, info)
    timing = WindowTiming(args.warmup, args.ramp, args.window)
    campaign_dir = Path(args.campaign_dir or f"campaigns/measure-{query_name}")
    params = {"testbed": args.testbed, "query": query_name, "memory_mb": args.memory,
              "configuration": configuration.as_dict(), "rates": list(args.rates), "seed": args.seed,
              "timing": [timing.warmup_s, timing.ramp_s, timing.observe_s]}
    rows = []
    with Ledger.open(campaign_dir, "measure", params, resume=args.resume) as ledger:
        with out.progress(f"measuring {query_name} ({configuration.key()}, {args.memory} MB)", total=len(args.rates)) as step:
            def report(i, m, replayed):
                rows.append((f"{m.target_rate:,.0f}", m.achieved_rate, m.ratio, m.pending_slope,
                             "sustained" if m.sustained() else "not sustained", "ledger" if replayed else "measured"))
                step.advance(description=f"window {i + 1}/{len(args.rates)} at {m.target_rate:,.0f} events/s")

            results = measure_rates(testbed, ledger, query_name, budget, configuration, args.rates, timing, report)
        ledger.set_result({"measurements": [m.to_dict() for m in results]})
    out.table(f"Measurements of {query_name}: {configuration.key()} x {args.memory} MB (ledger: {campaign_dir})",
              ("target, events/s", "achieved, events/s", "ratio", "pending slope, rec/s", "verdict", "source"), rows)
    out.result({"campaign_dir": str(campaign_dir), "configuration": configuration.as_dict(), "memory_mb": args.memory,
                "measurements": [m.to_dict() for m in results]})


def cmd_plan(args, out: Output) -> None:
    """Until the planner lands (issue #3), ``plan`` measures the single-task configuration on a rate
    ladder through the ledger: the first brick of the Capacity Estimator."""
    from .campaigns.measure import WindowTiming, measure_rates
    from .ledger import Ledger

    testbed, query_name = _testbed_for(args)
    query = testbed.query(query_name)
    info = testbed.info()
    memory = max(info.memory_profiles)
    configuration = Configuration.single_task(query)
    rates = [args.start_rate * 2 ** i for i in range(args.steps)]
    campaign_dir = Path(args.campaign_dir) / f"plan-{query_name}"
    params = {"testbed": args.testbed, "query": query_name, "memory_mb": memory, "rates": rates, "seed": args.seed}
    with Ledger.open(campaign_dir, "plan", params, resume=args.resume) as ledger:
        out.info(f"[bold]StreamBed plan for {query_name}[/bold]: the Capacity Estimator, Configuration Optimizer and "
                 f"Resource Explorer arrive with the planner issue (#3). Meanwhile: the single-task configuration on "
                 f"a rate ladder, on the {info.name} testbed ({memory} MB per slot).")
        with out.progress("rate ladder", total=len(rates)) as step:
            results = measure_rates(testbed, ledger, query_name, Budget(configuration.slots, memory), configuration,
                                    rates, WindowTiming(60, 20, 30),
                                    lambda i, m, r: step.advance(description=f"{m.target_rate:,.0f} events/s"))
        sustained = [m.target_rate for m in results if m.sustained()]
        summary = {"query": query_name, "memory_mb": memory, "configuration": configuration.as_dict(),
                   "highest_sustained_rate": max(sustained) if sustained else None,
                   "measurements": [m.to_dict() for m in results], "planner": "not yet implemented (issue #3)"}
        ledger.set_result(summary)
    out.table(f"{query_name}, single task, {memory} MB (ledger: {campaign_dir})",
              ("target, events/s", "achieved, events/s", "ratio", "verdict"),
              [(m.target_rate, m.achieved_rate, m.ratio, "sustained" if m.sustained() else "not sustained") for m in results])
    out.result(summary)


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
    sp.add_argument("--profiles", type=lambda t: [x for x in t.split(",") if x], default=["q1", "q2", "q5", "q8", "q11"])
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
    sp.add_argument("--seed", type=int, default=0)
    common(sp)
    sp.set_defaults(func=cmd_sim_run)

    def campaign_args(sp):
        sp.add_argument("--testbed", default="sim", help="sim (Flink arrives with issue #4)")
        sp.add_argument("--profile", help="sim only: profile name or YAML path (default: the query's)")
        sp.add_argument("--seed", type=int, default=0)
        sp.add_argument("--resume", action="store_true", help="continue the campaign recorded in --campaign-dir")

    sp = sub.add_parser("measure", help="measure a configuration at a list of rates (resumable campaign)")
    sp.add_argument("--query", required=True)
    sp.add_argument("--memory", type=positive_int, default=4096, help="MB per slot")
    sp.add_argument("--config", help="operator=parallelism pairs (default: every operator at 1)")
    sp.add_argument("--rates", required=True, type=number_list, help="events/s, e.g. 5e5,1e6,2e6")
    sp.add_argument("--warmup", type=non_negative_seconds, default=120.0)
    sp.add_argument("--ramp", type=non_negative_seconds, default=30.0)
    sp.add_argument("--window", type=non_negative_seconds, default=30.0)
    sp.add_argument("--campaign-dir", help="where the ledger lives (default: campaigns/measure-<query>)")
    campaign_args(sp)
    common(sp)
    sp.set_defaults(func=cmd_measure)

    sp = sub.add_parser("plan", help="plan the budget and configuration for a target rate")
    sp.add_argument("--query", required=True)
    sp.add_argument("--rate", type=positive_number, help="target events/s (used once the planner lands)")
    sp.add_argument("--start-rate", type=positive_number, default=1e4)
    sp.add_argument("--steps", type=positive_int, default=10)
    sp.add_argument("--campaign-dir", default="campaigns")
    campaign_args(sp)
    common(sp)
    sp.set_defaults(func=cmd_plan)
    return p


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
    except KeyboardInterrupt:
        out.err.print("streambed: interrupted; finished measurements are in the ledger, continue with --resume",
                      markup=False)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())

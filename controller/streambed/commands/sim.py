"""``streambed sim ...``: the simulated testbed's own commands (profiles, ground truth, calibration)."""

from __future__ import annotations

from pathlib import Path

from ..campaigns.settings import DEFAULT_MEMORY_MB
from ..errors import UserError
from ..model import Budget
from ..report.console import Output
from ..testbed.sim.truth import TruthSettings
from .args import Parser, count, memory_mb, name_list, non_negative_seconds, operator_pairs, rate, seed, slots
from .common import output_options

CALIBRATED = ["q1", "q2", "q5", "q8", "q11"]
"""The Nexmark profiles `sim calibrate` compares with the paper by default."""


def register(sub) -> None:
    sim = sub.add_parser("sim", help="the simulated testbed: profiles, ground truth, calibration")
    simsub = sim.add_subparsers(dest="sim_command", required=True, parser_class=Parser)

    sp = simsub.add_parser("profiles", help="list the shipped simulation profiles")
    output_options(sp)
    sp.set_defaults(func=cmd_sim_profiles)

    sp = simsub.add_parser("check", help="validate a profile YAML file")
    sp.add_argument("file")
    output_options(sp)
    sp.set_defaults(func=cmd_sim_check)

    sp = simsub.add_parser("truth", help="true MST of the best configuration of a budget, or of a given one")
    sp.add_argument("--profile", required=True, help="shipped profile name (q1, q5, ...) or YAML path")
    g = sp.add_mutually_exclusive_group(required=True)
    g.add_argument("--slots", type=slots, help="the best configuration of this many slots")
    g.add_argument("--config", type=operator_pairs, help="this configuration: operator=parallelism pairs")
    g.add_argument("--plan", type=Path, help="the configuration a plan.json gives for --memory (and its rate)")
    sp.add_argument("--memory", required=True, type=memory_mb, help="MB per slot")
    output_options(sp)
    sp.set_defaults(func=cmd_sim_truth)

    sp = simsub.add_parser("min-slots", help="smallest slot count that sustains a rate (over Flink's default key groups and the most it allows)")
    sp.add_argument("--profile", required=True)
    sp.add_argument("--rate", required=True, type=rate, help="events/s, e.g. 2.5e6")
    sp.add_argument("--memory", required=True, type=memory_mb, help="MB per slot")
    sp.add_argument("--max-slots", type=slots, default=TruthSettings.max_slots, help="search bound")
    output_options(sp)
    sp.set_defaults(func=cmd_sim_min_slots)

    sp = simsub.add_parser("calibrate", help="compare the Nexmark profiles with the paper (Table II, shapes, memory)")
    sp.add_argument("--profiles", type=name_list, default=CALIBRATED, help="comma-separated profile names or YAML paths")
    output_options(sp)
    sp.set_defaults(func=cmd_sim_calibrate)

    sp = simsub.add_parser("run", help="run one configuration at one rate and show its series")
    sp.add_argument("--profile", required=True)
    sp.add_argument("--memory", type=memory_mb, default=DEFAULT_MEMORY_MB, help="MB per slot")
    sp.add_argument("--rate", required=True, type=rate)
    g = sp.add_mutually_exclusive_group()
    g.add_argument("--config", type=operator_pairs,
                   help="operator=parallelism pairs; default: the sim's best configuration of --slots")
    g.add_argument("--slots", type=slots)
    sp.add_argument("--duration", type=non_negative_seconds, default=300.0, help="seconds")
    sp.add_argument("--seed", type=seed, default=0)
    output_options(sp)
    sp.set_defaults(func=cmd_sim_run)

    _register_generated(simsub)


def _register_generated(simsub) -> None:
    """The commands that write files a campaign reads: the data's key statistics, generated profiles."""
    sp = simsub.add_parser("keys", help="the key statistics of the data a profile models, as `streambed data keys` "
                                        "writes them for `plan --key-stats` (a stand-in: the sim has no data set)")
    sp.add_argument("--profile", required=True, help="shipped profile name (q1, q5, ...) or YAML path")
    sp.add_argument("--out", required=True, type=Path, help="the statistics file to write")
    output_options(sp)
    sp.set_defaults(func=cmd_sim_keys)

    sp = simsub.add_parser("generate", help="write random but plausible profiles drawn from a seed "
                                            "(docs/sim-profiles.md, Generated profiles)")
    sp.add_argument("--count", required=True, type=count, help="profiles to write")
    sp.add_argument("--seed", type=seed, default=0, help="profile i depends only on (seed, i)")
    sp.add_argument("--out", required=True, type=Path, help="directory for the YAML files")
    output_options(sp)
    sp.set_defaults(func=cmd_sim_generate)


def cmd_sim_profiles(args, out: Output) -> None:
    from ..testbed.sim.profile import load_profile, shipped_profiles

    rows, data = [], []
    for name in shipped_profiles():
        p = load_profile(name)
        kind = f"analytic {p.analytic.family}" if p.analytic else "nexmark"
        rows.append((name, kind, len(p.operators), p.description))
        data.append({"name": name, "kind": kind, "operators": len(p.operators), "description": p.description})
    out.table("Simulation profiles", ("profile", "kind", "operators", "description"), rows)
    out.result(data)


def cmd_sim_check(args, out: Output) -> None:
    from ..testbed.sim.profile import load_profile

    p = load_profile(args.file)
    out.info(f"{args.file}: valid profile {p.name} ({len(p.operators)} operators)")
    out.result({"file": args.file, "name": p.name, "operators": [o.name for o in p.operators],
                "input_ratios": p.input_ratios()})


def _ground_truth(args):
    from ..testbed.sim.profile import load_profile
    from ..testbed.sim.truth import GroundTruth

    settings = TruthSettings(max_slots=getattr(args, "max_slots", TruthSettings.max_slots))
    return GroundTruth(load_profile(args.profile, option="--profile"), settings)


def _given_configuration(args, query):
    """--config, or the configuration --plan gives for --memory; with the rate it is to sustain (or None)."""
    from ..campaigns.base import configuration_of
    from ..records import read_plan

    if args.config is not None:
        return configuration_of(query, args.config), None
    if args.plan is None:
        raise UserError("give --config or --plan: the configuration whose MST to find")
    plan = read_plan(args.plan)
    if plan.query != query.name:
        raise UserError(f"--plan: {args.plan} plans {plan.query}, not the profile's query {query.name}")
    try:
        entry = plan.entry(args.memory)
    except KeyError:
        raise UserError(f"--memory: {args.plan} has no budget for {args.memory} MB per slot") from None
    if entry.configuration is None:
        raise UserError(f"--plan: the plan found no budget for {args.memory} MB per slot (unreachable rate)")
    return configuration_of(query, entry.configuration, "--plan", entry.max_parallelism), plan.rate


def cmd_sim_truth(args, out: Output) -> None:
    gt = _ground_truth(args)
    rate = None
    if args.slots:
        Budget(args.slots, args.memory)  # validates
        if args.slots > gt.settings.max_slots:
            raise UserError(f"--slots: expected at most {gt.settings.max_slots} slots, got {args.slots}")
        what = f"{args.slots} slots"
    else:
        configuration, rate = _given_configuration(args, gt.profile.query())
        what = f"configuration {configuration.key()}"
    with out.progress(f"ground truth of {args.profile}: {what} x {args.memory} MB", total=None):
        truth = (gt.true_mst(args.slots, args.memory) if args.slots
                 else gt.configuration_mst(configuration, args.memory))
    data = truth.to_dict()
    rows = [("MST (engine), events/s", truth.mst), ("MST (capacity model), events/s", truth.model_mst),
            ("bottleneck", truth.bottleneck)]
    if rate is not None:
        data.update(rate=rate, sustains_rate=truth.mst >= rate, mst_over_rate=truth.mst / rate)
        rows += [("the plan's rate, events/s", rate), ("MST / rate", truth.mst / rate)]
    out.table(f"Ground truth: {args.profile}, {truth.slots} slots of {args.memory} MB", ("quantity", "value"),
              rows + [(f"parallelism {op}", p) for op, p in truth.configuration.parallelism])
    out.result(data)


def cmd_sim_min_slots(args, out: Output) -> None:
    gt = _ground_truth(args)
    with out.progress(f"smallest budget of {args.profile} for {args.rate:,.0f} events/s at {args.memory} MB"):
        found = gt.least_slots(args.rate, args.memory)
    if found is None:
        out.info(f"[red]{args.profile} cannot sustain {args.rate:,.0f} events/s with {gt.settings.max_slots} slots "
                 f"of {args.memory} MB or fewer[/red]")
        out.result({"profile": args.profile, "rate": args.rate, "memory_mb": args.memory, "slots": None,
                    "reachable": False, "max_slots": gt.settings.max_slots})
        return
    slots, truth = found
    out.table(f"Smallest budget: {args.profile} at {args.rate:,.0f} events/s, {args.memory} MB per slot",
              ("quantity", "value"),
              [("slots", slots), ("MST at that budget, events/s", truth.mst), ("bottleneck", truth.bottleneck),
               ("max parallelism", truth.configuration.max_parallelism or "Flink's default")]
              + [(f"parallelism {op}", p) for op, p in truth.configuration.parallelism])
    out.result({"profile": args.profile, "rate": args.rate, "memory_mb": args.memory, "slots": slots,
                "reachable": True, "truth": truth.to_dict()})


def cmd_sim_calibrate(args, out: Output) -> None:
    from ..campaigns.calibrate import calibrate
    from ..testbed.sim.profile import load_profile

    for name in args.profiles:  # every name checked before any work starts
        load_profile(name, option="--profiles")
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

    from ..campaigns.base import configuration_of
    from ..testbed.sim.profile import load_profile
    from ..testbed.sim.testbed import run_once

    profile = load_profile(args.profile, option="--profile")
    configuration = configuration_of(profile.query(), args.config) if args.config else None
    configuration, m, s = run_once(profile, args.memory, args.rate, args.duration, seed=args.seed,
                                   configuration=configuration, slots=args.slots)
    out.table(f"{profile.name} at {args.rate:,.0f} events/s, {configuration.key()} x {args.memory} MB",
              ("time, s", "achieved, events/s", "pending records"),
              [(f"{t:.0f}", r, p) for t, r, p in zip(s.time, s.emitted, s.pending)])
    out.table("Operators over the run", ("operator", "parallelism", "input, records/s", "busy (mean)",
                                         "busy (max task)", "back-pressured"),
              [(o.operator, o.parallelism, o.input_rate, o.busyness, o.busyness_max, o.backpressure) for o in m.operators])
    out.result({"measurement": m.to_dict(), "configuration": configuration.as_dict(),
                "series": {"time": list(s.time), "achieved": list(s.emitted), "pending": list(s.pending),
                           "busy_ms_per_s": np.asarray(s.busy_ms_per_s).round(1).tolist()}})


def cmd_sim_keys(args, out: Output) -> None:
    from ..model import keystats
    from ..testbed.sim.keys import key_statistics
    from ..testbed.sim.profile import load_profile

    if args.out.is_dir():
        raise UserError(f"--out: {args.out} is a directory")
    profile = load_profile(args.profile, option="--profile")
    result = key_statistics(profile)
    if not result.operators:
        raise UserError(f"--profile: {profile.name} has no keyed operator")
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        result.write(args.out)
    except OSError as e:
        raise UserError(f"--out: cannot write {args.out} ({e.strerror or e})") from None
    out.table(f"keys of {profile.name}'s keyed operators (the profile's key distributions; no data set)",
              ["operator", "distinct keys", "top 1", f"top {keystats.TOP_KEYS}", "concentration H"],
              [[s.operator, f"{s.distinct_keys:,}", f"{s.top_share(1):.2%}", f"{s.top_share(keystats.TOP_KEYS):.2%}",
                f"{s.concentration:.3g}"] for s in result.operators])
    out.info(f"written to {args.out}")
    out.result({**{k: v for k, v in result.to_dict().items() if k != "operators"}, "path": str(args.out),
                "operators": [s.figures() for s in result.operators]})


def cmd_sim_generate(args, out: Output) -> None:
    from ..testbed.sim.generate import write_profiles
    from ..testbed.sim.profile import load_profile

    with out.progress(f"generating {args.count} profiles (seed {args.seed})", total=None):
        files = write_profiles(args.out, args.count, args.seed)
    rows, data = [], []
    for path in files:
        p = load_profile(path)
        rows.append((str(path), len(p.operators), p.description.split(": ", 1)[-1]))
        data.append({"file": str(path), "name": p.name, "operators": len(p.operators)})
    out.table(f"Generated profiles (seed {args.seed})", ("file", "operators", "shape"), rows)
    out.result(data)

"""Campaign commands: measure, estimate, optimize, explore, plan, validate (all through the ledger)."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..model import Budget, Configuration
from ..report.console import Output
from .args import parse_configuration

def check_window(option: str, seconds: float, info) -> None:
    if seconds < info.sample_period:
        raise UserError(f"{option}: expected at least the testbed's metric sample period ({info.sample_period:g} s), "
                        f"got {seconds:g}")


def check_budget(budget: Budget, info) -> None:
    """Refuse a budget the testbed cannot deploy before a campaign directory is created for it."""
    if budget.memory_mb not in info.memory_per_slot:
        offered = ", ".join(str(m) for m in info.memory_per_slot)
        raise UserError(f"--memory: the {info.name} testbed offers {offered} MB per slot, got {budget.memory_mb}")
    if budget.slots > info.max_slots:
        raise UserError(f"--config: uses {budget.slots} slots, the {info.name} testbed offers at most {info.max_slots}")


def _max_slots_error(name: str, operators: int, got: int) -> UserError:
    return UserError(f"--max-slots: must exceed the {operators} operators of {name} (the explorer needs at least "
                     f"two slot counts, {operators} and more), got {got}")


def check_explorer_slots(args, query, info) -> None:
    """The Resource Explorer measures at least two slot counts between the query's operator count (one
    slot each) and the testbed's slots: refuse a testbed with no more slots than operators before a
    campaign directory is created (the explorer's search would otherwise fail midway)."""
    if info.max_slots > query.size:
        return
    if getattr(args, "max_slots", None) is not None:
        raise _max_slots_error(query.name, query.size, info.max_slots)
    raise UserError(f"the {info.name} testbed offers {info.max_slots} slots; {query.name} has {query.size} operators "
                    f"and the explorer needs more slots than operators (at least two slot counts)")


def testbed_for(args, max_slots: int | None = None, out: Output | None = None):
    """The testbed a campaign runs on: the local Flink cluster, or the sim (its size from --max-slots)."""
    if args.testbed == "flink":
        if getattr(args, "profile", None):
            raise UserError("--profile: only the simulated testbed takes a profile (--testbed sim)")
        try:
            from ..infra.local import local_testbed

            tb = local_testbed(log=out.status if out else None)
        except ModuleNotFoundError as e:
            raise UserError(f"--testbed flink: the Flink testbed needs PyFlink (the apache-flink package), but "
                            f"module {e.name or 'pyflink'} is not installed; run make install") from None
        tb.query(args.query)  # checks the query file and its graph before any campaign starts
        return tb, args.query
    if args.testbed != "sim":
        raise UserError(f"--testbed: expected flink (the local Flink cluster) or sim, got {args.testbed!r}")
    from ..testbed.sim.profile import load_profile
    from ..testbed.sim.testbed import SimSettings, SimTestbed

    if args.profile:
        profile = load_profile(args.profile, option="--profile")
        if profile.name != args.query:
            raise UserError(f"--profile: {args.profile} describes query {profile.name}, not --query {args.query}")
    else:
        profile = load_profile(args.query, option="--query")
        if profile.name != args.query:
            raise UserError(f"--query: {args.query} describes query {profile.name}; give --query {profile.name} "
                            f"--profile {args.query}")
    asked = getattr(args, "max_slots", None)
    if max_slots is None and asked is not None and asked <= len(profile.operators):
        # only explore and plan take --max-slots: their explorer needs more slots than operators
        raise _max_slots_error(profile.name, len(profile.operators), asked)
    slots = max_slots or asked or SimSettings.max_slots
    memories = tuple(sorted(set(SimSettings.memory_per_slot) | set(getattr(args, "extra_memory", ()) or ())))
    return SimTestbed(profile, SimSettings(seed=args.seed, max_slots=slots, memory_per_slot=memories)), profile.name


def cmd_measure(args, out: Output) -> None:
    from ..campaigns.measure import WindowTiming, measure_rates
    from ..ledger import Ledger

    testbed, query_name = testbed_for(args, out=out)
    query = testbed.query(query_name)
    configuration = parse_configuration(args.config, query) if args.config else Configuration.single_task(query)
    budget = Budget(configuration.slots, args.memory)
    info = testbed.info()
    check_budget(budget, info)
    check_window("--window", args.window, info)
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



def ledger_counts(ledger) -> dict:
    return {"path": str(ledger.path), "replayed": ledger.replayed, "executed": ledger.executed}


def campaign_dir(args, kind: str, query: str) -> Path:
    return Path(args.campaign_dir) if args.campaign_dir else Path("campaigns") / f"{kind}-{query}"


def _estimator(testbed, ledger, args, out: Output):
    from ..estimator import CapacityEstimator, Timing

    return CapacityEstimator(testbed, ledger, Timing.named(args.timing), log=out.info if args.verbose else out.status)


def _check_timing(args) -> None:
    """Refuse an unknown timing profile before a campaign directory exists."""
    from ..estimator import Timing

    Timing.named(args.timing)


def cmd_estimate(args, out: Output) -> None:
    from ..ledger import Ledger
    from ..report.tables import estimate_table

    _check_timing(args)
    testbed, name = testbed_for(args, out=out)
    query = testbed.query(name)
    configuration = parse_configuration(args.config, query) if args.config else Configuration.single_task(query)
    budget = Budget(configuration.slots, args.memory)
    check_budget(budget, testbed.info())
    directory = campaign_dir(args, "estimate", name)
    params = {"testbed": args.testbed, "query": name, "memory_mb": args.memory, "seed": args.seed,
              "configuration": configuration.as_dict(), "timing": args.timing}
    with Ledger.open(directory, "estimate", params, resume=args.resume) as ledger:
        est = _estimator(testbed, ledger, args, out)
        with out.progress(f"estimating the MST of {name} ({configuration.key()}, {args.memory} MB)"):
            result = est.estimate(name, budget, configuration, "estimate").to_dict()
        ledger.set_result(result)
    estimate_table(out, result, f"{name}: MST {result['mst']:,.0f} events/s ({result['iterations']} windows, "
                                f"{result['testbed_seconds'] / 60:.1f} min of testbed; ledger {directory})")
    out.result(result)


def cmd_optimize(args, out: Output) -> None:
    from ..ledger import Ledger
    from ..optimizer import ConfigurationOptimizer
    from ..report.tables import source_warning

    _check_timing(args)
    testbed, name = testbed_for(args, out=out)
    query = testbed.query(name)
    budget = Budget(args.slots, args.memory)
    check_budget(budget, testbed.info())
    if args.slots < query.size:
        raise UserError(f"--slots: {name} has {query.size} operators; BIDS2 needs at least one slot each, got {args.slots}")
    directory = campaign_dir(args, "optimize", name)
    params = {"testbed": args.testbed, "query": name, "memory_mb": args.memory, "slots": args.slots,
              "seed": args.seed, "timing": args.timing}
    with Ledger.open(directory, "optimize", params, resume=args.resume) as ledger:
        co = ConfigurationOptimizer(_estimator(testbed, ledger, args, out), query)
        with out.progress(f"optimizing {name} for {args.slots} slots x {args.memory} MB"):
            metrics = co.single_task(args.memory)
            result = co.optimize(budget, "optimize")
        data = {"single_task_metrics": metrics.to_dict(), **result.to_dict()}
        ledger.set_result(data)
    out.table(f"Single-task metrics of {name} at {args.memory} MB (BIDS2's input)",
              ("operator", "true rate per task, records/s", "input ratio"),
              [(o["name"], o["true_rate_per_task"], o["input_ratio"]) for o in data["single_task_metrics"]["operators"]])
    out.table(f"BIDS2: {args.slots} slots -> predicted {result.predicted_rate:,.0f}, measured MST {result.mst:,.0f} events/s",
              ("operator", "parallelism"), list(result.configuration.parallelism))
    if result.estimate.get("source_limited"):
        source_warning(out, f"the testbed's source capped the estimate: {result.mst:,.0f} events/s is a lower bound")
    out.result(data)


def _explorer_settings(args):
    from ..explorer import ExplorerSettings

    return ExplorerSettings(seed=args.seed, safety=getattr(args, "safety", 1.10), max_measurements=args.max_measurements)


def _memories(args, testbed) -> list[int]:
    """The memory profiles to explore, refused before any campaign directory exists if not offered."""
    offered = testbed.info().memory_per_slot
    memories = sorted(set(args.profiles)) if args.profiles else list(offered)
    unknown = [m for m in memories if m not in offered]
    if unknown:
        raise UserError(f"--profiles: the testbed offers {', '.join(map(str, offered))} MB per slot, not "
                        f"{', '.join(map(str, unknown))}")
    return memories


def cmd_explore(args, out: Output) -> None:
    from ..estimator import Timing
    from ..explorer import ResourceExplorer
    from ..ledger import Ledger
    from ..optimizer import ConfigurationOptimizer
    from ..report.tables import exploration_table

    testbed, name = testbed_for(args, out=out)
    check_explorer_slots(args, testbed.query(name), testbed.info())
    memories = _memories(args, testbed)
    directory = campaign_dir(args, "explore", name)
    params = {"testbed": args.testbed, "query": name, "profiles": memories, "seed": args.seed, "timing": args.timing,
              "max_slots": testbed.info().max_slots, "max_measurements": args.max_measurements}
    Timing.named(args.timing)
    with Ledger.open(directory, "explore", params, resume=args.resume) as ledger:
        est = _estimator(testbed, ledger, args, out)
        explorer = ResourceExplorer(ConfigurationOptimizer(est, testbed.query(name)), testbed.info(),
                                    _explorer_settings(args), log=out.info if args.verbose else out.status)
        with out.progress(f"exploring {name}", total=args.max_measurements) as step:
            ex = explorer.explore(memories, lambda p: step.advance(
                description=f"{p.slots} slots x {p.memory_mb} MB: MST {p.mst:,.0f}"))
        ex.estimator_calls, ex.testbed_seconds = est.calls, est.testbed_seconds
        data = ex.to_dict()
        ledger.set_result(data)
    exploration_table(out, data)
    out.info(f"stop: {ex.stop_reason}; model by the split rule: {ex.family}; "
             f"{ex.optimizer_calls} optimizer calls, {ex.estimator_calls} estimator calls, "
             f"{ex.testbed_seconds / 60:.0f} min of testbed")
    out.result(data)


def cmd_plan(args, out: Output) -> None:
    from ..campaigns.plan import run_plan
    from ..estimator import Timing
    from ..ledger import Ledger
    from ..report.tables import plan_tables

    testbed, name = testbed_for(args, out=out)
    check_explorer_slots(args, testbed.query(name), testbed.info())
    memories = _memories(args, testbed)
    timing = Timing.named(args.timing)
    directory = campaign_dir(args, "plan", name)
    params = {"testbed": args.testbed, "query": name, "rate": args.rate, "profiles": memories, "seed": args.seed,
              "timing": args.timing, "safety": args.safety, "max_slots": testbed.info().max_slots,
              "max_measurements": args.max_measurements}
    with Ledger.open(directory, "plan", params, resume=args.resume) as ledger:
        what = f"{args.rate:,.0f} events/s" if args.rate else "10x the testbed's largest MST (no --rate given)"
        with out.progress(f"planning {name} for {what}", total=args.max_measurements) as step:
            outcome = run_plan(testbed, ledger, name, args.rate, memories, timing, _explorer_settings(args), directory,
                               log=out.info if args.verbose else out.status,
                               on_point=lambda p: step.advance(
                                   description=f"{p.phase}: {p.slots} slots x {p.memory_mb} MB -> MST {p.mst:,.0f}"))
        data = outcome.to_dict()
        data["ledger"] = ledger_counts(ledger)
    plan_tables(out, data["plan"], data["exploration"])
    out.info(f"ledger: {data['ledger']['replayed']} steps from the ledger, {data['ledger']['executed']} measured")
    out.info("written: " + ", ".join(outcome.files.values()))
    out.result(data)


def _read_plan(path: str):
    """The plan.json of ``validate --plan``: every failure is one line naming --plan."""
    import json

    from ..model import Plan

    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"--plan: file not found: {path}") from None
    except IsADirectoryError:
        raise UserError(f"--plan: {path} is a directory, not a plan file (expected the plan.json streambed plan "
                        f"writes)") from None
    except UnicodeDecodeError as e:
        raise UserError(f"--plan: {path} is not UTF-8 text ({e.reason} at byte {e.start}); expected the plan.json "
                        f"streambed plan writes") from None
    except OSError as e:
        raise UserError(f"--plan: cannot read {path} ({e.strerror or e})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"--plan: {path} is not JSON ({e.msg}, line {e.lineno})") from None
    return Plan.from_dict(data, origin=f"--plan: {path}")


def cmd_validate(args, out: Output) -> None:
    from ..ledger import Ledger
    from ..report.tables import validation_table
    from ..validation import ValidationSettings, validate

    if args.plan:
        plan = _read_plan(args.plan)
        if plan.query != args.query:
            raise UserError(f"--plan: {args.plan} plans {plan.query}, not --query {args.query}")
        try:
            entry = plan.entry(args.memory)
        except KeyError:
            raise UserError(f"--memory: {args.plan} has no budget for {args.memory} MB per slot "
                            f"(it has {', '.join(str(e.memory_mb) for e in plan.entries)})") from None
        if entry.slots is None:
            raise UserError(f"--plan: the plan found no budget for {args.memory} MB per slot (unreachable rate)")
        mapping, rate = entry.configuration, args.rate or plan.rate
    else:
        if not args.config or not args.rate:
            raise UserError("validate: give --plan FILE, or --config with --rate")
        mapping, rate = None, args.rate
    slots_needed = sum(mapping.values()) if mapping else None
    testbed, name = testbed_for(args, max_slots=max(args.production_slots, slots_needed or 0), out=out)
    query = testbed.query(name)
    if mapping:
        try:
            configuration = Configuration.of(query, mapping)
        except UserError as e:
            raise UserError(f"--plan: {args.plan}: the entry of {args.memory} MB: {e}") from None
    else:
        configuration = parse_configuration(args.config, query)
    if args.memory not in testbed.info().memory_per_slot:
        raise UserError(f"--memory: the testbed offers {', '.join(map(str, testbed.info().memory_per_slot))} MB per "
                        f"slot, got {args.memory}")
    budget = Budget(configuration.slots, args.memory)
    settings = ValidationSettings(multipliers=tuple(args.multipliers), ramp_s=args.ramp, duration_s=args.duration,
                                  window_s=args.window)
    check_window("--window", args.window, testbed.info())
    check_window("--duration", args.duration, testbed.info())
    directory = campaign_dir(args, "validate", name)
    params = {"testbed": args.testbed, "query": name, "rate": rate, "memory_mb": args.memory, "seed": args.seed,
              "configuration": configuration.as_dict(), "multipliers": list(settings.multipliers),
              "ramp_s": settings.ramp_s, "duration_s": settings.duration_s, "window_s": settings.window_s}
    with Ledger.open(directory, "validate", params, resume=args.resume) as ledger:
        with out.progress(f"validating {name}: {configuration.slots} slots x {args.memory} MB",
                          total=len(settings.multipliers)) as step:
            report = validate(testbed, ledger, name, budget, configuration, rate, settings,
                              on_run=lambda r, replayed: step.advance(
                                  description=f"{r.multiplier * 100:.0f} %: {r.verdict}"))
        data = report.to_dict()
        ledger.set_result(data)
    validation_table(out, data)
    out.result(data)

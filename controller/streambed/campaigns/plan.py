"""The plan campaign: Resource Explorer -> Configuration Optimizer -> Capacity Estimator on a
testbed, then the plan for the requested rate (paper sections IV-VI). Every observation window is in
the ledger; the results also land as JSON and plots in the campaign directory."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from ..planner.estimator import NO_PHASES, Phases, Timing
from ..planner.exploration import Exploration, ExplorerSettings
from ..files import write_text
from ..ledger import Ledger
from ..model import Plan, Query, SingleTaskMetrics, Surrogate
from ..model.catchup import CatchUp
from ..model import keystats
from ..model.keystats import KeyStatistics
from ..planner.memory import saving_line
from ..planner.streambed import with_memory_per_operator
from ..report import plots
from ..report.html import write_report
from ..testbed.base import Testbed
from ..errors import UserError
from .base import Advance, Log, ignore, open_ledger, testbed_of
from .chain import Observers, assemble
from .datakeys import replayed_key_stats
from .explore import ExploreCampaign, point_line
from .settings import DEFAULT_RATE_MULTIPLE, PlanRequest, PlanSettings


@dataclass
class PlanOutcome:
    plan: Plan
    exploration: Exploration
    single_task: dict[int, SingleTaskMetrics]
    files: dict[str, str]

    def to_dict(self) -> dict:
        return {"plan": self.plan.to_dict(), "exploration": self.exploration.to_dict(),
                "single_task_metrics": {str(m): v.to_dict() for m, v in self.single_task.items()},
                "files": self.files}


@dataclass(frozen=True)
class PlanResult:
    """What the plan campaign gives its command: the outcome, where its ledger is and how much of it was
    replayed or measured this time."""

    outcome: PlanOutcome
    ledger_path: str
    replayed: int
    executed: int

    def to_dict(self) -> dict:
        """The command's JSON: the outcome with its ledger's counts."""
        return self.outcome.to_dict() | {"ledger": {"path": self.ledger_path, "replayed": self.replayed,
                                                    "executed": self.executed}}


def default_rate(exploration: Exploration, multiple: float = DEFAULT_RATE_MULTIPLE) -> float:
    """``multiple`` x the best MST measured at the testbed's largest budget."""
    top = max(p.slots for p in exploration.points)
    return multiple * max(p.mst for p in exploration.points if p.slots == top)


def run_plan(testbed: Testbed, ledger: Ledger, request: PlanRequest, out_dir: Path, *,
             checkpoint: Testbed | None = None, observers: Observers = Observers()) -> PlanOutcome:
    """The plan on a testbed already built (the evaluation builds its own). ``request.rate`` None: plan for
    ``request.rate_multiple`` x the largest budget's measured MST. ``checkpoint``: a larger cluster (part
    of production) where disagreeing or unreachable plans get a staged measurement before the plan is
    made again (ResourceExplorer.checkpoint). ``request.catch_up`` (B, T): the plan also drains B seconds of
    backlog within T after a restart, so it is sized for rate x (1 + B/T) on every operator a backlog
    reaches; with a replay source every operator is downstream of the source, so that is all of them
    (the plan's rate is that effective rate; plan.catch_up keeps B, T and the steady rate)."""
    query, memories, on_point = request.query, list(request.memories), observers.on_point
    chain = assemble(testbed, ledger, query, Timing.named(request.timing), policy=request.policy,
                     explorer=request.explorer, log=observers.log, phases=observers.phases, checkpoint=checkpoint)
    estimator, optimizer, explorer = chain.estimator, chain.optimizer, chain.explorer
    exploration = explorer.explore(memories, on_point)
    target = request.rate if request.rate is not None else default_rate(exploration, request.rate_multiple)
    catch = CatchUp(*request.catch_up, target) if request.catch_up else None
    if catch is not None:
        target = catch.effective_rate
    plan = explorer.plan(exploration, target, memories)
    probes = explorer.probe(exploration, plan, estimator)
    for p in probes:
        on_point(p)
    if probes:
        plan = explorer.plan(exploration, target, memories)
    if chain.staged is not None:
        staged_points = explorer.checkpoint(exploration, plan, chain.staged, checkpoint.info().max_slots)
        for p in staged_points:
            on_point(p)
        if staged_points:
            plan = explorer.plan(exploration, target, memories)
    if explorer.settings.confirm_rounds and any(explorer.holds(e) for e in plan.entries):
        plan = explorer.confirmed_plan(exploration, target, memories, estimator, on_point)
    if request.memory_per_operator:
        for p in explorer.confirm_memory(exploration, with_memory_per_operator(plan, explorer, exploration), estimator):
            on_point(p)
        plan = with_memory_per_operator(plan, explorer, exploration)
    # Counted after the plan: its last BIDS2 pass may need the single-task run of a profile D never
    # measured, which is an estimate too (the paper's #CE and testbed time include it).
    exploration.estimator_calls = sum(e.calls for e in chain.estimators)
    exploration.testbed_seconds = sum(e.testbed_seconds for e in chain.estimators)
    plan = replace(plan, catch_up=catch)

    out_dir.mkdir(parents=True, exist_ok=True)
    single = optimizer.measured_single_task()
    files = {"plan": str(out_dir / "plan.json"), "exploration": str(out_dir / "exploration.json"),
             "single_task_metrics": str(out_dir / "single-task-metrics.json"),
             "model_plot": str(out_dir / "model.png"), "trace_plot": str(out_dir / "estimator-trace.png")}
    write_text(files["plan"], json.dumps(plan.to_dict(), indent=2) + "\n")
    write_text(files["exploration"], json.dumps(exploration.to_dict(), indent=2) + "\n")
    write_text(files["single_task_metrics"], json.dumps({str(m): v.to_dict() for m, v in single.items()}, indent=2) + "\n")
    plots.plot_model(Path(files["model_plot"]), [p.to_dict() for p in exploration.points],
                     Surrogate.from_dict(plan.model), plan.to_dict(), testbed.info().max_slots)
    largest = max(exploration.points, key=lambda p: (p.slots, p.memory_mb))
    plots.plot_trace(Path(files["trace_plot"]), largest.estimate_summary(),
                     f"{query}: estimator trace, {largest.slots} slots x {largest.memory_mb} MB")
    outcome = PlanOutcome(plan, exploration, single, files)
    ledger.set_result(outcome.to_dict())
    return outcome


class PlanCampaign(ExploreCampaign):
    """Exploration, then the plan for the requested rate, its JSON files and plots."""

    kind = "plan"

    def __init__(self, settings: PlanSettings, *, status: Log = ignore, log: Log = ignore,
                 phases: Phases = NO_PHASES):
        super().__init__(settings, status=status, log=log, phases=phases)
        self.settings: PlanSettings = settings
        rate = (f"{settings.rate:,.0f} events/s" if settings.rate
                else f"{settings.rate_multiple:g}x the testbed's largest MST (no --rate given)")
        self.title = f"planning {self.query.name} for {rate}"
        if settings.checkpoint_inventory is not None and not settings.checkpoint_slots:
            raise UserError("--checkpoint-inventory: names the cluster of --checkpoint-slots; give --checkpoint-slots too")
        self.checkpoint = checkpoint_testbed(settings, self.info.max_slots, status) if settings.checkpoint_slots else None
        c = settings.campaign
        stats = replayed_key_stats(self.query.name, settings.key_stats, c.input, c.lake, counted=settings.data_keys,
                                   status=status)
        self.key_statistics = key_statistics(stats, self.query) if stats else ()

    def params(self) -> dict:
        params = {**super().params(), "rate": self.settings.rate, "safety": self.settings.safety}
        s = self.settings
        # recorded only when set, so a ledger that never set it still resumes; a re-plan (replan.plan_within) reads them
        if s.risk is not None:
            params["risk"] = s.risk
        if s.guards.max_extrapolation != ExplorerSettings.max_extrapolation:
            params["max_extrapolation"] = s.guards.max_extrapolation
        if s.guards.min_marginal != ExplorerSettings.min_marginal:
            params["min_marginal"] = s.guards.min_marginal
        if s.checkpoint_slots:
            params["checkpoint_slots"] = s.checkpoint_slots
        if s.rate is None and s.rate_multiple != DEFAULT_RATE_MULTIPLE:
            params["rate_multiple"] = s.rate_multiple
        if not s.skew_probes:  # probes are measurements: a resume must make the same choice
            params["skew_probes"] = False
        if s.catch_up is not None:
            params["catch_up"] = list(s.catch_up)
        return params

    def run(self, advance: Advance = ignore) -> PlanResult:
        s = self.settings
        with open_ledger(s.campaign, self.kind, self.params()) as ledger:
            request = PlanRequest(self.query.name, tuple(self.memories), rate=s.rate, rate_multiple=s.rate_multiple,
                                  catch_up=s.catch_up, timing=self.timing.name, policy=s.policy,
                                  explorer=replace(s.explorer(), key_statistics=self.key_statistics),
                                  memory_per_operator=s.memory_per_operator)
            outcome = run_plan(self.testbed, ledger, request, self.directory, checkpoint=self.checkpoint,
                               observers=Observers(self.log, lambda p: advance(point_line(p)), self.phases))
            result = PlanResult(outcome, str(ledger.path), ledger.replayed, ledger.executed)
        # the campaign's page, once its ledger holds the result (streambed report writes it again)
        outcome.files["report"] = str(write_report(self.directory))
        return result


def memory_saving_lines(plan: Plan) -> list[str]:
    """Per entry whose operators have their own memory per slot, what that saves against the entry's one size."""
    return [f"{e.memory_mb} MB per slot: " + saving_line(e.total_memory_mb, e.slots * e.memory_mb,
                                                       f"{e.slots} slots of {e.memory_mb} MB")
            for e in plan.entries if e.memory_by_operator and e.slots is not None]


def key_statistics(path: Path, query: Query) -> tuple[KeyStatistics, ...]:
    """The key statistics of ``--key-stats`` for ``query``'s keyed operators, refused (one line) when the file
    is not one, holds another query's, or names none of its keyed operators."""
    stats = keystats.read(path)
    if stats.query != query.name:
        raise UserError(f"--key-stats: {path} holds the key statistics of {stats.query}, not {query.name}")
    ops = tuple(o for o in stats.operators if o.operator in query.keyed)
    if not ops:
        raise UserError(f"--key-stats: {path} names none of {query.name}'s keyed operators "
                        f"({', '.join(sorted(query.keyed)) or 'it has none'})")
    return ops


def checkpoint_testbed(settings: PlanSettings, testbed_slots: int, status: Log) -> Testbed:
    """The cluster of ``--checkpoint-slots`` for staged measurements: on the sim, a simulated cluster of
    that size; on Flink, the one ``--checkpoint-inventory`` deploys (refused when it holds fewer slots).
    Refused before anything is measured unless it is larger than the testbed's ``testbed_slots``."""
    c, n = settings.campaign, settings.checkpoint_slots
    if n <= testbed_slots:
        raise UserError(f"--checkpoint-slots: must exceed the testbed's {testbed_slots} slots (the largest budget it "
                        f"measures), got {n}")
    if settings.checkpoint_inventory is not None:
        c = replace(c, testbed=replace(c.testbed, inventory=settings.checkpoint_inventory))
    testbed = testbed_of(c, status, max_slots=n)
    info = testbed.info()
    if info.max_slots < n:
        raise UserError(f"--checkpoint-slots: the {info.name} testbed offers {info.max_slots} slots, not {n}; give "
                        f"--checkpoint-inventory, an inventory of part of the production cluster that holds them")
    return testbed

"""StreamBed's own planner behind the Planner protocol (planner/base.py): the Resource Explorer's
exploration over (memory per slot, slots) through the Configuration Optimizer and the Capacity
Estimator (paper sections IV-VI), then the inverse solve of its model for the rate.

The chain is wired as a plan campaign wires it (estimator -> optimizer -> explorer), every window
through a ledger of its own in a temporary directory that is gone once the exploration ends: a
method compared with others keeps its evidence, not its ledger. The sizing is the plan's entry with
the least total memory among the memories that reach the rate: slots x memory per slot, or, where
the single-task runs show a smaller memory keeping some operators at the rate, each operator's tasks
at the memory they need (planner/memory.py; Sizing.memory_by_operator), with what that saves against
the best one size for all in the sizing's notes.

Options (``PlanningRequest.options``): ``timing`` (an estimator timing, planner/estimator.py:TIMINGS),
``policy`` (a configuration policy, planner/policies:POLICIES), ``safety`` and ``risk``
(ExplorerSettings), ``search`` (planner/search.py:SEARCHES).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from ..errors import UserError
from ..ledger import Ledger
from ..model import Measurement, Plan, PlanEntry
from ..testbed.base import Testbed
from .base import Log, PlanningRequest, Sizing, Step, silent
from .estimator import DEFAULT_TIMING, CapacityEstimator, Timing
from .exploration import Exploration, ExplorerSettings
from .explorer import ResourceExplorer, check_search_space
from .memory import heaviest_loads, operator_memory, saving_line
from .policies.skew import busiest_share
from .optimizer import ConfigurationOptimizer, alignment, alignment_notes
from .policies import DEFAULT_POLICY, policy_named

OPTIONS = ("timing", "policy", "safety", "risk", "search")
"""The options this planner reads from ``PlanningRequest.options``."""


@dataclass
class StreamBedEvidence:
    """An exploration and the explorer that made it (its optimizer holds the single-task metrics the
    plan's last pass reads), for the memories the request named."""

    explorer: ResourceExplorer
    exploration: Exploration
    memories: tuple[int, ...]
    estimator_calls: int = 0
    testbed_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"memories": list(self.memories), "exploration": self.exploration.to_dict(),
                "estimator_calls": self.estimator_calls, "testbed_seconds": self.testbed_seconds}


def explorer_settings(request: PlanningRequest) -> ExplorerSettings:
    """The explorer's settings for a request: its seed, measurement budget and options."""
    unknown = sorted(set(request.options) - set(OPTIONS))
    if unknown:
        raise UserError(f"options: the streambed planner takes {', '.join(OPTIONS)}, not {', '.join(unknown)}")
    o: Mapping[str, Any] = request.options
    base = ExplorerSettings()
    return ExplorerSettings(seed=request.seed,
                            max_measurements=request.max_measurements or base.max_measurements,
                            safety=float(o.get("safety", base.safety)),
                            risk=float(o["risk"]) if o.get("risk") is not None else None,
                            search=str(o.get("search", base.search)))


def with_memory_per_operator(plan: Plan, explorer: ResourceExplorer, exploration: Exploration) -> Plan:
    """The plan with, on each entry some of whose operators a smaller memory per slot keeps at the
    rate, each operator's memory (planner/memory.py): from the single-task metrics of every memory
    measured, each operator's busiest-task share at its planned parallelism in the entry's own metrics
    (key skew and key groups: policies/skew.busiest_share), the heaviest task loads each memory's runs
    showed, and the plan's safety factor."""
    by_memory = explorer.optimizer.measured_single_task()
    if len(by_memory) < 2:
        return plan
    seen = {m: heaviest_loads(metrics, [Measurement.from_dict(p.measurement) for p in exploration.points
                                        if p.memory_mb == m and p.measurement and p.mst > 0])
            for m, metrics in by_memory.items()}
    entries = []
    for e in plan.entries:
        if e.slots is None or e.memory_mb not in by_memory or not e.configuration:
            entries.append(e)
            continue
        # the busiest task's share as read: a smaller memory's rate is its single-task run's, not held to
        # the entry's memory's load limit, so the task's slowness stays in the share
        final, _ = explorer.final_metrics(exploration, e.memory_mb, held=False)
        rates, fixed = dict(final.operators), e.max_parallelism or final.max_parallelism
        shares = {n: busiest_share(rates[n], p, fixed) for n, p in e.configuration.items() if n in rates}
        chosen = operator_memory(by_memory, e.configuration, plan.rate, e.memory_mb,
                                 margin=plan.safety if plan.risk is None else 1.0, busiest_share=shares,
                                 seen_loads=seen, keyed=explorer.optimizer.query.keyed)
        # a confirmation on the testbed (ResourceExplorer.confirm_memory) that measured this split short refutes it
        refuted = any(c.mst < plan.rate and c.configuration == e.configuration and c.memory_by_operator == chosen
                      for c in exploration.confirmations)
        entries.append(replace(e, memory_by_operator=chosen)
                       if any(mb < e.memory_mb for mb in chosen.values()) and not refuted else e)
    return replace(plan, entries=tuple(entries))


def smallest_memory(plan: Plan) -> PlanEntry | None:
    """The entry that reaches the rate with the least total memory (slots x memory per slot, or per
    operator where the entry says; fewer slots on a tie); None when no memory per slot reaches it."""
    reached = [e for e in plan.entries if e.slots is not None]
    return min(reached, key=lambda e: (e.total_memory_mb, e.slots)) if reached else None


def one_size(plan: Plan) -> PlanEntry | None:
    """The entry with the least slots x memory per slot: the best one size for all."""
    reached = [e for e in plan.entries if e.slots is not None]
    return min(reached, key=lambda e: (e.slots * e.memory_mb, e.slots)) if reached else None


class StreamBedPlanner:
    """Explore (memory per slot, slots) on the testbed, fit and select a model, inverse-solve it."""

    name = "streambed"

    def explore(self, testbed: Testbed, request: PlanningRequest, log: Log = silent) -> StreamBedEvidence:
        settings = explorer_settings(request)
        timing = Timing.named(str(request.options.get("timing", DEFAULT_TIMING)))
        policy = policy_named(str(request.options.get("policy", DEFAULT_POLICY)))
        info = testbed.info()
        query = testbed.query(request.query)
        memories = check_search_space(query, info, request.memories or info.memory_per_slot)
        with tempfile.TemporaryDirectory(prefix="streambed-planner-") as directory, \
                Ledger.open(directory, "plan", {"query": request.query, "seed": request.seed}, resume=False) as ledger:
            estimator = CapacityEstimator(testbed, ledger, timing, log)
            optimizer = ConfigurationOptimizer(estimator, query, policy)
            explorer = ResourceExplorer(optimizer, info, settings, log)
            exploration = explorer.explore(memories)
            # skew probes for the keyed operators the plan runs far wider than D did (planner/probes.py)
            explorer.probe(exploration, explorer.plan(exploration, request.rate, memories), estimator)
            # a plan the testbed holds is measured, and so is its memory per operator (planner/explorer.py);
            # evidence gathered for no rate in particular has no plan to measure
            if request.rate > 0:
                plan = explorer.confirmed_plan(exploration, request.rate, memories, estimator)
                explorer.confirm_memory(exploration, with_memory_per_operator(plan, explorer, exploration), estimator)
            # the plan's last pass reads a memory's single-task run where D sustained nothing with it:
            # measured now, so that plan() never touches the testbed
            for m in memories:
                if not any(p.memory_mb == m and p.mst > 0 for p in exploration.points):
                    optimizer.single_task(m)
        exploration.estimator_calls = estimator.calls
        exploration.testbed_seconds = estimator.testbed_seconds
        return StreamBedEvidence(explorer, exploration, tuple(memories), estimator.calls, estimator.testbed_seconds)

    def plan(self, evidence: StreamBedEvidence, request: PlanningRequest) -> Sizing:
        plan = evidence.explorer.plan(evidence.exploration, request.rate, evidence.memories)
        plan = with_memory_per_operator(plan, evidence.explorer, evidence.exploration)
        entry = smallest_memory(plan)
        steps = tuple(Step(p.slots, p.memory_mb, dict(p.configuration), p.mst, p.testbed_seconds, p.phase)
                      for p in evidence.exploration.points)
        query = evidence.explorer.optimizer.query
        detail = {**plan.to_dict(), "max_parallelism": entry.max_parallelism if entry else None,
                  "alignment": alignment(query, entry.configuration, entry.max_parallelism) if entry else {}}
        common = dict(testbed_seconds=evidence.testbed_seconds, measurements=evidence.estimator_calls, steps=steps,
                      detail=detail)
        if entry is None:
            why = "; ".join(f"{e.memory_mb} MB: {e.unreachable}" for e in plan.entries)
            return Sizing(self.name, request.query, request.rate, None, None, None, unreachable=why, **common)
        notes = (*plan.warnings, *((entry.key_warning,) if entry.key_warning else ()), *entry.unseen,
                 *alignment_notes(detail["alignment"]),
                 *((f"beyond the model's trusted range: confirm with {entry.checkpoint}",) if entry.beyond_trusted else ()))
        single = one_size(plan)
        if entry.memory_by_operator and single is not None:
            notes = (*notes, saving_line(entry.total_memory_mb, single.slots * single.memory_mb,
                                         f"{single.slots} slots of {single.memory_mb} MB"))
        return Sizing(self.name, request.query, request.rate, entry.slots, entry.memory_mb, dict(entry.configuration),
                      memory_by_operator=dict(entry.memory_by_operator) if entry.memory_by_operator else None,
                      notes=notes, **common)

"""The validate campaign: a plan (or a configuration) run at multiples of its rate on a testbed the
size of production (paper section VIII)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping

from ..errors import UserError
from ..planner.estimator import NO_PHASES, Phases
from ..files import write_text
from ..model import Budget, Configuration, Plan, PlanEntry, Query, TestbedInfo
from ..model.catchup import CatchUp
from ..records import read_plan
from ..report.grafana.annotations import GrafanaAnnotations
from ..report.html import write_report
from ..planner.validation import DrainVerdict, RunVerdict, ValidationReport, drain_run, validate
from .replan import plan_within
from .base import Advance, Log, configuration_of, ignore, open_ledger, testbed_of
from .settings import DEFAULT_MEMORY_MB, TestbedSpec, ValidateSettings


def _choose_memory(plan: Plan, settings: ValidateSettings, offered: tuple[int, ...], log: Log) -> int:
    """``settings.memory_mb``, or the plan's cheapest reachable budget (slots x memory) among the memory
    sizes the testbed ``offered``; with ``within_cluster`` and none reachable, the memory size whose
    budget supports the most."""
    if settings.memory_mb is not None:
        return settings.memory_mb
    reachable = [e for e in plan.entries if e.slots is not None]
    if not reachable and settings.within_cluster:
        candidates = [e for e in plan.entries if e.memory_mb in offered and e.max_rate]
        if candidates:
            return max(candidates, key=lambda e: (e.max_rate, -e.memory_mb)).memory_mb
    if not reachable:
        raise UserError(f"--plan: {settings.plan} found no budget for its rate at any memory per slot "
                        f"(unreachable: {plan.entries[0].unreachable if plan.entries else 'no entries'})")
    if not [e for e in reachable if e.memory_mb in offered]:
        raise UserError(f"--plan: {settings.plan} has budgets for "
                        f"{', '.join(f'{e.memory_mb} MB' for e in reachable)} per slot; this testbed offers "
                        f"{', '.join(str(m) for m in offered)} MB")
    reachable = [e for e in reachable if e.memory_mb in offered]
    memory_mb = min(reachable, key=lambda e: (e.slots * e.memory_mb, e.memory_mb)).memory_mb
    if len(reachable) > 1:
        others = ", ".join(f"{e.slots} x {e.memory_mb} MB" for e in reachable if e.memory_mb != memory_mb)
        log(f"the plan's cheapest budget (slots x memory) is validated; --memory for another ({others})")
    return memory_mb


def _plan_entry(settings: ValidateSettings, query: Query, info: TestbedInfo,
                log: Log = ignore) -> tuple[Plan, PlanEntry, bool]:
    """The plan and its entry to validate, and whether that plan is a re-plan for the cluster
    (``settings.within_cluster``: the plan's own budget is unreachable or larger than the cluster)."""
    plan = read_plan(settings.plan)
    if plan.query != settings.campaign.query:
        raise UserError(f"--plan: {settings.plan} plans {plan.query}, not --query {settings.campaign.query}")
    memory_mb = _choose_memory(plan, settings, info.memory_per_slot, log)
    try:
        entry = plan.entry(memory_mb)
    except KeyError:
        raise UserError(f"--memory: {settings.plan} has no budget for {memory_mb} MB per slot "
                        f"(it has {', '.join(str(e.memory_mb) for e in plan.entries)})") from None
    if settings.within_cluster and (entry.slots is None or entry.slots > info.max_slots):
        asked = (f"needs {entry.slots} slots" if entry.slots is not None
                 else f"is unreachable (the most it supports is {entry.max_rate or 0:,.0f} events/s)")
        fitted = plan_within(settings.plan, query, info, memory_mb, info.max_slots)
        within = fitted.entry(memory_mb)
        cap = min(info.max_slots, within.max_slots or info.max_slots)
        log(f"the plan for {plan.rate:,.0f} events/s at {memory_mb} MB per slot {asked}, this cluster holds "
            f"{info.max_slots:,}: validating instead its plan for {fitted.rate:,.0f} events/s, the highest it serves "
            f"within {cap:,} slots" + (f" ({within.slots} slots)" if within.slots != cap else ""))
        return fitted, within, True
    if entry.slots is None:
        raise UserError(f"--plan: the plan found no budget for {memory_mb} MB per slot (unreachable rate; "
                        f"--within-cluster validates the plan for the highest rate it serves on this cluster)")
    return plan, entry, False


def cluster_of(spec: TestbedSpec, testbed: str, default_inventory: Callable[[], Path] | None = None) -> dict:
    """The cluster a validation runs on, as its JSON, report and annotations name it: a deployed testbed's
    inventory directory (inventories/lab-production -> lab-production; without --inventory, the
    provider's), else the testbed's name (sim); ``testbed`` is what the testbed calls itself (its
    JobManager's address)."""
    inventory = spec.inventory
    if inventory is None and spec.name == "flink":
        if default_inventory is None:
            from ..infra.local import default_inventory
        inventory = default_inventory()
    name = Path(inventory).resolve().name if inventory is not None else spec.name
    return {"name": name, "inventory": str(inventory) if inventory is not None else None, "testbed": testbed}


def check_fits(info, budget: Budget, what: str, remedy: str = "plan a rate it holds") -> None:
    """A validation runs on a cluster that holds the budget (paper VIII: production-scale runs); a plan
    larger than the testbed is refused with both sizes, never run on fewer slots than it asks."""
    if budget.slots > info.max_slots:
        raise UserError(f"{what}: needs {budget.slots} slots of {budget.memory_mb} MB; the {info.name} testbed "
                        f"offers {info.max_slots} (its inventory's testbed.yml max_slots, or --production-slots "
                        f"on the sim): validate on a larger cluster, or {remedy}")


@dataclass(frozen=True)
class CatchUpNotRun:
    """A catch-up run asked of a testbed that cannot start a job behind a backlog, and why."""

    catch_up: CatchUp
    why: str
    verdict: str = "not run"

    def to_dict(self) -> dict:
        return {**self.catch_up.to_dict(), "verdict": self.verdict, "why": self.why}


@dataclass(frozen=True)
class ValidationResult:
    """What the validate campaign gives its command: the runs and their verdicts (``report``, with the
    catch-up run's drain when one ran), the cluster it ran on, a catch-up run that could not run, the plan
    file validated and whether it was re-planned for the cluster, and the files written."""

    report: ValidationReport
    cluster: dict
    catch_up_not_run: CatchUpNotRun | None = None
    plan_file: str | None = None
    """The plan.json validated; None: a configuration given with --config."""
    replanned_for_cluster: bool = False
    files: Mapping[str, str] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return self.report.verdict

    @property
    def drain(self) -> DrainVerdict | None:
        return self.report.drain

    def recorded(self) -> dict:
        """The ledger's result: the command's JSON without the files."""
        d = {**self.report.to_dict(), "cluster": self.cluster}
        if self.catch_up_not_run is not None:
            d["catch_up"] = self.catch_up_not_run.to_dict()
        if self.plan_file is not None:
            d["plan"] = {"file": self.plan_file, "replanned_for_cluster": self.replanned_for_cluster}
        return d

    def to_dict(self) -> dict:
        """The command's JSON."""
        return self.recorded() | {"files": dict(self.files)}


class ValidateCampaign:
    kind = "validate"

    def __init__(self, settings: ValidateSettings, *, status: Log = ignore, log: Log = ignore,
                 phases: Phases = NO_PHASES):
        self.settings = s = settings
        self.phases = phases
        max_parallelism, memory_mb = None, s.memory_mb or DEFAULT_MEMORY_MB
        if not s.plan and not (s.configuration and s.rate):
            raise UserError("validate: give --plan FILE, or --config with --rate")
        try:
            self.testbed = testbed_of(s.campaign, status, max_slots=s.production_slots)
        except UserError as e:  # the sim sizes itself by the slots given; here they are --production-slots
            if str(e).startswith("--max-slots:"):
                raise UserError("--production-slots:" + str(e)[len("--max-slots:"):]) from None
            raise
        info = self.testbed.info()
        info.check_window(s.runs.window_s, "--window")
        info.check_window(s.runs.duration_s, "--duration")
        self.query = self.testbed.query(s.campaign.query)
        notes: list[str] = []  # said once every input is checked: a refusal stays one line
        self.plan: Plan | None = None
        self.replanned = False
        if s.plan:
            self.plan, entry, self.replanned = _plan_entry(s, self.query, info, notes.append)
            mapping, max_parallelism, memory_mb = entry.configuration, entry.max_parallelism, entry.memory_mb
            self.rate = s.rate or self.plan.rate
        else:
            mapping, self.rate = None, s.rate
        self.memory_mb = memory_mb
        if mapping:
            try:
                self.configuration = Configuration.of(self.query, mapping, max_parallelism)
            except UserError as e:
                raise UserError(f"--plan: {s.plan}: the entry of {memory_mb} MB: {e}") from None
        else:
            self.configuration = configuration_of(self.query, s.configuration)
        info.check_memory(memory_mb, "--memory")
        self.budget = Budget(self.configuration.slots, memory_mb)
        if s.plan:
            check_fits(info, self.budget, f"--plan {s.plan}",
                       "--within-cluster for the plan of the highest rate it serves there")
        else:
            check_fits(info, self.budget, "--config", "give a configuration it holds")
        self.directory = s.campaign.directory_for(self.kind)
        self.notes, self.status = notes, status  # said once the ledger is open (--resume is checked there)
        self.title = f"validating {self.query.name}: {self.configuration.slots} slots x {memory_mb} MB"
        # a plan sized to drain a backlog adds the run that injects it (unless the rate was overridden), and
        # --catch-up adds it to any plan or configuration, at the plan's steady rate
        own = self.plan.catch_up if self.plan is not None and not self.replanned and not s.rate else None
        self.catch_up = (CatchUp(*s.catch_up, own.rate if own else self.rate) if s.catch_up else own)
        self.total = len(s.runs.multipliers) + (self.catch_up is not None)
        self.cluster = cluster_of(s.campaign.testbed, info.name)
        self.title += f" on {self.cluster['name']}"
        if isinstance(phases, GrafanaAnnotations) and self.cluster["inventory"]:
            phases.on_cluster(self.cluster["name"])

    def params(self) -> dict:
        c, r = self.settings.campaign, self.settings.runs
        return {"testbed": c.testbed.name, "query": self.query.name, "rate": self.rate,
                "memory_mb": self.budget.memory_mb, "seed": c.seed, "configuration": self.configuration.as_dict(),
                "multipliers": list(r.multipliers), "ramp_s": r.ramp_s, "duration_s": r.duration_s,
                "window_s": r.window_s, **({"catch_up": self.catch_up.to_dict()} if self.catch_up else {})}

    def run(self, advance: Advance = ignore) -> ValidationResult:
        def on_run(r: RunVerdict, replayed: bool) -> None:
            advance(f"{r.multiplier * 100:.0f} %: {r.verdict}")

        with open_ledger(self.settings.campaign, self.kind, self.params()) as ledger:
            for note in self.notes:
                self.status(note)
            report = validate(self.testbed, ledger, self.query.name, self.budget, self.configuration, self.rate,
                              self.settings.runs, on_run=on_run, phases=self.phases)
            not_run = None
            if self.catch_up is not None:
                report.drain = drain_run(self.testbed, ledger, self.query.name, self.budget, self.configuration,
                                         self.catch_up, phases=self.phases)
                advance(f"catch-up: {report.drain.verdict}" if report.drain else "catch-up: not run")
                if report.drain is None:
                    not_run = CatchUpNotRun(self.catch_up, f"the {self.testbed.info().name} testbed cannot start a "
                                                           f"job behind a backlog (its rate-limited source has no "
                                                           f"start offset)")
            plan_file = str(self.settings.plan) if self.plan is not None else None
            result = ValidationResult(report, self.cluster, not_run, plan_file, self.replanned)
            ledger.set_result(result.recorded())
        plan = self.plan.to_dict() if self.plan else None
        files = {}
        if self.replanned:  # the plan validated is this cluster's re-plan: kept beside the report
            files["plan"] = str(self.directory / "plan.json")
            write_text(files["plan"], json.dumps(plan, indent=2) + "\n")
        # the campaign's page, once its ledger holds the result (streambed report --plan writes it again)
        files["report"] = str(write_report(self.directory, plan=plan))
        return replace(result, files=files)

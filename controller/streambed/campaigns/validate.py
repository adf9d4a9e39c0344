"""The validate campaign: a plan (or a configuration) run at multiples of its rate on a testbed the
size of production (paper section VIII)."""

from __future__ import annotations

from ..errors import UserError
from ..estimator import NO_PHASES, Phases
from ..model import Budget, Configuration
from ..records import read_plan
from ..report.html import write_report
from ..validation import RunVerdict, validate
from .base import Advance, Log, configuration_of, ignore, open_ledger, testbed_of
from .settings import DEFAULT_MEMORY_MB, ValidateSettings


def _plan_entry(settings: ValidateSettings, offered: tuple[int, ...],
                log: Log = ignore) -> tuple[dict, float, int | None, int]:
    """The configuration, rate, max parallelism and memory per slot of the plan's budget for
    ``settings.memory_mb`` (none given: the plan's cheapest reachable budget, slots x memory, among
    the memory sizes the testbed ``offered``)."""
    plan = read_plan(settings.plan)
    if plan.query != settings.campaign.query:
        raise UserError(f"--plan: {settings.plan} plans {plan.query}, not --query {settings.campaign.query}")
    memory_mb = settings.memory_mb
    if memory_mb is None:
        reachable = [e for e in plan.entries if e.slots is not None]
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
    try:
        entry = plan.entry(memory_mb)
    except KeyError:
        raise UserError(f"--memory: {settings.plan} has no budget for {memory_mb} MB per slot "
                        f"(it has {', '.join(str(e.memory_mb) for e in plan.entries)})") from None
    if entry.slots is None:
        raise UserError(f"--plan: the plan found no budget for {memory_mb} MB per slot (unreachable rate)")
    return entry.configuration, settings.rate or plan.rate, entry.max_parallelism, memory_mb


def check_fits(info, budget: Budget, what: str) -> None:
    """A validation runs on a cluster that holds the budget (paper VIII: production-scale runs); a plan
    larger than the testbed is refused with both sizes, never run on fewer slots than it asks."""
    if budget.slots > info.max_slots:
        raise UserError(f"{what}: needs {budget.slots} slots of {budget.memory_mb} MB; the {info.name} testbed "
                        f"offers {info.max_slots} (its inventory's testbed.yml max_slots, or --production-slots "
                        f"on the sim): validate on a larger cluster, or plan a rate it holds")


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
        if s.plan:
            mapping, self.rate, max_parallelism, memory_mb = _plan_entry(s, self.testbed.info().memory_per_slot,
                                                                         status)
        else:
            mapping, self.rate = None, s.rate
        self.memory_mb = memory_mb
        self.query = self.testbed.query(s.campaign.query)
        if mapping:
            try:
                self.configuration = Configuration.of(self.query, mapping, max_parallelism)
            except UserError as e:
                raise UserError(f"--plan: {s.plan}: the entry of {memory_mb} MB: {e}") from None
        else:
            self.configuration = configuration_of(self.query, s.configuration)
        info = self.testbed.info()
        info.check_memory(memory_mb, "--memory")
        self.budget = Budget(self.configuration.slots, memory_mb)
        check_fits(info, self.budget, f"--plan {s.plan}" if s.plan else "--config")
        info.check_window(s.runs.window_s, "--window")
        info.check_window(s.runs.duration_s, "--duration")
        self.directory = s.campaign.directory_for(self.kind)
        self.title = f"validating {self.query.name}: {self.configuration.slots} slots x {memory_mb} MB"
        self.total = len(s.runs.multipliers)

    def params(self) -> dict:
        c, r = self.settings.campaign, self.settings.runs
        return {"testbed": c.testbed.name, "query": self.query.name, "rate": self.rate,
                "memory_mb": self.budget.memory_mb, "seed": c.seed, "configuration": self.configuration.as_dict(),
                "multipliers": list(r.multipliers), "ramp_s": r.ramp_s, "duration_s": r.duration_s,
                "window_s": r.window_s}

    def run(self, advance: Advance = ignore) -> dict:
        def on_run(r: RunVerdict, replayed: bool) -> None:
            advance(f"{r.multiplier * 100:.0f} %: {r.verdict}")

        with open_ledger(self.settings.campaign, self.kind, self.params()) as ledger:
            report = validate(self.testbed, ledger, self.query.name, self.budget, self.configuration, self.rate,
                              self.settings.runs, on_run=on_run, phases=self.phases)
            data = report.to_dict()
            ledger.set_result(data)
        # the campaign's page, once its ledger holds the result (streambed report --plan writes it again)
        plan = read_plan(self.settings.plan).to_dict() if self.settings.plan else None
        data["files"] = {"report": str(write_report(self.directory, plan=plan))}
        return data

"""The validate campaign: a plan (or a configuration) run at multiples of its rate on a testbed the
size of production (paper section VIII)."""

from __future__ import annotations

from ..errors import UserError
from ..model import Budget, Configuration
from ..records import read_plan
from ..validation import RunVerdict, validate
from .base import Advance, Log, configuration_of, ignore, open_ledger, testbed_of
from .settings import ValidateSettings


def _plan_entry(settings: ValidateSettings) -> tuple[dict, float, int | None]:
    """The configuration, rate and max parallelism of the plan's budget for ``settings.memory_mb``."""
    plan = read_plan(settings.plan)
    if plan.query != settings.campaign.query:
        raise UserError(f"--plan: {settings.plan} plans {plan.query}, not --query {settings.campaign.query}")
    try:
        entry = plan.entry(settings.memory_mb)
    except KeyError:
        raise UserError(f"--memory: {settings.plan} has no budget for {settings.memory_mb} MB per slot "
                        f"(it has {', '.join(str(e.memory_mb) for e in plan.entries)})") from None
    if entry.slots is None:
        raise UserError(f"--plan: the plan found no budget for {settings.memory_mb} MB per slot (unreachable rate)")
    return entry.configuration, settings.rate or plan.rate, entry.max_parallelism


class ValidateCampaign:
    kind = "validate"

    def __init__(self, settings: ValidateSettings, *, status: Log = ignore, log: Log = ignore):
        self.settings = s = settings
        max_parallelism = None
        if s.plan:
            mapping, self.rate, max_parallelism = _plan_entry(s)
        elif s.configuration and s.rate:
            mapping, self.rate = None, s.rate
        else:
            raise UserError("validate: give --plan FILE, or --config with --rate")
        needed = sum(mapping.values()) if mapping else 0
        self.testbed = testbed_of(s.campaign, status, max_slots=max(s.production_slots, needed))
        self.query = self.testbed.query(s.campaign.query)
        if mapping:
            try:
                self.configuration = Configuration.of(self.query, mapping, max_parallelism)
            except UserError as e:
                raise UserError(f"--plan: {s.plan}: the entry of {s.memory_mb} MB: {e}") from None
        else:
            self.configuration = configuration_of(self.query, s.configuration)
        info = self.testbed.info()
        info.check_memory(s.memory_mb, "--memory")
        self.budget = Budget(self.configuration.slots, s.memory_mb)
        info.check_window(s.runs.window_s, "--window")
        info.check_window(s.runs.duration_s, "--duration")
        self.directory = s.campaign.directory_for(self.kind)
        self.title = f"validating {self.query.name}: {self.configuration.slots} slots x {s.memory_mb} MB"
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
                              self.settings.runs, on_run=on_run)
            data = report.to_dict()
            ledger.set_result(data)
        return data

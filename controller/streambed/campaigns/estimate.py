"""The estimate campaign: the Capacity Estimator alone, the MST of one configuration (paper section IV)."""

from __future__ import annotations

from ..planner.estimator import NO_PHASES, Estimate, Phases, Timing
from ..model import Budget
from .base import Advance, Log, configuration_of, ignore, input_params, open_ledger, testbed_of
from .chain import assemble
from .settings import EstimateSettings


class EstimateCampaign:
    kind = "estimate"

    def __init__(self, settings: EstimateSettings, *, status: Log = ignore, log: Log = ignore,
                 phases: Phases = NO_PHASES):
        """Builds the testbed and refuses bad input; nothing is written yet."""
        self.settings, self.log, self.phases = settings, log, phases
        self.timing = Timing.named(settings.timing)
        self.testbed = testbed_of(settings.campaign, status, timing=self.timing)
        self.query = self.testbed.query(settings.campaign.query)
        self.configuration = configuration_of(self.query, settings.configuration)
        self.budget = Budget(self.configuration.slots, settings.memory_mb)
        self.testbed.info().check_budget(self.budget, memory_option="--memory", slots_option="--config")
        self.directory = settings.campaign.directory_for(self.kind)
        self.title = f"estimating the MST of {self.query.name} ({self.configuration.key()}, {settings.memory_mb} MB)"

    def params(self) -> dict:
        """What defines the campaign: a resume with other values is refused."""
        c = self.settings.campaign
        return {"testbed": c.testbed.name, "query": self.query.name, "memory_mb": self.budget.memory_mb,
                "seed": c.seed, "configuration": self.configuration.as_dict(), "timing": self.timing.name} \
            | input_params(c)

    def run(self, advance: Advance = ignore) -> Estimate:
        """The estimate, also the ledger's result (``Estimate.to_dict``)."""
        with open_ledger(self.settings.campaign, self.kind, self.params()) as ledger:
            chain = assemble(self.testbed, ledger, self.query.name, self.timing, log=self.log, phases=self.phases)
            estimate = chain.estimator.estimate(self.query.name, self.budget, self.configuration, "estimate")
            ledger.set_result(estimate.to_dict())
        return estimate

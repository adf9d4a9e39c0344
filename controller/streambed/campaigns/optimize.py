"""The optimize campaign: the Configuration Optimizer alone, a policy's configuration of one budget and
its measured MST (paper section V)."""

from __future__ import annotations

from ..planner.estimator import NO_PHASES, Phases, Timing
from ..model import Budget, check_slots
from ..planner.policies import PAPER_POLICY, policy_named
from .base import Advance, Log, ignore, input_params, open_ledger, testbed_of
from .chain import assemble
from .settings import OptimizeSettings


class OptimizeCampaign:
    kind = "optimize"

    def __init__(self, settings: OptimizeSettings, *, status: Log = ignore, log: Log = ignore,
                 phases: Phases = NO_PHASES):
        self.settings, self.log, self.phases = settings, log, phases
        self.timing = Timing.named(settings.timing)
        policy_named(settings.policy)  # refused before any testbed is built
        self.testbed = testbed_of(settings.campaign, status, timing=self.timing)
        self.query = self.testbed.query(settings.campaign.query)
        self.budget = Budget(settings.slots, settings.memory_mb)
        self.testbed.info().check_budget(self.budget, memory_option="--memory", slots_option="--slots")
        check_slots(settings.slots, self.query.size, query=self.query.name, field="--slots")
        self.directory = settings.campaign.directory_for(self.kind)
        self.title = f"optimizing {self.query.name} for {settings.slots} slots x {settings.memory_mb} MB"

    def params(self) -> dict:
        c, s = self.settings.campaign, self.settings
        params = {"testbed": c.testbed.name, "query": self.query.name, "memory_mb": s.memory_mb, "slots": s.slots,
                  "seed": c.seed, "timing": self.timing.name}
        if s.policy != PAPER_POLICY:  # a ledger without a policy was recorded with the paper's BIDS2
            params["policy"] = s.policy
        return params | input_params(c)

    def run(self, advance: Advance = ignore) -> dict:
        """The single-task metrics and the optimizer's result, as one JSON document."""
        with open_ledger(self.settings.campaign, self.kind, self.params()) as ledger:
            chain = assemble(self.testbed, ledger, self.query.name, self.timing, policy=self.settings.policy,
                             log=self.log, phases=self.phases)
            metrics = chain.optimizer.single_task(self.budget.memory_mb)
            result = chain.optimizer.optimize(self.budget, "optimize")
            data = {"single_task_metrics": metrics.to_dict(), **result.to_dict()}
            ledger.set_result(data)
        return data

"""The explore campaign: the Resource Explorer alone, measurements over (memory per slot, slots) and
the surrogate model (paper section VI)."""

from __future__ import annotations

from ..planner.estimator import NO_PHASES, Phases, Timing
from ..planner.exploration import Exploration, ExplorationPoint
from ..planner.explorer import check_search_space
from ..planner.policies import PAPER_POLICY, policy_named
from .base import Advance, Log, ignore, input_params, open_ledger, testbed_of
from .chain import assemble
from .settings import ExploreSettings


def point_line(p: ExplorationPoint) -> str:
    """One exploration point as a progress line."""
    return f"{p.phase}: {p.slots} slots x {p.memory_mb} MB -> MST {p.mst:,.0f}"


class ExploreCampaign:
    """Exploration on a testbed: shared by the explore and plan campaigns."""

    kind = "explore"

    def __init__(self, settings: ExploreSettings, *, status: Log = ignore, log: Log = ignore,
                 phases: Phases = NO_PHASES):
        self.settings, self.log, self.phases = settings, log, phases
        self.timing = Timing.named(settings.timing)
        policy_named(settings.policy)
        c = settings.campaign
        self.testbed = testbed_of(c, status, timing=self.timing)
        self.query = self.testbed.query(c.query)
        self.info = self.testbed.info()
        self.memories = check_search_space(self.query, self.info, settings.memories or self.info.memory_per_slot,
                                           memory_option="--memory",
                                           slots_option="--max-slots" if c.testbed.max_slots is not None else None)
        self.directory = c.directory_for(self.kind)
        self.title = f"exploring {self.query.name}"
        self.total = settings.max_measurements

    def params(self) -> dict:
        c, s = self.settings.campaign, self.settings
        # the memories explored are recorded under "profiles", the key every exploration ledger has, so each resumes
        params = {"testbed": c.testbed.name, "query": self.query.name, "profiles": self.memories, "seed": c.seed,
                  "timing": self.timing.name, "max_slots": self.info.max_slots,
                  "max_measurements": s.max_measurements}
        if s.policy != PAPER_POLICY:  # a ledger without a policy was recorded with the paper's BIDS2
            params["policy"] = s.policy
        return params | input_params(c)

    def run(self, advance: Advance = ignore) -> Exploration:
        """The exploration, also the ledger's result (``Exploration.to_dict``)."""
        s = self.settings
        with open_ledger(s.campaign, self.kind, self.params()) as ledger:
            chain = assemble(self.testbed, ledger, self.query.name, self.timing, policy=s.policy,
                             explorer=s.explorer(), log=self.log, phases=self.phases)
            ex = chain.explorer.explore(self.memories, lambda p: advance(point_line(p)))
            ex.estimator_calls, ex.testbed_seconds = chain.estimator.calls, chain.estimator.testbed_seconds
            ledger.set_result(ex.to_dict())
        return ex

"""Typed settings of every campaign, with their defaults written once, here.

The command line builds these (commands/), `--help` shows the defaults from here, and the
campaigns (this package) read nothing else: no argparse namespace travels below the commands.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from ..planner.estimator import DEFAULT_TIMING
from ..planner.exploration import ExplorerSettings
from ..planner.policies import DEFAULT_POLICY
from ..dataset import DEFAULT_LAKE
from ..testbed.base import Replay, TestbedRequest
from ..planner.validation import ValidationSettings

DEFAULT_MEMORY_MB = 4096
"""Memory per slot when a campaign on one budget is not given one: the paper's largest profile."""

DEFAULT_RATE_MULTIPLE = 10.0
"""Without a requested rate, a plan targets this multiple of the testbed's largest measured MST."""

DEFAULT_QUERIES_DIR = Path("flink") / "queries"
"""Where the data commands read a query's SQL (``--queries-dir``), relative to the working directory:
the Flink engine's queries (a deployed testbed reads its own, ``streambed_queries_dir`` of its inventory)."""

PRODUCTION_SLOTS = 100_000
"""Slots of the simulated production cluster a plan is validated on."""


@dataclass(frozen=True)
class TestbedSpec:
    """Which testbed a campaign runs on (a name of campaigns.testbeds.TESTBEDS) and how it is built."""

    name: str = "sim"
    profile: str | None = None
    """sim: the profile (name or YAML path); default: the query's."""
    max_slots: int | None = None
    """sim: slots of the testbed (default: SimSettings.max_slots)."""
    inventory: Path | None = None
    """flink: the Ansible inventory of the deployed testbed (default: the provider's)."""

    __test__ = False


@dataclass(frozen=True)
class CampaignSettings:
    """What every campaign has: its query, testbed, seed and directory."""

    query: str
    testbed: TestbedSpec = TestbedSpec()
    seed: int = 0
    """Every random draw of the campaign (testbed noise, the explorer's BO) derives from it."""
    directory: Path | None = None
    """Where the ledger and results live; default campaigns/<kind>-<query>."""
    resume: bool = False
    input: str | None = None
    """A data set of the lake to replay (name or path); None: the generator (``--input generator``)."""
    lake: Path = DEFAULT_LAKE
    input_rate: float | None = None
    """The most the replay may be asked, events/s; None: the campaign's rate, else what the data set
    holds for the longest job (campaigns.base.replay_of)."""

    def directory_for(self, kind: str) -> Path:
        return Path(self.directory) if self.directory else Path("campaigns") / f"{kind}-{self.query}"

    def request(self, max_slots: int | None = None, replay: Replay | None = None) -> TestbedRequest:
        """The testbed factory's input; ``max_slots`` overrides the spec's (validation's production size)."""
        t = self.testbed
        return TestbedRequest(query=self.query, profile=t.profile, seed=self.seed,
                              max_slots=max_slots if max_slots is not None else t.max_slots, inventory=t.inventory,
                              replay=replay)


@dataclass(frozen=True)
class WindowTiming:
    """The measure campaign's phases: one warm-up, then per rate a ramp-up and an observation window."""

    warmup_s: float = 120.0
    ramp_s: float = 30.0
    observe_s: float = 30.0


@dataclass(frozen=True)
class MeasureSettings:
    """One configuration observed at a list of rates."""

    campaign: CampaignSettings
    rates: tuple[float, ...]
    memory_mb: int = DEFAULT_MEMORY_MB
    configuration: Mapping[str, int] | None = None
    """Operator -> parallelism; None: every operator at 1."""
    timing: WindowTiming = WindowTiming()


@dataclass(frozen=True)
class EstimateSettings:
    """The Capacity Estimator alone: the MST of one configuration (section IV)."""

    campaign: CampaignSettings
    memory_mb: int = DEFAULT_MEMORY_MB
    configuration: Mapping[str, int] | None = None
    timing: str = DEFAULT_TIMING


@dataclass(frozen=True)
class OptimizeSettings:
    """The Configuration Optimizer alone: a policy's configuration of one budget and its MST (section V)."""

    campaign: CampaignSettings
    slots: int
    memory_mb: int = DEFAULT_MEMORY_MB
    timing: str = DEFAULT_TIMING
    policy: str = DEFAULT_POLICY


@dataclass(frozen=True)
class ExploreSettings:
    """The Resource Explorer: measurements over (memory per slot, slots) and the model (section VI)."""

    campaign: CampaignSettings
    memories: tuple[int, ...] = ()
    """Memory per slot to explore, MB; empty: all the testbed offers."""
    timing: str = DEFAULT_TIMING
    policy: str = DEFAULT_POLICY
    max_measurements: int = ExplorerSettings.max_measurements

    def explorer(self, safety: float = ExplorerSettings.safety) -> ExplorerSettings:
        return ExplorerSettings(seed=self.campaign.seed, safety=safety, max_measurements=self.max_measurements)


@dataclass(frozen=True)
class GuardRails:
    """The plan's guard rails (docs/planner.md): how far a fitted model may be extrapolated. One object for the
    plan and fit commands, their campaigns and the explorer's settings they become."""

    max_extrapolation: float = ExplorerSettings.max_extrapolation
    """A plan uses at most this many times the largest budget measured."""
    min_marginal: float = ExplorerSettings.min_marginal
    """A plan stops where the model gains less per slot than this fraction of its gain at the largest budget."""

    def applied(self, explorer: ExplorerSettings) -> ExplorerSettings:
        """``explorer`` with these guard rails."""
        return replace(explorer, max_extrapolation=self.max_extrapolation, min_marginal=self.min_marginal)


@dataclass(frozen=True)
class PlanSettings(ExploreSettings):
    """Exploration, then the plan for a target rate (section VI, "Model usage")."""

    rate: float | None = None
    """Target events/s; None: rate_multiple x the largest budget's measured MST."""
    rate_multiple: float = DEFAULT_RATE_MULTIPLE
    safety: float = ExplorerSettings.safety
    guards: GuardRails = GuardRails()
    risk: float | None = ExplorerSettings.risk
    """Size for this risk of under-provisioning instead of the flat safety factor."""
    checkpoint_slots: int | None = None
    """A cluster of this many slots (part of production) for staged measurements where the plan's families
    disagree or its rate is unreachable (ResourceExplorer.checkpoint); None: none."""
    checkpoint_inventory: Path | None = None
    """flink: the inventory of that cluster; default: the testbed's (the sim builds one of checkpoint_slots)."""
    key_stats: Path | None = None
    """Key statistics of the data set replayed (``streambed data keys``, model/keystats.py): the skew model
    takes their counted key groups where no run contradicts them, else the more pessimistic of them and the
    skew inferred from the runs; None: for a campaign that replays a data set (``data_keys``), that data
    set's own (campaigns/datakeys.py), else inferred only."""
    data_keys: bool = True
    """With ``input`` and no ``key_stats``: the replayed data set's key statistics, counted with Spark where
    ``streambed data keys`` has not written them; False: the skew inferred from the runs alone."""
    skew_probes: bool = ExplorerSettings.probes
    """Measure a keyed operator planned far wider than the testbed ran it at the testbed's widest
    (ResourceExplorer.probe)."""
    catch_up: tuple[float, float] | None = None
    """(B, T): drain B seconds of backlog within T seconds after a restart, so size for rate x (1 + B/T);
    None: the rate alone."""
    memory_per_operator: bool = True
    """plan.json gives each operator the memory per slot it needs where that is less (PlanRequest)."""

    def explorer(self, safety: float | None = None) -> ExplorerSettings:
        return replace(self.guards.applied(super().explorer(self.safety if safety is None else safety)),
                       risk=self.risk, probes=self.skew_probes)


@dataclass(frozen=True)
class PlanRequest:
    """One plan on a testbed already built (the plan campaign's, the evaluation's): what to plan for, and how
    the chain measures (timing, policy) and plans (the explorer's settings, with their guard rails)."""

    query: str
    memories: tuple[int, ...]
    """Memory per slot to explore and plan, MB."""
    rate: float | None = None
    """Target events/s; None: rate_multiple x the largest budget's measured MST."""
    rate_multiple: float = DEFAULT_RATE_MULTIPLE
    catch_up: tuple[float, float] | None = None
    """(B, T): also drain B seconds of backlog within T after a restart; None: the rate alone."""
    timing: str = DEFAULT_TIMING
    policy: str = DEFAULT_POLICY
    explorer: ExplorerSettings = ExplorerSettings()
    memory_per_operator: bool = False
    """Give each entry's operators the smallest memory per slot measured that keeps them at the rate
    (planner/memory.py), where some need less than the entry's; False: one memory per slot for all."""


@dataclass(frozen=True)
class ValidateSettings:
    """A plan (or a configuration) run at multiples of its rate (section VIII)."""

    campaign: CampaignSettings
    plan: Path | None = None
    """plan.json written by the plan campaign."""
    configuration: Mapping[str, int] | None = None
    """Instead of a plan: operator -> parallelism, with ``rate``."""
    memory_mb: int | None = None
    """MB per slot; None: the plan's cheapest reachable budget (with --config: DEFAULT_MEMORY_MB)."""
    rate: float | None = None
    """events/s; default: the plan's."""
    runs: ValidationSettings = field(default_factory=ValidationSettings)
    production_slots: int = PRODUCTION_SLOTS
    within_cluster: bool = False
    """A plan whose budget is unreachable or larger than the cluster: validate instead the plan for the
    highest rate it serves within the cluster (replan.plan_within); False: refuse it."""
    catch_up: tuple[float, float] | None = None
    """(B, T): also run the job started B seconds behind and judge whether it drains within T; None: the
    plan's own catch-up (plan --catch-up), if any."""


@dataclass(frozen=True)
class FitSettings:
    """``fit``: the explorer's model from recorded measurements, inverse-solved for a rate (no testbed)."""

    measurements: str
    rate: float
    memories: tuple[int, ...] = ()
    """Memory per slot to plan, MB; empty: the measured ones."""
    family: str = "auto"
    """linear, log, sqrt, or auto: the explorer's own selection rule."""
    safety: float = ExplorerSettings.safety
    guards: GuardRails = GuardRails()
    training: str = "all"
    memory_feature: str = "taskmanager-mb"
    log: str = "log1p"


@dataclass(frozen=True)
class MetricsSettings:
    """``optimize --from-metrics``: BIDS2 on recorded single-task metrics (no testbed)."""

    path: str
    query: str | None = None
    """Keep that query's metrics only."""
    slots: int | None = None
    """The budget; None: the one each record carries."""
    memory_mb: int | None = None
    """Keep that memory per slot's metrics only."""


@dataclass(frozen=True)
class ExportSettings:
    campaign_dir: str
    out: str | None = None
    """Default: <campaign-dir>/export."""

"""The Testbed protocol: the one seam between StreamBed's algorithms and the engines under test.

The Capacity Estimator, Configuration Optimizer and Resource Explorer only ever call these methods;
they never import an engine. A testbed may be a real Flink cluster (REST + Prometheus + a
rate-controlled source) or the simulated testbed; both report the same metrics.

Failures surface as :class:`~streambed.errors.TestbedError` subclasses (job restarted, metrics
missing, engine unreachable) so that the estimator can discard a window and retry.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol, runtime_checkable

from ..errors import UserError
from ..model import Budget, Configuration, Measurement, Query, TestbedInfo

if TYPE_CHECKING:  # dataset sizes replays with the estimator's timings, which import this module
    from ..dataset import DataSet


@dataclass
class Run:
    """Handle of a started job."""

    id: str
    query: Query
    configuration: Configuration
    budget: Budget
    started_at: float
    rate: float


@runtime_checkable
class Testbed(Protocol):
    """What the algorithms need from an engine (ARCHITECTURE.md, "The Testbed protocol")."""

    def info(self) -> TestbedInfo:
        """Slots and memory profiles on offer: the Resource Explorer's search space."""

    def query(self, name: str) -> Query:
        """The operator graph of a query, as the planner sees it."""

    def prepare(self, budget: Budget) -> None:
        """Deploy task slots of the budget's memory (may redeploy TaskManagers)."""

    def start(self, query: str, configuration: Configuration, rate: float) -> Run:
        """Start the query with a configuration, its source injecting ``rate`` events/s."""

    def set_rate(self, run: Run, rate: float) -> None:
        """Change the source's target rate while the job runs, without restarting it."""

    def wait(self, run: Run, seconds: float) -> None:
        """Let the job run for ``seconds`` without measuring (warm-up, cooldown, ramp-up)."""

    def observe(self, run: Run, seconds: float) -> Measurement:
        """Observe the job for ``seconds`` and return the window's measurement."""

    def stop(self, run: Run) -> None:
        """Stop the job."""

    def now(self) -> float:
        """The testbed's clock, seconds (simulated time for the sim)."""


@dataclass(frozen=True)
class TestbedRequest:
    """What a campaign asks of a testbed factory (campaigns/testbeds.py maps a name to a factory).

    Each factory takes what applies to its engine and refuses, in one line naming the option, what
    does not (a sim profile on Flink, say)."""

    query: str
    profile: str | None = None
    """The simulated testbed's profile (name or YAML path); default: the query's."""
    seed: int = 0
    """The campaign's seed: every random draw of the testbed derives from it."""
    max_slots: int | None = None
    """Slots the campaign needs the testbed to offer (the sim's size); None: the engine's default.
    A deployed cluster offers what its inventory says and ignores this."""
    inventory: Path | None = None
    """A deployed testbed's inventory (Ansible); None: the provider's default."""
    replay: Replay | None = None
    """Replay this data set instead of generating events (``--input``); None: the generator."""

    __test__ = False


@dataclass(frozen=True)
class Replay:
    """A data set the source replays, and the most it may be asked per second: a job at that rate
    for the campaign's longest job does not run out of data (campaigns.base.replay_of)."""

    dataset: DataSet
    max_rate: float


TestbedFactory = Callable[[TestbedRequest, Callable[[str], None]], Testbed]
"""A registered engine: (request, log) -> a testbed ready for the campaign."""


def check_start(prepared: Budget | None, configuration: Configuration) -> Budget:
    """The budget a configuration starts on: one was prepared, and the configuration fits in it."""
    if prepared is None:
        raise UserError("prepare a budget before starting a query")
    if configuration.slots > prepared.slots:
        raise UserError(f"configuration: uses {configuration.slots} slots, the prepared budget has {prepared.slots}")
    return prepared

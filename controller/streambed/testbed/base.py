"""The Testbed protocol: the one seam between StreamBed's algorithms and the engines under test.

The Capacity Estimator, Configuration Optimizer and Resource Explorer only ever call these methods;
they never import an engine. A testbed may be a real Flink cluster (REST + Prometheus + a
rate-controlled source) or the simulated testbed; both report the same metrics.

Failures surface as :class:`~streambed.errors.TestbedError` subclasses (job restarted, metrics
missing, engine unreachable) so that the estimator can discard a window and retry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..model import Budget, Configuration, Measurement, Query, TestbedInfo


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

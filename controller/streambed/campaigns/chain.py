"""The algorithm chain, assembled in one place: Resource Explorer -> Configuration Optimizer ->
Capacity Estimator -> testbed (ARCHITECTURE.md: data flows one way, nothing below calls back up).

Every campaign and the evaluation build their estimator, optimizer and explorer here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..planner.estimator import NO_PHASES, CapacityEstimator, Phases, Timing
from ..planner.exploration import ExplorationPoint, ExplorerSettings
from ..planner.explorer import ResourceExplorer
from ..ledger import Ledger
from ..planner.optimizer import ConfigurationOptimizer
from ..planner.policies import DEFAULT_POLICY, policy_named
from ..testbed.base import Testbed


def silent(message: str) -> None:
    """A log that says nothing."""


def unwatched(point: ExplorationPoint) -> None:
    """Exploration points nobody watches."""


@dataclass(frozen=True)
class Observers:
    """Who hears of a chain's work: the algorithms' lines, each exploration point measured, and the
    estimator's phases (Grafana annotations)."""

    log: Callable[[str], None] = silent
    on_point: Callable[[ExplorationPoint], None] = unwatched
    phases: Phases = NO_PHASES


@dataclass
class Chain:
    estimator: CapacityEstimator
    optimizer: ConfigurationOptimizer
    explorer: ResourceExplorer
    staged: CapacityEstimator | None = None
    """The estimator on the checkpoint cluster (staged measurements beyond the testbed), if any."""

    @property
    def estimators(self) -> tuple[CapacityEstimator, ...]:
        """Every estimator of the chain: their calls and testbed time are the plan's cost."""
        return (self.estimator,) + ((self.staged,) if self.staged is not None else ())


def estimator_on(testbed: Testbed, ledger: Ledger, timing: Timing, *, log: Callable[[str], None] = silent,
                 phases: Phases = NO_PHASES) -> CapacityEstimator:
    """The Capacity Estimator a campaign measures with on ``testbed``: every window through ``ledger``,
    its phases told to ``phases``. The one place campaigns build an estimator."""
    return CapacityEstimator(testbed, ledger, timing, log, phases)


def assemble(testbed: Testbed, ledger: Ledger, query: str, timing: Timing, *, policy: str = DEFAULT_POLICY,
             explorer: ExplorerSettings | None = None, log: Callable[[str], None] = silent,
             phases: Phases = NO_PHASES, checkpoint: Testbed | None = None) -> Chain:
    """The chain for one query on one testbed, every window through ``ledger`` (its phases told to ``phases``);
    with ``checkpoint`` (a larger cluster), a second estimator there for staged measurements."""
    estimator = estimator_on(testbed, ledger, timing, log=log, phases=phases)
    optimizer = ConfigurationOptimizer(estimator, testbed.query(query), policy_named(policy))
    staged = estimator_on(checkpoint, ledger, timing, log=log, phases=phases) if checkpoint is not None else None
    return Chain(estimator, optimizer, ResourceExplorer(optimizer, testbed.info(), explorer or ExplorerSettings(), log),
                 staged)

"""The algorithm chain, assembled in one place: Resource Explorer -> Configuration Optimizer ->
Capacity Estimator -> testbed (ARCHITECTURE.md: data flows one way, nothing below calls back up).

Every campaign and the evaluation build their estimator, optimizer and explorer here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..planner.estimator import NO_PHASES, CapacityEstimator, Phases, Timing
from ..planner.exploration import ExplorerSettings
from ..planner.explorer import ResourceExplorer
from ..ledger import Ledger
from ..planner.optimizer import ConfigurationOptimizer
from ..planner.policies import DEFAULT_POLICY, policy_named
from ..testbed.base import Testbed


def silent(message: str) -> None:
    """A log that says nothing."""


@dataclass
class Chain:
    estimator: CapacityEstimator
    optimizer: ConfigurationOptimizer
    explorer: ResourceExplorer


def assemble(testbed: Testbed, ledger: Ledger, query: str, timing: Timing, *, policy: str = DEFAULT_POLICY,
             explorer: ExplorerSettings | None = None, log: Callable[[str], None] = silent,
             phases: Phases = NO_PHASES) -> Chain:
    """The chain for one query on one testbed, every window through ``ledger`` (its phases told to ``phases``)."""
    estimator = CapacityEstimator(testbed, ledger, timing, log, phases)
    optimizer = ConfigurationOptimizer(estimator, testbed.query(query), policy_named(policy))
    return Chain(estimator, optimizer, ResourceExplorer(optimizer, testbed.info(), explorer or ExplorerSettings(), log))

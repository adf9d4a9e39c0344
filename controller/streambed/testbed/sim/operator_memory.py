"""Ground truth for a configuration whose operators' tasks have slots of different memory.

A plan with per-operator memory (Justin's memory levels, StreamBed's memory per operator) is judged
as any plan is (truth.py: its own configuration, measured on the engine in reference mode), with
each operator's tasks on slots of the memory the plan gives them.
"""

from __future__ import annotations

from typing import Mapping

from ...model import Configuration
from .capacity import capacity_model
from .engine import Engine
from .profile import SimProfile
from .truth import GroundTruth, TruthSettings


class OperatorMemoryTruth(GroundTruth):
    """GroundTruth with ``memory_by_operator`` (operator -> memory per slot, MB) for the named
    operators; the others run on the memory each query names."""

    def __init__(self, profile: SimProfile, memory_by_operator: Mapping[str, float],
                 settings: TruthSettings | None = None):
        super().__init__(profile, settings)
        self.memory_by_operator = {k: float(v) for k, v in memory_by_operator.items()}

    def model(self, memory_mb: float):
        if memory_mb not in self._models:
            self._models[memory_mb] = capacity_model(self.profile, memory_mb, streams=self._streams,
                                                     threshold=self.settings.threshold, dt=self.settings.dt,
                                                     memory_by_operator=self.memory_by_operator)
        return self._models[memory_mb]

    def _engine(self, configuration: Configuration, memory_mb: float) -> Engine:
        engine = super()._engine(configuration, memory_mb)
        engine.set_memory_by_operator(self.memory_by_operator)
        return engine

    def _sibling(self, profile: SimProfile) -> GroundTruth:
        return OperatorMemoryTruth(profile, self.memory_by_operator, self.settings)

"""What every configuration policy returns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Proposal:
    """A policy's answer: per-operator parallelism and the source rate the policy predicts for it."""

    parallelism: dict[str, int]
    predicted_rate: float
    """The source rate the configuration should sustain if every task of operator i processed o_i
    records/s (the single-task metrics' true rates)."""

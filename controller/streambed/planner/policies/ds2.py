"""DS2's one-pass rule (Kalavri et al., OSDI'18), the baseline the paper compares BIDS2 with (section V).

pi_i = ceil(target * r_i / o_i): each operator gets the parallelism its share of the target rate needs
at its true processing rate. On a budget, the largest target whose parallelism fits.
"""

from __future__ import annotations

import math

from ...model import SingleTaskMetrics
from .base import Proposal
from .bids2 import bids2, bids2_rate


def ds2(metrics: SingleTaskMetrics, target_rate: float) -> dict[str, int]:
    """DS2's one-pass rule: each operator gets the parallelism that its share of the target rate needs
    at its true processing rate, pi_i = ceil(target * r_i / o_i) (at least 1)."""
    return {n: max(1, math.ceil(target_rate * r.input_ratio / r.true_rate - 1e-9)) for n, r in metrics.operators}


def ds2_within(metrics: SingleTaskMetrics, slots: int) -> tuple[dict[str, int], float]:
    """DS2 on a budget: the largest target rate whose one-pass parallelism fits in ``slots`` (DS2
    itself leaves any remaining slots unused), and that parallelism."""
    lo, hi = 0.0, bids2(metrics, slots).predicted_rate * 2 + 1.0
    best = {n: 1 for n in metrics.names()}
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        par = ds2(metrics, mid)
        if sum(par.values()) <= slots:
            lo, best = mid, par
        else:
            hi = mid
    return best, lo


class Ds2:
    """DS2 on a budget: the one-pass parallelism of the largest rate that fits (remaining slots unused)."""

    name = "ds2"

    def predict(self, metrics: SingleTaskMetrics, parallelism) -> float:
        return bids2_rate(metrics, parallelism)  # DS2 takes every task as carrying 1/pi, as BIDS2

    def configure(self, metrics: SingleTaskMetrics, slots: int) -> Proposal:
        parallelism, rate = ds2_within(metrics, slots)
        return Proposal(parallelism, rate)

"""BIDS2, the paper's Configuration Optimizer rule (section V, Table I, Eq. 1-4).

From single-task metrics (o_i, r_i per operator), BIDS2 solves the MILP
  max lambda_src  s.t.  lambda_src * r_i <= pi_i * o_i,  sum_i pi_i = P,  pi_i >= 1 integer
with PuLP and the CBC solver (shipped by cbcbox, PuLP's ``cbc`` extra).
"""

from __future__ import annotations

from typing import Mapping

import cbcbox
import pulp

from ...errors import UserError
from ...model import SingleTaskMetrics, check_slots
from .base import Proposal


def bids2(metrics: SingleTaskMetrics, slots: int, *, time_limit_s: float = 60.0) -> Proposal:
    """Bounded-inverse DS2 (Eq. 1-4): the configuration of exactly ``slots`` slots that maximizes the
    sustainable source rate, assuming each task of operator i processes o_i records/s."""
    names = metrics.names()
    check_slots(slots, len(names), query=metrics.query or "the query")
    prob = pulp.LpProblem("bids2", pulp.LpMaximize)
    lam = prob.add_variable("lambda_src", lowBound=0)
    pi = {n: prob.add_variable(f"pi_{i}", lowBound=1, cat="Integer") for i, n in enumerate(names)}
    prob += lam
    for n, rates in metrics.operators:
        if rates.input_ratio > 0:
            prob += lam * rates.input_ratio <= pi[n] * rates.true_rate
    prob += pulp.lpSum(pi.values()) == slots
    status = prob.solve(pulp.COIN_CMD(path=cbcbox.cbc_bin_path(), msg=False, timeLimit=time_limit_s))
    if pulp.LpStatus[status] != "Optimal":
        raise UserError(f"BIDS2 found no optimal configuration of {slots} slots ({pulp.LpStatus[status]})")
    parallelism = {n: int(round(pi[n].value())) for n in names}
    return Proposal(parallelism, float(lam.value()))


def bids2_rate(metrics: SingleTaskMetrics, parallelism: Mapping[str, int]) -> float:
    """BIDS2's prediction for any configuration: min_i pi_i o_i / r_i (the constraint that binds)."""
    return min(parallelism[n] * r.true_rate / r.input_ratio for n, r in metrics.operators if r.input_ratio > 0)


class Bids2:
    """The paper's policy: the configuration of exactly ``slots`` slots with the highest predicted rate."""

    name = "bids2"

    def configure(self, metrics: SingleTaskMetrics, slots: int) -> Proposal:
        return bids2(metrics, slots)

    def predict(self, metrics: SingleTaskMetrics, parallelism: Mapping[str, int]) -> float:
        return bids2_rate(metrics, parallelism)

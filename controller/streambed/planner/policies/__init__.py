"""Configuration policies: single-task metrics and a slot budget in, a per-operator configuration out.

The Configuration Optimizer and the plan's last pass ask a policy, never a concrete rule, so that a
new way of sizing operators (DS2's scaling loop, Justin's memory levels, Rafiki's capacity table, a
skew-aware BIDS2) is one module here plus one line in POLICIES.

* ``bids2-skew`` (the default): BIDS2's objective on the capacities the busiest task allows, with
  Flink's key-group rule and the measured imbalance of each operator's tasks (policies/skew.py).
* ``bids2``: the paper's bounded-inverse DS2 MILP (section V, Eq. 1-4; PuLP + CBC), every task
  taken to carry 1/pi of its operator's input.
* ``ds2``: DS2's one-pass rule (Kalavri et al., OSDI'18) at the largest rate the budget holds.
"""

from __future__ import annotations

from typing import Mapping, Protocol, runtime_checkable

from ...errors import UserError
from ...model import SingleTaskMetrics
from .base import Proposal
from .bids2 import Bids2
from .ds2 import Ds2
from .skew import SkewAwareBids2


@runtime_checkable
class ConfigurationPolicy(Protocol):
    """What the optimizer and the explorer need from a policy."""

    name: str

    def configure(self, metrics: SingleTaskMetrics, slots: int) -> Proposal:
        """The configuration of at most ``slots`` slots for the query the metrics describe."""

    def predict(self, metrics: SingleTaskMetrics, parallelism: Mapping[str, int]) -> float:
        """The source rate the policy's capacities give any configuration (its weakest operator's)."""


POLICIES: dict[str, type] = {"bids2-skew": SkewAwareBids2, "bids2": Bids2, "ds2": Ds2}
"""Policy name (the --policy option) -> its class."""

DEFAULT_POLICY = "bids2-skew"
PAPER_POLICY = "bids2"
"""The policy of campaigns recorded before policies existed: a ledger without one used it."""


def policy_named(name: str) -> ConfigurationPolicy:
    try:
        return POLICIES[name]()
    except KeyError:
        raise UserError(f"policy: unknown configuration policy {name!r} (expected one of {', '.join(POLICIES)})") from None


__all__ = ["ConfigurationPolicy", "DEFAULT_POLICY", "PAPER_POLICY", "POLICIES", "Proposal", "policy_named"]

"""Judging a method's sizing on a testbed that has no ground truth (Flink): the Capacity Estimator
measures the MST of the configuration the method planned, at the memory per slot it chose.

A plan is judged by what the engine sustains (architecture.md, "Truth from the engine"), and on a
real testbed the only way to know is to run it. A sizing the testbed cannot deploy (more slots than
it has, a memory it does not offer) is not judged, and says why, with the slots: a small testbed
must not pass for a judge of a production-sized plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from ..errors import UserError
from ..ledger import Ledger
from ..model import Budget, Configuration, Query, TestbedInfo
from ..planner import Sizing
from ..planner.estimator import NO_PHASES, Phases, Timing
from ..testbed.base import Testbed
from .chain import estimator_on

BEYOND = "beyond the testbed: not judged"
SOURCE_LIMITED = "source-limited: not judged"


@dataclass(frozen=True)
class Judgement:
    """What the testbed said of one sizing: its configuration's measured MST, or why it was not measured."""

    mst: float | None
    """The measured MST, events/s; None when not measured (``reason`` says why)."""
    testbed_seconds: float = 0.0
    reason: str | None = None
    """Why the sizing was not judged (a verdict of its own), None when it was."""
    source_limited: bool = False
    """The estimate's upper bound came from the source's own cap: the MST is a lower bound."""

    def verdict(self, rate: float, sustains: str, under: str) -> str:
        """The row's verdict: ``sustains`` or ``under`` by MST against ``rate``, else why not judged. An
        MST below the rate that the source capped says nothing of the job: not judged either."""
        if self.reason is not None:
            return self.reason
        if self.mst >= rate:
            return sustains
        if self.source_limited:
            return f"{SOURCE_LIMITED} (the source capped the estimate at {self.mst:,.0f} events/s)"
        return under

    def to_dict(self) -> dict:
        return {"mst": self.mst, "testbed_seconds": self.testbed_seconds, "reason": self.reason,
                "source_limited": self.source_limited}


def budget_of(sizing: Sizing) -> Budget:
    """The budget a sizing deploys: its slots at its memory per slot (and its per-operator memory)."""
    by_operator = tuple(sorted((sizing.memory_by_operator or {}).items()))
    return Budget(sizing.slots, sizing.memory_mb, by_operator)


def beyond(sizing: Sizing, info: TestbedInfo) -> str | None:
    """Why the testbed cannot run the sizing's configuration (a verdict naming the slots), or None."""
    if sizing.slots > info.max_slots:
        return f"{BEYOND} ({sizing.slots} slots, the testbed has {info.max_slots})"
    try:
        info.check_budget(budget_of(sizing))
    except UserError as e:
        return f"{BEYOND} ({e})"
    return None


def judge(testbed: Testbed, query: Query, sizing: Sizing, ledger: Ledger, timing: Timing,
          log: Callable[[str], None] = lambda m: None, phases: Phases = NO_PHASES) -> Judgement:
    """The MST of ``sizing``'s own configuration, measured on ``testbed`` by the Capacity Estimator
    through ``ledger`` (steps keyed by method and configuration, so that a resumed campaign replays
    the windows of the configuration it measured and measures any other afresh)."""
    reason = beyond(sizing, testbed.info())
    if reason is not None:
        return Judgement(None, reason=reason)
    mp = sizing.detail.get("max_parallelism") if isinstance(sizing.detail, Mapping) else None
    config = Configuration.of(query, dict(sizing.configuration), mp)
    budget = budget_of(sizing)
    estimator = estimator_on(testbed, ledger, timing, log=log, phases=phases)
    key = f"judge:{sizing.method}:{config.key()}@{sizing.memory_mb}MB"
    est = estimator.estimate(query.name, budget, config, key)
    return Judgement(est.mst, est.testbed_seconds, source_limited=est.source_limited)

"""What every campaign shares: building its testbed, refusing bad input before any directory exists,
and its ledger."""

from __future__ import annotations

from typing import Callable, Mapping

from ..errors import UserError
from ..ledger import Ledger
from ..model import Configuration, Query
from ..testbed.base import Testbed
from . import testbeds
from .settings import CampaignSettings

Log = Callable[[str], None]
Advance = Callable[[str], None]
"""A campaign reports each finished step with a line saying what it was."""


def ignore(message: str) -> None:
    """Progress nobody watches."""


def testbed_of(campaign: CampaignSettings, log: Log, max_slots: int | None = None) -> Testbed:
    """The campaign's testbed from the registry (campaigns/testbeds.py)."""
    return testbeds.create(campaign.testbed.name, campaign.request(max_slots), log)


def configuration_of(query: Query, mapping: Mapping[str, int] | None, option: str = "--config",
                     max_parallelism: int | None = None) -> Configuration:
    """The configuration a user gave for ``query`` (None: every operator at 1, section V's single task)."""
    if mapping is None:
        return Configuration.single_task(query)
    unknown = [op for op in mapping if op not in query.operators]
    if unknown:
        raise UserError(f"{option}: unknown operator(s) {', '.join(unknown)} for query {query.name} "
                        f"(expected: {', '.join(query.operators)})")
    return Configuration.of(query, mapping, max_parallelism)


def open_ledger(campaign: CampaignSettings, kind: str, params: dict) -> Ledger:
    """The campaign's ledger: new, or the recorded one with --resume (the same params, or refused)."""
    return Ledger.open(campaign.directory_for(kind), kind, params, resume=campaign.resume)


def ledger_counts(ledger: Ledger) -> dict:
    return {"path": str(ledger.path), "replayed": ledger.replayed, "executed": ledger.executed}

"""What every campaign shares: building its testbed, refusing bad input before any directory exists,
and its ledger."""

from __future__ import annotations

from typing import Callable, Mapping

from .. import dataset
from ..errors import UserError
from ..planner.estimator import Timing
from ..ledger import Ledger
from ..model import Configuration, Query
from ..testbed.base import Replay, Testbed
from . import testbeds
from .settings import CampaignSettings

Log = Callable[[str], None]
Advance = Callable[[str], None]
"""A campaign reports each finished step with a line saying what it was."""


def ignore(message: str) -> None:
    """Progress nobody watches."""


def testbed_of(campaign: CampaignSettings, log: Log, max_slots: int | None = None, *,
               timing: Timing | None = None) -> Testbed:
    """The campaign's testbed from the registry (campaigns/testbeds.py), replaying ``campaign.input``
    if it names a data set (``timing``: the estimator's, which sizes the replay)."""
    replay = replay_of(campaign, timing) if campaign.input else None
    testbed = testbeds.create(campaign.testbed.name, campaign.request(max_slots, replay), log)
    if replay is not None:  # said once the testbed took it: refused input leaves one line, the error
        s = dataset.sizing(replay.max_rate, timing)
        log(f"replaying {replay.dataset.name} ({replay.dataset.events:,} events) at up to {replay.max_rate:,.0f} "
            f"events/s: a job replays at most {s.job_events:,}; {s.kafka_nodes} Kafka node(s) would serve it")
    return testbed


def replay_of(campaign: CampaignSettings, timing: Timing | None) -> Replay:
    """The data set a campaign replays and the most its source may be asked per second (paper VIII).

    The bound is ``--input-rate``: a data set too small for the campaign's longest job at that rate
    is refused before anything runs, with the numbers. Without it, the bound is the fastest replay
    the data set holds for that job, and the campaign says so. (A plan's target rate is not the
    bound: it is production's; the testbed's jobs run at what its small budgets sustain.)"""
    if timing is None:
        raise UserError("--input: this campaign does not replay data sets yet (estimate, optimize, explore and "
                        "plan do); give --input generator")
    data = dataset.load(campaign.input, campaign.lake)
    bound = campaign.input_rate
    if bound is not None:
        dataset.check_enough(data, dataset.sizing(bound, timing))
    else:
        bound = dataset.max_rate(data, timing)
        if bound < 1.0:
            raise UserError(f"--input {data.name}: {data.events:,} events do not last one job of timing "
                            f"{timing.name} ({sum(dataset.job_seconds(timing)):,.0f} s) at 1 event/s; generate more")
    return Replay(data, bound)


def input_params(campaign: CampaignSettings) -> dict:
    """What a replay adds to a campaign's params (a resume on other data is refused); nothing for the
    generator, whose campaigns thus keep the params every generator ledger was recorded with and resume."""
    if not campaign.input:
        return {}
    return {"input": campaign.input, "input_rate": campaign.input_rate}


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

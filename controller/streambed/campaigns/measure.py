"""Measurement campaign: one configuration observed at a list of rates, every window in the ledger.

The building block of the Capacity Estimator (paper section IV): warm up once, then for each rate a
ramp-up that is not measured and an observation window. Each window is a ledger step, written
before the next rate is tried; a killed campaign resumed with the same parameters replays the
recorded windows and measures only the missing ones (after a fresh warm-up, since the job is gone).
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..planner.estimator import NO_PHASES, Phases
from ..ledger import Ledger
from ..model import Budget, Configuration, Measurement
from ..testbed.base import Run, Testbed
from .base import Advance, Log, configuration_of, ignore, open_ledger, testbed_of
from .settings import MeasureSettings, WindowTiming


def measure_rates(testbed: Testbed, ledger: Ledger, query: str, budget: Budget, configuration: Configuration,
                  rates: Sequence[float], timing: WindowTiming,
                  on_window: Callable[[int, Measurement, bool], None] | None = None,
                  phases: Phases = NO_PHASES) -> list[Measurement]:
    """Measure ``configuration`` at each rate; ``on_window(i, measurement, replayed)`` reports progress,
    ``phases`` hears of the warm-up, each injection and its observation."""
    run: Run | None = None
    results = []
    try:
        for i, rate in enumerate(rates):
            key = f"measure/{budget.memory_mb}MB/{configuration.key()}/{i}@{rate:g}"
            replayed = ledger.has(key)

            def window() -> dict:
                nonlocal run
                if run is None:
                    testbed.prepare(budget)
                    run = testbed.start(query, configuration, rate)
                    ledger.record("run-started", {"run": run.id, "configuration": configuration.as_dict(),
                                                  "memory_mb": budget.memory_mb, "warmup_s": timing.warmup_s})
                    with phases.phase("warm-up", f"{key}: warm-up at {rate:,.0f} events/s"):
                        testbed.wait(run, timing.warmup_s)
                with phases.phase("injection", f"{key}: injection at {rate:,.0f} events/s"):
                    testbed.set_rate(run, rate)
                    testbed.wait(run, timing.ramp_s)
                    with phases.phase("observation", f"{key}: observation at {rate:,.0f} events/s"):
                        return testbed.observe(run, timing.observe_s).to_dict()

            m = Measurement.from_dict(ledger.step(key, window, rerun=testbed.info().reproducible,
                                                  check=Measurement.from_dict))
            results.append(m)
            if on_window:
                on_window(i, m, replayed)
    finally:
        if run is not None:
            testbed.stop(run)
            ledger.record("run-stopped", {"run": run.id})
    return results


class MeasureCampaign:
    kind = "measure"

    def __init__(self, settings: MeasureSettings, *, status: Log = ignore, log: Log = ignore,
                 phases: Phases = NO_PHASES):
        self.settings, self.phases = settings, phases
        self.testbed = testbed_of(settings.campaign, status)
        self.query = self.testbed.query(settings.campaign.query)
        self.configuration = configuration_of(self.query, settings.configuration)
        self.budget = Budget(self.configuration.slots, settings.memory_mb)
        info = self.testbed.info()
        info.check_budget(self.budget, memory_option="--memory", slots_option="--config")
        info.check_window(settings.timing.observe_s, "--window")
        self.directory = settings.campaign.directory_for(self.kind)
        self.title = f"measuring {self.query.name} ({self.configuration.key()}, {settings.memory_mb} MB)"
        self.total = len(settings.rates)

    def params(self) -> dict:
        c, s, t = self.settings.campaign, self.settings, self.settings.timing
        return {"testbed": c.testbed.name, "query": self.query.name, "memory_mb": s.memory_mb,
                "configuration": self.configuration.as_dict(), "rates": list(s.rates), "seed": c.seed,
                "timing": [t.warmup_s, t.ramp_s, t.observe_s]}

    def run(self, advance: Advance = ignore) -> list[tuple[Measurement, bool]]:
        """Each window's measurement and whether it came from the ledger."""
        s, windows = self.settings, []

        def report(i: int, m: Measurement, replayed: bool) -> None:
            windows.append((m, replayed))
            advance(f"window {i + 1}/{len(s.rates)} at {m.target_rate:,.0f} events/s")

        with open_ledger(s.campaign, self.kind, self.params()) as ledger:
            results = measure_rates(self.testbed, ledger, self.query.name, self.budget, self.configuration, s.rates,
                                    s.timing, report, self.phases)
            ledger.set_result({"measurements": [m.to_dict() for m in results]})
        return windows

"""Measurement campaign: one configuration observed at a list of rates, every window in the ledger.

The building block of the Capacity Estimator (paper section IV): warm up once, then for each rate a
ramp-up that is not measured and an observation window. Each window is a ledger step, written
before the next rate is tried; a killed campaign resumed with the same parameters replays the
recorded windows and measures only the missing ones (after a fresh warm-up, since the job is gone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..ledger import Ledger
from ..model import Budget, Configuration, Measurement
from ..testbed.base import Run, Testbed


@dataclass(frozen=True)
class WindowTiming:
    warmup_s: float = 120.0
    ramp_s: float = 30.0
    observe_s: float = 30.0


def measure_rates(testbed: Testbed, ledger: Ledger, query: str, budget: Budget, configuration: Configuration,
                  rates: Sequence[float], timing: WindowTiming,
                  on_window: Callable[[int, Measurement, bool], None] | None = None) -> list[Measurement]:
    """Measure ``configuration`` at each rate; ``on_window(i, measurement, replayed)`` reports progress."""
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
                    testbed.wait(run, timing.warmup_s)
                testbed.set_rate(run, rate)
                testbed.wait(run, timing.ramp_s)
                return testbed.observe(run, timing.observe_s).to_dict()

            m = Measurement.from_dict(ledger.step(key, window))
            results.append(m)
            if on_window:
                on_window(i, m, replayed)
    finally:
        if run is not None:
            testbed.stop(run)
            ledger.record("run-stopped", {"run": run.id})
    return results

"""From per-task samples to one measurement window: pure functions shared by every testbed.

A testbed reports, per task, the time it spent busy and back-pressured and the records it took in
and sent out (Flink: busyTimeMsPerSecond, backPressuredTimeMsPerSecond, numRecordsIn/Out), and, per
window, what the source emitted against its target and how pending records evolved. Aggregation
follows what the Configuration Optimizer needs (paper section V): per operator, the summed input
rate and the mean busyness of its tasks; plus the busiest task, because a keyed operator is limited
by its most loaded task.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

import numpy as np

from ..model import SOURCE, Measurement, OperatorMetrics


def operator_metrics(names: Sequence[str], parallelism: Sequence[int], busy: np.ndarray, backpressured: np.ndarray,
                     records_in: np.ndarray, records_out: np.ndarray) -> tuple[OperatorMetrics, ...]:
    """Per-operator metrics from per-task window averages (tasks grouped by operator, in order).

    ``busy`` and ``backpressured`` are fractions of time (0..1); ``records_in`` / ``records_out`` are
    records per second."""
    out = []
    start = 0
    for name, p in zip(names, parallelism):
        sl = slice(start, start + p)
        b = np.asarray(busy[sl], dtype=float)
        out.append(OperatorMetrics(
            operator=name,
            parallelism=int(p),
            input_rate=float(np.sum(records_in[sl])),
            output_rate=float(np.sum(records_out[sl])),
            busyness=float(b.mean()),
            busyness_max=float(b.max()),
            backpressure=float(np.mean(backpressured[sl])),
            task_busyness=tuple(float(x) for x in b),
            task_input=tuple(float(x) for x in records_in[sl]),
        ))
        start += p
    return tuple(out)


def with_offered(ops: Sequence[OperatorMetrics], inputs: Mapping[str, Sequence[tuple[str, float]]],
                 passed: Mapping[str, float], source_rate: float) -> tuple[OperatorMetrics, ...]:
    """``ops`` with what their inputs sent them over the window (OperatorMetrics.offered_rate):
    for each edge (upstream, share) into an operator, share x the records/s the upstream passed on
    (``passed``, by operator name; the source's ``source_rate``, its achieved rate). In Flink every
    consumer of a vertex gets all it emits (share 1 of its numRecordsOut); a sim edge carries its
    share of what its upstream counts out (SimProfile.edge_shares). An operator absent from
    ``inputs`` keeps None."""
    rates = {**passed, SOURCE: source_rate}
    return tuple(replace(om, offered_rate=sum(share * rates.get(up, 0.0) for up, share in inputs[om.operator]))
                 if inputs.get(om.operator) else om for om in ops)


def slope(times: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of values over times (0 with fewer than two points)."""
    t = np.asarray(times, dtype=float)
    v = np.asarray(values, dtype=float)
    if t.size < 2 or np.ptp(t) == 0:
        return 0.0
    tc = t - t.mean()
    return float(np.dot(tc, v - v.mean()) / np.dot(tc, tc))


def coefficient_of_variation(values: Sequence[float]) -> float:
    v = np.asarray(values, dtype=float)
    if v.size < 2 or v.mean() == 0:
        return 0.0
    return float(v.std() / abs(v.mean()))


def measurement(*, start: float, end: float, target_rate: float, emitted: float, offered: float,
                sample_times: Sequence[float], sample_emitted_rates: Sequence[float],
                sample_pending: Sequence[float], pending_start: float, operators: tuple[OperatorMetrics, ...],
                source_saturated: bool) -> Measurement:
    """Assemble a window's measurement. ``emitted`` / ``offered`` are record counts over the window,
    so the achieved rate comes from counter differences, never from smoothed per-second gauges.
    ``sample_pending`` holds the pending records at ``sample_times`` (the last one is the window's
    end); ``sample_emitted_rates`` the emitted rate per sample period, for the variation."""
    seconds = end - start
    if seconds <= 0:
        raise ValueError("a measurement window must have a positive length")
    achieved = emitted / seconds
    target = offered / seconds if offered > 0 else target_rate
    pending = list(sample_pending)
    return Measurement(
        target_rate=target,
        achieved_rate=achieved,
        pending_start=float(pending_start),
        pending_end=float(pending[-1]) if pending else float(pending_start),
        pending_slope=slope([start, *sample_times], [pending_start, *pending]) if pending else 0.0,
        achieved_cv=coefficient_of_variation(sample_emitted_rates),
        start=float(start),
        end=float(end),
        operators=operators,
        source_saturated=bool(source_saturated),
    )

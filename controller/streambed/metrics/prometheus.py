"""Reading a job's task metrics from Prometheus, and one window's raw series -> a Measurement.

Two parts, kept apart so that the arithmetic can be tested without a server:

* :class:`PrometheusReader` fetches the raw samples of a metric for a job inside a window, each with
  its own scrape time, and retries an unreachable server until a deadline. The engine supplies the
  names of its series and labels (:class:`MetricNames`; :data:`FLINK_METRICS` for Flink).
* :func:`window_measurement` is pure: the window's counters (:class:`WindowSeries`) and which Flink
  vertices are the planner's operators (:class:`JobVertices`) -> the window's Measurement, through
  :mod:`streambed.metrics.window`. Rates are counter differences between the first and last samples
  of the window, never the smoothed ``*PerSecond`` gauges, which lag by tens of seconds.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..errors import MetricsMissing, TestbedUnreachable
from ..model import Measurement
from ..model.slo import SUSTAINED_RATIO
from . import window

TaskKey = tuple[str, str]
"""(task id, subtask index): one task of a job, as the engine's reporter labels it."""
Samples = list[tuple[float, float]]
"""(scrape time, value) pairs, in time order."""
TaskSeries = Mapping[TaskKey, Samples]


@dataclass(frozen=True)
class MetricNames:
    """What an engine's Prometheus reporter calls the series a window's measurement needs, and the
    labels that name a job, a task and a subtask. Every series is per task."""

    busy: str
    """Accumulated busy time (ms)."""
    backpressured: str
    """Accumulated back-pressured time (ms)."""
    records_in: str
    records_out: str
    pending: str
    """The source's own gauge: records its rate limiter has not emitted yet."""
    job_label: str = "job_id"
    task_label: str = "task_id"
    subtask_label: str = "subtask_index"

    def window_metrics(self) -> tuple[str, str, str, str, str]:
        """The series of a window, in WindowSeries' field order."""
        return self.busy, self.backpressured, self.records_in, self.records_out, self.pending


FLINK_METRICS = MetricNames(
    busy="flink_taskmanager_job_task_accumulateBusyTimeMs",
    backpressured="flink_taskmanager_job_task_accumulateBackPressuredTimeMs",
    records_in="flink_taskmanager_job_task_numRecordsIn",
    records_out="flink_taskmanager_job_task_numRecordsOut",
    pending="flink_taskmanager_job_task_operator_pendingRecords",
)
"""Flink's PrometheusReporter names (the StreamBed job's source registers pendingRecords)."""

ATTEMPT_S = 10.0
"""Longest wait for one answer of Prometheus (a window's query answers in milliseconds)."""
AGGREGATION_S = 5.0
"""The paper's 5-s aggregation of emitted rates, for the window's variation (section IV)."""
SATURATED_BUSY = 0.9
"""Source tasks busier than this, and behind their target, capped the window themselves."""
OPERATORS_IDLE = 0.5
"""No operator task busier than this: the job is not what held a lagging source back (its own
TaskManager was, whose network threads share its CPU quota; see ``source_capped``)."""
SOURCE_UNHELD = 0.1
"""Source tasks back-pressured less than this share of the time were not held back by the job:
back-pressure is the only way a Flink job slows its sources."""


def emitted_in_window(offered: float, counted: float, pending_start: float, pending_end: float) -> float:
    """Events the sources emitted in a window, from whichever of their two readings is the more
    exact: the emission counter (``counted``), or what was offered less what their backlog gauge
    grew by. A scrape answered late by a TaskManager held to its CPU share reads either one later
    than the sample's timestamp, so each is off by the lateness times its own rate of change: the
    counter's is the emission, the backlog's is the offered rate less the emission. The slower one
    is the exact one. While the sources keep up, the backlog hardly moves: at 0.12 core per slot
    the counter read a window of 7,067 events/s as 6,986 while the backlog stood still. Far behind
    (a warm-up asking 4 M events/s of a job taking 12.6 k), the backlog grows at the offered rate
    and the counter is the exact one: read from the backlog, that warm-up came out at 0 events/s
    (docs/flink-testbed.md, "What it took")."""
    growth = pending_end - pending_start
    if abs(growth) < counted:
        return max(0.0, offered - growth)
    return counted


def source_capped(achieved: float, target: float, busy: float, backpressured: float,
                  busiest_task: float) -> bool:
    """Whether the sources, not the job, capped a window's emission. Behind their target, and either
    busy generating; or, while no operator task is busy, busy and held back together, or hardly held
    back at all. The second case is a source TaskManager held to a CPU share: its Netty threads
    cannot send what the source made, so the source shows back-pressure that no downstream task
    explains. In the third the job did not slow the source (no back-pressure, nothing busy), yet it
    fell behind: at 0.12 core, q8's source fell 1 % short at 18,776 events/s with its
    back-pressure at 0.05 and no operator task busier than 0.04 (docs/flink-testbed.md)."""
    if achieved >= SUSTAINED_RATIO * target:
        return False
    if busiest_task < OPERATORS_IDLE and (busy + backpressured > SATURATED_BUSY or backpressured < SOURCE_UNHELD):
        return True
    return busy > SATURATED_BUSY


@dataclass(frozen=True)
class JobVertices:
    """Which vertices of a Flink job are the planner's operators, and which are its sources."""

    operators: tuple[tuple[str, str], ...]
    """(operator name, vertex id), in topological order: the order of the Measurement's operators."""
    sources: tuple[str, ...]
    """Vertex ids of the sources: they emit the achieved rate and are not operators of the budget."""
    inputs: tuple[tuple[str, ...], ...] = ()
    """Per operator (same order), the operators it reads (SOURCE for a source), as the job's plan has
    its edges: what they emit is what it is offered (window.with_offered). Empty: not known."""


@dataclass(frozen=True)
class WindowSeries:
    """The raw samples of one window, per metric, by task."""

    busy: TaskSeries
    backpressured: TaskSeries
    records_in: TaskSeries
    records_out: TaskSeries
    pending: TaskSeries


class PrometheusReader:
    """Raw samples of a Prometheus server, retried until ``timeout_s`` has passed."""

    def __init__(self, url: str, timeout_s: float = 30.0, attempt_s: float = ATTEMPT_S,
                 names: MetricNames = FLINK_METRICS):
        from prometheus_api_client import PrometheusConnect  # the client imports slowly; only a Flink testbed needs it
        from urllib3.util.retry import Retry

        self.url = url
        self.names = names
        self.timeout_s = timeout_s
        # Several attempts fit in the deadline, however short: a server that answers late is retried.
        self.attempt_s = min(attempt_s, timeout_s / 3)
        # No retries inside the client (its default backs off for seconds): series() retries up to its deadline.
        self._client = PrometheusConnect(url=url, disable_ssl=True, timeout=self.attempt_s, retry=Retry(total=0))

    def series(self, metric: str, job_id: str, t0: float, t1: float) -> dict[TaskKey, Samples]:
        """Raw samples of ``metric`` for the job in (t0, t1], by (task_id, subtask_index).

        A range selector evaluated at t1 returns the samples with their own scrape times; a range
        query would stamp them with step-aligned evaluation times, an error of up to one scrape
        interval at each end of a window a few seconds long."""
        q = f'{metric}{{{self.names.job_label}="{job_id}"}}[{max(1, math.ceil((t1 - t0) * 1000))}ms]'
        # Attempts of attempt_s each (the client's own timeout), none started past the deadline.
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                data = self._client.custom_query(q, params={"time": f"{t1:.3f}"})
                break
            except Exception as e:  # noqa: BLE001 - the client raises several types
                if time.monotonic() + self.attempt_s + 1.0 > deadline:
                    raise TestbedUnreachable(f"Prometheus at {self.url} does not answer after "
                                             f"{self.timeout_s:.0f} s ({type(e).__name__})") from None
                time.sleep(1.0)
        out = {}
        for s in data:
            lab = s["metric"]
            key = (lab.get(self.names.task_label, ""), lab.get(self.names.subtask_label, "0"))
            out[key] = [(float(t), float(v)) for t, v in s["values"]]
        return out

    def window(self, job_id: str, t0: float, t1: float) -> WindowSeries:
        """Every series a window's measurement needs."""
        return WindowSeries(*(self.series(metric, job_id, t0, t1) for metric in self.names.window_metrics()))


def window_measurement(series: WindowSeries, vertices: JobVertices, *, job: str, t0: float, t1: float,
                       target_rate: float, sample_period: float) -> Measurement:
    """The measurement of the window (t0, t1] of ``job`` at ``target_rate`` from its raw series.

    Raises MetricsMissing (naming ``job``) when a task has fewer than two samples or its samples do
    not cover the window within two scrape intervals (``sample_period``) at either end, or when an
    operator or the source has no series: a partial window never passes for a measurement (the
    estimator discards it, section IV)."""
    gap = 2 * sample_period + 1.0

    def rate(task_series: TaskSeries, key: TaskKey) -> float:
        pts = task_series.get(key)
        if not pts or len(pts) < 2 or pts[-1][0] <= pts[0][0]:
            raise MetricsMissing(f"{job}: no samples of task {key[0]}[{key[1]}] in the window")
        # A task whose series stops early (its TaskManager lost, a scrape failing) would give a
        # rate over part of the window only: the window is refused instead.
        if pts[0][0] > t0 + gap or pts[-1][0] < t1 - gap:
            raise MetricsMissing(f"{job}: the samples of task {key[0]}[{key[1]}] cover only "
                                 f"{pts[0][0] - t0:+.0f}..{pts[-1][0] - t1:+.0f} s of the window "
                                 f"(TaskManager lost or Prometheus not scraping?)")
        return (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])

    names, parallelism = [], []
    b_all, bp_all, in_all, out_all = [], [], [], []
    for name, vertex in vertices.operators:
        keys = sorted((k for k in series.busy if k[0] == vertex), key=lambda k: int(k[1]))
        if not keys:
            raise MetricsMissing(f"{job}: no metrics for operator {name}")
        names.append(name)
        parallelism.append(len(keys))
        # ms per second -> fraction; clamped, as counter differences of an idle task can round below 0
        b_all += [min(1.0, max(0.0, rate(series.busy, k) / 1000.0)) for k in keys]
        bp_all += [min(1.0, max(0.0, rate(series.backpressured, k) / 1000.0)) for k in keys]
        in_all += [rate(series.records_in, k) for k in keys]
        out_all += [rate(series.records_out, k) for k in keys]
    src_keys = [k for k in series.records_out if k[0] in vertices.sources]
    if not src_keys:
        raise MetricsMissing(f"{job}: no metrics for the source")
    pts = [series.records_out[k] for k in src_keys]
    # Emission over the span every source task covers, interpolated between scrapes.
    start = max(p[0][0] for p in pts)
    end = min(p[-1][0] for p in pts)
    emitted = sum(np.interp(end, *zip(*p)) - np.interp(start, *zip(*p)) for p in pts)
    src_busy = float(np.mean([rate(series.busy, k) for k in src_keys])) / 1000.0
    src_backpressured = float(np.mean([rate(series.backpressured, k) for k in src_keys])) / 1000.0
    times = np.arange(start + AGGREGATION_S, end + 1e-9, AGGREGATION_S)
    edges = [start, *times]
    per_sample = [sum(np.interp(b, *zip(*p)) - np.interp(a, *zip(*p)) for p in pts) / (b - a)
                  for a, b in zip(edges, edges[1:])]
    pend = list(series.pending.values())
    pending_at = (lambda t: float(sum(np.interp(t, *zip(*p)) for p in pend))) if pend else (lambda t: 0.0)
    offered = target_rate * (end - start)
    if pend:
        emitted = emitted_in_window(offered, emitted, pending_at(start), pending_at(end))
    ops_metrics = window.operator_metrics(names, parallelism, np.array(b_all), np.array(bp_all),
                                          np.array(in_all), np.array(out_all))
    achieved = emitted / (end - start) if end > start else 0.0
    if vertices.inputs:
        ops_metrics = window.with_offered(
            ops_metrics, {name: [(up, 1.0) for up in ups] for (name, _), ups in zip(vertices.operators, vertices.inputs)},
            {om.operator: om.output_rate for om in ops_metrics}, achieved)
    # Pending records at every 5-s mark and at the window's end: a window shorter than 5 s, or
    # one that ends between marks, still has its pending records at its end and their slope.
    pending_times = [*times, end] if not len(times) or times[-1] < end - 1e-6 else list(times)
    return window.measurement(
        start=start, end=end, target_rate=target_rate, emitted=emitted, offered=offered,
        sample_times=pending_times, sample_emitted_rates=per_sample,
        sample_pending=[pending_at(t) for t in pending_times],
        pending_start=pending_at(start), operators=ops_metrics,
        source_saturated=source_capped(achieved, target_rate, src_busy, src_backpressured, max(b_all)))


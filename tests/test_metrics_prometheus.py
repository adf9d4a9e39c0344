"""Prometheus collection: the reader against a stand-in server, and raw series -> Measurement on
hand-made series (no Flink, no Prometheus)."""

from __future__ import annotations

import urllib.parse

import pytest

from conftest import json_server

from streambed.errors import MetricsMissing
from streambed.metrics.prometheus import (FLINK_METRICS, JobVertices, MetricNames, PrometheusReader, WindowSeries,
                                          emitted_in_window, window_measurement)

BUSY, BACKPRESSURED, RECORDS_IN, RECORDS_OUT, PENDING = FLINK_METRICS.window_metrics()

T0, T1 = 100.0, 130.0
TIMES = [T0 + 1.0 + i for i in range(30)]  # one scrape a second, in (T0, T1]
Q = JobVertices(operators=(("Calc#1", "calc"), ("Sink#2", "sink")), sources=("src",))


def counter(per_second: float, times=TIMES) -> list[tuple[float, float]]:
    """A counter growing at ``per_second``, sampled at ``times``."""
    return [(t, per_second * (t - T0)) for t in times]


def series(**changes) -> WindowSeries:
    """A window of q1 at 1,000 events/s asked: the source emits 900/s, 95 % busy; two Calc tasks."""
    base = dict(
        busy={("src", "0"): counter(950), ("calc", "0"): counter(500), ("calc", "1"): counter(300),
              ("sink", "0"): counter(100)},
        backpressured={("src", "0"): counter(0), ("calc", "0"): counter(0), ("calc", "1"): counter(0),
                       ("sink", "0"): counter(0)},
        records_in={("src", "0"): counter(0), ("calc", "0"): counter(450), ("calc", "1"): counter(450),
                    ("sink", "0"): counter(900)},
        records_out={("src", "0"): counter(900), ("calc", "0"): counter(450), ("calc", "1"): counter(450),
                     ("sink", "0"): counter(0)},
        pending={("src", "0"): [(t, 100.0 * (t - T0)) for t in TIMES]},
    )
    base.update(changes)
    return WindowSeries(**base)


def measure(s: WindowSeries, target: float = 1000.0):
    return window_measurement(s, Q, job="job1", t0=T0, t1=T1, target_rate=target, sample_period=1.0)


def test_a_window_is_counter_differences_per_operator():
    m = measure(series())
    assert (m.start, m.end) == (TIMES[0], TIMES[-1])
    assert m.achieved_rate == pytest.approx(900)
    assert m.target_rate == pytest.approx(1000)
    assert m.achieved_cv == pytest.approx(0, abs=1e-9)
    calc, sink = m.operators
    assert (calc.operator, calc.parallelism, sink.operator, sink.parallelism) == ("Calc#1", 2, "Sink#2", 1)
    assert calc.input_rate == pytest.approx(900) and sink.input_rate == pytest.approx(900)
    assert calc.busyness == pytest.approx(0.4) and calc.busyness_max == pytest.approx(0.5)
    assert calc.task_busyness == pytest.approx((0.5, 0.3))
    assert sink.busyness == pytest.approx(0.1)
    # the source's gauge: 100 at the start, growing by 100 records a second
    assert m.pending_start == pytest.approx(100) and m.pending_end == pytest.approx(3000)
    assert m.pending_slope == pytest.approx(100)


def test_what_each_operator_is_offered_follows_the_jobs_edges():
    edges = JobVertices(Q.operators, Q.sources, inputs=(("source",), ("Calc#1",)))
    # the sink's task took in 600 of the 900 records/s the Calc tasks emitted
    m = window_measurement(series(records_in={("src", "0"): counter(0), ("calc", "0"): counter(450),
                                              ("calc", "1"): counter(450), ("sink", "0"): counter(600)}),
                           edges, job="job1", t0=T0, t1=T1, target_rate=1000.0, sample_period=1.0)
    calc, sink = m.operators
    assert calc.offered_rate == pytest.approx(900)  # the source's achieved rate
    assert sink.offered_rate == pytest.approx(900) and sink.input_rate == pytest.approx(600)
    assert all(o.offered_rate is None for o in measure(series()).operators)  # a plan without edges


def test_tasks_are_ordered_by_subtask_number_and_busyness_is_clamped():
    busy = {("src", "0"): counter(950), ("calc", "2"): counter(700), ("calc", "10"): counter(-5),
            ("sink", "0"): counter(1200)}
    both = {k: counter(450) for k in busy}
    m = measure(series(busy=busy, backpressured=both, records_in=both, records_out={**both, ("src", "0"): counter(900)}))
    calc, sink = m.operators
    assert calc.task_busyness == pytest.approx((0.7, 0.0))  # subtask 2 before 10, a negative difference is 0
    assert sink.busyness == 1.0


@pytest.mark.parametrize("busy, held, calc, emitted, saturated", [
    (950, 0, 500, 900, True),     # busy and behind its target: the source capped the window
    (500, 0, 500, 900, False),    # behind, but not busy: the job held it back
    (950, 0, 500, 995, False),    # busy, but it kept up
    # held back while the Calc idles: its own TaskManager (a CPU share) could not send (issue 12)
    (450, 500, 100, 900, True),
    (450, 500, 950, 900, False),  # held back by a busy Calc: the job's limit, not the source's
    (450, 500, 100, 995, False),  # held back, idle downstream, but it kept up
    # behind, not held back, nothing in the job busy: the job did not slow it (q8 at 0.12 core)
    (370, 50, 40, 900, True),
    (370, 50, 40, 995, False),    # the same, but it kept up
    (370, 300, 40, 900, False),   # held back for part of the window: the job may have slowed it
    (370, 50, 600, 900, False),   # not held back, but an operator task is busy: not clearly the source
])
def test_source_saturation_needs_a_busy_source_behind_its_target(busy, held, calc, emitted, saturated):
    s = series()
    s = WindowSeries(busy={**s.busy, ("src", "0"): counter(busy), ("calc", "0"): counter(calc),
                           ("calc", "1"): counter(min(calc, 300))},
                     backpressured={**s.backpressured, ("src", "0"): counter(held)},
                     records_in=s.records_in, records_out={**s.records_out, ("src", "0"): counter(emitted)},
                     pending={("src", "0"): counter(1000 - emitted)})
    assert measure(s).source_saturated is saturated


def test_the_emitted_rate_comes_from_the_sources_backlog_where_it_has_one():
    """A counter read late (a scrape answered by a throttled TaskManager: here the last sample reads
    what the counter held 0.3 s later) misstates the rate; the backlog gauge, flat, does not."""
    late = [(t, v + (300.0 if t == TIMES[-1] else 0.0)) for t, v in counter(1000)]
    flat = {("src", "0"): [(t, 5_000.0) for t in TIMES]}
    s = series()
    kept_up = measure(WindowSeries(busy=s.busy, backpressured=s.backpressured, records_in=s.records_in,
                                   records_out={**s.records_out, ("src", "0"): late}, pending=flat))
    assert kept_up.achieved_rate == pytest.approx(1000) and kept_up.pending_slope == pytest.approx(0)
    growing = {("src", "0"): counter(250)}
    behind = measure(WindowSeries(busy=s.busy, backpressured=s.backpressured, records_in=s.records_in,
                                  records_out={**s.records_out, ("src", "0"): late}, pending=growing))
    assert behind.achieved_rate == pytest.approx(750)
    # without the gauge (another source), the counter is all there is
    counted = measure(WindowSeries(busy=s.busy, backpressured=s.backpressured, records_in=s.records_in,
                                   records_out={**s.records_out, ("src", "0"): counter(900)}, pending={}))
    assert counted.achieved_rate == pytest.approx(900)


def test_far_behind_its_target_the_emission_comes_from_the_counter():
    """A warm-up asks 4 M events/s of a job that takes 12 k: the backlog grows at ~4 M/s, and a last
    scrape read 0.1 s late adds ~400 k records to it, more than the whole window emitted. Read from
    the backlog the window would say 0 events/s (it did, issue 12); the counter moves 330 times
    slower and is the exact reading."""
    s = series()
    late = {("src", "0"): [(t, 3_988_000.0 * (t - T0) + (398_800.0 if t == TIMES[-1] else 0.0)) for t in TIMES]}
    m = measure(WindowSeries(busy=s.busy, backpressured=s.backpressured, records_in=s.records_in,
                             records_out={**s.records_out, ("src", "0"): counter(12_000)}, pending=late),
                target=4_000_000.0)
    assert m.achieved_rate == pytest.approx(12_000)


@pytest.mark.parametrize("offered, counted, growth, emitted", [
    (10_000, 9_900, 0, 10_000),              # kept up: the flat backlog, not the counter read late
    (10_000, 7_000, 3_000, 7_000),           # behind by less than it emitted: the backlog, 10,000 - 3,000
    (4_000_000, 12_000, 3_988_000, 12_000),  # far behind: the counter
    (10_000, 0, 10, 0),                      # nothing emitted, the backlog grows: the counter
    (10_000, 100, -50, 10_050),              # the backlog shrinks (the source catches up): offered + 50
])
def test_the_emission_is_read_from_the_slower_moving_reading(offered, counted, growth, emitted):
    assert emitted_in_window(offered, counted, 500.0, 500.0 + growth) == pytest.approx(emitted)


def test_without_pending_records_the_source_has_none():
    m = measure(series(pending={}))
    assert (m.pending_start, m.pending_end, m.pending_slope) == (0.0, 0.0, 0.0)


def test_an_operator_without_series_is_missing_metrics():
    s = series()
    busy = {k: v for k, v in s.busy.items() if k[0] != "sink"}
    with pytest.raises(MetricsMissing, match=r"^job1: no metrics for operator Sink#2$"):
        measure(series(busy=busy))


def test_a_task_with_one_sample_is_missing_metrics():
    s = series()
    with pytest.raises(MetricsMissing, match=r"^job1: no samples of task calc\[1\] in the window$"):
        measure(series(records_in={**s.records_in, ("calc", "1"): counter(450)[:1]}))


def test_a_task_whose_series_stops_early_refuses_the_window():
    s = series()
    stopped = counter(300, TIMES[:20])  # the last 10 s missing (a TaskManager lost)
    with pytest.raises(MetricsMissing, match=r"samples of task calc\[1\] cover only \+1\.\.-10 s of the window"):
        measure(series(busy={**s.busy, ("calc", "1"): stopped}))
    # within two scrape intervals of either end is a whole window
    assert measure(series(busy={**s.busy, ("calc", "1"): counter(300, TIMES[:-2])})).operators[0].parallelism == 2


def test_a_window_without_the_source_is_missing_metrics():
    s = series()
    out = {k: v for k, v in s.records_out.items() if k[0] != "src"}
    with pytest.raises(MetricsMissing, match=r"^job1: no metrics for the source$"):
        measure(series(records_out=out))


# -- the reader ----------------------------------------------------------------------------------

@pytest.fixture
def prometheus():
    """A stand-in for Prometheus' /api/v1/query: answers 503 ``fail_first`` times, then a matrix whose
    values say which metric was asked (busy 1, back-pressured 2, in 3, out 4, pending 5), labelled as
    ``state["names"]`` (Flink's unless a test sets another engine's)."""
    state = {"queries": [], "fail_first": 0, "names": FLINK_METRICS}

    def answer(path):
        params = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(path).query))
        state["queries"].append(params)
        if len(state["queries"]) <= state["fail_first"]:
            return 503, None
        names = state["names"]
        v = 1 + names.window_metrics().index(params["query"].split("{", 1)[0])
        result = [{"metric": {names.task_label: "calc", names.subtask_label: str(i), names.job_label: "abc"},
                   "values": [[1001.5, str(v * 10)], [1004.5, str(v * 40)]]} for i in (0, 1)]
        return 200, {"status": "success", "data": {"resultType": "matrix", "result": result}}

    with json_server(answer) as (url, _):
        yield url, state


def test_the_reader_asks_for_raw_samples_of_the_job_in_the_window(prometheus):
    url, state = prometheus
    samples = PrometheusReader(url, timeout_s=5).series(RECORDS_OUT, "abc", 1000.0, 1005.0)
    # a range selector at the window's end: raw samples with their own scrape times
    assert state["queries"] == [{"query": f'{RECORDS_OUT}{{job_id="abc"}}[5000ms]', "time": "1005.000"}]
    assert samples == {("calc", "0"): [(1001.5, 40.0), (1004.5, 160.0)],
                       ("calc", "1"): [(1001.5, 40.0), (1004.5, 160.0)]}


def test_a_window_reads_each_metric_into_its_own_field(prometheus):
    url, _ = prometheus
    w = PrometheusReader(url, timeout_s=5).window("abc", 1000.0, 1005.0)
    firsts = [f[("calc", "0")][0][1] for f in (w.busy, w.backpressured, w.records_in, w.records_out, w.pending)]
    assert firsts == [10.0, 20.0, 30.0, 40.0, 50.0]


def test_the_reader_asks_for_the_series_and_labels_its_engine_names(prometheus):
    url, state = prometheus
    other = MetricNames(busy="eng_busy_ms", backpressured="eng_blocked_ms", records_in="eng_in", records_out="eng_out",
                        pending="eng_backlog", job_label="query_id", task_label="stage", subtask_label="partition")
    state["names"] = other
    w = PrometheusReader(url, timeout_s=5, names=other).window("abc", 1000.0, 1005.0)
    assert [q["query"] for q in state["queries"]] == [f'{m}{{query_id="abc"}}[5000ms]' for m in other.window_metrics()]
    firsts = [f[("calc", "0")][0][1] for f in (w.busy, w.backpressured, w.records_in, w.records_out, w.pending)]
    assert firsts == [10.0, 20.0, 30.0, 40.0, 50.0]


def test_the_reader_retries_until_prometheus_answers(prometheus):
    url, state = prometheus
    state["fail_first"] = 2
    samples = PrometheusReader(url, timeout_s=10).series(BUSY, "abc", 1000.0, 1005.0)
    assert len(state["queries"]) == 3
    assert samples[("calc", "1")] == [(1001.5, 10.0), (1004.5, 40.0)]

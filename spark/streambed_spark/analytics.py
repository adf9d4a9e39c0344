"""Campaign analytics: summary tables (Parquet) of any number of campaigns, for reports and learned models.

Input: campaign directories (or their ``ledger.sqlite``). Every observation window a campaign recorded
becomes one row of ``windows`` and one row per operator of ``operators_windows`` (the flat input), from
which Spark computes the summaries ``runs`` (one row per run) and ``operators`` (one row per run and
operator). ``docs/analytics.md`` shows how to run it; :data:`COLUMNS` says what every column means,
and the same text travels in the Parquet schema (each field's ``comment`` metadata).

Reading: Spark reads no SQLite without a JDBC jar, so the driver reads each ledger with sqlite3,
read-only (:func:`read_ledgers`, pure Python, no Spark), and hands plain rows with explicit schemas to
``spark.createDataFrame``. Executors therefore never need the campaign directories, only ``--out``.

Why the ledger alone, not ``<campaign-dir>/export/*.csv``: ``streambed export`` derives those files
from the ledger's result and nothing else. ``measurements.csv`` is one MST per measured budget, which
``runs.mst`` holds for every run (recomputed from the windows, equal to the recorded MSTs:
tests/test_spark_analytics.py); ``operator-rates.csv`` is the single-task metrics, each operator's input
rate over its parallelism and busyness in the window at the MST, which ``operators_windows`` holds
for every window. An export can also be stale (written before a ``--resume`` added windows), and reading
it with ``spark.read.csv`` would make every executor of a standalone cluster need the campaign
directories. So the exports would add nothing but a second, possibly older, copy.

What a *run* is: the windows of one job of one configuration on one budget.

* ``estimator``: one Capacity Estimator search (steps ``<key>/w<i>`` and ``<key>/w<i>/more<j>``, with
  ``<key>`` e.g. ``estimate``, ``optimize``, ``single/4096MB``, ``co03/2048MB/32``). Its MST and each
  test's verdict are recomputed with the estimator's own rule (``streambed.planner.estimator.verdict``) and the
  campaign's timing, the windows of a test observed longer (``more``) joined as the estimator joins them.
* ``measure``: a measure campaign's configuration at its list of rates (``measure/<MB>/<config>/<i>@<rate>``).
* ``validate``: one validation run at one multiple of the rate (``validate/<m>x``), its judged windows.

Warm-up steps hold no measurement (only the achieved rate that seeds the search) and are not windows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from streambed.checks import Parser
from streambed.errors import UserError
from streambed.planner.estimator import TIMINGS, sustained_rate, verdict
from streambed.ledger import Ledger, read_campaign
from streambed.model import Measurement
from streambed_spark.session import DEFAULT_MASTER, SparkSettings

OPTION = "--campaign-dir"

# -- settings ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnalyticsSettings:
    """What the job reads and writes; every default of the job is here."""

    campaign_dirs: tuple[Path, ...]
    """Campaign directories or ledger files; the same ledger given twice is read once."""
    out: Path
    """Output directory: one subdirectory per table (Parquet) and summary.json. On a standalone cluster
    it must be storage the driver and every worker see at the same path (a shared mount)."""
    spark: SparkSettings = field(default_factory=lambda: spark_settings(None))
    files_per_table: int = 1
    """Parquet files per table. A thousand campaigns of a few hundred windows make a few MB: one file
    each keeps readers (reports, scripts, learned models) simple."""


APP_NAME = "streambed-analytics"


def spark_settings(master: str | None) -> SparkSettings:
    """The job's Spark settings: ``master`` when given, else SparkSettings' default
    ($STREAMBED_SPARK_MASTER, else local[2])."""
    return SparkSettings(master=master, app_name=APP_NAME) if master else SparkSettings(app_name=APP_NAME)


P50, P95 = 0.5, 0.95
"""The percentiles named p50 and p95 in the tables (exact, linearly interpolated between windows)."""


# -- the tables' columns ------------------------------------------------------------------------------------------

WINDOW_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("campaign", "string", "the campaign directory (absolute path); with run_key it names a run"),
    ("campaign_kind", "string", "estimate, optimize, explore, plan, measure or validate"),
    ("query", "string", "the query the campaign measured (q1, q5, ...)"),
    ("testbed", "string", "sim or flink"),
    ("run_key", "string", "the run within the campaign: estimator key (estimate, single/4096MB, co03/2048MB/32, "
                          "...), measure/<MB>MB/<configuration> or validate/<m>x"),
    ("run_kind", "string", "estimator (a dichotomous search), measure (a list of rates) or validate (a run at a "
                           "multiple of the planned rate)"),
    ("step_key", "string", "the ledger step holding the window"),
    ("step_seq", "long", "the step's completion order in the ledger"),
    ("window", "int", "the window's index within its run, in the order measured, from 0"),
    ("test", "int", "estimator: the search iteration i (step w<i>); measure: the rate's index; validate: 0"),
    ("part", "int", "estimator: 0 for w<i>, j+1 for w<i>/more<j> (the test observed longer); validate: the judged "
                    "window's index; measure: 0"),
    ("memory_mb", "int", "memory per task slot, MB (null when the ledger does not say)"),
    ("slots", "int", "task slots of the configuration: the sum of the operators' parallelisms, sources excluded"),
    ("configuration", "string", "the configuration as JSON {operator: parallelism}, in the query's operator order"),
    ("target_rate", "double", "events/s the source was asked to emit"),
    ("achieved_rate", "double", "events/s the source emitted"),
    ("ratio", "double", "achieved_rate / target_rate (null when the target is 0)"),
    ("achieved_cv", "double", "coefficient of variation of the per-sample achieved rate within the window"),
    ("start", "double", "window start, testbed seconds"),
    ("end", "double", "window end, testbed seconds"),
    ("duration_s", "double", "end - start, seconds"),
    ("pending_start", "double", "records pending at the source (not yet read) at the start"),
    ("pending_end", "double", "records pending at the source at the end"),
    ("pending_slope", "double", "least-squares slope of pending records over the window, records/s (> 0: the job "
                                "falls behind)"),
    ("pending_growth", "double", "pending_slope / target_rate: the share of the offer left behind per second "
                                 "(validation's judge, null when the target is 0)"),
    ("source_saturated", "boolean", "the source's own capacity, not the job, limited emission: the window says "
                                    "nothing about the job's capacity"),
    ("sustained", "boolean", "estimator runs: the estimator's verdict on the test this window belongs to "
                             "(recomputed); null for other runs, an undecided test, or an unknown timing"),
    ("run_mst", "double", "estimator runs: the run's MST, events/s (0 when no test was sustained); null otherwise"),
    ("run_verdict", "string", "validate runs: the recorded verdict (sustained, unstable, not-sustained, "
                              "source-limited); null otherwise"),
    ("operators", "int", "operators measured in the window (rows of operators_windows)"),
)
"""windows: one row per observation window of every campaign read."""

OPERATOR_WINDOW_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("campaign", "string", "as in windows"),
    ("run_key", "string", "as in windows"),
    ("window", "int", "as in windows: (campaign, run_key, window) names the window"),
    ("operator_index", "int", "the operator's position in the query, from 0"),
    ("operator", "string", "the operator (Calc#1, GroupWindowAggregate#2, ...)"),
    ("parallelism", "int", "its tasks"),
    ("busyness", "double", "mean over its tasks of the fraction of time processing (busyTimeMsPerSecond / 1000)"),
    ("busyness_max", "double", "the busiest task's busyness"),
    ("input_rate", "double", "records/s into the operator, summed over its tasks"),
    ("output_rate", "double", "records/s out of the operator, summed over its tasks"),
    ("backpressure", "double", "mean over its tasks of the fraction of time back-pressured"),
)
"""operators_windows: one row per operator of every window."""

RUN_KEYS = ("campaign", "campaign_kind", "query", "testbed", "run_key", "run_kind", "memory_mb", "slots",
            "configuration", "run_mst", "run_verdict")
"""The columns of windows that are the same for every window of a run."""

RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("campaign", "as in windows"),
    ("campaign_kind", "as in windows"),
    ("query", "as in windows"),
    ("testbed", "as in windows"),
    ("run_key", "as in windows"),
    ("run_kind", "as in windows"),
    ("memory_mb", "memory per task slot, MB"),
    ("slots", "task slots of the configuration"),
    ("configuration", "JSON {operator: parallelism}"),
    ("windows", "observation windows of the run"),
    ("tests", "distinct tests (estimator: search iterations; measure: rates; validate: 1)"),
    ("sustained_tests", "estimator runs: tests the estimator's rule judged sustained"),
    ("mst", "estimator runs: maximum sustainable throughput, events/s, recomputed from the windows with the "
            "estimator's rule and the campaign's timing (0: nothing sustained); null for other runs"),
    ("verdict", "validate runs: the recorded verdict; null otherwise"),
    ("target_rate_min", "lowest rate asked, events/s"),
    ("target_rate_max", "highest rate asked, events/s"),
    ("achieved_rate_max", "highest rate achieved in a window, events/s"),
    ("ratio_p50", "median over the windows of achieved/target"),
    ("ratio_min", "lowest achieved/target of a window"),
    ("ratio_max", "highest achieved/target of a window"),
    ("ratio_stddev", "sample standard deviation of achieved/target over the windows (null with one window)"),
    ("pending_slope_p50", "median over the windows of the pending-records slope, records/s"),
    ("pending_slope_max", "largest pending-records slope of a window, records/s"),
    ("pending_growth_max", "largest pending_growth of a window (share of the offer left behind per second)"),
    ("source_saturated_windows", "windows the source, not the job, limited"),
    ("start", "first window's start, testbed seconds"),
    ("end", "last window's end, testbed seconds"),
)
"""runs: one row per run (campaign, run_key)."""

OPERATOR_COLUMNS: tuple[tuple[str, str], ...] = (
    ("campaign", "as in runs"),
    ("run_key", "as in runs: (campaign, run_key) joins runs"),
    ("query", "as in runs"),
    ("memory_mb", "as in runs"),
    ("slots", "as in runs"),
    ("operator_index", "the operator's position in the query, from 0"),
    ("operator", "the operator"),
    ("parallelism", "its tasks in this run"),
    ("windows", "windows of the run that measured the operator"),
    ("busyness_p50", "median over the run's windows of the operator's mean task busyness"),
    ("busyness_p95", "95th percentile over the run's windows of the operator's mean task busyness"),
    ("busyness_max", "highest mean task busyness of a window"),
    ("task_busyness_max", "highest busyness of its busiest task in a window (a keyed operator is limited by it)"),
    ("input_rate_p50", "median over the windows of records/s into the operator"),
    ("output_rate_p50", "median over the windows of records/s out of the operator"),
    ("backpressure_p50", "median over the windows of the back-pressured share of time"),
    ("backpressure_max", "highest back-pressured share of time in a window"),
)
"""operators: one row per run and operator."""

TABLES = ("windows", "operators_windows", "runs", "operators")
"""The tables written, one subdirectory of --out each."""

SUMMARY = "summary.json"

ORDER = {"windows": ("campaign", "run_key", "window"),
         "operators_windows": ("campaign", "run_key", "window", "operator_index"),
         "runs": ("campaign", "start", "run_key"),
         "operators": ("campaign", "run_key", "operator_index")}
"""The row order of each table's files (within each file when there are several)."""

COLUMN_DOCS: dict[str, dict[str, str]] = {
    "windows": {n: d for n, _, d in WINDOW_COLUMNS},
    "operators_windows": {n: d for n, _, d in OPERATOR_WINDOW_COLUMNS},
    "runs": dict(RUN_COLUMNS),
    "operators": dict(OPERATOR_COLUMNS),
}
"""What each column of each table means (also in the Parquet schema: the field's ``comment``)."""


# -- reading the ledgers (pure Python, no Spark) ---------------------------------------------------------------------

@dataclass
class LedgerRows:
    """The flat rows of the campaigns read: dicts keyed by the column names of WINDOW_COLUMNS and
    OPERATOR_WINDOW_COLUMNS, and one summary per campaign."""

    windows: list[dict] = field(default_factory=list)
    operators: list[dict] = field(default_factory=list)
    campaigns: list[dict] = field(default_factory=list)


_ESTIMATOR_STEP = re.compile(r"^(?P<run>.+)/w(?P<test>\d+)(?:/more(?P<more>\d+))?$")
_MEASURE_STEP = re.compile(r"^(?P<run>.+)/(?P<test>\d+)@[^/]*$")
_MEMORY_IN_KEY = re.compile(r"(?:^|/)(\d+)MB(?:/|$)")


def _ledger_path(given: Path | str) -> Path:
    """The ledger file of a campaign directory (or the file itself); UserError naming the option."""
    p = Path(given)
    db = p / Ledger.FILENAME if p.is_dir() else p
    if not p.exists():
        raise UserError(f"{OPTION} {given}: no such file or directory")
    if not db.is_file():
        raise UserError(f"{OPTION} {given}: no campaign ledger ({Ledger.FILENAME}) there; give a directory a "
                        f"campaign (estimate, optimize, explore, plan, measure, validate) wrote")
    return db


def _decode(given: Path | str, db: Path, what: str, text: Any) -> dict:
    """A stored row's JSON object; UserError naming the option, the value and the row when it is not one."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        data, reason = None, f"is not JSON ({exc})"
    else:
        reason = f"holds a {type(data).__name__}, not an object"
    if not isinstance(data, dict):
        raise UserError(f"{OPTION} {given}: damaged ledger {db}: {what} {reason}; see streambed ledger verify "
                        f"--campaign-dir {db.parent}")
    return data


def _read_ledger(given: Path | str) -> tuple[Path, str, dict, list[tuple[int, str, dict]], list[dict]]:
    """(ledger file, kind, params, steps (seq, key, data) in completion order, run-started events) of one
    campaign, read only; UserError naming the option and the value when it is missing or damaged."""
    db = _ledger_path(given)
    try:
        campaign = read_campaign(db)  # the ledger's own checks: ours, schema version, SQLite's quick_check
    except UserError as exc:
        raise UserError(f"{OPTION} {given}: {exc}") from None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise UserError(f"{OPTION} {given}: cannot open the ledger {db} ({exc})") from None
    try:
        # One read transaction for steps and events: a campaign writing meanwhile is seen at one instant.
        conn.execute("BEGIN")
        steps = conn.execute("SELECT seq, key, data FROM steps ORDER BY seq").fetchall()
        events = conn.execute("SELECT seq, data FROM events WHERE kind = 'run-started' ORDER BY seq").fetchall()
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise UserError(f"{OPTION} {given}: damaged ledger {db} ({exc}); see streambed ledger verify") from None
    finally:
        conn.close()
    return (db, campaign.kind, campaign.params,
            [(seq, key, _decode(given, db, f"step {key!r}", data)) for seq, key, data in steps],
            [_decode(given, db, f"event {seq}", data) for seq, data in events])


def _measurement(given: Path | str, key: str, d: Any) -> Measurement:
    try:
        return Measurement.from_dict(d)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"{OPTION} {given}: step {key!r} holds no readable measurement ({type(exc).__name__}: "
                        f"{exc}); see streambed ledger verify") from None


WindowOfStep = tuple[str, str, int, int, Measurement, str | None]
"""(run kind, run key, test, part, measurement, run verdict)"""


def _windows_of_step(given: Path | str, key: str, data: dict) -> list[WindowOfStep]:
    """(run kind, run key, test, part, measurement, run verdict) of each window a step holds; none for
    steps without a measurement (warm-ups). The step's content decides, its key only names the run."""
    if isinstance(data.get("measurement"), Mapping):  # a test of the Capacity Estimator
        m = _ESTIMATOR_STEP.match(key)
        run, test, part = (m["run"], int(m["test"]), 0 if m["more"] is None else int(m["more"]) + 1) if m \
            else (key, 0, 0)
        return [("estimator", run, test, part, _measurement(given, key, data["measurement"]), None)]
    if isinstance(data.get("windows"), list) and "multiplier" in data:  # a validation run
        verdict_ = data.get("verdict")
        return [("validate", key, 0, j, _measurement(given, f"{key} window {j}", w),
                 verdict_ if isinstance(verdict_, str) else None) for j, w in enumerate(data["windows"])]
    if "target_rate" in data and "achieved_rate" in data:  # a measure campaign's window: the measurement itself
        m = _MEASURE_STEP.match(key)
        run, test = (m["run"], int(m["test"])) if m else (key, 0)
        return [("measure", run, test, 0, _measurement(given, key, data), None)]
    return []


def _estimator_verdicts(tests: dict[int, list[Measurement]],
                        timing_name: Any) -> tuple[dict[int, bool | None], float | None]:
    """Each test's verdict and the run's MST, as the estimator reached them (estimator.estimate): a test
    whose verdict is None is joined with its next longer observation until it is decided. (None, None)
    for every test when the campaign's timing is not one this StreamBed knows."""
    timing = TIMINGS.get(timing_name) if isinstance(timing_name, str) else None
    if timing is None:
        return {i: None for i in tests}, None
    verdicts, mst = {}, 0.0
    for i, parts in sorted(tests.items()):
        m, v = parts[0], verdict(parts[0], timing)
        for later in parts[1:]:
            if v is not None:
                break
            m = m.then(later)
            v = verdict(m, timing)
        verdicts[i] = v
        if v:
            # The rate asked is the test's first window's target (the join keeps it up to rounding).
            mst = max(mst, sustained_rate(parts[0].target_rate, m))
    return verdicts, mst


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def read_ledger(given: Path | str) -> tuple[list[dict], list[dict], dict]:
    """The window rows, operator rows and summary of one campaign (see read_ledgers)."""
    db, kind, params, steps, started = _read_ledger(given)
    campaign = str(db.parent.resolve())
    by_key = {}  # run key -> the run-started event of its first job (a restarted job runs the same configuration)
    for e in started:
        if isinstance(e.get("key"), str):
            by_key.setdefault(e["key"], e)

    runs: dict[str, list] = {}  # run key -> [(seq, step key, kind, test, part, measurement, verdict)], in order
    skipped = 0
    for seq, key, data in steps:
        found = _windows_of_step(given, key, data)
        skipped += not found
        for run_kind, run, test, part, m, v in found:
            runs.setdefault(run, []).append((seq, key, run_kind, test, part, m, v))

    windows, operators = [], []
    for run, items in runs.items():
        run_kind = items[0][2]
        event = by_key.get(run, {})
        config = _configuration(event.get("configuration"))
        if config is None and run_kind != "estimator":
            config = _configuration(params.get("configuration"))  # measure and validate: the one of params
        if config is None:  # the operators' parallelism as the window measured it
            config = {o.operator: o.parallelism for o in items[0][5].operators}
        memory = event.get("memory_mb")
        if not isinstance(memory, int):
            in_key = _MEMORY_IN_KEY.search(run)
            memory = int(in_key[1]) if in_key else params.get("memory_mb")
        memory = memory if isinstance(memory, int) and not isinstance(memory, bool) else None
        config_json = json.dumps(config)
        slots = sum(config.values())

        verdicts, mst = {}, None
        if run_kind == "estimator":
            tests: dict[int, list[Measurement]] = {}
            for _, _, _, test, part, m, _ in sorted(items, key=lambda x: (x[3], x[4])):
                tests.setdefault(test, []).append(m)
            verdicts, mst = _estimator_verdicts(tests, params.get("timing"))

        for w, (seq, key, _, test, part, m, run_verdict) in enumerate(items):
            windows.append({
                "campaign": campaign, "campaign_kind": kind, "query": _text(params.get("query")),
                "testbed": _text(params.get("testbed")), "run_key": run, "run_kind": run_kind, "step_key": key,
                "step_seq": seq, "window": w, "test": test, "part": part, "memory_mb": memory, "slots": slots,
                "configuration": config_json, "target_rate": m.target_rate, "achieved_rate": m.achieved_rate,
                "ratio": _ratio(m.achieved_rate, m.target_rate), "achieved_cv": m.achieved_cv, "start": m.start,
                "end": m.end, "duration_s": m.end - m.start, "pending_start": m.pending_start,
                "pending_end": m.pending_end, "pending_slope": m.pending_slope,
                "pending_growth": _ratio(m.pending_slope, m.target_rate), "source_saturated": m.source_saturated,
                "sustained": verdicts.get(test), "run_mst": mst, "run_verdict": run_verdict,
                "operators": len(m.operators)})
            for i, o in enumerate(m.operators):
                operators.append({
                    "campaign": campaign, "run_key": run, "window": w, "operator_index": i, "operator": o.operator,
                    "parallelism": o.parallelism, "busyness": o.busyness, "busyness_max": o.busyness_max,
                    "input_rate": o.input_rate, "output_rate": o.output_rate, "backpressure": o.backpressure})
    summary = {"campaign": campaign, "ledger": str(db), "kind": kind, "query": _text(params.get("query")),
               "runs": len(runs), "windows": sum(len(v) for v in runs.values()), "steps": len(steps),
               "steps_without_windows": skipped}
    timing = params.get("timing")
    if any(r[0][2] == "estimator" for r in runs.values()) and not (isinstance(timing, str) and timing in TIMINGS):
        summary["note"] = (f"timing {params.get('timing')!r} is not one this StreamBed knows: no MST or verdict "
                           f"recomputed")
    return windows, operators, summary


def _configuration(c: Any) -> dict[str, int] | None:
    """A recorded configuration {operator: parallelism}, or None when it is not one."""
    if not isinstance(c, Mapping) or not c:
        return None
    if not all(isinstance(p, int) and not isinstance(p, bool) for p in c.values()):
        return None
    return {str(op): p for op, p in c.items()}


def _text(v: Any) -> str | None:
    return None if v is None else str(v)


def read_ledgers(paths: Iterable[Path | str], progress: Callable[[str], None] = lambda path: None) -> LedgerRows:
    """Flatten the campaigns at ``paths`` (directories or ledger files) into rows, in the order given; a
    ledger given twice is read once. Every campaign is read before any row is used: a bad one is refused
    (UserError naming the option and the value) before Spark starts."""
    paths = list(paths)
    if not paths:
        raise UserError(f"{OPTION}: give at least one campaign directory (repeat {OPTION} for more)")
    rows, seen = LedgerRows(), set()
    for given in paths:
        db = _ledger_path(given).resolve()
        if db in seen:
            continue
        seen.add(db)
        windows, operators, summary = read_ledger(given)
        rows.windows += windows
        rows.operators += operators
        rows.campaigns.append(summary)
        progress(str(given))
    return rows


# -- Spark ---------------------------------------------------------------------------------------------------------

def schema(columns: Sequence[tuple[str, str, str]]):
    """The StructType of a flat table, each field's meaning in its ``comment`` metadata."""
    from pyspark.sql import types as T

    kinds = {"string": T.StringType, "int": T.IntegerType, "long": T.LongType, "double": T.DoubleType,
             "boolean": T.BooleanType}
    return T.StructType([T.StructField(n, kinds[t](), True, {"comment": d}) for n, t, d in columns])


def frames(spark, rows: LedgerRows):
    """(windows, operators_windows) DataFrames of the rows, with explicit schemas."""
    def tuples(dicts: list[dict], columns) -> list[tuple]:
        names = [n for n, _, _ in columns]
        return [tuple(d[n] for n in names) for d in dicts]

    windows = spark.createDataFrame(tuples(rows.windows, WINDOW_COLUMNS), schema(WINDOW_COLUMNS))
    operators = spark.createDataFrame(tuples(rows.operators, OPERATOR_WINDOW_COLUMNS), schema(OPERATOR_WINDOW_COLUMNS))
    return windows, operators


def _documented(df, docs: Mapping[str, str]):
    """``df`` with its columns in the documented order, each carrying its meaning as metadata."""
    from pyspark.sql import functions as F

    return df.select(*[F.col(c).alias(c, metadata={"comment": d}) for c, d in docs.items()])


def summarize(spark, windows_df, operators_df) -> dict:
    """The tables: ``windows`` and ``operators_windows`` as given, ``runs`` and ``operators`` aggregated
    (columns: COLUMN_DOCS); lazy, nothing runs until they are written. Percentiles are exact (Spark's
    ``percentile``: linear interpolation between the windows' values), not approximate: a run has tens
    of windows, where an approximation saves nothing and is less right. (``spark`` is not read here; it
    keeps the signature of the jobs, which take the session they run on.)"""
    from pyspark.sql import functions as F

    p50, p95 = P50, P95
    runs = (windows_df.groupBy(*RUN_KEYS).agg(
        F.count(F.lit(1)).cast("int").alias("windows"),
        F.countDistinct("test").cast("int").alias("tests"),
        F.countDistinct(F.when(F.col("sustained"), F.col("test"))).cast("int").alias("sustained_tests"),
        F.min("target_rate").alias("target_rate_min"),
        F.max("target_rate").alias("target_rate_max"),
        F.max("achieved_rate").alias("achieved_rate_max"),
        F.percentile("ratio", p50).alias("ratio_p50"),
        F.min("ratio").alias("ratio_min"),
        F.max("ratio").alias("ratio_max"),
        F.stddev_samp("ratio").alias("ratio_stddev"),
        F.percentile("pending_slope", p50).alias("pending_slope_p50"),
        F.max("pending_slope").alias("pending_slope_max"),
        F.max("pending_growth").alias("pending_growth_max"),
        F.sum(F.col("source_saturated").cast("int")).cast("int").alias("source_saturated_windows"),
        F.min("start").alias("start"),
        F.max("end").alias("end"))
        .withColumnRenamed("run_mst", "mst").withColumnRenamed("run_verdict", "verdict"))

    run_of = windows_df.select("campaign", "run_key", "window", "query", "memory_mb", "slots")
    operators = (operators_df.join(run_of, ["campaign", "run_key", "window"])
                 .groupBy("campaign", "run_key", "query", "memory_mb", "slots", "operator_index", "operator",
                          "parallelism")
                 .agg(F.count(F.lit(1)).cast("int").alias("windows"),
                      F.percentile("busyness", [p50, p95]).alias("_busyness"),
                      F.max("busyness").alias("busyness_max"),
                      F.max("busyness_max").alias("task_busyness_max"),
                      F.percentile("input_rate", p50).alias("input_rate_p50"),
                      F.percentile("output_rate", p50).alias("output_rate_p50"),
                      F.percentile("backpressure", p50).alias("backpressure_p50"),
                      F.max("backpressure").alias("backpressure_max"))
                 .withColumn("busyness_p50", F.col("_busyness")[0])
                 .withColumn("busyness_p95", F.col("_busyness")[1]))
    return {"windows": _documented(windows_df, COLUMN_DOCS["windows"]),
            "operators_windows": _documented(operators_df, COLUMN_DOCS["operators_windows"]),
            "runs": _documented(runs, COLUMN_DOCS["runs"]),
            "operators": _documented(operators, COLUMN_DOCS["operators"])}


def out_dir(out: Path) -> Path:
    """``out`` created if need be, absolute; UserError naming --out when it cannot be a directory of tables."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: a file, not a directory; give --out DIRECTORY")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {out}: cannot create the directory ({exc.strerror or exc})") from None
    return out.resolve()


def write(spark, tables: Mapping[str, Any], out: Path, files_per_table: int = 1,
          progress: Callable[[str], None] = lambda table: None) -> dict[str, int]:
    """Write each table as Parquet into ``out/<table>``, whole or not at all; the rows of each table as
    read back. Tables are written into a staging directory of ``out`` and renamed into place at the
    end, so that a failed job leaves the previous tables, never a mix (as the data lake does)."""
    out = out_dir(out)
    staging = out / f".staging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    counts = {}
    try:
        for name, df in tables.items():
            # A file: URI, so that a cluster whose default file system is HDFS still writes to --out (not
            # Path.as_uri: Hadoop would take its %-escapes for part of the name).
            target = f"file://{staging / name}"
            try:
                # Sorted within the files, not globally: a global sort costs a sampling job and a shuffle,
                # and with one file per table (the default) it gives the same order.
                ordered = df.coalesce(files_per_table).sortWithinPartitions(*ORDER.get(name, ()))
                ordered.write.mode("overwrite").parquet(target)
                counts[name] = spark.read.parquet(target).count()
            except Exception as exc:  # Spark's own errors: one line, naming the option
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise UserError(f"--out {out}: Spark could not write the {name} table ({first[:300]})") from None
            progress(name)
        # The old summary goes first: a summary.json present always describes the tables beside it.
        (out / SUMMARY).unlink(missing_ok=True)
        for name in tables:
            shutil.rmtree(out / name, ignore_errors=True)
            os.replace(staging / name, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return counts


def run(spark, rows: LedgerRows, settings: AnalyticsSettings,
        progress: Callable[[str], None] = lambda table: None) -> dict:
    """Summarize ``rows`` on ``spark``, write the tables and summary.json into ``settings.out``; the summary."""
    windows, operators = frames(spark, rows)
    tables = summarize(spark, windows, operators)
    counts = write(spark, tables, settings.out, settings.files_per_table, progress)
    out = settings.out.resolve()
    summary = {
        "out": str(out),
        "campaigns": rows.campaigns,
        "tables": {name: {"rows": counts[name], "path": str(out / name),
                          "columns": list(COLUMN_DOCS[name])} for name in tables},
        "spark": {"master": spark.sparkContext.master, "version": spark.version},
    }
    # Written last, atomically: a summary.json present means the tables beside it are complete.
    tmp = out / f".{SUMMARY}.{os.getpid()}"
    tmp.write_text(json.dumps(summary, indent=2, default=_json_default) + "\n")
    os.replace(tmp, out / SUMMARY)
    return summary


def _json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    raise TypeError(type(o).__name__)


# -- spark-submit ----------------------------------------------------------------------------------------------------

def _submitted_master() -> str | None:
    """The master spark-submit was given, when this process runs under spark-submit (which starts the
    JVM first and tells the Python driver its port): the session must not replace it with a default."""
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to spark-submit's JVM: SparkConf() then reads its settings
    return SparkConf().get("spark.master", None)


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit spark/streambed_spark/analytics.py --campaign-dir A --campaign-dir B --out DIR
    [--master URL]``: the summary as JSON on stdout; bad input is one line on stderr and exit status 2."""
    p = Parser(prog="analytics.py", description="Summary tables (Parquet) of StreamBed campaigns' ledgers.")
    p.add_argument("--campaign-dir", action="extend", nargs="+", default=[], metavar="DIR",
                   help="campaign directories (or their ledger.sqlite), e.g. campaigns/*; may be repeated")
    p.add_argument("--out", type=Path, required=True, help="directory for the tables and summary.json")
    p.add_argument("--master", help=f"Spark master (default: spark-submit's --master, else "
                                    f"$STREAMBED_SPARK_MASTER, else {DEFAULT_MASTER})")
    try:
        args = p.parse_args(argv)
        rows = read_ledgers(args.campaign_dir)
        out_dir(args.out)  # refused before Spark starts
        master = args.master or _submitted_master()
        settings = AnalyticsSettings(tuple(Path(d) for d in args.campaign_dir), args.out, spark_settings(master))
        from streambed_spark.session import session

        summary = run(session(settings.spark), rows, settings)
    except UserError as exc:
        print(f"analytics: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(summary, indent=2, default=_json_default) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

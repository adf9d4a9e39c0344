"""The data lake: data sets of events at rest, written in event order (paper VII-VIII).

Each data set is written whole or not at all: into a staging directory of the lake, renamed into
place at the end, so that a killed job never leaves a data set that a replay would run out of. Part
files are renamed ``part-00000.json``, ``part-00001.json``, ... so that name order is event order (the
Flink job replays them in name order); the manifest (``dataset.json``) is written last.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.utils import AnalysisException

from streambed import dataset as ds
from streambed.errors import UserError
from streambed.files import fsync_dir

from . import nexmark
from .session import failure_line

FORMATS = ("json", "parquet")
CHUNK_EVENTS = 1_000_000
"""Events generated per Spark job: progress is shown per chunk, and each chunk's files are renamed
into their place in event order before the next begins."""

Progress = Callable[[int, int], None]
"""(events written, events in all)"""



class _Staging:
    """A data set being written: part files numbered in event order, renamed into place at the end."""

    def __init__(self, lake: Path, name: str, formats: tuple[str, ...]):
        self.lake, self.name, self.formats = lake, name, formats
        self.dir = lake / f".{name}.staging-{os.getpid()}"
        shutil.rmtree(self.dir, ignore_errors=True)
        for f in formats:
            (self.dir / f).mkdir(parents=True)
        # A cluster's shared lake is group-writable (the spark role's 2775): so is the staging tree, or the
        # executors (the Spark service user) could not write into the directories the driver made.
        mode = lake.stat().st_mode & 0o7777
        if mode & 0o020:
            for d in (self.dir, *(self.dir / f for f in formats)):
                d.chmod(mode)
        self.files = {f: 0 for f in formats}

    def write(self, df: DataFrame) -> None:
        """Append ``df``'s partitions, in partition order, after the files written so far."""
        for f in self.formats:
            out = self.dir / f".spark-{f}"
            writer = df.write.mode("overwrite")
            if f == "json":
                writer.json(str(out))
            else:
                writer.option("compression", "snappy").parquet(str(out))
            # Spark names files part-<partition>-<uuid>...: name order is partition order.
            for part in sorted(out.glob(f"part-*.{f}")):
                part.rename(self.dir / f / f"part-{self.files[f]:05d}.{f}")
                self.files[f] += 1
            shutil.rmtree(out)

    def commit(self, manifest: ds.DataSet) -> ds.DataSet:
        formats = {f: {"files": self.files[f], "bytes": sum(p.stat().st_size for p in (self.dir / f).iterdir())}
                   for f in self.formats}
        final = ds.DataSet(manifest.name, self.lake / self.name, manifest.events, manifest.kinds, formats,
                           manifest.origin)
        (self.dir / ds.MANIFEST).write_text(json.dumps(final.to_dict(), indent=2) + "\n")
        os.replace(self.dir, self.lake / self.name)
        fsync_dir(self.lake)
        return final

    def abort(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _existing(lake: Path, name: str, origin: dict) -> ds.DataSet | None:
    """The data set ``name`` if the lake holds it with the same origin (a rerun); UserError if it
    holds a different one under that name."""
    path = lake / name
    if not path.exists():
        return None
    try:
        current = ds.load(str(path), lake)
    except UserError:
        raise UserError(f"--name {name}: {path} exists and is not a complete data set; remove it or choose "
                        f"another --name") from None
    if current.origin != origin:
        raise UserError(f"--name {name}: the lake already holds a different data set {name} "
                        f"({json.dumps(current.origin, sort_keys=True)}); choose another --name or remove {path}")
    return current


def _kinds_generated(n: int) -> dict[str, int]:
    """Events of each kind among the first ``n`` (kind = seq mod 50), without reading them."""
    def below(k: int) -> int:  # events among the first n with seq mod TOTAL < k
        full, rest = divmod(n, nexmark.TOTAL_PROPORTION)
        return full * k + min(rest, k)
    p, a = nexmark.PERSON_PROPORTION, nexmark.AUCTION_PROPORTION
    return {"person": below(p), "auction": below(p + a) - below(p), "bid": n - below(p + a)}


def generate(spark: SparkSession, spec: nexmark.StreamSpec, lake: Path, name: str,
             formats: tuple[str, ...] = FORMATS, chunk_events: int = CHUNK_EVENTS, partitions: int | None = None,
             progress: Progress = lambda done, total: None) -> tuple[ds.DataSet, bool]:
    """Generate the stream ``spec`` into ``lake/name``; (the data set, whether it was written now)."""
    origin = {"generator": "nexmark", "seed": spec.seed, "rate": spec.rate, "start_ms": spec.start_ms,
              "events": spec.events}
    lake.mkdir(parents=True, exist_ok=True)
    existing = _existing(lake, name, origin)
    if existing is not None and set(formats) <= set(existing.formats):
        return existing, False
    staging = _Staging(lake, name, formats)
    previous = spark.conf.get("spark.sql.codegen.wholeStage")
    # One whole-stage method for the three event structs is 46 KB of bytecode, which the JVM will not
    # compile: generation ran at 90 k events/s with it and 257 k without (bench/datagen_rate.py).
    spark.conf.set("spark.sql.codegen.wholeStage", "false")
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MILLIS")
    try:
        if existing is not None:  # a rerun asking for a format more: start over, the same bytes come out
            shutil.rmtree(existing.path)
        progress(0, spec.events)
        for start in range(0, spec.events, chunk_events):
            end = min(spec.events, start + chunk_events)
            staging.write(nexmark.events(spark, spec, start, end, partitions))
            progress(end, spec.events)
        return staging.commit(ds.DataSet(name, lake / name, spec.events, _kinds_generated(spec.events), {}, origin)), True
    except (Py4JError, PySparkException) as e:  # the job failed on the cluster: one line, not its stack trace
        staging.abort()
        raise UserError(f"data generate: the Spark job writing {lake / name} failed: {failure_line(str(e))}") from None
    except BaseException:
        staging.abort()
        raise
    finally:
        spark.conf.set("spark.sql.codegen.wholeStage", previous)


# -- a user's own data ---------------------------------------------------------------------------------------------

def _read(spark: SparkSession, source: Path) -> DataFrame:
    files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file()
                                                     and not p.name.startswith((".", "_")))
    if not files:
        raise UserError(f"--path: {source} holds no files")
    suffixes = {p.suffix.lower() for p in files}
    try:
        if suffixes <= {".parquet"}:
            return spark.read.parquet(*map(str, files))
        if suffixes <= {".json", ".jsonl", ".ndjson"}:
            return spark.read.option("mode", "FAILFAST").json([str(f) for f in files])
    except AnalysisException as e:
        raise UserError(f"--path: {source}: Spark cannot read it ({str(e).splitlines()[0][:200]})") from None
    raise UserError(f"--path: expected JSON lines (.json, .jsonl, .ndjson) or Parquet (.parquet) files, "
                    f"got {', '.join(sorted(suffixes))}")


def _column(df: DataFrame, name: str) -> str | None:
    """The column of ``df`` named ``name``, case-insensitively."""
    return next((c for c in df.columns if c.lower() == name.lower()), None)


def _time_column(df: DataFrame, name: str) -> F.Column:
    c = _column(df, name)
    if c is None:
        raise UserError(f"--time-column: {name!r} is not a column of the data (columns: {', '.join(df.columns)})")
    t = dict(df.dtypes)[c]
    if t in ("bigint", "int", "double", "decimal"):
        return F.timestamp_millis(F.col(f"`{c}`").cast("long"))
    if t == "string":
        return F.expr(f"try_to_timestamp(`{c}`)")
    if t.startswith("timestamp") or t == "date":
        return F.col(f"`{c}`").cast("timestamp")
    raise UserError(f"--time-column {name}: expected a timestamp, epoch milliseconds or ISO-8601 text, got {t}")


def _flat(df: DataFrame, kind: str, time: F.Column) -> DataFrame:
    """A table of one kind's events (one column per field) in the datagen layout."""
    fields = _fields(kind)
    required = [n for n, _ in fields if n not in ("dateTime", "extra")]
    missing = [n for n in required if _column(df, n) is None]
    if missing:
        raise UserError(f"--kind {kind}: the data has no column {', '.join(missing)} (a {kind} needs "
                        f"{', '.join(n for n, _ in fields if n != 'extra')}; columns: {', '.join(df.columns)})")
    values = []
    for n, t in fields:
        if n == "dateTime":
            values.append(time.alias(n))
        elif n == "extra" and _column(df, n) is None:
            values.append(F.lit("").alias(n))
        else:
            values.append(F.expr(f"try_cast(`{_column(df, n)}` AS {t})").alias(n))
    struct = F.struct(*values)
    nulls = {k: F.lit(None).cast(nexmark.struct_type(k)) for k in nexmark.KINDS}
    return df.select(time.alias("_time"), F.lit(nexmark.KINDS[kind]).alias("event_type"),
                     *[(struct if k == kind else nulls[k]).alias(k) for k in nexmark.KINDS])


def _fields(kind: str) -> list[tuple[str, str]]:
    """(name, Spark SQL type) of each field of a kind, in the datagen table's order."""
    return [tuple(f.strip().split(" ", 1)) for f in nexmark.FIELDS[kind].split(",")]


def _nexmark(df: DataFrame) -> DataFrame:
    """Data already in the datagen layout (event_type and the person / auction / bid structs, the
    event time in each struct's dateTime). Structs are rebuilt field by field, by name: a reader
    that infers a schema orders fields alphabetically."""
    present = {k: _column(df, k) for k in nexmark.KINDS if _column(df, k) is not None}
    if not present:
        raise UserError("--path: the data has an event_type column but no person, auction or bid column")
    cols = [F.expr(f"try_cast(`{_column(df, 'event_type')}` AS INT)").alias("event_type")]
    times = []
    for k in nexmark.KINDS:
        if k not in present:
            cols.append(F.lit(None).cast(nexmark.struct_type(k)).alias(k))
            continue
        have = {n.lower(): n for n in df.schema[present[k]].dataType.fieldNames()}
        values = [(F.expr(f"try_cast(`{present[k]}`.`{have[n.lower()]}` AS {t})")
                   if n.lower() in have else F.lit(None).cast(t)).alias(n) for n, t in _fields(k)]
        cols.append(F.when(F.col(f"`{present[k]}`").isNotNull(), F.struct(*values)).alias(k))
        if "datetime" in have:
            times.append(F.expr(f"try_cast(`{present[k]}`.`{have['datetime']}` AS TIMESTAMP)"))
    return df.select(F.coalesce(*times).alias("_time") if times else F.lit(None).cast("timestamp").alias("_time"),
                     *cols)


def register(spark: SparkSession, source: Path, lake: Path, name: str, time_column: str = "dateTime",
             kind: str | None = None, formats: tuple[str, ...] = FORMATS) -> ds.DataSet:
    """A user's JSON lines or Parquet files as the data set ``lake/name``, sorted by event time.

    Either the datagen layout (an event_type column and person / auction / bid structs, the time in
    each struct's dateTime), or with ``kind`` a flat table of one kind's fields whose time is
    ``time_column``. Values that do not convert to a field's type are refused, with the field."""
    origin = {"registered": str(source.resolve()), "time_column": time_column, "kind": kind}
    lake.mkdir(parents=True, exist_ok=True)
    if (lake / name).exists():
        raise UserError(f"--name {name}: the lake already holds a data set {name}; choose another --name or "
                        f"remove {lake / name}")
    raw = _read(spark, source)
    if kind is not None:
        if kind not in nexmark.KINDS:
            raise UserError(f"--kind: expected one of {', '.join(nexmark.KINDS)}, got {kind!r}")
        events = _flat(raw, kind, _time_column(raw, time_column))
    elif _column(raw, "event_type") is not None:
        events = _nexmark(raw)
    else:
        raise UserError(f"--kind: the data has no event_type column, so say which kind of event each row is "
                        f"(--kind {'|'.join(nexmark.KINDS)}); columns: {', '.join(raw.columns)}")
    _check_values(events)
    # A stable order for equal times: the order the rows were read in.
    ordered = events.withColumn("_read", F.monotonically_increasing_id()).orderBy("_time", "_read")
    counts = {r["event_type"]: r["count"] for r in events.groupBy("event_type").count().collect()}
    staging = _Staging(lake, name, formats)
    try:
        staging.write(ordered.drop("_time", "_read"))
        kinds = {k: int(counts.get(i, 0)) for k, i in nexmark.KINDS.items()}
        return staging.commit(ds.DataSet(name, lake / name, sum(kinds.values()), kinds, {}, origin))
    except BaseException:
        staging.abort()
        raise


def _check_values(events: DataFrame) -> None:
    """One line for the first problem: rows without a time, unknown kinds, values of the wrong type."""
    checks = [F.sum(F.col("_time").isNull().cast("long")).alias("no time"),
              F.sum((~F.col("event_type").isin(0, 1, 2)).cast("long")).alias("event_type")]
    for k, i in nexmark.KINDS.items():
        for n, _ in _fields(k):
            if n != "extra":
                checks.append(F.sum(((F.col("event_type") == i) & F.col(f"{k}.{n}").isNull()).cast("long"))
                              .alias(f"{k}.{n}"))
    row = events.agg(*checks).first().asDict()
    if row["no time"]:
        raise UserError(f"--time-column: {row['no time']:,} rows have no event time that reads as a timestamp")
    if row["event_type"]:
        raise UserError(f"event_type: {row['event_type']:,} rows are not 0 (person), 1 (auction) or 2 (bid)")
    bad = [(c, n) for c, n in row.items() if c not in ("no time", "event_type") and n]
    if bad:
        c, n = bad[0]
        raise UserError(f"{c}: {n:,} events have no value of the field's type (expected {_field_type(c)})")


def _field_type(qualified: str) -> str:
    kind, name = qualified.split(".")
    return dict(_fields(kind))[name]

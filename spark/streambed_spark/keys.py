"""Key statistics of a query's keyed operators in a data set at rest (docs/data.md, "Key statistics").

For each keyed operator of the query whose key is a column of the data (model/keystats.QUERY_KEYS):
the records it receives (events of its input kinds, after the query's filter on them; both sides of
a join), counted per distinct key; from the counts, the number of distinct keys, the heaviest keys,
the sum of squared counts (the concentration) and the records per key group of Flink's own hash (and
per key hash, where the keys are few: keystats.HASHED_KEYS).

Spark counts the records per key; the driver hashes each distinct key with Flink's hash
(model/keystats.key_group, checked against Flink's classes) while it streams the counts back
(``toLocalIterator``, one partition at a time), so no StreamBed code runs on the executors and the
hash is written once. Written as Spark column expressions instead (Murmur3 in 16-bit halves), the
hash's ~100 chained steps took Spark's analyser 20-120 s to plan for ten rows on this loaded machine,
as one projection per step or as nested lambdas alike. The driver hashed 26,000 keys/s (one core,
load average 24 on 2 cores): a data set of 10^7 distinct keys costs minutes there.

Run from ``streambed data keys`` or ``spark-submit spark/streambed_spark/keys.py --query q5 --input
DIR`` (the packages installed, as ``make install`` does).
"""

from __future__ import annotations

import json
import sys
import time
from functools import reduce
from pathlib import Path
from typing import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from streambed import dataset as ds
from streambed.checks import Parser
from streambed.errors import UserError
from streambed.model import keystats
from streambed.model.keystats import DataKeyStatistics, KeyedOperator, KeyStatistics

from streambed_spark import nexmark
from streambed_spark.session import DEFAULT_MASTER, SparkSettings


# -- the job ---------------------------------------------------------------------------------------------------

def events(spark: SparkSession, d: ds.DataSet) -> DataFrame:
    """The data set's events: its Parquet files, else its JSON lines read with the datagen layout's schema."""
    if any((d.path / "parquet").glob("part-*.parquet")):
        return spark.read.parquet(str(d.path / "parquet"))
    schema = "event_type INT, " + ", ".join(f"{k} {nexmark.struct_type(k)}" for k in nexmark.KINDS)
    return spark.read.schema(schema).json(str(d.replay_dir))


def key_rows(events_df: DataFrame, op: KeyedOperator) -> DataFrame:
    """One row per record ``op`` receives, its key in columns k0, k1, ...: the events of each input kind,
    after that input's filter; a join's sides one after the other."""
    parts = []
    for side in op.sides:
        rows = events_df.where(F.col("event_type") == ds.KINDS.index(side.kind)).select(f"{side.kind}.*")
        if side.where:
            rows = rows.where(side.where)
        parts.append(rows.select(*[F.col(c).alias(f"k{i}") for i, c in enumerate(side.columns)]))
    return reduce(DataFrame.unionByName, parts)


def statistics(rows: DataFrame, op: KeyedOperator) -> KeyStatistics:
    """The key statistics of ``op`` from its key rows: records per key (Spark), then per key group."""
    keys = [c for c in rows.columns if c.startswith("k")]
    counts = rows.groupBy(*keys).agg(F.count(F.lit(1)).alias("n")).where(
        reduce(lambda a, b: a & b, [F.col(k).isNotNull() for k in keys]))
    counts = counts.persist()
    try:
        top = counts.orderBy(F.col("n").desc(), *keys).limit(keystats.TOP_KEYS).collect()
        total = counts.agg(F.sum("n").alias("records"), F.count(F.lit(1)).alias("keys"),
                           F.sum(F.col("n").cast("double") * F.col("n")).alias("squares")).collect()[0]
        groups = hashes = None
        if all(isinstance(rows.schema[k].dataType, (T.LongType, T.IntegerType)) for k in keys):
            groups, hashes = keystats.hashed_counts(
                ((keystats.key_hash(tuple(r[k] for k in keys)), r["n"]) for r in counts.toLocalIterator()),
                int(total["keys"]))
    finally:
        counts.unpersist()
    return KeyStatistics(op.operator, op.key, int(total["records"] or 0), int(total["keys"]),
                         float(total["squares"] or 0.0), tuple(int(r["n"]) for r in top),
                         tuple(",".join(str(r[k]) for k in keys) for r in top), groups, hashes)


def run(spark: SparkSession, d: ds.DataSet, query: str, operators: Sequence[KeyedOperator]) -> DataKeyStatistics:
    """The key statistics of ``operators`` (a query's, keystats.keyed_operators) in the data set ``d``."""
    missing = sorted({s.kind for op in operators for s in op.sides if d.kinds.get(s.kind, 0) == 0})
    if missing:
        raise UserError(f"--input {d.name}: query {query} keys {' and '.join(missing)} events, which the data set "
                        f"does not hold")
    start = time.monotonic()
    df = events(spark, d)
    stats = tuple(statistics(key_rows(df, op), op) for op in operators)
    return DataKeyStatistics(query, d.name, d.events, stats,
                             {"master": spark.sparkContext.master, "version": spark.version},
                             round(time.monotonic() - start, 3))


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit spark/streambed_spark/keys.py --query q5 --input DIR [--out FILE] [--master URL]``:
    the statistics as JSON (on stdout, or in --out); bad input is one line on stderr and exit status 2."""
    p = Parser(prog="keys.py", description="Key statistics of a query's keyed operators in a data set at rest.")
    p.add_argument("--query", required=True, help="the query, e.g. q5")
    p.add_argument("--input", required=True, help="the data set (name in --lake, or a path)")
    p.add_argument("--lake", type=Path, default=ds.DEFAULT_LAKE, help="the data lake directory")
    p.add_argument("--queries-dir", type=Path, default=ds.QUERIES_DIR, help="where the queries' SQL files are")
    p.add_argument("--out", type=Path, help="write the statistics to this file (default: stdout)")
    p.add_argument("--master", help=f"Spark master (default: $STREAMBED_SPARK_MASTER, else {DEFAULT_MASTER})")
    try:
        args = p.parse_args(argv)
        operators = keystats.keyed_operators(args.query, (q.stem for q in args.queries_dir.glob("*.sql")))
        d = ds.load(args.input, args.lake)
        from streambed_spark.session import session

        result = run(session(SparkSettings(master=args.master) if args.master else SparkSettings()), d,
                     args.query, operators)
    except UserError as exc:
        print(f"keys: error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        result.write(args.out)
    else:
        sys.stdout.write(json.dumps(result.to_dict(), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Key statistics of a query's keyed operators in a data set at rest (docs/data.md, "Key statistics").

For each keyed operator of the query whose key is a column of the data (model/keystats.QUERY_KEYS):
the records it receives (events of its input kinds, after the query's filter on them; both sides of
a join), counted per distinct key; from the counts, the number of distinct keys, the heaviest keys,
the sum of squared counts (the concentration) and the records per key group of Flink's own hash.

Flink's hash is written here as Spark column expressions (no Python UDF: the executors run no
StreamBed code, and Murmur3 on 64-bit integers wraps nowhere): 32-bit words held in BIGINT columns,
products split in 16-bit halves so that none exceeds 2^49. Each intermediate value is a column of
its own projection, so that an expression using a value twice does not copy its whole tree. The
pure Python version, checked against Flink's classes, is model/keystats.py; tests compare the two.

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

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from streambed import dataset as ds
from streambed.checks import Parser
from streambed.errors import UserError
from streambed.model import keystats
from streambed.model.keystats import DataKeyStatistics, KeyedOperator, KeyStatistics

from streambed_spark import nexmark
from streambed_spark.session import DEFAULT_MASTER, SparkSettings

M32 = 0xFFFFFFFF


# -- Flink's hash as column expressions ------------------------------------------------------------------------

class _Stages:
    """A DataFrame grown one computed column at a time (names _h0, _h1, ...)."""

    def __init__(self, df: DataFrame):
        self.df, self.n = df, 0

    def put(self, expr: Column) -> Column:
        name = f"_h{self.n}"
        self.n += 1
        self.df = self.df.withColumn(name, expr)
        return F.col(name)


def _mul(s: _Stages, a: Column, c: int) -> Column:
    """(a * c) mod 2^32 for a in [0, 2^32): c split into 16-bit halves, each product below 2^49."""
    lo, hi = c & 0xFFFF, c >> 16
    return s.put(((a * F.lit(lo)) + F.shiftleft((a * F.lit(hi)).bitwiseAND(F.lit(0xFFFF)), 16)).bitwiseAND(F.lit(M32)))


def _rotl(s: _Stages, x: Column, r: int) -> Column:
    return s.put(F.shiftleft(x, r).bitwiseAND(F.lit(M32)).bitwiseOR(F.shiftrightunsigned(x, 32 - r)))


def _mix_k1(s: _Stages, k: Column) -> Column:
    return _mul(s, _rotl(s, _mul(s, k, keystats.C1), 15), keystats.C2)


def _mix_h1(s: _Stages, h: Column, k: Column) -> Column:
    r = _rotl(s, s.put(h.bitwiseXOR(k)), 13)
    return s.put((r * F.lit(5) + F.lit(0xE6546B64)).bitwiseAND(F.lit(M32)))


def _fmix(s: _Stages, h: Column) -> Column:
    h = s.put(h.bitwiseXOR(F.shiftrightunsigned(h, 16)))
    h = _mul(s, h, 0x85EBCA6B)
    h = s.put(h.bitwiseXOR(F.shiftrightunsigned(h, 13)))
    h = _mul(s, h, 0xC2B2AE35)
    return s.put(h.bitwiseXOR(F.shiftrightunsigned(h, 16)))


def with_key_group(df: DataFrame, columns: Sequence[str], max_parallelism: int, out: str = "key_group") -> DataFrame:
    """``df`` with the key group Flink assigns the BIGINT key ``columns`` among ``max_parallelism`` groups
    (keystats.key_group, as column expressions)."""
    s = _Stages(df)
    header = 2 * ((len(columns) + 63 + 8) // 64)
    words: list[Column] = [F.lit(0).cast("bigint")] * header
    for c in columns:
        v = F.col(c).cast("bigint")
        words += [v.bitwiseAND(F.lit(M32)), F.shiftrightunsigned(v, 32)]
    h = F.lit(keystats.SEED).cast("bigint")
    for w in words:
        h = _mix_h1(s, h, _mix_k1(s, s.put(w)))
    code = _fmix(s, s.put(h.bitwiseXOR(F.lit(4 * len(words)))))
    # MathUtils.murmurHash's second pass, then its absolute value of the signed int (MIN_VALUE: 0,
    # which 2^31 mod any power of two also gives).
    spread = _fmix(s, s.put(_mix_h1(s, F.lit(0).cast("bigint"), _mix_k1(s, code)).bitwiseXOR(F.lit(4))))
    magnitude = F.when(spread >= F.lit(1 << 31), F.lit(1 << 32) - spread).otherwise(spread)
    drop = [f"_h{i}" for i in range(s.n)]
    return s.df.withColumn(out, F.pmod(magnitude, F.lit(int(max_parallelism)))).drop(*drop)


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
    """The key statistics of ``op`` from its key rows: counts per key, then per key group."""
    keys = [c for c in rows.columns if c.startswith("k")]
    counts = rows.groupBy(*keys).agg(F.count(F.lit(1)).alias("n")).where(
        reduce(lambda a, b: a & b, [F.col(k).isNotNull() for k in keys]))
    counts = counts.persist()
    try:
        top = counts.orderBy(F.col("n").desc(), *keys).limit(keystats.TOP_KEYS).collect()
        hashed = all(isinstance(rows.schema[k].dataType, (T.LongType, T.IntegerType)) for k in keys)
        groups = None
        if hashed:
            per_group = (with_key_group(counts, keys, keystats.RECORDED_KEY_GROUPS)
                         .groupBy("key_group").agg(F.sum("n").alias("records"), F.count(F.lit(1)).alias("keys"),
                                                   F.sum(F.col("n").cast("double") * F.col("n")).alias("squares"))
                         .collect())
            groups = {int(r["key_group"]): int(r["records"]) for r in per_group}
            records = sum(int(r["records"]) for r in per_group)
            distinct = sum(int(r["keys"]) for r in per_group)
            squares = float(sum(float(r["squares"]) for r in per_group))
        else:
            row = counts.agg(F.sum("n").alias("records"), F.count(F.lit(1)).alias("keys"),
                             F.sum(F.col("n").cast("double") * F.col("n")).alias("squares")).collect()[0]
            records, distinct, squares = int(row["records"] or 0), int(row["keys"]), float(row["squares"] or 0.0)
    finally:
        counts.unpersist()
    return KeyStatistics(op.operator, op.key, records, distinct, squares, tuple(int(r["n"]) for r in top),
                         tuple(",".join(str(r[k]) for k in keys) for r in top), groups)


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

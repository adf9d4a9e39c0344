"""``streambed data``: the data lake (generate, register, list, size). Parses and displays; the Spark
jobs are spark/streambed_spark, the manifests and sizing streambed.dataset."""

from __future__ import annotations

import os
from pathlib import Path

from .. import dataset as ds
from ..campaigns.settings import DEFAULT_QUERIES_DIR
from ..errors import UserError
from ..extras import missing_extra
from ..planner.estimator import DEFAULT_TIMING, TIMINGS, Timing
from ..report.console import Output
from .args import Parser, count, rate, seed
from .common import output_options


def _events(text: str) -> int:
    from .args import _integer
    return _integer(text, 1, 10**12, "a number of events from 1 to 10^12")


def register(sub) -> None:
    sp = sub.add_parser("data", help="data sets at rest in the data lake: generate, register, list, size a replay")
    dsub = sp.add_subparsers(dest="data_command", required=True, parser_class=Parser)

    def lake_option(p) -> None:
        p.add_argument("--lake", type=Path, default=Path(os.environ.get("DATALAKE") or ds.DEFAULT_LAKE),
                       help="the data lake directory (default: $DATALAKE, else datalake)")

    def spark_option(p) -> None:
        p.add_argument("--master", help="Spark master (default: $STREAMBED_SPARK_MASTER, else local[2]; "
                                        "spark://host:7077 on a standalone cluster)")

    _generate_parser(dsub, lake_option, spark_option)
    _register_parser(dsub, lake_option, spark_option)
    _other_parsers(dsub, lake_option)
    _keys_parser(dsub, lake_option, spark_option)


def _generate_parser(dsub, lake_option, spark_option) -> None:
    gen = dsub.add_parser("generate", help="a Nexmark event stream of a given size and seed, in event order "
                                           "(JSON lines and Parquet), with Spark")
    gen.add_argument("--events", type=_events, required=True, help="events to generate")
    gen.add_argument("--seed", type=seed, default=0, help="the same seed gives the same events")
    gen.add_argument("--rate", type=rate, default=100_000.0,
                     help="nominal events/s of the stream: event times advance by 1/rate (default 100,000; "
                          "choose about the rate you will replay at, auction lengths follow it)")
    gen.add_argument("--name", help="data set name (default: nexmark-<events>-seed<seed>)")
    gen.add_argument("--query", help="check that the data set holds the events this query reads")
    gen.add_argument("--queries-dir", type=Path, default=DEFAULT_QUERIES_DIR,
                     help=f"where --query's SQL is (default {DEFAULT_QUERIES_DIR})")
    gen.add_argument("--formats", default="json,parquet", help="json, parquet or both (default)")
    gen.add_argument("--partitions", type=count, help="files per million events (default: Spark's parallelism)")
    gen.add_argument("--inventory", type=Path,
                     help="a cluster's inventory: its Spark master and shared lake (spark_lake_dir) unless --master "
                          "or --lake say otherwise; run as root, its Spark service user or a member of that user's group")
    gen.add_argument("--lake", type=Path, help="the data lake directory (default: the --inventory's lake, else "
                                               "$DATALAKE, else datalake)")
    spark_option(gen)
    output_options(gen)
    gen.set_defaults(func=cmd_generate)


def _register_parser(dsub, lake_option, spark_option) -> None:
    reg = dsub.add_parser("register", help="a user's JSON lines or Parquet files as a data set, sorted by event time")
    reg.add_argument("--path", type=Path, required=True, help="a file or a directory of .json/.jsonl/.parquet files")
    reg.add_argument("--name", required=True, help="data set name")
    reg.add_argument("--time-column", default="dateTime", help="the event-time column (timestamp, epoch ms or "
                                                               "ISO-8601 text; default dateTime)")
    reg.add_argument("--kind", help="person, auction or bid: each row is an event of this kind (flat columns); "
                                    "without it the data needs the datagen layout (event_type, person, auction, bid)")
    reg.add_argument("--query", help="check that the data set holds the events this query reads")
    reg.add_argument("--queries-dir", type=Path, default=DEFAULT_QUERIES_DIR,
                     help=f"where --query's SQL is (default {DEFAULT_QUERIES_DIR})")
    lake_option(reg)
    spark_option(reg)
    output_options(reg)
    reg.set_defaults(func=cmd_register)


def _other_parsers(dsub, lake_option) -> None:
    ls = dsub.add_parser("list", help="the data sets of the lake")
    lake_option(ls)
    output_options(ls)
    ls.set_defaults(func=cmd_list)

    kafka = dsub.add_parser("load-kafka", help="a data set into a Kafka topic, keyed and in event order, by parallel "
                                                "producers (Spark's Kafka writer needs a jar)")
    kafka.add_argument("--input", required=True, help="the data set (name or path)")
    kafka.add_argument("--bootstrap", required=True, help="host:port[,host:port...] of the brokers")
    kafka.add_argument("--topic", help="the topic (default: the data set's name)")
    kafka.add_argument("--partitions", type=count, default=8, help="partitions of a new topic (default 8)")
    kafka.add_argument("--replication", type=count, default=1, help="replication of a new topic (default 1)")
    kafka.add_argument("--producers", type=count, default=max(1, (os.cpu_count() or 2) // 2),
                       help="producer processes; the topic's partitions are spread over them (default: half "
                            "the cores, at least 1; each reads the whole data set, docs/data.md)")
    kafka.add_argument("--compression", default="lz4",
                       help="batch compression: none, gzip, snappy or lz4 (default; what Flink's KafkaSource reads)")
    lake_option(kafka)
    output_options(kafka)
    kafka.set_defaults(func=cmd_load_kafka)

    size = dsub.add_parser("size", help="events a replay campaign consumes, and the Kafka nodes it needs")
    what = size.add_mutually_exclusive_group(required=True)
    what.add_argument("--rate", type=rate, help="estimate jobs (testbed): the largest rate they ask, events/s")
    what.add_argument("--plan", type=Path, help="a plan.json: its validation at production scale (section VIII: "
                                                "100/120/150 %% of its rate, ramp-up and duration each)")
    size.add_argument("--timing", default=DEFAULT_TIMING, help=f"estimator timing: {', '.join(TIMINGS)}")
    size.add_argument("--jobs", type=count, default=1, help="jobs the campaign starts (default 1)")
    size.add_argument("--sources", type=count, default=1, help="source tasks (default 1)")
    size.add_argument("--input", help="a data set: say whether it is large enough")
    lake_option(size)
    output_options(size)
    size.set_defaults(func=cmd_size)


def _formats(text: str) -> tuple[str, ...]:
    formats = tuple(f.strip() for f in text.split(",") if f.strip())
    bad = [f for f in formats if f not in ("json", "parquet")]
    if not formats or bad:
        raise UserError(f"--formats: expected json, parquet or json,parquet, got {text!r}")
    return formats


def _query_sql(args) -> str | None:
    if not args.query:
        return None
    if not ds.DATASET_NAME.fullmatch(args.query):
        raise UserError(f"--query: expected a query name such as q5, got {args.query!r:.60}")
    path = args.queries_dir / f"{args.query}.sql"
    if not path.is_file():
        raise UserError(f"--query: no {path.name} in {args.queries_dir}")
    return path.read_text()


def _spark(args, out: Output, conf: dict[str, str] | None = None):
    try:
        from streambed_spark.session import SparkSettings, session
    except ModuleNotFoundError as e:
        raise missing_extra(f"streambed data {args.data_command}", e) or UserError(
            f"streambed data: needs the module {e.name}, which is not installed; run make install") from None
    out.status("starting Spark")
    settings = SparkSettings(master=args.master) if args.master else SparkSettings()
    return session(SparkSettings(settings.master, conf=conf) if conf else settings)


def _cluster_driver(args) -> dict[str, str]:
    """With --inventory: its master and lake where the options name none, the lake checked for this
    user, and the driver's Spark settings (its address toward the master, the lake's umask)."""
    from ..infra.provider import Inventory
    from ..infra.spark import check_driver, driver_address, driver_conf, spark_cluster

    cluster = spark_cluster(Inventory.load(args.inventory))
    args.lake = args.lake or cluster.lake
    args.master = args.master or cluster.master_url
    if args.lake == cluster.lake:
        check_driver(cluster)
    return driver_conf(driver_address(cluster))


def _show(out: Output, d: ds.DataSet, verb: str) -> None:
    sizes = ", ".join(f"{f} {v['files']} files {v['bytes'] / 1e6:,.1f} MB" for f, v in d.formats.items())
    kinds = ", ".join(f"{n:,} {k}s" for k, n in d.kinds.items())
    out.info(f"{d.name}: {d.events:,} events ({kinds}) {verb} {d.path} ({sizes})")
    out.result({"dataset": d.to_dict(), "path": str(d.path)})


def cmd_generate(args, out: Output) -> None:
    from streambed_spark import lake, nexmark

    formats = _formats(args.formats)
    name = args.name or f"nexmark-{args.events}-seed{args.seed}"
    if not ds.DATASET_NAME.fullmatch(name):
        raise UserError(f"--name: expected letters, digits, '_', '.' and '-', got {name!r:.60}")
    sql = _query_sql(args)
    spec = nexmark.StreamSpec(events=args.events, seed=args.seed, rate=args.rate)
    conf = _cluster_driver(args) if args.inventory else None
    args.lake = args.lake or Path(os.environ.get("DATALAKE") or ds.DEFAULT_LAKE)
    spark = _spark(args, out, conf)
    partitions = args.partitions
    chunk = lake.CHUNK_EVENTS
    with out.progress(f"generating {args.events:,} Nexmark events into {args.lake / name}", total=args.events) as step:
        done = [0]

        def progress(n: int, total: int) -> None:
            step.advance(n - done[0], description=f"{n:,} of {total:,} events written")
            done[0] = n
        d, written = lake.generate(spark, spec, args.lake, name, formats, chunk, partitions, progress)
    if sql is not None:
        ds.check_fits(d, args.query, sql)
    _show(out, d, "written to" if written else "already in")


def cmd_register(args, out: Output) -> None:
    from streambed_spark import lake

    if not ds.DATASET_NAME.fullmatch(args.name):
        raise UserError(f"--name: expected letters, digits, '_', '.' and '-', got {args.name!r:.60}")
    if not args.path.exists():
        raise UserError(f"--path: {args.path}: no such file or directory")
    sql = _query_sql(args)
    spark = _spark(args, out)
    out.status(f"registering {args.path} as {args.name}")
    d = lake.register(spark, args.path, args.lake, args.name, args.time_column, args.kind)
    if sql is not None:
        ds.check_fits(d, args.query, sql)
    _show(out, d, "registered in")


def cmd_load_kafka(args, out: Output) -> None:
    from streambed_spark.kafka_load import KafkaTarget, load

    d = ds.load(args.input, args.lake)
    target = KafkaTarget(args.bootstrap, args.topic or d.name, args.partitions, args.replication,
                         producers=args.producers, compression=args.compression)
    with out.progress(f"loading {d.name} into Kafka topic {target.topic}", total=d.events) as step:
        done = [0]

        def progress(n: int, total: int) -> None:
            step.advance(n - done[0], description=f"{n:,} of {total:,} records sent")
            done[0] = n
        result = load(d, target, progress=progress)
    out.info(f"{result['records']:,} records in {result['topic']} ({result['partitions']} partitions, "
             f"{result['producers']} producers)")
    out.result(result)


def cmd_list(args, out: Output) -> None:
    rows, result = [], []
    for name in ds.names(ds.check_lake(args.lake)):
        d = ds.load(name, args.lake)
        rows.append([d.name, f"{d.events:,}", ", ".join(d.formats), str(d.origin.get("seed", d.origin.get("registered", "")))])
        result.append(d.to_dict())
    out.table(f"data sets in {args.lake}", ["name", "events", "formats", "seed / source"], rows)
    out.result(result)


def cmd_size(args, out: Output) -> None:
    if args.plan is not None:
        from ..records import read_plan
        from ..planner.validation import ValidationSettings

        v = ValidationSettings()
        s = ds.validation_sizing(read_plan(args.plan).rate, v.multipliers, v.ramp_s, v.duration_s)
    else:
        s = ds.sizing(args.rate, Timing.named(args.timing), args.sources, args.jobs)
    # The data set is checked before anything is printed: refused input leaves one line, the error.
    d = ds.load(args.input, args.lake) if args.input else None
    if d is not None:
        ds.check_enough(d, s)
    out.info(f"a job replays at most {s.job_events:,} events (up to {s.rate:,.0f} events/s for up to {s.job_seconds:,.0f} s); "
             f"{s.jobs} job(s): {s.campaign_events:,} events; {s.kafka_nodes} Kafka node(s) at "
             f"{ds.KAFKA_NODE_RATE:,.0f} events/s each")
    result = s.to_dict()
    if d is not None:
        out.info(f"{d.name} holds {d.events:,} events: enough")
        result["dataset"] = d.to_dict()
    out.result(result)


# -- data keys ---------------------------------------------------------------------------------------------------

SHOWN_PARALLELISMS = (2, 8, 32, 128)
"""Parallelisms at which `data keys` shows the busiest task's share (Flink's default key groups)."""


def _keys_parser(dsub, lake_option, spark_option) -> None:
    keys = dsub.add_parser("keys", help="key statistics of a query's keyed operators in a data set (distinct keys, "
                                        "heaviest keys' shares, concentration, busiest task by key group), with Spark")
    keys.add_argument("--query", required=True, help="the query, e.g. q5")
    keys.add_argument("--input", required=True, help="the data set (name in --lake, or a path)")
    keys.add_argument("--out", type=Path, help="the statistics file (default: <data set>/keys/<query>.json)")
    keys.add_argument("--queries-dir", type=Path, default=DEFAULT_QUERIES_DIR,
                      help=f"where the queries' SQL files are (default {DEFAULT_QUERIES_DIR})")
    lake_option(keys)
    spark_option(keys)
    output_options(keys)
    keys.set_defaults(func=cmd_keys)


def cmd_keys(args, out: Output) -> None:
    from ..campaigns.datakeys import count_with_spark, stats_file
    from ..model import keygroups, keystats

    # Every input is checked before Spark starts: a refusal is one line and costs nothing.
    if not ds.DATASET_NAME.fullmatch(args.query):
        raise UserError(f"--query: expected a query name such as q5, got {args.query!r:.60}")
    if not args.queries_dir.is_dir():
        raise UserError(f"--queries-dir: {args.queries_dir} is not a directory")
    operators = keystats.keyed_operators(args.query, (p.stem for p in args.queries_dir.glob("*.sql")))
    d = ds.load(args.input, args.lake)
    target = args.out or stats_file(d, args.query)
    if target.is_dir():
        raise UserError(f"--out: {target} is a directory")
    out.status(f"counting the keys of {args.query}'s keyed operators in {d.name} with Spark")
    result = count_with_spark(d, args.query, operators, target, args.master)
    rows = [[s.operator, s.key, f"{s.records:,}", f"{s.distinct_keys:,}", f"{s.top_share(1):.2%}",
             f"{s.top_share(keystats.TOP_KEYS):.2%}", f"{s.concentration:.3g}"] for s in result.operators]
    out.table(f"keys of {args.query} in {d.name} ({d.events:,} events; Spark {result.seconds:.1f} s)",
              ["operator", "key", "records", "distinct keys", "top 1", "top 10", "concentration H"], rows)
    for s in result.operators:
        skew = keystats.key_skew(s)
        rows = []
        for p in SHOWN_PARALLELISMS:
            exact = keystats.busiest_task_share(s, p)
            rows.append([str(p), f"{1 / p:.2%}", "-" if exact is None else f"{exact:.2%}",
                         f"{skew.busiest_share(p, keygroups.default_max_parallelism(p)):.2%}"])
        out.table(f"{s.operator}: the busiest task's share of its records",
                  ["tasks", "even", "by key group (Flink's hash)", "skew model (H, top 1)"], rows)
    out.info(f"written to {target}")
    # stdout gets the figures; the key groups and hashes stay in the file
    shown = [{**s.figures(),
              "busiest_task_share": {str(p): keystats.busiest_task_share(s, p) for p in SHOWN_PARALLELISMS}}
             for s in result.operators]
    out.result({**result.to_dict(), "operators": shown, "path": str(target)})

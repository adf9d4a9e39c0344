"""``streambed analytics``: summary tables (Parquet) of any number of campaigns, computed with Spark
(docs/analytics.md). The job is spark/streambed_spark/analytics.py; this parses and displays."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..extras import missing_extra
from ..report.console import Output
from .common import output_options


def register(sub) -> None:
    sp = sub.add_parser("analytics", help="summary tables (Parquet) of campaigns' windows, runs and operators, "
                                          "with Spark")
    sp.add_argument("--campaign-dir", action="extend", nargs="+", default=[], metavar="DIR",
                    help="campaign directories (or their ledger.sqlite), e.g. campaigns/*; may be repeated")
    sp.add_argument("--out", type=Path, required=True, metavar="DIR",
                    help="directory for the tables (one subdirectory each) and summary.json; on a standalone "
                         "cluster, storage the driver and every worker see at the same path")
    sp.add_argument("--master", help="Spark master (default: $STREAMBED_SPARK_MASTER, else local[2]; "
                                     "spark://host:7077 on a standalone cluster)")
    output_options(sp)
    sp.set_defaults(func=cmd_analytics)


def cmd_analytics(args, out: Output) -> None:
    try:
        # Lazily: Spark is needed by this command alone, and its import costs every other one.
        from streambed_spark import analytics
        from streambed_spark.session import session
    except ModuleNotFoundError as e:
        raise missing_extra("streambed analytics", e) or UserError(
            f"streambed analytics: needs the module {e.name}, which is not installed; run make install") from None

    dirs = list(args.campaign_dir)
    if not dirs:
        raise UserError("--campaign-dir: give at least one campaign directory (repeat --campaign-dir for more)")
    settings = analytics.AnalyticsSettings(tuple(Path(d) for d in dirs), args.out,
                                           analytics.spark_settings(args.master))
    # Every ledger is read, and a bad one refused, before anything is shown or Spark starts: bad input
    # leaves one line (the error) and costs no JVM start. Reading takes milliseconds per ledger.
    rows = analytics.read_ledgers(settings.campaign_dirs)
    analytics.out_dir(settings.out)
    if not rows.windows:
        out.warn("the campaigns hold no observation window yet: the tables will be empty")
    out.status(f"read {len(rows.campaigns)} campaign{'s' if len(rows.campaigns) > 1 else ''}: "
               f"{len(rows.windows):,} windows; starting Spark ({settings.spark.master})")
    spark = session(settings.spark)
    with out.progress(f"summarizing {len(rows.windows):,} windows into {settings.out}",
                      total=len(analytics.TABLES)) as step:
        summary = analytics.run(spark, rows, settings, lambda table: step.advance(description=f"wrote {table}"))
    counts = ", ".join(f"{name} {t['rows']:,}" for name, t in summary["tables"].items())
    out.table(f"Campaign analytics in {summary['out']}/ (rows: {counts})",
              ("campaign", "kind", "query", "runs", "windows"),
              [(c["campaign"], c["kind"], c["query"] or "-", c["runs"], c["windows"]) for c in summary["campaigns"]])
    for c in summary["campaigns"]:
        if c.get("note"):
            out.warn(f"{c['campaign']}: {c['note']}")
    out.result(summary)

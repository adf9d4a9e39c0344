"""``streambed compare``: the ways to size a job (planner/ PLANNERS) side by side on one query and rate."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..planner.estimator import DEFAULT_TIMING, TIMINGS
from ..report.console import Output
from .args import count, memory_list, name_list, rate
from .common import campaign_options, campaign_settings, logs, output_options, run

COLUMNS = ("method", "slots", "memory per slot, MB", "total memory, MB", "testbed time, min", "steps",
           "MST by truth, events/s", "MST / rate", "verdict")


def method_option(text: str) -> tuple[str, str, object]:
    """'ds2.utilization=0.8' -> ('ds2', 'utilization', 0.8): a value reads as JSON (numbers, true, false),
    else as text ('300s/600s')."""
    where, sep, value = text.partition("=")
    method, dot, key = where.partition(".")
    if not (sep and dot and method.strip() and key.strip()):
        raise argparse.ArgumentTypeError(f"expected METHOD.OPTION=VALUE such as ds2.utilization=0.8, got {text!r:.60}")
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    return method.strip(), key.strip(), parsed


def register(sub) -> None:
    sp = sub.add_parser("compare", help="size a query with several methods (StreamBed, DS2, the Flink autoscaler, "
                                        "...) and judge each sizing the same way")
    sp.add_argument("--query", required=True, type=name_list,
                    help="the query (a sim profile or a flink/queries/*.sql); several, comma-separated: one table each")
    sp.add_argument("--rate", required=True, type=rate, help="target events/s, e.g. 1.6e7")
    sp.add_argument("--methods", type=name_list, default=(),
                    help="methods to compare, comma-separated (default: every registered planner)")
    sp.add_argument("--memory", type=memory_list,
                    help="memory per slot the methods may use, MB (default: each method's choice among the testbed's)")
    sp.add_argument("--max-measurements", type=count, help="each method's measurement budget (default: its own)")
    sp.add_argument("--set", dest="options", type=method_option, action="append", default=[],
                    metavar="METHOD.OPTION=VALUE", help="a method's option, e.g. ds2.utilization=0.8 (repeatable; "
                                                        "docs/compare.md lists them)")
    sp.add_argument("--judge-timing", default=DEFAULT_TIMING,
                    help=f"estimator timing that measures each plan's MST on Flink: {', '.join(TIMINGS)} "
                         f"(default {DEFAULT_TIMING})")
    sp.add_argument("--out", type=Path, help="directory of the campaigns: <out>/compare-<query> (default: "
                                             "--campaign-dir, else campaigns/)")
    campaign_options(sp, "compare", testbed_size=True)
    output_options(sp)
    sp.set_defaults(func=cmd_compare)


def _settings(args, query: str):
    from dataclasses import replace

    from ..campaigns.compare import CompareSettings

    campaign = replace(campaign_settings(args), query=query)
    if args.out is not None:
        campaign = replace(campaign, directory=args.out / f"compare-{query}")
    elif args.campaign_dir is not None and len(args.query) > 1:
        campaign = replace(campaign, directory=args.campaign_dir / f"compare-{query}")
    options: dict[str, dict] = {}
    for method, key, value in args.options:
        options.setdefault(method, {})[key] = value
    return CompareSettings(campaign, args.rate, methods=tuple(args.methods), memories=tuple(args.memory or ()),
                           max_measurements=args.max_measurements, options=options,
                           judge_timing=args.judge_timing)


def _cell(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def cmd_compare(args, out: Output) -> None:
    from ..campaigns.compare import CompareCampaign

    campaigns = [CompareCampaign(_settings(args, q), **logs(args, out)) for q in args.query]  # all refused first
    results = []
    for campaign in campaigns:
        data = run(campaign, out)
        out.table(f"{data['query']} at {data['rate']:,.0f} events/s on the {data['testbed']} testbed", COLUMNS,
                  [(r["method"], _cell(r["slots"], ","), _cell(r["memory_mb"], ","), _cell(r["total_memory_mb"], ","),
                    _cell(None if r["testbed_seconds"] is None else r["testbed_seconds"] / 60, ".1f"),
                    _cell(r["steps"], "d"), _cell(r["mst"], ",.0f"), _cell(r["mst_over_rate"], ".2f"),
                    r["verdict"] if r["verdict"] != "failed" else f"failed: {r['error']}") for r in data["rows"]])
        for r in data["rows"]:
            for note in r.get("notes") or ():
                out.info(f"{r['method']}: {note}")
        for method, why in data.get("left_out", {}).items():
            out.info(f"{method}: left out, {why}")
        out.info(f"ledger: {data['ledger']}")
        results.append(data)
    out.result(results[0] if len(results) == 1 else results)

"""Planning from recorded measurements, no testbed: ``optimize --from-metrics``, ``fit``, ``export``
(docs/records.md). The work is campaigns/replan.py's; these parse and display."""

from __future__ import annotations

from pathlib import Path

from ..campaigns.replan import MEMORY_FEATURES, TRAINING
from ..campaigns.settings import ExportSettings, FitSettings, MetricsSettings
from ..errors import UserError
from ..report.console import Output
from .args import memory_list, memory_mb, rate, safety
from .common import guard_options, guard_rails, output_options

def register(sub) -> None:
    sp = sub.add_parser("fit", help="the explorer's model from recorded measurements, inverse-solved for a rate "
                                    "(no testbed)")
    sp.add_argument("--measurements", required=True, metavar="FILE",
                    help="a campaign's ledger or exploration.json, or the paper's runs/search_*.csv (docs/records.md)")
    sp.add_argument("--rate", required=True, type=rate, help="target events/s, e.g. 2.5e6")
    sp.add_argument("--memory", "--profiles", dest="memory", type=memory_list,
                    help="memory per slot to plan, MB (default: the measured ones; --profiles is accepted too)")
    sp.add_argument("--family", choices=("auto", "linear", "log", "sqrt"), default=FitSettings.family,
                    help="surrogate family; auto: the explorer's own selection rule")
    sp.add_argument("--safety", type=safety, default=FitSettings.safety,
                    help="over-provisioning factor (paper: 1.10)")
    guard_options(sp)
    sp.add_argument("--training", choices=TRAINING, default=FitSettings.training,
                    help="all measurements (the explorer), or paper-prefix: the paper's best first-k rows, k=5..20")
    sp.add_argument("--memory-feature", choices=tuple(MEMORY_FEATURES), default=FitSettings.memory_feature,
                    help="how memory enters the model: TaskManager MB, 16 slots each (the paper's), or MB per slot")
    sp.add_argument("--log", choices=("log1p", "log"), default=FitSettings.log,
                    help="the log family's transform: log1p (the paper's) or log")
    output_options(sp)
    sp.set_defaults(func=cmd_fit)

    sp = sub.add_parser("holdout", help="the explorer's model fitted without the largest budget, and its prediction "
                                        "there against what was measured (no testbed)")
    sp.add_argument("--measurements", required=True, metavar="FILE",
                    help="a campaign's ledger or exploration.json, or the paper's runs/search_*.csv (docs/records.md)")
    sp.add_argument("--reference", type=rate, nargs="+", default=(), metavar="MST",
                    help="the largest budget's MST measured again, separately (events/s; their median is compared)")
    sp.add_argument("--memory", type=memory_mb, help="MB per slot of the held-out budget to predict "
                                                     "(default: every one measured at the largest slot count)")
    output_options(sp)
    sp.set_defaults(func=cmd_holdout)

    sp = sub.add_parser("export", help="write a campaign's measurements and single-task metrics as files "
                                       "fit and optimize --from-metrics read")
    sp.add_argument("--campaign-dir", required=True, help="a plan, explore or optimize campaign")
    sp.add_argument("--out", help="directory for the files (default: <campaign-dir>/export)")
    output_options(sp)
    sp.set_defaults(func=cmd_export)


def cmd_optimize_from_metrics(args, out: Output) -> None:
    given = [opt for opt, used in (("--testbed", args.testbed != "sim"), ("--profile", args.profile),
                                   ("--campaign-dir", args.campaign_dir), ("--resume", args.resume)) if used]
    if given:
        raise UserError(f"--from-metrics: plans from the file alone, without a testbed; {', '.join(given)} "
                        f"do{'es' if len(given) == 1 else ''} not apply")
    from ..campaigns.replan import read_metrics, solve_records

    path = args.from_metrics
    settings = MetricsSettings(path, query=args.query, slots=args.slots, memory_mb=args.memory)
    f, records = read_metrics(settings)
    with out.progress(f"BIDS2 on {len(records)} single-task metric set{'s' if len(records) > 1 else ''} from {path}",
                      total=len(records)) as step:
        solves = solve_records(records, settings.slots, path, lambda s: step.advance())
    if len(solves) == 1:
        s, m = solves[0], records[0].metrics
        out.table(f"BIDS2 from {path} ({f.format}, {s['origin']}): {s['query']} at {s['memory_mb']} MB, "
                  f"{s['slots']} slots -> predicted {s['predicted_rate']:,.0f} events/s",
                  ("operator", "true rate per task, records/s", "input ratio", "parallelism"),
                  [(n, r.true_rate, r.input_ratio, s["parallelism"][n]) for n, r in m.operators])
    else:
        has_recorded = any("recorded_objective" in s for s in solves)
        out.table(f"BIDS2 from {path} ({f.format}): {len(solves)} solves",
                  ("query", "memory, MB", "slots", "predicted, events/s")
                  + (("recorded, events/s",) if has_recorded else ()) + ("parallelism", "from"),
                  [(s["query"], s["memory_mb"], s["slots"], s["predicted_rate"])
                   + ((s.get("recorded_objective"),) if has_recorded else ())
                   + (" ".join(str(p) for p in s["parallelism"].values()), s["origin"]) for s in solves])
    recorded = [abs(s["predicted_rate"] - s["recorded_objective"]) / s["recorded_objective"]
                for s in solves if s.get("recorded_objective")]
    if recorded:
        out.info(f"largest relative difference to the file's recorded objectives: {max(recorded):.2g} "
                 f"({len(recorded)} solves)")
    out.result({"metrics_file": path, "format": f.format, "solves": solves})


def cmd_fit(args, out: Output) -> None:
    from ..campaigns.replan import fit_measurements

    data = fit_measurements(FitSettings(args.measurements, args.rate, memories=args.memory or (), family=args.family,
                                        safety=args.safety, training=args.training,
                                        guards=guard_rails(args),
                                        memory_feature=args.memory_feature, log=args.log))
    m = data["model"]
    scores = data["loocv_rmse_by_family"]
    out.table(f"Model of {data['query'] or 'the query'} from {data['training_rows']} of {data['observations']} "
              f"measurements in {args.measurements} ({data['format']})",
              ("quantity", "value"),
              [("family", f"{data['family']}, " + ("given by --family" if data["selection"] == "given"
                                                    else f"auto: {data['selection']}")),
               ("a (memory), b (slots), c", f"{m['a']:.6g}, {m['b']:.6g}, {m['c']:.6g}"),
               ("LOOCV RMSE linear / log / sqrt", " / ".join(f"{v:,.0f}" if v is not None else "-"
                                                             for v in scores.values())),
               ("training rows", f"{data['training']}: {data['training_rows']}")])
    out.table(f"Plan for {args.rate:,.0f} events/s x {args.safety:g} safety",
              ("memory per slot, MB", "slots", "predicted MST, events/s", "trusted up to, slots",
               "most it supports, events/s", "slots if linear / log / sqrt"),
              [(e["memory_mb"], e["slots"] or "unreachable", e["predicted_mst"], e["max_slots"], e["max_rate"],
                " / ".join(f"{v:,}" if v else "-" for v in e["by_family"].values())) for e in data["entries"]])
    for e in data["entries"]:
        if e["unreachable"]:
            out.warn(f"{e['memory_mb']} MB per slot: {e['unreachable']}")
    out.result(data)


def _share(error: float | None) -> str:
    return "-" if error is None else f"{error:+.1%}"


def cmd_holdout(args, out: Output) -> None:
    from ..campaigns.replan import hold_out, measurements_from

    data = hold_out(measurements_from(args.measurements), args.reference, args.memory)
    refs = data["references"]
    out.info(f"{data['family']} by {data['selection']}, fitted on {data['training_rows']} measurements at "
             f"{', '.join(map(str, data['training_slots']))} slots"
             + (f"; reference: median of {len(refs)} ({', '.join(f'{r:,.0f}' for r in refs)})" if refs else ""))
    for h in data["held_out"]:
        out.table(f"{data['query'] or 'the query'} at {h['slots']} slots of {h['memory_mb']:g} MB, held out: "
                  f"measured {h['measured']:,.0f} events/s",
                  ("family", "predicted, events/s", "against the measured")
                  + (("against the reference",) if refs else ()),
                  [(f + (" (selected)" if f == data["family"] else ""), e["predicted"], _share(e["error"]))
                   + ((_share(e["reference_error"]),) if refs else ()) for f, e in h["by_family"].items()])
    out.result(data)


def cmd_export(args, out: Output) -> None:
    from ..campaigns.replan import export

    data = export(ExportSettings(args.campaign_dir, args.out))
    files, memories = data["files"], data["single_task_metrics"]
    if not memories:
        out.info(f"the {data['kind']} campaign's result keeps no single-task metrics: none exported")
    # File names in the rows and their directory in the title: a narrow terminal cuts long cells, and
    # cut full paths made different files look the same.
    where = Path(files["measurements"]).parent
    out.table(f"Exported the {data['kind']} campaign of {data['query']} ({data['ledger']}) to {where}/",
              ("file", "content"),
              [(Path(files["measurements"]).name, f"{data['measurements']} measurements (the paper's runs/*.csv columns)")]
              + [(Path(files[k]).name, f"single-task metrics of {', '.join(str(m) for m in memories)} MB")
                 for k in ("single_task_metrics", "operator_rates") if k in files])
    out.result(data)

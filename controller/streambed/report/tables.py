"""Tables of the planner's results, in the shape of the paper's Tables III and IV."""

from __future__ import annotations

from ..model import FAMILY_SPREAD_LIMIT, family_spread
from ..model.plan import HELD_AT_CHECKPOINT
from ..model.verdict import SOURCE_LIMITED
from .console import Output


def skew_used(shown: dict) -> str:
    """Which key skew a plan used for one operator and why (plan.json's ``key_skew``,
    keystats.skews_with_data): the data's key groups where no run contradicts them, else the more
    pessimistic of the data's and the runs'."""
    data = shown.get("data")
    if shown["source"] == "data":
        return "data (key groups)" if shown.get("counted") else "data (more pessimistic)"
    if not data:
        return "tasks"
    if data.get("key_groups_counted"):
        return "tasks (a run contradicts the data)"
    return "tasks (more pessimistic)"


def plan_tables(out: Output, plan: dict, exploration: dict | None = None, replay: bool = False) -> None:
    entries = plan["entries"]
    families = list(entries[0].get("by_family") or {}) if entries else []
    sizing = (f"sized for a {100 * plan['risk']:g} % risk" if plan.get("risk")
              else f"x{plan['safety']:.2f} safety")
    out.table(f"Plan for {plan['query']} at {plan['rate']:,.0f} events/s ({sizing}), "
              f"{plan['family']} model (cf. the paper's Table IV)",
              ("memory per slot, MB", "task slots", "model MST at that budget, events/s", "estimated risk",
               "trusted up to, slots", "most it supports, events/s")
              + ((f"slots if {' / '.join(families)}",) if families else ()),
              [(e["memory_mb"], (f"{e['slots']} (beyond the trusted range)" if e.get("beyond_trusted") else e["slots"])
                if e["slots"] else "unreachable", e["predicted_mst"],
                f"{100 * e['risk']:.1f} %" if e.get("risk") is not None else "-", e.get("max_slots"),
                e.get("max_rate")) + ((" / ".join(f"{v:,}" if v else "-" for v in e["by_family"].values()),)
                                      if families else ())
               for e in entries])
    if plan.get("catch_up"):
        c = plan["catch_up"]
        out.info(f"catch-up: sized for {c['effective_rate']:,.0f} events/s = {c['rate']:,.0f} x (1 + {c['backlog_s']:g} s / "
                 f"{c['within_s']:g} s), to drain {c['backlog_s']:g} s of backlog within {c['within_s']:g} s after a "
                 f"restart (every operator: a replayed backlog reaches all of them)")
    for w in plan.get("warnings") or ():
        out.warn(w)
    for e in entries:
        if not e["slots"]:
            out.warn(f"{e['memory_mb']} MB per slot: {e.get('unreachable') or 'no budget reaches the rate'}")
            continue
        if e.get("beyond_trusted"):
            out.warn(f"{e['memory_mb']} MB per slot: {e['slots']:,} slots lie beyond the model's trusted limit "
                     f"({e.get('max_slots'):,} slots) and the measurements show no ceiling; confirm with a staged "
                     f"measurement ({e.get('checkpoint')})")
        if (e.get("configured_from") or "").startswith(HELD_AT_CHECKPOINT):  # the plan is a measurement, not a solve
            out.info(f"{e['memory_mb']} MB per slot: {e['configured_from']}")
        if e.get("key_warning"):
            out.warn(f"{e['memory_mb']} MB per slot: {e['key_warning']}")
        for line in e.get("unseen") or ():
            out.warn(f"{e['memory_mb']} MB per slot, not seen at this scale: {line}")
    skews = plan.get("key_skew") or {}
    if any(v.get("data") for v in skews.values()):
        def share(v):
            return f"{100 * v:.2f} %" if v is not None else "-"

        out.table("Key skew per keyed operator: inferred from the tasks' input records and counted in the data",
                  ("operator", "used", "busiest task, inferred", "busiest task, data", "hottest key, inferred",
                   "hottest key, data"),
                  [(op, skew_used(v), share(v.get("busiest_inferred")), share(v.get("busiest_data")),
                    share((v.get("inferred") or {}).get("hottest"))
                    + (f" (held to {share(v['inferred_hottest_held_to'])}: keys sharing a task)"
                       if v.get("inferred_hottest_held_to") is not None else ""),
                    share((v.get("data") or {}).get("hottest")))
                   for op, v in sorted(skews.items())])
    for pr in plan.get("probes") or ():
        out.info(f"skew probe: {pr['operator']} on {pr['tasks']:,} tasks at {pr['memory_mb']} MB per slot "
                 f"({pr['testbed_seconds'] / 60:.1f} min of testbed)")
    if exploration:
        staged = [p for p in exploration["points"] if p.get("phase") == "checkpoint"]
        for p in staged:
            entry = next((e for e in entries if e["memory_mb"] == p["memory_mb"]), {})
            own = entry.get("model")
            held = (entry.get("configured_from") or "").startswith(HELD_AT_CHECKPOINT) and entry.get("slots") == p["slots"]
            out.info(f"checkpoint (--checkpoint-slots): {p['slots']:,} slots x {p['memory_mb']} MB measured "
                     f"{p['mst']:,.0f} events/s; " + (f"the {p['memory_mb']} MB plan is this budget, as measured" if held
                     else f"the {p['memory_mb']} MB plan rests on that memory's own measurements"
                     + (f" ({own['family']} model)" if own else "")))
    spread = max((family_spread(e.get("by_family") or {}) for e in entries), default=1.0)
    if spread > FAMILY_SPREAD_LIMIT:
        out.warn(f"the candidate families disagree on this plan "
                 f"({'one reaches the rate, another does not' if spread == float('inf') else f'up to {spread:.1f}x'}): "
                 f"it rests on the choice of {plan['family']}; measure larger budgets or validate at scale before "
                 f"trusting it")
    reachable = [e for e in entries if e["configuration"]]
    if reachable:
        ops = list(reachable[0]["configuration"])
        out.table("Per-operator parallelism (last policy pass per memory per slot)",
                  ("operator", *[f"{e['memory_mb']} MB" for e in reachable]),
                  [(op, *[e["configuration"][op] for e in reachable]) for op in ops])
    if exploration:
        m = plan["model"]
        out.table("Resource Explorer (cf. the paper's Table III)",
                  ("quantity", "value"),
                  [("measurements (#CO)", exploration["optimizer_calls"]),
                   ("estimator calls (#CE)", exploration["estimator_calls"]),
                   ("testbed time, min", exploration["testbed_seconds"] / 60),
                   ("of which probes (skew, load), min", sum(p["testbed_seconds"] for p in exploration.get("probes") or ()) / 60),
                   ("stop", exploration["stop_reason"]),
                   ("model", f"{m['family']} (by {exploration.get('selection', 'split')})"),
                   ("a (memory), b (slots), c", f"{m['a']:.4g}, {m['b']:.4g}, {m['c']:.4g}"),
                   ("LOOCV RMSE linear / log / sqrt",
                    " / ".join(f"{exploration['loocv_rmse'].get(f, float('nan')):,.0f}" for f in ("linear", "log", "sqrt")))])
        capped = [p for p in exploration["points"] if p.get("source_limited")]
        if capped:
            where = ", ".join(f"{p['slots']} slots x {p['memory_mb']} MB" for p in capped)
            source_warning(out, f"{len(capped)} of {len(exploration['points'])} measurements ({where}) were capped by "
                                f"the testbed's source: their MSTs are lower bounds and the model underestimates "
                                f"the query", replay)


def source_warning(out: Output, what: str, replay: bool = False) -> None:
    """The paper (section VIII): the sources must never be the limiting factor of a measurement. A
    replay is also bounded by its data set (docs/data.md, Sizing): then more data is the remedy."""
    remedy = ("replay a larger data set (make datagen EVENTS=...), or give the source more parallelism or cores"
              if replay else "give the source more parallelism or cores")
    out.warn(f"{what}; {remedy} (the testbed's source_parallelism)")


def exploration_table(out: Output, exploration: dict) -> None:
    out.table("Measurements of the Resource Explorer",
              ("#", "phase", "memory, MB", "slots", "MST, events/s", "BIDS2 prediction", "best LOOCV RMSE"),
              [(i + 1, p["phase"], p["memory_mb"], p["slots"], p["mst"], p["predicted_rate"], p["rmse"])
               for i, p in enumerate(exploration["points"])])


def estimate_table(out: Output, estimate: dict, title: str, replay: bool = False) -> None:
    out.table(title, ("window", "target, events/s", "achieved, events/s", "ratio", "verdict", "min_r", "max_r"),
              [(i + 1, w["rate"], w["measurement"]["achieved_rate"], w["measurement"]["achieved_rate"] / w["rate"],
                "sustained" if w["success"] else
                "source capped" if w["measurement"].get("source_saturated") else "not sustained",
                w["min_rate"], w["max_rate"])
               for i, w in enumerate(estimate["windows"])])
    m = estimate.get("measurement")
    if m:
        out.table("Operators at the MST", ("operator", "parallelism", "input, records/s", "busy (mean)",
                                           "busy (max task)", "back-pressured"),
                  [(o["operator"], o["parallelism"], o["input_rate"], o["busyness"], o["busyness_max"],
                    o["backpressure"]) for o in m["operators"]])
    if estimate.get("source_limited"):
        source_warning(out, f"the search's upper bound came from a window the testbed's source could not feed: "
                            f"{estimate['mst']:,.0f} events/s is a lower bound of this configuration's MST", replay)


def validation_table(out: Output, report: dict) -> None:
    where = f" on {report['cluster']['name']}" if report.get("cluster") else ""
    out.table(f"Validation{where}: {report['slots']} slots x {report['memory_mb']} MB at {report['rate']:,.0f} events/s "
              f"-> {report['verdict']}",
              ("run", "target, events/s", "achieved / target", "variation (cv)", "pending growth, /s of rate",
               "verdict"),
              [(f"{r['multiplier'] * 100:.0f} %", r["target_rate"], r["ratio"], r["cv"], r["pending_growth"],
                r["verdict"]) for r in report["runs"]])
    capped = [f"{r['multiplier'] * 100:.0f} %" for r in report["runs"] if r["verdict"] == SOURCE_LIMITED]
    if capped:
        source_warning(out, f"the source could not emit the target of the {', '.join(capped)} run"
                            f"{'s' if len(capped) > 1 else ''}, which therefore says nothing about the plan")


def optimize_tables(out: Output, query: str, data: dict, replay: bool = False) -> None:
    """The optimize campaign: the policy's input (single-task metrics) and its configuration with the MST."""
    memory, slots = data["memory_mb"], data["slots"]
    out.table(f"Single-task metrics of {query} at {memory} MB (the policy's input)",
              ("operator", "true rate per task, records/s", "input ratio"),
              [(o["name"], o["true_rate_per_task"], o["input_ratio"]) for o in data["single_task_metrics"]["operators"]])
    out.table(f"{slots} slots -> predicted {data['predicted_rate']:,.0f}, measured MST {data['mst']:,.0f} events/s",
              ("operator", "parallelism"), list(data["configuration"].items()))
    if data["estimate"].get("source_limited"):
        source_warning(out, f"the testbed's source capped the estimate: {data['mst']:,.0f} events/s is a lower bound", replay)

"""The campaign report: one self-contained HTML page telling a campaign's story (docs/report.md).

The page reads what a campaign directory holds (its ledger's result, read only through
``read_campaign``) and shows, in order: the plan and its risk, the capacity model with its
measurements and extrapolation, the estimator trace (the paper's Fig. 6), per-operator busyness at
the MST of the measurements, and validation runs (Fig. 11). A section the campaign has no data for
is still there, saying why it is absent; the page's head lists them.

Nothing on the page is fetched: the CSS is inline, the plots are inline SVG (plots.py, text drawn as
paths), the page has no script. The tables and warnings are those of the terminal (tables.py),
recorded instead of printed.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import __version__
from ..errors import UserError
from ..files import write_text
from ..ledger import Ledger, read_campaign
from ..model import FAMILY_SPREAD_LIMIT, Surrogate
from . import plots
from .console import Output, fmt
from .tables import estimate_table, exploration_table, plan_tables, validation_table

REPORT_FILE = "report.html"
"""The page's name in a campaign directory (``plan`` and ``validate`` write it at their end)."""

OPERATORS_TABLE = "Operators at the MST"
"""The title estimate_table gives its per-operator table (shown with the busyness, not the trace)."""


@dataclass
class Campaign:
    """What a report shows of one campaign directory."""

    directory: Path
    kind: str
    params: dict
    finished: bool
    """Whether the ledger holds the campaign's result (an interrupted campaign has none)."""
    plan: dict | None = None
    exploration: dict | None = None
    estimate: dict | None = None
    """A full estimate (estimate and optimize campaigns): every window with its measurement."""
    validation: dict | None = None

    @property
    def query(self) -> str:
        return str(self.params.get("query") or (self.plan or {}).get("query") or "?")

    @property
    def replay(self) -> bool:
        return bool(self.params.get("input"))


def load(directory: Path | str, plan: dict | None = None) -> Campaign:
    """The campaign in ``directory``; ``plan`` (a plan.json's content) is the plan a validate campaign
    ran. UserError, naming --campaign-dir, when the directory is missing or holds no campaign."""
    d = Path(directory)
    if not d.exists():
        raise UserError(f"--campaign-dir: {d}: no such directory")
    if not d.is_dir():
        raise UserError(f"--campaign-dir: {d} is a file, not a campaign directory")
    if not (d / Ledger.FILENAME).is_file():
        raise UserError(f"--campaign-dir: {d} is not a campaign directory (no {Ledger.FILENAME}: every campaign "
                        f"keeps one)")
    try:
        record = read_campaign(d)
    except UserError as e:
        raise UserError(f"--campaign-dir: {e}") from None
    result = record.result
    c = Campaign(d, record.kind, record.params, finished=result is not None)
    if record.kind == "plan":
        c.plan = (result or {}).get("plan") or _json_file(d / "plan.json")
        c.exploration = (result or {}).get("exploration") or _json_file(d / "exploration.json")
    elif record.kind == "explore":
        c.exploration = result
    elif record.kind == "estimate":
        c.estimate = result
    elif record.kind == "optimize":
        c.estimate = (result or {}).get("estimate")
    elif record.kind == "validate":
        c.validation, c.plan = result, plan
    return c


def _json_file(path: Path) -> dict | None:
    """A JSON file the campaign wrote beside its ledger (None when absent)."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise UserError(f"--campaign-dir: {path} is not the JSON the campaign wrote ({e})") from None
    return data if isinstance(data, dict) else None


def write_report(directory: Path | str, out: Path | str | None = None, plan: dict | None = None) -> Path:
    """Write the page of the campaign in ``directory`` to ``out`` (default: report.html in it)."""
    campaign = load(directory, plan)
    path = Path(out) if out is not None else campaign.directory / REPORT_FILE
    write_text(path, render(campaign))
    return path


# ---------------------------------------------------------------------------------------------- sections


@dataclass
class Section:
    key: str
    title: str
    body: str = ""
    absent: str | None = None
    """Why the campaign has no data for this section (None: it is shown)."""


class Recorder(Output):
    """The terminal's tables and warnings (tables.py), kept for the page instead of printed."""

    def __init__(self) -> None:
        super().__init__(quiet=True)
        self.items: list[tuple[str, Any]] = []

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self.items.append(("table", (title, list(columns), [list(r) for r in rows])))

    def warn(self, message: str) -> None:
        self.items.append(("warning", message))

    def info(self, message: str) -> None:
        self.items.append(("note", message))

    def html(self, keep: Callable[[str], bool] = lambda title: True) -> str:
        parts = []
        for kind, item in self.items:
            if kind == "table" and keep(item[0]):
                parts.append(table_html(*item))
            elif kind == "warning":
                parts.append(f'<p class="warning"><b>warning:</b> {esc(item)}</p>')
            elif kind == "note":
                parts.append(f"<p>{esc(item)}</p>")
        return "\n".join(parts)

    def tables(self, prefix: str) -> str:
        return "\n".join(table_html(*item) for kind, item in self.items if kind == "table" and item[0].startswith(prefix))


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def table_html(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{esc(fmt(v))}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><caption>{esc(title)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def figure_html(fig, key: str, caption: str) -> str:
    return (f'<figure id="fig-{key}" class="plot" aria-label="{esc(caption)}">{plots.svg(fig, prefix=f"{key}-")}'
            f"<figcaption>{esc(caption)}</figcaption></figure>")


def _a(kind: str) -> str:
    """'an explore', 'a plan'."""
    return f"a{'n' if kind[:1] in ('a', 'e', 'i', 'o', 'u') else ''} {kind}"


def _no_result(c: Campaign) -> str:
    return (f"the {c.kind} campaign has no result yet (interrupted?): continue it with --resume, then write the "
            f"report again")


def plan_section(c: Campaign) -> Section:
    s = Section("plan", "The plan and its risk")
    if c.plan is None:
        s.absent = (_no_result(c) if c.kind == "plan" else
                    "this validate campaign was not given its plan (streambed report --plan FILE)" if c.kind == "validate"
                    else f"{_a(c.kind)} campaign plans no rate: run streambed plan")
        return s
    p = c.plan
    sizing = (f"sized for a {100 * p['risk']:g} % risk of under-provisioning" if p.get("risk")
              else f"x{p.get('safety', 1.0):.2f} safety factor")
    lines = [f"<li><b>{e['memory_mb']} MB per slot</b>: "
             + (f"{e['slots']:,} task slots, model MST {fmt(e.get('predicted_mst'))} events/s"
                + (f", estimated risk {100 * e['risk']:.1f} %" if e.get("risk") is not None else "")
                + (", beyond the model's trusted range" if e.get("beyond_trusted") else "")
                if e.get("slots") else "unreachable") + "</li>" for e in p["entries"]]
    rec = Recorder()
    plan_tables(rec, p, c.exploration, replay=c.replay)
    risky = any(kind == "warning" for kind, _ in rec.items)
    origin = ((c.validation or {}).get("plan") or {})
    replanned = (f"<p>Re-planned for this cluster (--within-cluster) from {esc(origin.get('file'))}: that plan's "
                 f"own budget was unreachable or larger than the cluster, so this is its plan for the highest rate it "
                 f"serves within the cluster's slots (the same measurements, model and rules).</p>"
                 if origin.get("replanned_for_cluster") else "")
    s.body = (f"<p>{esc(p['query'])} at <b>{p['rate']:,.0f} events/s</b>, {esc(sizing)}, {esc(p.get('family', '?'))} "
              f"model.</p>{replanned}<ul>{''.join(lines)}</ul>"
              + ("" if risky else f'<p class="ok">The plan carries no warning: every budget is reachable within '
                                  f"the model's trusted range, the model families agree within "
                                  f"{FAMILY_SPREAD_LIMIT:g}x and no measurement was capped by the source.</p>")
              + rec.html())
    return s


def model_section(c: Campaign) -> Section:
    s = Section("model", "The capacity model: measurements and extrapolation")
    ex = c.exploration
    if ex is None or not ex.get("points"):
        s.absent = (_no_result(c) if c.kind in ("plan", "explore") else
                    f"{_a(c.kind)} campaign fits no model: the Resource Explorer "
                    f"(streambed explore or plan) does")
        return s
    model_dict = (c.plan or {}).get("model") or ex.get("model")
    if not model_dict:
        s.absent = "the exploration fitted no model"
        return s
    model = Surrogate.from_dict(model_dict)
    testbed = int(c.params.get("max_slots") or max(int(p["slots"]) for p in ex["points"]))
    fig = plots.model_figure(ex["points"], model, c.plan, testbed)
    caption = ("MST against task slots per memory per slot. Left: the testbed's range with every measurement and "
               "the model fitted on them. " + ("Right: the same model extrapolated to the planned budgets (dashed), "
                                               "the testbed's range shaded, the target rate and the planned slots "
                                               "marked." if c.plan else "No plan: no extrapolation."))
    rec = Recorder()
    exploration_table(rec, ex)
    s.body = figure_html(fig, "model", caption) + rec.html()
    return s


def _largest(ex: dict) -> dict:
    return max(ex["points"], key=lambda p: (p["slots"], p["memory_mb"]))


def point_estimate(point: dict) -> dict:
    """An exploration point's estimate as the trace draws it. Its windows are compact (no source
    saturation per window): the lowest failed one of a source-limited point is the window the source
    capped (estimator.source_limited)."""
    windows = [dict(w, measurement=dict(w["measurement"])) for w in point.get("trace") or []]
    failed = [w for w in windows if not w["success"]]
    if point.get("source_limited") and failed:
        min(failed, key=lambda w: w["rate"])["measurement"]["source_saturated"] = True
    return {"mst": point["mst"], "windows": windows, "source_limited": point.get("source_limited", False)}


def trace_section(c: Campaign) -> Section:
    s = Section("trace", "Estimator trace (the paper's Fig. 6)")
    if c.estimate is not None:
        est, what = c.estimate, f"{c.estimate['slots']} slots x {c.estimate['memory_mb']} MB"
    elif c.exploration and c.exploration.get("points"):
        p = _largest(c.exploration)
        est, what = point_estimate(p), f"{p['slots']} slots x {p['memory_mb']} MB, the largest budget measured"
    else:
        s.absent = (_no_result(c) if c.kind in ("plan", "explore", "estimate", "optimize") and not c.finished else
                    "a validate campaign runs fixed rates, it searches no MST" if c.kind == "validate" else
                    f"{_a(c.kind)} campaign runs no Capacity Estimator")
        return s
    if not est.get("windows"):
        s.absent = "the estimate recorded no observation window"
        return s
    title = f"{c.query}: estimator trace, {what}"
    fig = plots.trace_figure(est, title)
    caption = ("The dichotomous search: per observation window the target rate (black) and the achieved rate "
               "(dashed: green sustained, red not sustained, purple source-capped), the search bounds (grey) and "
               "the MST (blue); seconds from the estimate's first observation window.")
    rec = Recorder()
    estimate_table(rec, est, f"{title}: MST {est['mst']:,.0f} events/s", replay=c.replay)
    s.body = figure_html(fig, "trace", caption) + rec.html(keep=lambda t: not t.startswith(OPERATORS_TABLE))
    return s


def _run_operators(run: dict) -> list[dict]:
    """A validation run's operators, busyness averaged over its judged windows (busiest task: the max)."""
    by: dict[str, list[dict]] = {}
    for w in run["windows"]:
        for o in w.get("operators", []):
            by.setdefault(o["operator"], []).append(o)
    return [{"operator": name, "busyness": sum(o["busyness"] for o in os) / len(os),
             "busyness_max": max(o["busyness_max"] for o in os)} for name, os in by.items()]


def busyness_section(c: Campaign) -> Section:
    s = Section("busyness", "Per-operator busyness")
    columns: list[tuple[str, list[dict]]] = []
    tables = ""
    if c.estimate is not None and c.estimate.get("measurement"):
        columns = [(f"at the MST\n{c.estimate['slots']} slots", c.estimate["measurement"]["operators"])]
        rec = Recorder()
        estimate_table(rec, c.estimate, "")
        tables = rec.tables(OPERATORS_TABLE)
        where = "the estimate's window at its MST"
    elif c.exploration and c.exploration.get("points"):
        pts = sorted((p for p in c.exploration["points"] if p.get("measurement")),
                     key=lambda p: (p["memory_mb"], p["slots"]))
        columns = [(f"P={p['slots']}\n{p['memory_mb']} MB", p["measurement"]["operators"]) for p in pts]
        big = _largest(c.exploration)
        if big.get("measurement"):
            tables = table_html(f"Operators at the MST of the largest budget ({big['slots']} slots x "
                                f"{big['memory_mb']} MB)",
                                ("operator", "parallelism", "input, records/s", "busy (mean)", "busy (max task)",
                                 "back-pressured"),
                                [(o["operator"], o["parallelism"], o["input_rate"], o["busyness"], o["busyness_max"],
                                  o["backpressure"]) for o in big["measurement"]["operators"]])
        where = "each measurement's window at its MST"
    elif c.validation and c.validation.get("runs"):
        columns = [(f"{r['multiplier'] * 100:.0f} %\n{r['verdict']}", _run_operators(r)) for r in c.validation["runs"]]
        where = "each validation run, averaged over its judged windows"
    columns = [(label, ops) for label, ops in columns if ops]
    if not columns:
        s.absent = (_no_result(c) if not c.finished else
                    f"the {c.kind} campaign recorded no per-operator metrics")
        return s
    fig = plots.busyness_figure(columns, f"{c.query}: busy share per operator")
    caption = (f"Mean busy share of each operator's tasks ({where}); in brackets the busiest task's. An operator "
               f"near 1 is the bottleneck.")
    s.body = figure_html(fig, "busyness", caption) + tables
    return s


def validation_section(c: Campaign) -> Section:
    s = Section("validation", "Validation runs (the paper's Fig. 11)")
    v = c.validation
    if not v or not v.get("runs"):
        s.absent = (_no_result(c) if c.kind == "validate" else
                    f"{_a(c.kind)} campaign runs no validation: streambed "
                    f"validate --plan plan.json runs the plan at 100/120/150 % of its rate")
        return s
    fig = plots.validation_figure(v)
    caption = ("Per run, the achieved rate against the requested rate (thin red) and the run's own target (dotted), "
               "and the pending records added since judging began: a count that keeps growing is a job that cannot "
               "keep up.")
    rec = Recorder()
    validation_table(rec, v)
    verdict = v["verdict"]
    cluster = v.get("cluster")
    where = (f'<p class="cluster">On the cluster <b>{esc(cluster["name"])}</b> ({esc(cluster["testbed"])}'
             + (f', inventory {esc(cluster["inventory"])}' if cluster.get("inventory") else "") + ")</p>") if cluster else ""
    s.body = (where + f'<p class="verdict">Verdict: <b>{esc(verdict)}</b> ({v["slots"]:,} slots x {v["memory_mb"]} MB per slot '
              f"at {v['rate']:,.0f} events/s)</p>" + figure_html(fig, "validation", caption) + rec.html())
    return s


SECTIONS: tuple[Callable[[Campaign], Section], ...] = (plan_section, model_section, trace_section, busyness_section,
                                                      validation_section)


def _guarded(build: Callable[[Campaign], Section], c: Campaign) -> Section:
    """One section; a section that fails to draw says so and leaves the rest of the page standing."""
    try:
        return build(c)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError) as e:
        key = build.__name__.removesuffix("_section")
        return Section(key, key, f'<p class="warning">This section could not be drawn from the campaign\'s data: '
                                 f"{esc(type(e).__name__)}: {esc(e)}</p>")


# ---------------------------------------------------------------------------------------------- page


STYLE = """
body { font-family: sans-serif; margin: 0 auto; max-width: 1180px; padding: 0 24px 48px; color: #222; background: #fff; }
h1 { font-size: 1.5em; margin-top: 24px; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; padding-bottom: 4px; margin-top: 32px; }
table { border-collapse: collapse; margin: 12px 0; font-size: 0.85em; }
caption { text-align: left; font-weight: bold; padding: 4px 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f2f2f2; }
figure.plot { margin: 12px 0; } figure.plot svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.85em; color: #555; }
.warning { background: #fff6d5; border-left: 4px solid #b08800; padding: 6px 10px; }
.ok { background: #eef6ee; border-left: 4px solid #4a7a4a; padding: 6px 10px; }
.absent { color: #555; font-style: italic; }
.verdict { font-size: 1.1em; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; font-size: 0.9em; }
dl.meta dt { font-weight: bold; } dl.meta dd { margin: 0; }
"""


def render(c: Campaign) -> str:
    """The page of a campaign, as one HTML document."""
    sections = [_guarded(build, c) for build in SECTIONS]
    shown = [s for s in sections if s.absent is None]
    absent = [s for s in sections if s.absent is not None]
    meta = [("campaign", f"{c.kind}, {c.directory}"), ("query", c.query),
            ("testbed", c.params.get("testbed", "?")), ("seed", c.params.get("seed", "-")),
            ("status", "finished" if c.finished else "no result yet (interrupted?)")]
    if c.replay:
        meta.append(("input", f"replay of {c.params['input']}"))
    head = ("<dl class=\"meta\">" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in meta) + "</dl>"
            + "<p>Shown: " + (", ".join(f'<a href="#{s.key}">{esc(s.title)}</a>' for s in shown) or "nothing")
            + ".</p>"
            + (f"<p class=\"absent\">Absent from this campaign: {', '.join(esc(s.title) for s in absent)}.</p>"
               if absent else ""))
    body = "\n".join(f'<section id="{s.key}"><h2>{esc(s.title)}</h2>'
                     + (f'<p class="absent">Absent: {esc(s.absent)}.</p>' if s.absent is not None else s.body)
                     + "</section>" for s in sections)
    title = f"StreamBed campaign report: {c.query} ({c.kind})"
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n<body><h1>{esc(title)}</h1>{head}\n{body}\n"
            f'<footer><p class="absent">Written by StreamBed {esc(__version__)} (streambed report); '
            f"self-contained: no script, nothing fetched.</p></footer></body></html>\n")


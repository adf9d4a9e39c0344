"""Plots of a campaign: the capacity planning model with its measurements and extrapolation, an
estimator trace in the style of the paper's Fig. 6, per-operator busyness, and validation runs in the
style of its Fig. 11.

Each ``*_figure`` function is pure: data in, a matplotlib Figure out (no pyplot state, no file).
:func:`save` writes one as PNG next to a campaign's ledger (plan.py), :func:`svg` gives it as inline
SVG for the report page (html.py).
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # files only: these machines have no display
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from ..files import replacing  # noqa: E402
from ..model import Surrogate  # noqa: E402

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
"""One colour per memory per slot (model), in order."""
OUTCOME = {"sustained": "#2ca02c", "not sustained": "#d62728", "source-capped": "#9467bd"}
"""An estimator window's outcome: the rate was sustained, was not, or the source could not emit it."""
RUN_COLORS = {1.0: "#1f77b4", 1.2: "#e0b000", 1.5: "#9467bd"}
"""Validation runs as the paper's Fig. 11 draws them: 100 % blue, 120 % yellow, 150 % purple."""
BOUNDS = "#7f7f7f"


def rate_label(v: float, _pos=None) -> str:
    """events/s as people read them on an axis: 2.5 M, 250 k, 25."""
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:g} M"
    if a >= 1e3:
        return f"{v / 1e3:g} k"
    return f"{v:g}"


def _rates(ax, axis: str = "y") -> None:
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(FuncFormatter(rate_label))


def _seconds(ax) -> None:
    """A time axis in plain seconds: no offset (+1.795e9) and no scientific notation."""
    ax.ticklabel_format(axis="x", style="plain", useOffset=False)


# ---------------------------------------------------------------------------------------------- model


def _memories(points: Sequence[dict], plan: dict | None) -> list[int]:
    return sorted({int(p["memory_mb"]) for p in points} | {int(e["memory_mb"]) for e in (plan or {}).get("entries", [])})


def _measured(ax, points: Sequence[dict], memory: int, color: str, label: bool) -> None:
    pts = [p for p in points if int(p["memory_mb"]) == memory]
    full = [p for p in pts if not p.get("source_limited")]
    capped = [p for p in pts if p.get("source_limited")]
    if full:
        ax.scatter([p["slots"] for p in full], [p["mst"] for p in full], color=color, s=22, zorder=3,
                   label=f"measured, {memory} MB/slot" if label else None)
    if capped:
        ax.scatter([p["slots"] for p in capped], [p["mst"] for p in capped], facecolors="none", edgecolors=color,
                   s=30, zorder=3, label=f"source-capped (lower bound), {memory} MB" if label else None)


def model_figure(points: Sequence[dict], model: Surrogate, plan: dict | None, testbed_slots: int) -> Figure:
    """MST against slots per memory per slot. Left: the testbed's range, where the measurements are,
    with the model fitted on them. Right (with a plan): the model extrapolated to the planned budgets,
    the testbed's range shaded, the requested rate (and its safety factor) and the planned slots
    marked; an unreachable entry marks the largest budget its model is trusted to."""
    memories = _memories(points, plan)
    color = {m: COLORS[i % len(COLORS)] for i, m in enumerate(memories)}
    fig = Figure(figsize=(11, 4.6) if plan else (6.5, 4.6))
    axes = fig.subplots(1, 2 if plan else 1, squeeze=False)[0]
    ax = axes[0]
    lo = min([int(p["slots"]) for p in points] or [1])
    inside = np.linspace(max(1, lo), testbed_slots, 120)
    for m in memories:
        ax.plot(inside, model.predict(m, inside), color=color[m], lw=1.5)
        _measured(ax, points, m, color[m], label=True)
    ax.set_xlim(0, testbed_slots * 1.05)
    ax.set_xlabel("task slots P (testbed)")
    ax.set_ylabel("MST, events/s")
    _rates(ax)
    query = f"{plan['query']}: " if plan else ""
    ax.set_title(f"{query}{len(points)} MSTs measured on the testbed, {model.family} model", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    if plan:
        _extrapolation(axes[1], points, model, plan, testbed_slots, color)
    fig.tight_layout()
    return fig


def _extrapolation(ax, points, model: Surrogate, plan: dict, testbed_slots: int, color: dict) -> None:
    entries = plan["entries"]
    marks = [e["slots"] for e in entries if e.get("slots")] + [e["max_slots"] for e in entries
                                                               if not e.get("slots") and e.get("max_slots")]
    top = max([testbed_slots * 1.5, *marks]) * 1.08
    beyond = np.linspace(max(1, min([int(p["slots"]) for p in points] or [1])), top, 300)
    ax.axvspan(0, testbed_slots, color="#dddddd", alpha=0.6, lw=0, label=f"testbed range (<= {testbed_slots} slots)")
    for m in color:
        ax.plot(beyond, model.predict(m, beyond), color=color[m], lw=1.3, ls="--", label=f"model, {m} MB/slot")
        _measured(ax, points, m, color[m], label=False)
    ax.axhline(plan["rate"], color="k", lw=1.0, label=f"target rate {rate_label(plan['rate'])} events/s")
    safety = plan.get("safety") or 1.0
    if safety > 1.0:
        ax.axhline(plan["rate"] * safety, color="k", lw=0.8, ls=":", label=f"target x{safety:.2f} safety")
    for e in entries:
        c = color.get(int(e["memory_mb"]), "k")
        if e.get("slots"):
            ax.axvline(e["slots"], color=c, lw=1.0)
            y = e.get("predicted_mst") or float(model.predict(e["memory_mb"], np.array([e["slots"]]))[0])
            ax.scatter([e["slots"]], [y], marker="D", color=c, s=36, zorder=4,
                       label=f"planned: {e['slots']:,} slots x {e['memory_mb']} MB")
        elif e.get("max_slots"):
            ax.axvline(e["max_slots"], color=c, lw=1.0, ls=":",
                       label=f"{e['memory_mb']} MB unreachable: trusted to {e['max_slots']:,} slots")
    ax.set_xlim(0, top)
    ax.set_xlabel("task slots P (extrapolated)")
    _rates(ax)
    planned = [f"{e['slots']:,}" for e in entries if e.get("slots")]
    ax.set_title(f"extrapolated: {' / '.join(planned) or 'no'} slots planned for {rate_label(plan['rate'])} events/s",
                 fontsize=10)
    ax.legend(fontsize=7, loc="upper left")


def plot_model(path: Path, points: Sequence[dict], model: Surrogate, plan: dict, testbed_slots: int) -> Path:
    """The model figure as a PNG file."""
    return save(model_figure(points, model, plan, testbed_slots), path)


# ---------------------------------------------------------------------------------------------- trace


def window_outcome(window: dict) -> str:
    """sustained, source-capped (the source could not emit the target: says nothing about the job) or
    not sustained."""
    if window["success"]:
        return "sustained"
    return "source-capped" if window["measurement"].get("source_saturated") else "not sustained"


def trace_figure(estimate: dict, title: str, t0: float | None = None) -> Figure:
    """An estimate's dichotomous search (Fig. 6): per observation window, the target rate (solid black)
    and the achieved rate (dashed, coloured by the window's outcome), the search bounds min_r / max_r,
    and the MST. Time in seconds from ``t0`` (default: the first window's start), so that a wall-clock
    testbed does not label the axis with an epoch offset."""
    fig = Figure(figsize=(9, 4.2))
    ax = fig.subplots()
    windows = estimate.get("windows") or []
    if t0 is None:
        t0 = min((w["measurement"]["start"] for w in windows), default=0.0)
    seen = []
    for w in windows:
        m = w["measurement"]
        a, b = m["start"] - t0, m["end"] - t0
        outcome = window_outcome(w)
        seen.append(outcome)
        ax.hlines(w["rate"], a, b, color="k", lw=1.6)
        ax.hlines(m["achieved_rate"], a, b, color=OUTCOME[outcome], lw=1.6, ls="--")
        ax.scatter([b], [m["achieved_rate"]], color=OUTCOME[outcome], s=20, zorder=3)
        ax.hlines(w["min_rate"], a, b, color=BOUNDS, lw=0.8, ls=(0, (2, 2)))
        if w.get("max_rate") is not None:
            ax.hlines(w["max_rate"], a, b, color=BOUNDS, lw=0.8, ls=(0, (2, 2)))
    if estimate.get("mst"):
        ax.axhline(estimate["mst"], color="#1f77b4", lw=0.9)
    handles = [Line2D([], [], color="k", lw=1.6, label="target rate (injected)"),
               Line2D([], [], color="#555555", lw=1.6, ls="--", label="achieved rate (dashed, coloured by outcome)")]
    handles += [Line2D([], [], color=OUTCOME[o], lw=1.6, ls="--", marker="o", ms=4, label=o)
                for o in OUTCOME if o in seen]
    handles += [Line2D([], [], color=BOUNDS, lw=0.8, ls=(0, (2, 2)), label="search bounds min_r / max_r")]
    if estimate.get("mst"):
        handles.append(Line2D([], [], color="#1f77b4", lw=0.9, label=f"MST {estimate['mst']:,.0f} events/s"))
    ax.legend(handles=handles, fontsize=7, loc="best")
    _seconds(ax)
    ax.set_xlim(left=min(0.0, ax.get_xlim()[0]))
    ax.set_xlabel("seconds since the estimate's first observation window")
    ax.set_ylabel("events/s")
    _rates(ax)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_trace(path: Path, estimate: dict, title: str) -> Path:
    """The trace figure as a PNG file."""
    return save(trace_figure(estimate, title), path)


# ---------------------------------------------------------------------------------------------- busyness


def busyness_figure(columns: Sequence[tuple[str, Sequence[dict]]], title: str) -> Figure:
    """Per-operator busyness as a heat map: one row per operator, one column per measurement (its
    window at the MST, or a validation run); each cell the mean busyness of the operator's tasks,
    annotated with it and the busiest task's when the columns leave room."""
    operators: list[str] = []
    for _, ops in columns:
        operators += [o["operator"] for o in ops if o["operator"] not in operators]
    grid = np.full((len(operators), len(columns)), np.nan)
    peak = np.full_like(grid, np.nan)
    for j, (_, ops) in enumerate(columns):
        for o in ops:
            i = operators.index(o["operator"])
            grid[i, j], peak[i, j] = o["busyness"], o.get("busyness_max", o["busyness"])
    fig = Figure(figsize=(min(11.0, max(6.5, 3.2 + 0.75 * len(columns))), 1.5 + 0.38 * len(operators)))
    ax = fig.subplots()
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="YlOrRd", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(columns)), [c for c, _ in columns], fontsize=7,
                  rotation=0 if len(columns) <= 6 else 60, ha="center" if len(columns) <= 6 else "right")
    ax.set_yticks(range(len(operators)), operators, fontsize=8)
    if len(columns) <= 12:
        for i in range(len(operators)):
            for j in range(len(columns)):
                if not math.isnan(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.2f}\n(max {peak[i, j]:.2f})", ha="center", va="center", fontsize=6,
                            color="white" if grid[i, j] > 0.6 else "black")
    fig.colorbar(image, ax=ax, label="busy share (mean of tasks)", fraction=0.04)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------- validation


def run_color(multiplier: float, i: int) -> str:
    return RUN_COLORS.get(round(multiplier, 3), COLORS[(i + 3) % len(COLORS)])


def validation_figure(report: dict) -> Figure:
    """Validation runs (Fig. 11): per run, the achieved rate over its judged windows against the
    requested rate (thin red) and its own target (dotted), and below, the pending records added since
    judging began (an ever-growing count is an under-provisioned job). Time from each run's first
    judged window, after its ramp-up."""
    fig = Figure(figsize=(9, 6.2))
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.axhline(report["rate"], color="#d62728", lw=0.8, label=f"requested rate {rate_label(report['rate'])} events/s")
    for i, run in enumerate(report["runs"]):
        ws = run["windows"]
        if not ws:
            continue
        c = run_color(run["multiplier"], i)
        t0 = ws[0]["start"]
        times = [w["start"] - t0 for w in ws] + [ws[-1]["end"] - t0]
        achieved = [w["achieved_rate"] for w in ws]
        pending = [w["pending_start"] for w in ws] + [ws[-1]["pending_end"]]
        label = f"{run['multiplier'] * 100:.0f} %: {run['verdict']}"
        top.step(times, achieved + achieved[-1:], where="post", color=c, lw=1.6, label=label)
        top.axhline(run["target_rate"], color=c, lw=0.7, ls=":")
        bottom.plot(times, [p - pending[0] for p in pending], color=c, lw=1.6, marker="o", ms=3, label=label)
    top.set_ylabel("achieved rate, events/s")
    _rates(top)
    top.legend(fontsize=7, loc="best")
    top.set_title(f"{report['slots']:,} slots x {report['memory_mb']} MB at {rate_label(report['rate'])} events/s: "
                  f"{report['verdict']}", fontsize=10)
    bottom.set_ylabel("pending records added")
    _rates(bottom)
    _seconds(bottom)
    bottom.set_xlabel("seconds since the run's first judged window (after the ramp-up)")
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------- output


def save(fig: Figure, path: Path) -> Path:
    """A figure as a PNG file (written whole or not at all)."""
    with replacing(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    return path


def svg(fig: Figure, prefix: str = "") -> str:
    """A figure as an ``<svg>`` element to inline in a page: no XML prolog, no metadata, text drawn as
    paths (the page needs no font), and every id prefixed with ``prefix`` so that the figures of one
    page never share one."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "streambed"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    if prefix:
        text = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}\1"', text)
        text = re.sub(r'\b((?:xlink:)?href)="#([^"]+)"', rf'\1="#{prefix}\2"', text)
        text = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}\1)", text)
    return text

"""Plots written next to a campaign's ledger: the capacity planning model with its measurements and
extrapolation, and an estimator trace in the style of the paper's Fig. 6."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # files only: these machines have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..files import replacing  # noqa: E402
from ..model import Surrogate  # noqa: E402


def plot_model(path: Path, points: Sequence[dict], model: Surrogate, plan: dict, testbed_slots: int) -> Path:
    """MST against slots per memory per slot: measurements, the fitted model over the testbed and its
    extrapolation to the planned budgets, and the requested rate with its safety factor."""
    fig, ax = plt.subplots(figsize=(8, 5))
    memories = sorted({int(p["memory_mb"]) for p in points} | {int(e["memory_mb"]) for e in plan["entries"]})
    planned = [e["slots"] for e in plan["entries"] if e["slots"]]
    top = max([testbed_slots, *planned]) * 1.1
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    lo = min(int(p["slots"]) for p in points)
    for i, m in enumerate(memories):
        c = colors[i % len(colors)]
        pts = [p for p in points if int(p["memory_mb"]) == m]
        if pts:
            ax.scatter([p["slots"] for p in pts], [p["mst"] for p in pts], color=c, s=18, zorder=3,
                       label=f"measured, {m} MB/slot")
        inside = np.linspace(lo, testbed_slots, 100)
        beyond = np.linspace(testbed_slots, top, 200)
        ax.plot(inside, model.predict(m, inside), color=c, lw=1.5)
        ax.plot(beyond, model.predict(m, beyond), color=c, lw=1.2, ls="--")
    target = plan["rate"] * plan["safety"]
    ax.axhline(plan["rate"], color="k", lw=0.8, label="requested rate")
    ax.axhline(target, color="k", lw=0.8, ls=":", label=f"x{plan['safety']:.2f} safety")
    for e in plan["entries"]:
        if e["slots"]:
            ax.axvline(e["slots"], color="grey", lw=0.5)
    ax.axvline(testbed_slots, color="r", lw=0.8, ls="-.", label="testbed size")
    ax.set_xlabel("task slots P")
    ax.set_ylabel("MST, events/s")
    ax.set_title(f"{plan['query']}: {plan['family']} model, planned {', '.join(str(p) for p in planned) or '-'} slots")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    with replacing(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)
    return path


def plot_trace(path: Path, estimate: dict, title: str) -> Path:
    """An estimate's dichotomous search (Fig. 6): target and achieved rate per window, and the bounds."""
    fig, ax = plt.subplots(figsize=(8, 4))
    windows = estimate["windows"]
    for w in windows:
        m = w["measurement"]
        ax.hlines(w["rate"], m["start"], m["end"], color="k", lw=1.5)
        ax.hlines(m["achieved_rate"], m["start"], m["end"], color="k", lw=1.2, ls="--")
        ax.plot([m["start"], m["end"]], [w["min_rate"]] * 2, color="r", lw=0.6, ls=":")
        if w["max_rate"] is not None:
            ax.plot([m["start"], m["end"]], [w["max_rate"]] * 2, color="r", lw=0.6, ls=":")
        ax.scatter([m["end"]], [m["achieved_rate"]], color="g" if w["success"] else "r", s=14, zorder=3)
    ax.axhline(estimate["mst"], color="b", lw=0.8, label=f"MST {estimate['mst']:,.0f}")
    ax.set_xlabel("testbed time, s (observation windows)")
    ax.set_ylabel("events/s")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    with replacing(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)
    return path

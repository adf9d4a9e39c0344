"""make evaluate: how accurate and how costly StreamBed's plans are, judged on the simulated testbed.

Sections (issues #3 and #11):
  A. The Nexmark profiles q1, q2, q5, q8, q11 and the paper's analytic profiles planned on a 48-slot
     testbed (0.5-4 GB) at 3x, 10x and 25x what its largest budget sustains, each plan's entry per
     memory judged by the sim's truth: its own configuration's MST against the target, its slots
     against the smallest budget of that memory that sustains the target; a verdict per entry, one
     summary line for the 4 GB entries, one for every memory, and a line per under-provisioned entry.
  B. Analytic profiles with the paper's Table III models plus run-to-run noise, swept over noise
     levels (--noise) and seeds (--seeds): how often the explorer picks the paper's family, its slots
     against Table IV, and up to which noise they land within 2 %.
  C. The paper's own measurements: which family automatic selection picks, the slots it would plan,
     against the slots the paper deployed and what they sustained.
  D. BIDS2 against DS2 on the same single-task metrics: for a target rate, DS2's configuration and
     BIDS2's on as many slots, each one's MST as measured, against the sim's ground truth.
  E. The probes of bench/profiles/ judged as section A judges the public profiles: query shapes and
     key distributions the planner was not developed on (held-out proxies, bench/profiles/README.md).
  G. Generated workloads (`streambed sim generate`): random plausible profiles planned at 1.5, 3, 10 and
     25x their 48-slot MST at two memories per slot, every entry judged by the plan's own configuration
     as section A judges it (its own MST / target, slots / true minimum, wrong "unreachable").
  M. Every registered way to size a job (`streambed compare`: StreamBed, DS2, the autoscaler, Imai, Rafiki,
     Justin) on the five Nexmark profiles and generated ones (--methods-count, --methods-seed), each plan
     judged by the sim's truth (bench/methods_compare.py).
Prints tables and writes everything to <out>/evaluation.json. Asserts nothing.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import multiprocessing
import os
import shutil
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from streambed.campaigns.plan import run_plan
from streambed.campaigns.settings import PlanRequest
from streambed.commands import args as cli_args
from streambed.campaigns.chain import assemble
from streambed.planner.policies import DEFAULT_POLICY
from streambed.planner.estimator import Timing
from streambed.planner.exploration import ExplorerSettings
from streambed.planner.search import SEARCHES
from streambed.planner.selection import select_family
from streambed.ledger import Ledger
from streambed.model import Budget, Configuration
from streambed.planner.policies.bids2 import bids2
from streambed.planner.policies.ds2 import ds2
from paper import QUERIES as NEXMARK_QUERIES, TABLE_III_FAMILY, TABLE_IV_RATE, TABLE_IV_SLOTS
from streambed.records import paper_search_file, read_measurements
from streambed.model import Features
from streambed.planner.surrogates import fit, inverse_solve, loocv_rmse
from streambed.testbed.sim.profile import SimProfile, load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed
from streambed.testbed.sim.truth import GroundTruth, TruthSettings

PROBES = tuple(str(p) for p in sorted((Path(__file__).resolve().parent / "profiles").glob("*.yaml")))
"""Section E's profiles: shapes the planner was not developed on (bench/profiles/README.md)."""
PAPER_DATA = Path(os.environ.get("STREAMBED_PAPER_DATA", Path(__file__).resolve().parents[1] / "data" / "streambed-paper"))
COMPLEX = {"q5", "q8"}
MEMORIES = [512, 1024, 2048, 4096]
TESTBED_SLOTS = 48

console = Console(width=160)


def table(title, columns, rows):
    t = Table(title=title, title_justify="left")
    for i, c in enumerate(columns):
        # fold rather than truncate: a configuration cut short with an ellipsis says nothing
        t.add_column(c, justify="left" if i == 0 else "right", overflow="fold")
    for r in rows:
        t.add_row(*[fmt(v) for v in r])
    console.print(t)


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


PAPER_METHOD = {"policy": "bids2", "min_marginal": 0.0}
"""The paper's own method: its BIDS2 and an inverse solve with no guard rail (section B)."""


def plan_campaign(out: Path, query: str, rate: float, memories, timing: str, seed: int = 0,
                  profile: SimProfile | None = None, policy: str = DEFAULT_POLICY, min_marginal: float | None = None,
                  risk: float | None = None, checkpoint_slots: int | None = None, explorer: dict | None = None):
    """One plan campaign on a fresh 48-slot simulated testbed; its ledger and files under ``out``.
    ``profile``: a profile changed in memory (section B's noise levels) instead of the shipped one.
    ``checkpoint_slots``: staged measurements on a simulated cluster of that many slots (--checkpoint-slots)."""
    if out.exists():
        shutil.rmtree(out)
    profile = profile or load_profile(query)
    tb = SimTestbed(profile, SimSettings(seed=seed, max_slots=TESTBED_SLOTS))
    staged = SimTestbed(profile, SimSettings(seed=seed, max_slots=checkpoint_slots)) if checkpoint_slots else None
    settings = ExplorerSettings(seed=seed, **(explorer or {}))
    if min_marginal is not None:
        settings = replace(settings, min_marginal=min_marginal)
    if risk is not None:
        settings = replace(settings, risk=risk)
    request = PlanRequest(query, tuple(memories), rate=rate, timing=timing, policy=policy, explorer=settings)
    with Ledger.open(out, "plan", {"query": query, "rate": rate}, resume=False) as ledger:
        return run_plan(tb, ledger, request, out, checkpoint=staged)


# -- A ------------------------------------------------------------------------------------------------

MULTIPLES = (3, 10, 25)
"""Section A plans each profile for these multiples of what its 48-slot testbed sustains."""
ANALYTIC = tuple(f"paper-{q}-{TABLE_III_FAMILY[q]}" for q in NEXMARK_QUERIES)
OVER_TOLERANCE = 1.25
"""A plan is right when its own configuration sustains the target with at most this many times the
true minimum slots: a margin a team would pay, not more."""

RIGHT, UNDER, OVER = "right", "under", "over"
UNREACHABLE_AGREED = "unreachable (truth agrees)"
UNREACHABLE_LIMIT = "unreachable (beyond the stated limit)"
UNREACHABLE_WRONG = "unreachable (truth reaches it)"


def plan_verdict(planned: int | None, own_mst: float | None, rate: float, true_min: int | None,
                 limit: int | None = None, tolerance: float = OVER_TOLERANCE) -> str:
    """A plan judged by the sim's truth: under when its own configuration does not sustain the rate,
    over when it takes more than ``tolerance`` x the true minimum slots, right otherwise. An
    unreachable answer is right where the truth reaches the rate with no budget, or only beyond the
    plan's stated extrapolation ``limit`` (slots)."""
    if planned is None:
        if true_min is None:
            return UNREACHABLE_AGREED
        if limit is not None and true_min > limit:
            return UNREACHABLE_LIMIT
        return UNREACHABLE_WRONG
    if own_mst is None or own_mst < rate:
        return UNDER
    if true_min is not None and planned > tolerance * true_min:
        return OVER
    return RIGHT


def summary(rows: list[dict]) -> dict:
    """Section A's summary line: under-provisioned plans, wrong unreachable answers, and planned slots
    over the true minimum (median and worst) where both exist."""
    ratios = sorted(r["planned_slots"] / r["true_min"] for r in rows if r["planned_slots"] and r["true_min"])
    return {"plans": len(rows), "under": sum(r["verdict"] == UNDER for r in rows),
            "over": sum(r["verdict"] == OVER for r in rows), "right": sum(r["verdict"] == RIGHT for r in rows),
            "unreachable_agreed": sum(r["verdict"] in (UNREACHABLE_AGREED, UNREACHABLE_LIMIT) for r in rows),
            "unreachable_wrong": sum(r["verdict"] == UNREACHABLE_WRONG for r in rows),
            "median_slots_over_truth": statistics.median(ratios) if ratios else None,
            "worst_slots_over_truth": max(ratios) if ratios else None}


def summary_line(s: dict) -> str:
    def ratio(v):
        return f"{v:.2f}" if v is not None else "-"

    return (f"{s['plans']} plans: {s['under']} under-provisioned, {s['over']} over, {s['right']} right, "
            f"{s['unreachable_agreed']} unreachable where the truth agrees, {s['unreachable_wrong']} unreachable "
            f"where it does not; slots / true minimum: median {ratio(s['median_slots_over_truth'])}, worst "
            f"{ratio(s['worst_slots_over_truth'])}")


def memory_records(rows: list[dict]) -> list[dict]:
    """Section A's rows as one record per (profile, multiple, memory) entry, in the form ``summary``
    counts (planned_slots, true_min, verdict). Memory keys may be strings (rows read back from
    evaluation.json): they come back as ints, in increasing order."""
    return [{"profile": r["profile"], "multiple": r["multiple"], "memory_mb": int(m), "planned_slots": e["planned"],
             "true_min": e["true_min"], "own_over_rate": e["own_over_rate"], "verdict": e["verdict"]}
            for r in rows for m, e in sorted(r["memories"].items(), key=lambda kv: int(kv[0]))]


def under_line(record: dict) -> str:
    """One under-provisioned entry, for a reader to see which."""
    ratio = record["own_over_rate"]
    return (f"{record['profile']} x{record['multiple']:g} at {record['memory_mb']} MB: {record['planned_slots']} slots, "
            f"own MST / target {f'{ratio:.3f}' if ratio is not None else '-'}")


def testbed_basis(gt: GroundTruth, cache: Path | None = None) -> float:
    """The truth's MST of the best 48-slot configuration at 4 GB, which fixes a row's target. With ``cache``
    it is measured once per profile and truth settings and kept there (a file named by a digest of both),
    so a profile's cases at other multiples, each in its own process, read it instead of measuring it
    again; JSON keeps a float exactly."""
    if cache is None:
        return gt.true_mst(TESTBED_SLOTS, 4096).mst
    key = hashlib.sha256(repr((gt.profile, gt.settings, TESTBED_SLOTS, 4096)).encode()).hexdigest()[:24]
    path = cache / f"{key}.json"
    if path.exists():
        return json.loads(path.read_text())["mst"]
    mst = gt.true_mst(TESTBED_SLOTS, 4096).mst
    cache.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.part")  # another case may write the same file meanwhile
    partial.write_text(json.dumps({"profile": gt.profile.name, "mst": mst}))
    partial.replace(path)
    return mst


def judged_plan(out_dir: Path, name: str, multiple: float, risk: float | None = None, seed: int = 0,
                checkpoint_slots: int | None = None, explorer: dict | None = None,
                memories: tuple[int, ...] = tuple(MEMORIES), basis_cache: Path | None = None) -> dict:
    """One section A row: ``name`` planned for ``multiple`` x its 48-slot truth, each memory's entry judged
    by the sim's truth (the plan's own configuration, and the smallest budget of that memory that
    sustains the rate). The row's top-level fields are the 4 GB entry's; ``memories`` holds every
    entry's (memory_mb: planned, own_mst, own_over_rate, true_min, limit, verdict).
    ``basis_cache``: a directory where the 48-slot truth that fixes the target is kept for the profile's
    other multiples (``testbed_basis``). A top-level function so that rows can run in worker processes."""
    t0 = time.time()
    profile = load_profile(name)
    name = profile.name  # a probe is given by its file's path
    gt = GroundTruth(profile)
    testbed_mst = testbed_basis(gt, basis_cache)
    rate = multiple * testbed_mst
    timing = "paper-complex" if any(q in name for q in COMPLEX) or any(o.kind == "join" for o in profile.operators) else "paper-simple"
    outcome = plan_campaign(out_dir / f"A-{name}-{multiple:g}x", name, rate, list(memories), timing, seed, risk=risk,
                            checkpoint_slots=checkpoint_slots, explorer=explorer, profile=profile)
    plan, ex = outcome.plan, outcome.exploration
    by_memory = {}
    for e in plan.entries:  # every memory by the same rule: validate deploys the cheapest, not the 4 GB one
        own_e, own_truth = None, None
        if e.slots:
            own_truth = gt.configuration_mst(Configuration.of(profile.query(), e.configuration, e.max_parallelism),
                                             e.memory_mb)
            own_e = own_truth.mst
        found = gt.least_budget(rate, e.memory_mb)  # (slots, configuration); its MST is not reported
        true_min_e = found[0] if found else None
        by_memory[e.memory_mb] = {"planned": e.slots, "own_mst": own_e,
                                  "own_over_rate": own_e / rate if own_e is not None else None,
                                  "true_min": true_min_e, "limit": e.max_slots,
                                  "verdict": plan_verdict(e.slots, own_e, rate, true_min_e, e.max_slots),
                                  "configuration": e.configuration, "max_parallelism": e.max_parallelism,
                                  "own_bottleneck": own_truth.bottleneck if own_truth else None,
                                  "own_model_mst": own_truth.model_mst if own_truth else None,
                                  "true_min_configuration": found[1].as_dict() if found else None,
                                  "true_min_max_parallelism": found[1].max_parallelism if found else None,
                                  "key_warning": e.key_warning, "risk": e.risk,
                                  # a plan beyond the model's trusted range is a plan: judged by its own configuration
                                  "beyond_trusted": e.beyond_trusted, "unseen": list(e.unseen)}
    entry = plan.entry(4096)
    own, true_min = by_memory[4096]["own_mst"], by_memory[4096]["true_min"]
    limit = entry.max_slots
    verdict = by_memory[4096]["verdict"]
    return {"profile": name, "multiple": multiple, "rate": rate, "testbed_mst": testbed_mst, "family": plan.family,
            "selection": ex.selection, "planned": {e.memory_mb: e.slots for e in plan.entries},
            "planned_slots": entry.slots, "configuration": entry.configuration,
            "max_parallelism": entry.max_parallelism, "true_min": true_min,
            "own_mst": own, "own_over_rate": own / rate if own is not None else None, "limit": limit,
            "verdict": verdict, "risk": entry.risk, "optimizer_calls": ex.optimizer_calls, "estimator_calls": ex.estimator_calls,
            "testbed_minutes": ex.testbed_seconds / 60, "memories": by_memory,
            "checkpoints": [{"memory_mb": p.memory_mb, "slots": p.slots, "mst": p.mst} for p in ex.points
                            if p.phase == "checkpoint"], "wall_s": time.time() - t0}


def section_a(out_dir: Path, jobs: int = 1, names=NEXMARK_QUERIES + ANALYTIC, multiples=MULTIPLES,
              risk: float | None = None, seed: int = 0, checkpoint_slots: int | None = None,
              explorer: dict | None = None, label: str = "A") -> dict:
    """Plans at 3x, 10x and 25x of the testbed's MST for the five Nexmark profiles and the paper's
    analytic ones, each judged by the sim's truth (the rule: sustain the target with at most
    1.25x the true minimum slots, or say unreachable where the truth does or beyond the stated limit)."""
    cases = [(out_dir, n, m, risk, seed, checkpoint_slots, explorer) for n in names for m in multiples]
    rows = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for r in pool.map(judged_plan, *zip(*cases)):
            rows.append(r)
            console.print(f"{label} {r['profile']} x{r['multiple']:g}: {r['planned_slots']} slots (truth {r['true_min']}), "
                          f"own MST / target {fmt(r['own_over_rate'])}: {r['verdict']} [{r['wall_s']:.0f} s]")
    table(f"{label}. Plans at 3/10/25x the 48-slot MST (4 GB per slot), judged by the sim's truth"
          + (f", sized for a {100 * risk:g} % risk" if risk else "")
          + (f", with checkpoints on {checkpoint_slots:,} slots" if checkpoint_slots else "")
          + "".join(f", {k} {v}" for k, v in (explorer or {}).items()),
          ("profile", "x", "rate, ev/s", "family", "planned slots (0.5/1/2/4 GB)", "true min (4 GB)",
           "own MST / target", "verdict", "estimated risk", "#CO", "#CE", "testbed min"),
          [(r["profile"], f"{r['multiple']:g}", r["rate"], f"{r['family']} ({r['selection'].split()[0]})",
            "/".join(str(r["planned"][m]) if r["planned"][m] else "-" for m in MEMORIES),
            r["true_min"] if r["true_min"] else "unreachable",
            f"{r['own_over_rate']:.3f}" if r["own_over_rate"] is not None else "-", r["verdict"],
            f"{100 * r['risk']:.1f} %" if r["risk"] is not None else "-", r["optimizer_calls"], r["estimator_calls"], r["testbed_minutes"]) for r in rows])
    s = summary(rows)
    console.print(f"{label} summary: " + summary_line(s))
    records = memory_records(rows)
    every = summary(records)
    console.print(f"{label} summary, every memory per slot: " + summary_line(every))
    for rec in records:
        if rec["verdict"] == UNDER:
            console.print(f"{label} under-provisioned: " + under_line(rec))
    return {"rows": rows, "summary": s, "summary_every_memory": every}


# -- B ------------------------------------------------------------------------------------------------

SLOT_TOLERANCE = 0.02
"""The target for the analytic profiles: planned slots within 2 % of the paper's Table IV."""
SHIPPED_NOISE = "shipped"
DEFAULT_NOISE = "0,0.5,1,2,shipped"


def parse_noise_levels(text: str) -> list[float | None]:
    """``--noise``: comma-separated run-to-run noise levels in percent (relative standard deviation
    of an analytic profile's capacity per run); ``shipped`` stands for each profile's own level (None)."""
    levels: list[float | None] = []
    for item in text.split(","):
        item = item.strip().rstrip("%").strip()
        if item == SHIPPED_NOISE:
            levels.append(None)
            continue
        try:
            value = float(item)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected percentages or '{SHIPPED_NOISE}', got {item!r}") from None
        if not (math.isfinite(value) and 0 <= value < 100):
            raise argparse.ArgumentTypeError(f"expected a percentage in [0, 100), got {item!r}")
        levels.append(value / 100)
    return levels


def resolve_noise_levels(levels: list[float | None], shipped: float) -> list[tuple[float, bool]]:
    """The noise levels one profile runs at, ascending, each once: (noise, whether it is the
    profile's shipped level). A requested level equal to the shipped one is run once."""
    resolved: dict[float, bool] = {}
    for level in levels:
        noise = shipped if level is None else level
        key = round(noise, 9)  # 0.02 typed as 2 % and 0.02 read from YAML are the same level
        resolved[key] = resolved.get(key, False) or math.isclose(noise, shipped, abs_tol=1e-9)
    return sorted(resolved.items())


def max_slot_error(planned: dict[int, int | None], paper: dict[int, int]) -> float:
    """Largest |planned - Table IV| / Table IV over the memory profiles; inf when a profile got no
    plan (the model said the rate is unreachable), which no tolerance accepts."""
    errors = []
    for memory, slots in paper.items():
        p = planned.get(memory)
        errors.append(math.inf if not p else abs(p - slots) / slots)
    return max(errors)


def noise_groups(runs: list[dict], tolerance: float = SLOT_TOLERANCE) -> list[dict]:
    """One row per (profile, noise level) over its seeds: how often the paper's family was picked, the
    worst slot error, and whether the target held for every seed (paper's family and error within
    ``tolerance``)."""
    groups: dict[tuple[str, float], list[dict]] = {}
    for r in runs:
        groups.setdefault((r["profile"], r["noise"]), []).append(r)
    rows = []
    for (profile, noise), rs in groups.items():
        picked = [r["family"] for r in rs]
        rows.append({
            "query": rs[0]["query"], "profile": profile, "paper_family": rs[0]["paper_family"], "noise": noise,
            "shipped": any(r["shipped_noise"] for r in rs), "seeds": len(rs),
            "paper_family_picked": sum(f == rs[0]["paper_family"] for f in picked),
            "other_families": sorted({f for f in picked if f != rs[0]["paper_family"]}),
            "max_abs_error": max(r["max_abs_error"] for r in rs),
            "errors": [r["max_abs_error"] for r in rs],
            "within_tolerance": sum(r["max_abs_error"] <= tolerance for r in rs),
            "target_met": all(r["family"] == r["paper_family"] and r["max_abs_error"] <= tolerance for r in rs),
        })
    return rows


def target_holds_up_to(groups: list[dict]) -> dict[str, tuple[float | None, float | None]]:
    """Per profile: the highest noise level at which the target holds, and holds at every lower level
    measured too (a level that only passes above a failing one is luck, not a margin), and the
    first level at which it fails. (None, x): it fails at the lowest level; (x, None): never fails."""
    out: dict[str, tuple[float | None, float | None]] = {}
    for profile in dict.fromkeys(g["profile"] for g in groups):
        holds, fails = None, None
        for g in sorted((g for g in groups if g["profile"] == profile), key=lambda g: g["noise"]):
            if not g["target_met"]:
                fails = g["noise"]
                break
            holds = g["noise"]
        out[profile] = (holds, fails)
    return out


def with_noise(profile: SimProfile, noise: float) -> SimProfile:
    """The analytic profile with another run-to-run noise; the shipped YAML stays as it is. The sim
    draws that noise once per run (SimTestbed._speed_scale), so nothing else changes."""
    return replace(profile, analytic=replace(profile.analytic, noise=noise))


def _percent(noise: float) -> str:
    return f"{100 * noise:g} %"


def analytic_campaign(out_dir: Path, query: str, noise: float, shipped_noise: bool, seed: int) -> dict:
    """One section B plan: the paper's profile of ``query`` at ``noise``, planned for Table IV's rate and
    memory profiles. A top-level function so that campaigns can run in worker processes."""
    name = f"paper-{query}-{TABLE_III_FAMILY[query]}"
    memories = sorted(TABLE_IV_SLOTS[query])
    timing = "paper-complex" if query in COMPLEX else "paper-simple"
    t0 = time.time()
    outcome = plan_campaign(out_dir / f"{name}-noise{100 * noise:g}-seed{seed}", name, TABLE_IV_RATE[query],
                            memories, timing, seed, profile=with_noise(load_profile(name), noise), **PAPER_METHOD)
    plan = outcome.plan
    planned = {m: plan.entry(m).model_slots for m in memories}  # the paper's model usage: its inverse solve
    return {"query": query, "profile": name, "noise": noise, "shipped_noise": shipped_noise, "seed": seed,
            "paper_family": TABLE_III_FAMILY[query], "family": plan.family,
            "selection": outcome.exploration.selection, "planned": planned, "paper": TABLE_IV_SLOTS[query],
            "max_abs_error": max_slot_error(planned, TABLE_IV_SLOTS[query]),
            "optimizer_calls": outcome.exploration.optimizer_calls, "wall_s": time.time() - t0}


def section_b(out_dir: Path, seeds: int, noise_levels: list[float | None], jobs: int = 1) -> dict:
    """The paper's own models (sections VI and VIII, Tables III-IV): each analytic profile
    planned at several noise levels, several seeds each; does the explorer pick the paper's family and
    does the inverse solve land within 2 % of Table IV, and up to which noise?

    A seed draws the same standard normal numbers at every level (the level only scales them), so
    along a row of seeds the error grows with the noise rather than being redrawn."""
    campaigns = [(out_dir, q, noise, is_shipped, seed)
                 for q in NEXMARK_QUERIES
                 for noise, is_shipped in resolve_noise_levels(
                     noise_levels, load_profile(f"paper-{q}-{TABLE_III_FAMILY[q]}").analytic.noise)
                 for seed in range(seeds)]
    # Campaigns are independent (own testbed, ledger and seed): worker processes change nothing in
    # their results, only the wall time.
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        runs = []
        for run in pool.map(analytic_campaign, *zip(*campaigns)):
            runs.append(run)
            console.print(f"B {run['profile']} noise {_percent(run['noise'])} seed {run['seed']}: {run['family']}, "
                          f"{run['planned']} [{run['wall_s']:.0f} s]")
    groups = noise_groups(runs)
    holds = target_holds_up_to(groups)
    shipped_noise = {g["profile"]: g["noise"] for g in groups if g["shipped"]}
    families = {g["profile"]: g["paper_family"] for g in groups}
    def error(e):
        return f"{100 * e:.1f} %" if math.isfinite(e) else "unplanned"

    # the plans themselves are in evaluation.json (runs[].planned), one line per seed would not fit
    table(f"B. Analytic profiles (the paper's Table III models + run-to-run noise), {seeds} seeds per level: "
          "family and slots against Table IV",
          ("profile", "noise", "paper's family picked", "max |slot error|", "per seed",
           f"within {100 * SLOT_TOLERANCE:g} %"),
          [(g["profile"], _percent(g["noise"]) + (" (shipped)" if g["shipped"] else ""),
            f"{g['paper_family_picked']}/{g['seeds']}" + (f" (else {', '.join(g['other_families'])})"
                                                         if g["other_families"] else ""),
            error(g["max_abs_error"]), ", ".join(error(e) for e in g["errors"]),
            f"{g['within_tolerance']}/{g['seeds']}") for g in groups])
    table(f"B. Highest noise at which every seed picks the paper's family and lands within "
          f"{100 * SLOT_TOLERANCE:g} % of Table IV (and every lower level too)",
          ("profile", "paper family", "target holds up to", "first level that fails", "shipped noise"),
          [(p, families[p], _percent(ok) if ok is not None else "not even at the lowest level",
            _percent(ko) if ko is not None else "none measured",
            _percent(shipped_noise[p]) if p in shipped_noise else "not run") for p, (ok, ko) in holds.items()])
    return {"runs": runs, "levels": groups,
            "target_holds_up_to": {p: {"holds_up_to": ok, "first_failing": ko} for p, (ok, ko) in holds.items()}}


# -- C ------------------------------------------------------------------------------------------------

def _csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def section_c() -> list[dict]:
    if not PAPER_DATA.is_dir():
        console.print(f"C skipped: no paper data at {PAPER_DATA}")
        return []
    regression = _csv(PAPER_DATA / "runs" / "all_runs.csv")
    rows = []
    for q in NEXMARK_QUERIES:
        obs = list(read_measurements(paper_search_file(PAPER_DATA, q)).observations)
        features = Features()
        families = ("linear", "log", "sqrt")
        loocv = {f: loocv_rmse(f, obs, features) for f in families}
        family, rule = select_family(obs, features, families, loocv)
        by_loocv = min(loocv, key=loocv.get)
        model = fit(family, obs, features)
        planned = {m: inverse_solve(model, m, TABLE_IV_RATE[q], safety=1.10, min_slots=3, max_slots=1999)
                   for m in sorted(TABLE_IV_SLOTS[q])}
        deployed = {}
        for r in regression:
            if r["query"] == q and r["phase"] == "regression" and r["target_ratio"]:
                m = int(float(r["memory_per_slot_mb"]))
                ok = float(r["observed_source_rate"]) >= 0.99 * float(r["target_rate"])
                d = deployed.setdefault(m, {"slots": int(r["used_task_slots"]), "sustained": []})
                if ok:
                    d["sustained"].append(float(r["target_ratio"]))
        rows.append({"query": q, "paper_family": TABLE_III_FAMILY[q], "auto_family": family, "rule": rule,
                     "loocv_family": by_loocv, "auto_planned": planned,
                     "deployed": {m: {"slots": d["slots"], "max_sustained": max(d["sustained"], default=None)}
                                  for m, d in sorted(deployed.items())}})
    table("C. The paper's measurements: automatic family selection against the paper's hand-picked family",
          ("query", "paper family", "selected (rule)", "lowest LOOCV", "slots it would plan", "paper deployed",
           "highest rate they sustained"),
          [(r["query"], r["paper_family"], f"{r['auto_family']} ({r['rule'].split()[0]})", r["loocv_family"],
            "/".join(str(v) if v else "-" for v in r["auto_planned"].values()),
            "/".join(str(d["slots"]) for d in r["deployed"].values()),
            "/".join(f"{100 * d['max_sustained']:.0f} %" if d["max_sustained"] else "none"
                     for d in r["deployed"].values())) for r in rows])
    return rows


# -- D ------------------------------------------------------------------------------------------------

DS2_REFERENCE_SLOTS = (24, TESTBED_SLOTS)
"""The target rates of section D come from BIDS2's predicted rate at these budgets..."""
DS2_TARGET_SHARE = 0.9
"""...times this share, so that DS2's rounded-up parallelisms usually leave it a few slots short of
the reference budget: a target rate a user could ask for, not one tuned to a round budget."""


def compact(configuration: Configuration) -> str:
    """Parallelisms in the query's operator order, e.g. 1-3-2-1."""
    return "-".join(str(p) for _, p in configuration.parallelism)


def section_d(out_dir: Path) -> list[dict]:
    """BIDS2 against DS2 on the same single-task metrics (paper section V; DS2: Kalavri et al.,
    OSDI'18). For a target rate T, DS2's one-pass rule gives a configuration of N_T slots; BIDS2 gives
    the configuration of the same N_T slots that maximizes its predicted rate. The Capacity Estimator
    measures both on the sim; the sim's ground truth gives what each configuration really sustains and
    what the best configuration of N_T slots sustains (it knows the skew, memory and straggler effects
    that single-task metrics hide).

    On the same metrics the two configurations can only be equal: a configuration of N_T slots whose
    predicted rate reaches T needs pi_i >= ceil(T r_i / o_i) for every operator, and DS2's
    parallelisms are exactly those bounds, which already sum to N_T. The section checks it and shows
    how far that shared configuration is from the best one."""
    rows = []
    for q in NEXMARK_QUERIES:
        d = out_dir / f"bids2-ds2-{q}"
        if d.exists():
            shutil.rmtree(d)
        profile = load_profile(q)
        query = profile.query()
        truth = GroundTruth(profile)
        timing = Timing.named("paper-complex" if q in COMPLEX else "paper-simple")
        # The same steady-state measurement with the estimator's success rule (99 % of the target, not
        # 99.8 %): where straggling firings bound a query, the rule alone moves its MST.
        lenient = GroundTruth(profile, TruthSettings(threshold=timing.threshold))

        def own_truth(cfg: Configuration, gt: GroundTruth = truth) -> float:
            # the engine's steady-state MST of this very configuration (not the best one of its budget)
            return gt.engine_mst(cfg, 4096, gt.model(4096).capacity(cfg).mst)

        # At a target no higher than BIDS2's rate for P slots, DS2 needs at most P slots (BIDS2's own
        # configuration meets each of DS2's bounds). The sim offers one more slot per operator anyway
        # (what rounding up could add at any target), so that DS2 is measured as it asks, even beyond
        # the 48-slot testbed.
        tb = SimTestbed(profile, SimSettings(seed=3, max_slots=max(DS2_REFERENCE_SLOTS) + query.size))
        with Ledger.open(d, "compare", {"query": q}, resume=False) as ledger:
            chain = assemble(tb, ledger, q, timing)
            est = chain.estimator
            metrics = chain.optimizer.single_task(4096)
            for reference in DS2_REFERENCE_SLOTS:
                t0 = time.time()
                target = DS2_TARGET_SHARE * bids2(metrics, reference).predicted_rate
                d_cfg = Configuration.of(query, ds2(metrics, target))
                slots = d_cfg.slots
                b = bids2(metrics, slots)
                b_cfg = Configuration.of(query, b.parallelism)
                same = b_cfg == d_cfg
                budget = Budget(slots, 4096)
                d_mst = est.estimate(q, budget, d_cfg, f"ds2/{reference}").mst
                # the same configuration measured twice would only compare run-to-run noise
                b_mst = d_mst if same else est.estimate(q, budget, b_cfg, f"bids2/{reference}").mst
                d_true = own_truth(d_cfg)
                b_true = d_true if same else own_truth(b_cfg)
                d_lenient = own_truth(d_cfg, lenient)
                best = truth.true_mst(slots, 4096)
                rows.append({"query": q, "reference_slots": reference, "target": target, "slots": slots,
                             "ds2": d_cfg.as_dict(), "bids2": b_cfg.as_dict(), "bids2_predicted": b.predicted_rate,
                             "same_configuration": same, "ds2_mst": d_mst, "bids2_mst": b_mst,
                             "ds2_config_truth": d_true, "bids2_config_truth": b_true,
                             "ds2_config_truth_at_estimator_threshold": d_lenient,
                             "truth_mst": best.mst, "truth_configuration": best.configuration.as_dict(),
                             "ds2_compact": compact(d_cfg), "bids2_compact": compact(b_cfg),
                             "truth_compact": compact(best.configuration), "wall_s": time.time() - t0})
                console.print(f"D {q} T={target:,.0f}: {slots} slots, DS2 {compact(d_cfg)} {d_mst:,.0f} "
                              f"(truth {d_true:,.0f}, at {100 * timing.threshold:g} %: {d_lenient:,.0f}), "
                              f"BIDS2 {compact(b_cfg)} {b_mst:,.0f} (truth {b_true:,.0f}), "
                              f"best {compact(best.configuration)} {best.mst:,.0f} [{time.time() - t0:.0f} s]")

    def share(v, ref):
        return f"{v:,.0f} ({100 * v / ref:.0f} %)" if ref else fmt(v)

    def both(a, b, same):
        return a if same else f"{a} / {b}"

    table(f"D. DS2's one-pass rule for a target T (= {DS2_TARGET_SHARE:g} x BIDS2's predicted rate at "
          f"{' and '.join(map(str, DS2_REFERENCE_SLOTS))} slots) against BIDS2 on DS2's N_T slots: same single-task "
          "metrics, 4 GB. MSTs measured by the estimator; % of the sim's truth for the best configuration of N_T "
          "slots",
          ("query", "T, ev/s", "N_T", "DS2 config", "BIDS2 config", "DS2 MST", "BIDS2 MST", "truth (best of N_T)",
           "BIDS2 / DS2", "truth of DS2 / BIDS2 config", "T held (truth, DS2/BIDS2)"),
          [(r["query"], r["target"], r["slots"], r["ds2_compact"],
            "same" if r["same_configuration"] else r["bids2_compact"],
            share(r["ds2_mst"], r["truth_mst"]), share(r["bids2_mst"], r["truth_mst"]), r["truth_mst"],
            f"{r['bids2_mst'] / r['ds2_mst']:.2f}" if r["ds2_mst"] else "-",
            both(share(r["ds2_config_truth"], r["truth_mst"]), share(r["bids2_config_truth"], r["truth_mst"]),
                 r["same_configuration"]),
            both(*("yes" if m >= r["target"] else "no" for m in (r["ds2_config_truth"], r["bids2_config_truth"])),
                 r["same_configuration"])) for r in rows])
    return rows


# -- G ------------------------------------------------------------------------------------------------

GENERATED_MULTIPLES = (1.5, 3, 10, 25)
"""Section G plans each generated profile for these multiples of what its 48-slot testbed sustains..."""
GENERATED_MEMORIES = (1024, 4096)
"""...at these memories per slot: 4 GB, where the generated state was sized (docs/sim-profiles.md), and
1 GB, where more of it misses the slot's memory."""
SUSTAIN_FLOOR = 0.97
"""The line below which an entry whose own configuration sustains less than this share of the target."""


CASES_FILE = "cases.jsonl"
"""Section G's case records, one JSON line each as the case ends (section_g)."""
RUN_FILE = "run.json"
"""What a section G run was made of (section_g): its seeds and its code's digest, which a resume must match."""


def source_digest(roots=(Path(__file__).resolve().parents[1] / "controller", Path(__file__).resolve().parent)) -> str:
    """A digest of every Python file under ``roots`` (the planner, the sim and this bench): a run resumed by
    other code would judge its cases by two planners and report them as one."""
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def generated_run(profile_seed: int, seed: int, key_stats: bool = False) -> dict:
    """What a section G run is made of, as RUN_FILE records it."""
    return {"profile_seed": profile_seed, "seed": seed, "key_stats": key_stats, "code": source_digest()}


class ResumeMismatch(ValueError):
    """--resume found a run in --out that this one cannot go on from."""


def resumed_cases(out_dir: Path, run: dict) -> list[dict]:
    """The records an earlier section G run in ``out_dir`` kept (cases.jsonl) when its seeds and code are
    ``run``'s: each judged case, and each stopped at its time limit (run again, it would be stopped again).
    A case that failed otherwise is run again; none where no run began. ResumeMismatch names what differs."""
    earlier, cases = out_dir / RUN_FILE, out_dir / CASES_FILE
    if not earlier.is_file():
        if cases.is_file():
            raise ResumeMismatch(f"--resume: {cases} was written without {RUN_FILE} (an older bench): give another --out")
        return []
    try:
        recorded = json.loads(earlier.read_text())
    except (OSError, ValueError):
        raise ResumeMismatch(f"--resume: {earlier} is not readable as a run's record: give another --out") from None
    if not isinstance(recorded, dict):
        raise ResumeMismatch(f"--resume: {earlier} is not readable as a run's record: give another --out")
    for key, value in run.items():
        if recorded.get(key) != value:
            raise ResumeMismatch(f"--resume: the run in {out_dir} has {key} {recorded.get(key)!r}, this one {value!r}: "
                                 "resume it with the same seeds and code, or give another --out")
    kept = []
    for line in (cases.read_text().splitlines() if cases.is_file() else []):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line cut short when the run was killed: its case runs again
            continue
        if "error" not in record or record.get("timeout"):
            kept.append(record)
    return kept


def generated_summary(records: list[dict]) -> dict:
    """Section G's summary over entries (one per profile, multiple and memory, as ``memory_records`` gives
    them): entries whose own configuration sustains < SUSTAIN_FLOOR of the target, "unreachable" answers
    where the truth reaches the rate (any budget up to the truth's bound: a plan of 1.3 x its minimum
    would do), and planned slots over the true minimum (median, 95th percentile) where both exist."""
    ratios = [r["planned_slots"] / r["true_min"] for r in records if r["planned_slots"] and r["true_min"]]
    reachable = [r for r in records if r["true_min"]]
    wrong = [r for r in records if r["planned_slots"] is None and r["true_min"]]
    short = [r for r in records if r["own_over_rate"] is not None and r["own_over_rate"] < SUSTAIN_FLOOR]
    return {"entries": len(records), "planned": sum(r["planned_slots"] is not None for r in records),
            "beyond_trusted": sum(bool(r.get("beyond_trusted")) for r in records),
            "short": len(short), "under": sum(r["verdict"] == UNDER for r in records),
            "over": sum(r["verdict"] == OVER for r in records), "right": sum(r["verdict"] == RIGHT for r in records),
            "unreachable_agreed": sum(r["planned_slots"] is None and not r["true_min"] for r in records),
            "unreachable_wrong": len(wrong), "reachable": len(reachable),
            "unreachable_wrong_share": len(wrong) / len(records) if records else None,
            "unreachable_wrong_share_of_reachable": len(wrong) / len(reachable) if reachable else None,
            "median_slots_over_truth": float(np.percentile(ratios, 50)) if ratios else None,
            "p95_slots_over_truth": float(np.percentile(ratios, 95)) if ratios else None,
            "worst_slots_over_truth": max(ratios) if ratios else None}


def generated_summary_line(s: dict) -> str:
    def ratio(v):
        return f"{v:.2f}" if v is not None else "-"

    def share(v):
        return f"{100 * v:.1f} %" if v is not None else "-"

    return (f"{s['entries']} entries ({s['planned']} planned, {s.get('beyond_trusted', 0)} beyond the trusted range): "
            f"{s['short']} whose own configuration sustains < "
            f"{SUSTAIN_FLOOR:g} of the target ({s['under']} below 1.0), {s['over']} over 1.25 x the true minimum, "
            f"{s['right']} right; {s['unreachable_wrong']} unreachable where the truth reaches the rate "
            f"({share(s['unreachable_wrong_share'])} of the entries, {share(s['unreachable_wrong_share_of_reachable'])} "
            f"of the {s['reachable']} the truth reaches), {s['unreachable_agreed']} where it agrees; slots / true "
            f"minimum: median {ratio(s['median_slots_over_truth'])}, 95th percentile {ratio(s['p95_slots_over_truth'])}, "
            f"worst {ratio(s['worst_slots_over_truth'])}")


def data_key_statistics(path: str) -> dict:
    """The explorer settings that plan a profile with the data's key statistics, as ``streambed sim keys``
    writes them for ``plan --key-stats`` (the sim's stand-in for Spark's count of a replayed data set)."""
    from streambed.testbed.sim.keys import key_statistics

    return {"key_statistics": key_statistics(load_profile(path)).operators}


def generated_case(out_dir: Path, path: str, multiple: float, seed: int, key_stats: bool = False) -> dict:
    """One section G case: section A's judged plan at GENERATED_MEMORIES, or the error it raised (a generated
    profile the planner cannot plan is a finding, not a reason to stop the section). ``key_stats``: planned
    with the data's key statistics (data_key_statistics)."""
    t0 = time.time()
    try:
        return judged_plan(out_dir, path, multiple, seed=seed, memories=GENERATED_MEMORIES,
                           basis_cache=out_dir / "testbed-basis",
                           explorer=data_key_statistics(path) if key_stats else None)
    except Exception as e:  # noqa: BLE001 - reported per case, with its type
        return {"profile": Path(path).stem, "multiple": multiple, "error": f"{type(e).__name__}: {e}",
                "wall_s": time.time() - t0}


def _case_in_child(connection, case: tuple) -> None:
    connection.send(generated_case(*case))
    connection.close()


def bounded_cases(cases: list[tuple], jobs: int, timeout_s: float):
    """Section G's cases in at most ``jobs`` child processes, each stopped after ``timeout_s`` of wall
    time (a truth search that walks towards its 100,000-slot bound can take hours): yields each case's
    result as it ends, or a record saying it timed out. Only the children this function started are
    stopped, by their own handles."""
    context = multiprocessing.get_context("fork")
    waiting, running = list(cases), []
    while waiting or running:
        while waiting and len(running) < jobs:
            case = waiting.pop(0)
            receive, send = context.Pipe(duplex=False)
            child = context.Process(target=_case_in_child, args=(send, case), daemon=True)
            child.start()
            send.close()
            running.append((child, receive, case, time.time()))
        time.sleep(0.2)
        for item in list(running):
            child, receive, case, started = item
            if receive.poll():
                result = receive.recv()
            elif not child.is_alive():
                result = {"profile": Path(case[1]).stem, "multiple": case[2], "wall_s": time.time() - started,
                          "error": f"the case's process ended with status {child.exitcode}"}
            elif time.time() - started > timeout_s:
                child.kill()
                result = {"profile": Path(case[1]).stem, "multiple": case[2], "wall_s": time.time() - started,
                          "error": f"timed out after {timeout_s:.0f} s", "timeout": True}
            else:
                continue
            child.join()
            receive.close()
            running.remove(item)
            yield result


def section_g(out_dir: Path, count: int, profile_seed: int, jobs: int = 1, seed: int = 0,
              case_timeout_s: float = 1800.0, resume: bool = False, key_stats: bool = False) -> dict:
    """``count`` generated profiles of ``profile_seed`` (the first ``count`` of that seed: a prefix of any
    larger run), each planned at GENERATED_MULTIPLES x its 48-slot MST and judged entry by entry; a case
    (one profile at one multiple) that takes longer than ``case_timeout_s`` is stopped and listed.
    ``resume``: keep the cases an earlier run in ``out_dir`` ended, with the same seeds and code
    (resumed_cases), and run the others (a larger ``count`` extends it). ``key_stats``: every plan made with
    the data's key statistics (data_key_statistics), as a campaign that replays a data set makes it."""
    from streambed.testbed.sim.generate import write_profiles

    run = generated_run(profile_seed, seed, key_stats)
    kept = resumed_cases(out_dir, run) if resume else []
    files = write_profiles(out_dir / "profiles", count, profile_seed)
    if not resume:  # the basis is kept for this run's cases only, never an older code's
        shutil.rmtree(out_dir / "testbed-basis", ignore_errors=True)
    # the records kept and no others (a failed case's, a line cut short), each case appended as it ends
    (out_dir / CASES_FILE).write_text("".join(json.dumps(r, default=str) + "\n" for r in kept))
    (out_dir / RUN_FILE).write_text(json.dumps(run) + "\n")
    cases = [(out_dir, str(f), m, seed, key_stats) for f in files for m in GENERATED_MULTIPLES]
    order = {(Path(c[1]).stem, c[2]): k for k, c in enumerate(cases)}
    kept = [r for r in kept if (r["profile"], r["multiple"]) in order]
    done = {(r["profile"], r["multiple"]) for r in kept}
    rows = [r for r in kept if "error" not in r]
    errors = [r for r in kept if "error" in r]
    if kept:
        console.print(f"G: {len(kept)} of {len(cases)} cases kept from the earlier run in {out_dir}")
    # each case's record as it ends: a run stopped before its end keeps what it judged
    # (bench/experiments/replan_recorded.py --rows reads it; --resume goes on from it)
    for r in bounded_cases([c for c in cases if (Path(c[1]).stem, c[2]) not in done], jobs, case_timeout_s):
        with (out_dir / CASES_FILE).open("a") as f:
            f.write(json.dumps(r, default=str) + "\n")
        if "error" in r:
            errors.append(r)
            console.print(f"G {r['profile']} x{r['multiple']:g}: error {r['error']} [{r['wall_s']:.0f} s]")
            continue
        rows.append(r)
        console.print(f"G {r['profile']} x{r['multiple']:g}: " + ", ".join(
            f"{m} MB {e['planned'] or 'unreachable'} slots (truth {e['true_min'] or 'none'}, own/target "
            f"{fmt(e['own_over_rate'])})" for m, e in sorted(r["memories"].items())) + f" [{r['wall_s']:.0f} s]")
    rows.sort(key=lambda r: order[(r["profile"], r["multiple"])])
    records = memory_records(rows)
    by_case = {(r["profile"], r["multiple"]): r for r in rows}
    for rec in records:
        e = by_case[(rec["profile"], rec["multiple"])]["memories"][rec["memory_mb"]]
        rec.update(rate=by_case[(rec["profile"], rec["multiple"])]["rate"], own_bottleneck=e["own_bottleneck"],
                   own_model_mst=e["own_model_mst"], max_parallelism=e["max_parallelism"],
                   configuration=e["configuration"], true_min_configuration=e["true_min_configuration"],
                   key_warning=e["key_warning"], limit=e["limit"], beyond_trusted=e.get("beyond_trusted", False))
    with_keys = ", with the data's key statistics" if key_stats else ""
    table(f"G. {count} generated profiles (seed {profile_seed}) at {'/'.join(f'{m:g}' for m in GENERATED_MULTIPLES)}x "
          f"the 48-slot MST{with_keys}, judged by each plan's own configuration",
          ("profile", "x", "MB", "rate, ev/s", "planned", "true min", "own MST / target", "slots / true min",
           "verdict", "own bottleneck"),
          [(r["profile"], f"{r['multiple']:g}", r["memory_mb"], r["rate"], r["planned_slots"] or "unreachable",
            r["true_min"] or "none", f"{r['own_over_rate']:.3f}" if r["own_over_rate"] is not None else "-",
            f"{r['planned_slots'] / r['true_min']:.2f}" if r["planned_slots"] and r["true_min"] else "-",
            r["verdict"], r["own_bottleneck"]) for r in records])
    s = generated_summary(records)
    walls = [r["wall_s"] for r in rows]
    timeouts = [e for e in errors if e.get("timeout")]
    s.update(profiles=count, profile_seed=profile_seed, key_stats=key_stats, cases=len(cases), errors=len(errors) - len(timeouts),
             timeouts=len(timeouts), case_timeout_s=case_timeout_s,
             median_case_wall_s=statistics.median(walls) if walls else None)
    console.print("G summary: " + generated_summary_line(s) + f"; {len(errors) - len(timeouts)} cases failed, "
                  f"{len(timeouts)} stopped after {case_timeout_s:.0f} s (not in the counts): "
                  + (", ".join(f"{e['profile']} x{e['multiple']:g}" for e in timeouts) or "none"))
    for rec in records:
        if rec["own_over_rate"] is not None and rec["own_over_rate"] < SUSTAIN_FLOOR:
            console.print(f"G short: {under_line(rec)}, bottleneck {rec['own_bottleneck']}")
        if rec["planned_slots"] is None and rec["true_min"]:
            console.print(f"G wrong unreachable: {rec['profile']} x{rec['multiple']:g} at {rec['memory_mb']} MB, "
                          f"truth {rec['true_min']} slots, stated limit {rec['limit']}")
    return {"records": records, "rows": rows, "errors": errors, "summary": s}


def section_m(out_dir: Path, count: int, profile_seed: int, case_timeout_s: float) -> dict:
    """Every registered way to size a job (``streambed compare``) on the five Nexmark profiles and ``count``
    generated ones of ``profile_seed``, each plan judged by the sim's truth (bench/methods_compare.py)."""
    from methods_compare import compare_methods, row_line

    result = compare_methods(out_dir, count=count, seed=profile_seed, case_timeout_s=case_timeout_s,
                             log=lambda line: console.print(f"M {line}", markup=False))
    for kind in ("nexmark", "generated", "all"):
        table(f"M. the methods on {kind} profiles ({len(result['nexmark'])} Nexmark, {result['generated_profiles']} "
              f"generated of seed {profile_seed}), judged by the sim's truth",
              ("method", "profiles", "sustains", "under", "unreachable", "failed/stopped", "cheapest sustaining",
               "median slots", "median total MB", "median MST / rate", "median testbed min"),
              [tuple(s.values()) for s in result["summary"][kind]])
    for r in result["rows"]:
        if r["verdict"] != "sustains":
            console.print(f"M not sustained: {row_line(r)}", markup=False)
    return result


def finite(value):
    """JSON has no infinity or NaN (Python would write them anyway): they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="campaigns/evaluate", help="campaign ledgers, plots and evaluation.json")
    parser.add_argument("--sections", default="ABCDEGM")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per analytic profile and noise level (section B)")
    parser.add_argument("--noise", type=parse_noise_levels, default=parse_noise_levels(DEFAULT_NOISE),
                        help="section B's run-to-run noise levels, in percent, comma-separated; 'shipped' is each "
                             f"analytic profile's own level (default: {DEFAULT_NOISE})")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="section B's campaigns run in this many processes (default: 2 or the CPU count)")
    parser.add_argument("--seed-a", type=int, default=0, help="section A: the campaigns' seed")
    parser.add_argument("--checkpoint-slots", type=int, default=None,
                        help="section A: staged measurements on a simulated cluster of this many slots where the "
                             "families disagree or the plan is unreachable (streambed plan --checkpoint-slots)")
    parser.add_argument("--search", choices=tuple(SEARCHES), default=ExplorerSettings.search,
                        help="section A: the explorer's search strategy (planner/search.py)")
    parser.add_argument("--profiles", default=None,
                        help="section A: these profiles (shipped names or YAML paths, comma-separated) instead of the "
                             "ten public ones; section E runs the probes of bench/profiles/")
    parser.add_argument("--generated-count", type=cli_args.count, default=200,
                        help="section G: how many generated profiles (the first N of --generated-seed)")
    parser.add_argument("--generated-seed", type=cli_args.seed, default=0, help="section G: the profiles' seed")
    parser.add_argument("--generated-key-stats", action="store_true",
                        help="section G: plan every profile with the data's key statistics (streambed sim keys, as "
                             "plan --key-stats reads them), as a campaign that replays a data set plans it")
    parser.add_argument("--resume", action="store_true",
                        help="section G: keep the cases an earlier run in --out ended (same seeds and code) and run "
                             "the others")
    parser.add_argument("--generated-case-timeout", type=cli_args.positive_number, default=1800.0,
                        help="section G: seconds of wall time after which one case (a profile at one multiple) "
                             "is stopped and listed instead of judged")
    parser.add_argument("--methods-count", type=cli_args.count, default=50,
                        help="section M: how many generated profiles the methods are compared on (the first N of --methods-seed)")
    parser.add_argument("--methods-seed", type=cli_args.seed, default=20261128, help="section M: the profiles' seed")
    parser.add_argument("--methods-case-timeout", type=cli_args.positive_number, default=1800.0,
                        help="section M: seconds of wall time after which one method on one profile is stopped")
    parser.add_argument("--risk", type=float, default=None,
                        help="section A: size plans for this risk of under-provisioning instead of the 1.10 factor")
    args = parser.parse_args()
    profiles = tuple(p.strip() for p in args.profiles.split(",") if p.strip()) if args.profiles else NEXMARK_QUERIES + ANALYTIC
    # section A's explorer settings that differ from the product's defaults (named in its table's title)
    explorer = {k: v for k, v in (("search", args.search),) if v != getattr(ExplorerSettings, k)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    results, wall = {}, {}
    sections = (("C", "C_paper_data", section_c),
                ("D", "D_bids2_vs_ds2", lambda: section_d(out)),
                ("B", "B_analytic", lambda: section_b(out, args.seeds, args.noise, args.jobs)),
                ("A", "A_plans", lambda: section_a(out, args.jobs, names=profiles, risk=args.risk, seed=args.seed_a,
                                                             checkpoint_slots=args.checkpoint_slots,
                                                             explorer=explorer)),
                ("E", "E_probes", lambda: section_a(out / "E", args.jobs, names=PROBES, risk=args.risk,
                                                    seed=args.seed_a, checkpoint_slots=args.checkpoint_slots,
                                                    explorer=explorer, label="E")),
                ("G", "G_generated", lambda: section_g(out / "G", args.generated_count, args.generated_seed,
                                                       args.jobs, seed=args.seed_a,
                                                       case_timeout_s=args.generated_case_timeout,
                                                       resume=args.resume, key_stats=args.generated_key_stats)),
                ("M", "M_methods", lambda: section_m(out / "M", args.methods_count, args.methods_seed,
                                                     args.methods_case_timeout)))
    if args.resume and "G" in args.sections:
        try:  # before any section runs: a run that cannot be resumed says so at once
            resumed_cases(out / "G", generated_run(args.generated_seed, args.seed_a, args.generated_key_stats))
        except ResumeMismatch as e:
            print(e, file=sys.stderr)
            return 2
    for letter, key, run in sections:
        if letter in args.sections:
            started = time.time()
            results[key] = run()
            wall[letter] = time.time() - started
            console.print(f"section {letter}: {wall[letter]:.0f} s")
    results["wall_seconds_by_section"] = wall
    results["wall_seconds"] = time.time() - t0
    (out / "evaluation.json").write_text(json.dumps(finite(results), indent=2, default=str) + "\n")
    console.print(f"evaluation written to {out / 'evaluation.json'} in {results['wall_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""make evaluate: how accurate and how costly StreamBed's plans are, judged on the simulated testbed.

Sections (issue #3):
  A. Nexmark q1, q2, q5, q8, q11 planned on a 48-slot testbed (0.5-4 GB) at 25x what its largest
     budget sustains (and, where the sim's ground truth cannot reach that at any scale, at the
     largest multiple it can): planned slots against the sim's min-slots, the chosen model's error at
     5 scales beyond the testbed, the cost (optimizer/estimator calls, testbed time), and the
     validation verdict of the plan run at production scale on the sim.
  B. Analytic profiles with the paper's Table III models plus noise: the family the explorer picks
     and its slots against Table IV.
  C. The paper's own measurements: which family automatic selection picks, the slots it would plan,
     against the slots the paper deployed and what they sustained.
  D. BIDS2 against DS2 on the same single-task metrics: each configuration's MST as measured.
Prints tables and writes everything to <out>/evaluation.json. Asserts nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from streambed.campaigns.plan import run_plan
from streambed.estimator import CapacityEstimator, timing_profile
from streambed.explorer import ExplorerSettings, select_family
from streambed.ledger import Ledger
from streambed.model import Budget, Configuration
from streambed.optimizer import ConfigurationOptimizer, bids2, ds2, ds2_within
from streambed.paper import QUERIES as NEXMARK_QUERIES, TABLE_III_FAMILY, TABLE_IV_RATE, TABLE_IV_SLOTS
from streambed.records import paper_search_file, read_measurements
from streambed.surrogates import Features, Surrogate, fit, inverse_solve, loocv_rmse
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed
from streambed.testbed.sim.truth import GroundTruth
from streambed.validation import ValidationSettings, validate

PAPER_DATA = Path(os.environ.get("STREAMBED_PAPER_DATA", Path(__file__).resolve().parents[1] / "data" / "streambed-paper"))
COMPLEX = {"q5", "q8"}
MEMORIES = [512, 1024, 2048, 4096]
TESTBED_SLOTS = 48
MULTIPLE = 25
FALLBACK_MULTIPLES = (10, 5, 3, 2, 1.5)
SCALES = [96, 192, 384, 768, 1536]
VALIDATION_MINUTES = {"q1": 30, "q2": 30, "q11": 30, "q5": 90, "q8": 120}

console = Console(width=160)


def table(title, columns, rows):
    t = Table(title=title, title_justify="left")
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right")
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


def plan_campaign(out: Path, query: str, rate: float, memories, timing: str, seed: int = 0):
    """One plan campaign on a fresh 48-slot simulated testbed; its ledger and files under ``out``."""
    if out.exists():
        shutil.rmtree(out)
    tb = SimTestbed(load_profile(query), SimSettings(seed=seed, max_slots=TESTBED_SLOTS))
    with Ledger.open(out, "plan", {"query": query, "rate": rate}, resume=False) as ledger:
        return run_plan(tb, ledger, query, rate, memories, timing_profile(timing), ExplorerSettings(seed=seed), out)


# -- A ------------------------------------------------------------------------------------------------

def section_a(out_dir: Path) -> list[dict]:
    rows = []
    for q in NEXMARK_QUERIES:
        t0 = time.time()
        gt = GroundTruth(load_profile(q))
        testbed_mst = gt.true_mst(TESTBED_SLOTS, 4096).mst
        multiples = [MULTIPLE]
        if gt.model_min_slots(MULTIPLE * testbed_mst, 4096) is None:
            multiples.append(next((m for m in FALLBACK_MULTIPLES if gt.model_min_slots(m * testbed_mst, 4096)), None))
        timing = "paper-complex" if q in COMPLEX else "paper-simple"
        truth_scales = {p: gt.true_mst(p, 4096).mst for p in SCALES}
        for mult in multiples:
            if mult is None:
                continue
            rate = mult * testbed_mst
            outcome = plan_campaign(out_dir / f"{q}-{mult:g}x", q, rate, MEMORIES, timing)
            plan, ex = outcome.plan, outcome.exploration
            model = Surrogate.from_dict(plan.model)
            mape = sum(abs(model.predict(4096, p) - v) / v for p, v in truth_scales.items()) / len(SCALES)
            entry = plan.entry(4096)
            found = gt.min_slots(rate, 4096)
            truth_slots = found[0] if found else None
            over = (entry.slots - truth_slots) / truth_slots if entry.slots and truth_slots else None
            # DS2 as a planner: its one-pass rule from the 4 GB single-task run, linear extrapolation
            ds2_slots = sum(ds2(outcome.single_task[4096], rate * plan.safety).values())
            verdict = None
            if entry.slots:
                verdict = production_validation(out_dir / f"{q}-{mult:g}x-validate", q, entry, rate)
            rows.append({"query": q, "multiple": mult, "rate": rate, "testbed_mst": testbed_mst, "family": plan.family,
                         "selection": ex.selection, "planned_slots": {e.memory_mb: e.slots for e in plan.entries},
                         "truth_slots_4096": truth_slots, "over_provisioning": over, "mape_beyond_testbed": mape,
                         "ds2_slots_4096": ds2_slots,
                         "ds2_over_provisioning": (ds2_slots - truth_slots) / truth_slots if truth_slots else None,
                         "model_vs_truth": {p: (float(model.predict(4096, p)), v) for p, v in truth_scales.items()},
                         "optimizer_calls": ex.optimizer_calls, "estimator_calls": ex.estimator_calls,
                         "testbed_minutes": ex.testbed_seconds / 60, "validation": verdict,
                         "wall_s": time.time() - t0})
            console.print(f"A {q} x{mult:g}: family {plan.family}, 4 GB plan {entry.slots} vs truth {truth_slots}, "
                          f"validation {verdict and verdict['verdict']} [{time.time() - t0:.0f} s]")
    table("A. Nexmark on the sim: plans at 25x the 48-slot MST (4 GB per slot), judged by ground truth",
          ("query", "rate x", "rate, ev/s", "family", "planned slots (0.5/1/2/4 GB)", "truth slots (4 GB)",
           "over(+)/under(-)", "DS2 plan (4 GB)", "model MAPE 2-32x", "#CO", "#CE", "testbed min",
           "validation (4 GB plan)"),
          [(r["query"], f"{r['multiple']:g}", r["rate"], f"{r['family']} ({r['selection'].split()[0]})",
            "/".join(str(r["planned_slots"][m]) if r["planned_slots"][m] else "-" for m in MEMORIES),
            r["truth_slots_4096"] if r["truth_slots_4096"] else "unreachable",
            f"{100 * r['over_provisioning']:+.0f} %" if r["over_provisioning"] is not None else "-",
            f"{r['ds2_slots_4096']} ({100 * r['ds2_over_provisioning']:+.0f} %)" if r["ds2_over_provisioning"] is not None
            else r["ds2_slots_4096"],
            f"{100 * r['mape_beyond_testbed']:.0f} %", r["optimizer_calls"], r["estimator_calls"],
            r["testbed_minutes"], r["validation"]["verdict"] if r["validation"] else "-") for r in rows])
    return rows


def production_validation(out: Path, query: str, entry, rate: float) -> dict:
    if out.exists():
        shutil.rmtree(out)
    profile = load_profile(query)
    tb = SimTestbed(profile, SimSettings(seed=7, max_slots=max(entry.slots, 100_000)))
    cfg = Configuration.of(profile.query(), entry.configuration)
    settings = ValidationSettings(duration_s=60 * VALIDATION_MINUTES[query])
    with Ledger.open(out, "validate", {"query": query}, resume=False) as ledger:
        report = validate(tb, ledger, query, Budget(cfg.slots, entry.memory_mb), cfg, rate, settings)
    return {"verdict": report.verdict, "runs": {f"{r.multiplier:g}x": {"ratio": r.ratio, "verdict": r.verdict}
                                               for r in report.runs}}


# -- B ------------------------------------------------------------------------------------------------

def section_b(out_dir: Path, seeds: int) -> list[dict]:
    rows = []
    for q in NEXMARK_QUERIES:
        name = f"paper-{q}-{TABLE_III_FAMILY[q]}"
        memories = sorted(TABLE_IV_SLOTS[q])
        timing = "paper-complex" if q in COMPLEX else "paper-simple"
        for seed in range(seeds):
            outcome = plan_campaign(out_dir / f"{name}-seed{seed}", name, TABLE_IV_RATE[q], memories, timing, seed)
            plan = outcome.plan
            errors = [(plan.entry(m).slots - s) / s for m, s in TABLE_IV_SLOTS[q].items() if plan.entry(m).slots]
            rows.append({"profile": name, "seed": seed, "paper_family": TABLE_III_FAMILY[q], "family": plan.family,
                         "selection": outcome.exploration.selection,
                         "planned": {m: plan.entry(m).slots for m in memories}, "paper": TABLE_IV_SLOTS[q],
                         "max_abs_error": max(abs(e) for e in errors) if len(errors) == len(memories) else None,
                         "optimizer_calls": outcome.exploration.optimizer_calls})
            console.print(f"B {name} seed {seed}: {plan.family}, {rows[-1]['planned']}")
    table(f"B. Analytic profiles (the paper's Table III models + noise), {seeds} seeds each: family and slots "
          "against Table IV",
          ("profile", "seed", "paper family", "explorer's family", "planned slots", "paper's Table IV", "max |error|",
           "#CO"),
          [(r["profile"], r["seed"], r["paper_family"], f"{r['family']} ({r['selection'].split()[0]})",
            "/".join(str(v) for v in r["planned"].values()), "/".join(str(v) for v in r["paper"].values()),
            f"{100 * r['max_abs_error']:.1f} %" if r["max_abs_error"] is not None else "unreachable",
            r["optimizer_calls"]) for r in rows])
    return rows


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

def section_d(out_dir: Path) -> list[dict]:
    rows = []
    for q in NEXMARK_QUERIES:
        d = out_dir / f"bids2-ds2-{q}"
        if d.exists():
            shutil.rmtree(d)
        profile = load_profile(q)
        tb = SimTestbed(profile, SimSettings(seed=3, max_slots=TESTBED_SLOTS))
        query = profile.query()
        timing = timing_profile("paper-complex" if q in COMPLEX else "paper-simple")
        with Ledger.open(d, "compare", {"query": q}, resume=False) as ledger:
            est = CapacityEstimator(tb, ledger, timing)
            metrics = ConfigurationOptimizer(est, query).single_task(4096)
            for slots in (24, TESTBED_SLOTS):
                b = bids2(metrics, slots)
                ds, ds_rate = ds2_within(metrics, slots)
                b_cfg, d_cfg = Configuration.of(query, b.parallelism), Configuration.of(query, ds)
                b_mst = est.estimate(q, Budget(slots, 4096), b_cfg, f"bids2/{slots}").mst
                d_mst = b_mst if d_cfg == b_cfg else est.estimate(q, Budget(slots, 4096), d_cfg, f"ds2/{slots}").mst
                rows.append({"query": q, "slots": slots, "bids2": b.parallelism, "bids2_predicted": b.predicted_rate,
                             "bids2_mst": b_mst, "ds2": ds, "ds2_slots_used": d_cfg.slots, "ds2_target": ds_rate,
                             "ds2_mst": d_mst})
    table("D. BIDS2 against DS2 (one pass, largest target that fits the budget), same single-task metrics, 4 GB",
          ("query", "budget", "BIDS2 MST", "DS2 MST", "DS2 slots used", "BIDS2 / DS2"),
          [(r["query"], r["slots"], r["bids2_mst"], r["ds2_mst"], r["ds2_slots_used"],
            f"{r['bids2_mst'] / r['ds2_mst']:.2f}" if r["ds2_mst"] else "-") for r in rows])
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="campaigns/evaluate", help="campaign ledgers, plots and evaluation.json")
    parser.add_argument("--sections", default="ABCD")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per analytic profile (section B)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    results = {}
    if "C" in args.sections:
        results["C_paper_data"] = section_c()
    if "D" in args.sections:
        results["D_bids2_vs_ds2"] = section_d(out)
    if "B" in args.sections:
        results["B_analytic"] = section_b(out, args.seeds)
    if "A" in args.sections:
        results["A_nexmark"] = section_a(out)
    results["wall_seconds"] = time.time() - t0
    (out / "evaluation.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    console.print(f"evaluation written to {out / 'evaluation.json'} in {results['wall_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

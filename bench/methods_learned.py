"""PDSP-Bench's learned cost models (planner/learned.py) scored by q-error on held-out generated plans.

    nice -n 5 .venv/bin/python bench/methods_learned.py [--seed 0] [--train 30] [--held-out 8]
        [--memories 1024,4096] [--perturb 2] [--held-out-label truth] [--cache DIR] [--analytics DIR]
        [--timing quick]

Training data, built here and cached as DIR/training.json (``--cache``; reused when built with the
same parameters), then read by the ``learned`` planner (``--set learned.training=DIR``):

* Generated workloads (testbed/sim/generate.py, profiles 0..train-1 of the seed): per profile and
  memory per slot, the single-task configuration measured on the sim by the Capacity Estimator (the
  features' rates, as the planner measures them), then configurations sampled from the default policy's
  at several budgets plus random perturbations, each drawn from a generator seeded by (seed, profile,
  memory, budget, draw). Labels: ``capacity`` (the sim's capacity model of the configuration,
  instant) or ``truth`` (the sim's engine, GroundTruth.configuration_mst: 10-30 s per plan on this
  loaded machine). Both are the sim's own knowledge; a real deployment labels with measured MSTs,
  the ledgers below.
* Recorded campaigns (``--analytics DIR``: the tables ``streambed analytics`` wrote): every estimator
  run with an MST, its features from its campaign's single-task run at the same memory per slot (the
  window at that run's MST). Queries are resolved by name among the sim's profiles.

The score: profiles train..train+held_out-1 (never trained on), ``--held-out-label`` labels (truth by
default), q-error median and p95 per model and target; the training labels' own q-error against
those held-out labels is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from streambed.ledger import Ledger
from streambed.model import BUSYNESS_FLOOR, Configuration, OperatorRates, Query, SingleTaskMetrics, keygroups
from streambed.planner.estimator import CapacityEstimator, Timing
from streambed.planner.learned import MODELS, TARGETS, PlanRecord, TrainingSet, fit, q_error_summary
from streambed.planner.optimizer import ConfigurationOptimizer
from streambed.planner.policies import DEFAULT_POLICY, policy_named
from streambed.testbed.sim.generate import generate_profile, profile_name
from streambed.testbed.sim.profile import SimProfile, load_profile, parse_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed
from streambed.testbed.sim.truth import GroundTruth

BUDGETS = (1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 16.0)
"""Slots as multiples of the operator count: the default policy's configuration at each."""
PERTURB_SIGMA = 0.5
"""A perturbed configuration multiplies each operator's parallelism by exp(sigma x N(0, 1))."""
LABELS = ("capacity", "truth")


def silent(message: str) -> None:
    """A log that says nothing."""


# -- source 1: generated workloads ------------------------------------------------------------------------

def single_task_metrics(profile: SimProfile, memories: Sequence[int], timing: str, seed: int) -> dict[int, SingleTaskMetrics]:
    """The profile's single-task configuration measured on a sim testbed by the Capacity Estimator at
    each memory per slot (what the learned planner measures), through a throw-away ledger."""
    testbed = SimTestbed(profile, SimSettings(seed=seed))
    query = testbed.query(profile.name)
    with tempfile.TemporaryDirectory(prefix="streambed-learned-bench-") as d, \
            Ledger.open(d, "learned-training", {"query": profile.name}, resume=False) as ledger:
        optimizer = ConfigurationOptimizer(CapacityEstimator(testbed, ledger, Timing.named(timing), silent), query,
                                           policy_named(DEFAULT_POLICY))
        return {m: optimizer.single_task(m) for m in memories}


def perturbed(query: Query, base: dict[str, int], rng: np.random.Generator, sigma: float = PERTURB_SIGMA) -> dict[str, int]:
    """``base`` with each operator's parallelism scaled by a log-normal factor, at least 1, a keyed one at
    most its key groups."""
    out = {}
    for op in query.operators:
        p = max(1, int(round(base[op] * math.exp(sigma * rng.standard_normal()))))
        if op in query.keyed:
            p = min(p, keygroups.parallelism_limit(query.max_parallelism))
        out[op] = p
    return out


def sampled_configurations(query: Query, metrics: SingleTaskMetrics, key: Sequence[int], perturb: int,
                           budgets: Sequence[float] = BUDGETS) -> list[dict[str, int]]:
    """The default policy's configuration at each budget, and ``perturb`` perturbations of each, drawn
    from generators seeded by ``key`` + (budget index, draw index): a draw depends on its key alone."""
    policy = policy_named(DEFAULT_POLICY)
    out, seen = [], set()
    for b, multiple in enumerate(budgets):
        slots = max(query.size, int(round(multiple * query.size)))
        base = dict(policy.configure(metrics, slots).parallelism)
        draws = [base] + [perturbed(query, base, np.random.default_rng([*key, b, j])) for j in range(perturb)]
        for c in draws:
            k = tuple(c[op] for op in query.operators)
            if k not in seen:
                seen.add(k)
                out.append(c)
    return out


def label(truth: GroundTruth, query: Query, configuration: dict[str, int], memory_mb: int, kind: str) -> float:
    """The configuration's MST by the sim: its capacity model (``capacity``) or its engine (``truth``)."""
    c = Configuration.of(query, configuration)
    if kind == "capacity":
        return float(truth.model(memory_mb).capacity(c).mst)
    return float(truth.configuration_mst(c, memory_mb).mst)


def generated_records(seed: int, indices: Iterable[int], memories: Sequence[int], perturb: int, labels: str,
                      timing: str, budgets: Sequence[float] = BUDGETS,
                      log: Callable[[str], None] = silent) -> list[PlanRecord]:
    """Labelled plans of the generated profiles ``indices`` of ``seed`` (module docstring)."""
    records = []
    for i in indices:
        t0 = time.time()
        name = profile_name(seed, i)
        profile = parse_profile(generate_profile(seed, i), name)
        query = profile.query()
        metrics = single_task_metrics(profile, memories, timing, seed)
        truth = GroundTruth(profile)
        n = 0
        for memory in memories:
            for c in sampled_configurations(query, metrics[memory], (seed, i, memory), perturb, budgets):
                records.append(PlanRecord(query, metrics[memory], c, int(memory), label(truth, query, c, memory, labels),
                                          "generated", labels, name))
                n += 1
        log(f"{name}: {n} plans labelled by {labels} ({time.time() - t0:.1f} s)")
    return records


# -- source 2: recorded campaigns through the Spark analytics tables ---------------------------------------

def sim_query(name: str) -> Query | None:
    """A query by its sim profile's name; None when no profile has that name."""
    from streambed.errors import UserError

    try:
        return load_profile(name).query()
    except UserError:
        return None


def ledger_records(analytics: Path | str, spark, resolve: Callable[[str], Query | None] = sim_query) -> list[PlanRecord]:
    """Every estimator run with a positive MST in the analytics tables at ``analytics`` (written by
    ``streambed analytics``), labelled with that measured MST, its features from the same campaign's
    single-task run at the same memory per slot: per operator, a task's input rate over its busyness and
    the input ratio, in the window at that run's MST (SingleTaskMetrics.from_measurement's rule). Runs
    whose query ``resolve`` does not know, or whose campaign has no single-task run, are left out."""
    from pyspark.sql import functions as F

    root = Path(analytics)
    runs = spark.read.parquet(f"file://{(root / 'runs').resolve()}")
    windows = spark.read.parquet(f"file://{(root / 'windows').resolve()}")
    ops = spark.read.parquet(f"file://{(root / 'operators_windows').resolve()}")
    measured = (runs.where((F.col("run_kind") == "estimator") & (F.col("mst") > 0) & F.col("memory_mb").isNotNull())
                .select("campaign", "query", "run_key", "memory_mb", "configuration", "mst").collect())
    single = (windows.where(F.col("run_key").startswith("single/") & F.col("sustained"))
              .select("campaign", "run_key", "window", "memory_mb", "achieved_rate").collect())
    best: dict[tuple[str, int], tuple] = {}
    for w in single:  # the sustained window of the highest rate: the run's MST
        k = (w["campaign"], int(w["memory_mb"]))
        if k not in best or w["achieved_rate"] > best[k][2]:
            best[k] = (w["run_key"], w["window"], float(w["achieved_rate"]))
    operator_rows: dict[tuple[str, str, int], list] = {}
    wanted = {(c, r, w) for c, (r, w, _) in ((k[0], v) for k, v in best.items())}
    for o in ops.where(F.col("run_key").startswith("single/")).collect():
        k = (o["campaign"], o["run_key"], o["window"])
        if k in wanted:
            operator_rows.setdefault(k, []).append(o)
    records = []
    for r in measured:
        query = resolve(r["query"])
        found = best.get((r["campaign"], int(r["memory_mb"])))
        if query is None or found is None:
            continue
        rows = {o["operator"]: o for o in operator_rows.get((r["campaign"], found[0], found[1]), [])}
        if set(rows) != set(query.operators):
            continue
        rates = tuple((op, OperatorRates(true_rate=rows[op]["input_rate"] / rows[op]["parallelism"]
                                         / max(rows[op]["busyness"], BUSYNESS_FLOOR),
                                         input_ratio=rows[op]["input_rate"] / found[2], keyed=op in query.keyed))
                      for op in query.operators)
        metrics = SingleTaskMetrics(query.name, int(r["memory_mb"]), rates, found[2], query.max_parallelism)
        configuration = {k: int(v) for k, v in json.loads(r["configuration"]).items()}
        records.append(PlanRecord(query, metrics, configuration, int(r["memory_mb"]), float(r["mst"]), "ledger",
                                  "measured", r["campaign"]))
    return records


# -- the cache -----------------------------------------------------------------------------------------------

def cached(directory: Path | None, built: dict, build: Callable[[], list[PlanRecord]],
           log: Callable[[str], None] = silent) -> TrainingSet:
    """The training set in ``directory`` when it was built with ``built``; else built, and saved there."""
    if directory is not None and (directory / "training.json").is_file():
        found = TrainingSet.load(directory, "--cache")
        if found.built == built:
            log(f"training set: {len(found.records)} plans from {directory / 'training.json'}")
            return found
    ts = TrainingSet(build(), built)
    if directory is not None:
        log(f"training set: {len(ts.records)} plans written to {ts.save(directory)}")
    return ts


# -- the table ----------------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="generator seed of the profiles, the draws and the models")
    parser.add_argument("--train", type=int, default=30, help="generated profiles to train on (0..N-1)")
    parser.add_argument("--held-out", type=int, default=8, help="generated profiles held out (N..N+H-1)")
    parser.add_argument("--memories", default="1024,4096", help="memory per slot, MB, comma-separated")
    parser.add_argument("--perturb", type=int, default=2, help="perturbed configurations per budget")
    parser.add_argument("--held-out-perturb", type=int, default=0, help="perturbed configurations per budget, held out")
    parser.add_argument("--held-out-budgets", default="1,2,5,16", help="held-out budgets, multiples of the operators")
    parser.add_argument("--train-label", choices=LABELS, default="capacity")
    parser.add_argument("--held-out-label", choices=LABELS, default="truth")
    parser.add_argument("--timing", default="quick", help="estimator timing of the single-task measurements")
    parser.add_argument("--cache", type=Path, default=None, help="directory for training.json (and held-out.json)")
    parser.add_argument("--analytics", type=Path, default=None,
                        help="analytics tables (streambed analytics --out) whose measured runs join the training set")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--targets", default=",".join(TARGETS))
    args = parser.parse_args()
    memories = [int(m) for m in args.memories.split(",")]
    log = lambda s: print(s, flush=True)  # noqa: E731
    t0 = time.time()
    built = {"seed": args.seed, "profiles": [0, args.train], "memories": memories, "perturb": args.perturb,
             "label": args.train_label, "timing": args.timing, "budgets": list(BUDGETS)}
    training = cached(args.cache, built, lambda: generated_records(
        args.seed, range(args.train), memories, args.perturb, args.train_label, args.timing, log=log), log)
    if args.analytics is not None:
        from streambed_spark.session import SparkSettings, session

        recorded = ledger_records(args.analytics, session(SparkSettings(app_name="methods-learned")))
        log(f"recorded campaigns: {len(recorded)} measured plans from {args.analytics}")
        training.records.extend(recorded)
    held_budgets = tuple(float(b) for b in args.held_out_budgets.split(","))
    held_built = {**built, "profiles": [args.train, args.train + args.held_out], "perturb": args.held_out_perturb,
                  "label": args.held_out_label, "budgets": list(held_budgets)}
    held_dir = None if args.cache is None else args.cache / "held-out"
    held = cached(held_dir, held_built, lambda: generated_records(
        args.seed, range(args.train, args.train + args.held_out), memories, args.held_out_perturb,
        args.held_out_label, args.timing, held_budgets, log=log), log)
    truth = [r for r in held.records if r.mst > 0]
    print(f"\ntraining: {len(training.records)} plans ({args.train} profiles, labels {args.train_label}); held out: "
          f"{len(truth)} plans of {args.held_out} other profiles, labels {args.held_out_label} "
          f"(data {time.time() - t0:,.0f} s)")
    if args.train_label != args.held_out_label:
        other = {r.workload: GroundTruth(parse_profile(generate_profile(args.seed, int(r.workload.rsplit('-', 1)[1])),
                                                       r.workload)) for r in truth}
        labels = [label(other[r.workload], r.query, dict(r.configuration), r.memory_mb, args.train_label) for r in truth]
        s = q_error_summary(labels, [r.mst for r in truth])
        print(f"the {args.train_label} labels against the {args.held_out_label} labels of the held-out plans: "
              f"median q-error {s['median']:.3f}, p95 {s['p95']:.3f}")
    print(f"\n{'model':8s} {'target':7s} {'median q':>9s} {'p95 q':>9s} {'fit s':>7s}")
    for target in args.targets.split(","):
        for name in args.models.split(","):
            model = fit(training.records, name, target, args.seed)
            s = q_error_summary(model.predict([r.plan() for r in truth]), [r.mst for r in truth])
            print(f"{name:8s} {target:7s} {s['median']:9.3f} {s['p95']:9.3f} {model.fit_seconds:7.1f}", flush=True)


if __name__ == "__main__":
    main()

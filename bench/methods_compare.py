"""Every registered way to size a job compared on the simulated testbed (``streambed compare``, issue 37):
the five Nexmark profiles at the rates docs/compare.md uses, and generated profiles at 10 x what their
single task sustains by the sim's truth.

    nice -n 10 .venv/bin/python bench/methods_compare.py [--count 50] [--seed 20261128]
        [--nexmark q1,q2,q5,q8,q11] [--methods streambed,ds2,...] [--out DIR] [--case-timeout 1800]

One case is one method on one profile: a compare campaign of its own (campaigns/compare.py), run in a
child process stopped after ``--case-timeout`` s of wall time, so that one slow method on one profile
leaves the other rows. Each case's row is kept as ``<out>/<profile>/<method>.json``; a second run reads
the rows already there and runs only the missing cases (a longer run continues a shorter one).
Each row: the method's slots, memory per slot, total memory, testbed time, and the MST of its own
configuration by the sim's truth over the rate (the campaign's judge). Prints a table per profile kind
and a summary per method; returns the rows. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

NEXMARK_RATES = {"q1": 1.6e7, "q2": 3.6e7, "q5": 5e5, "q8": 1.4e7, "q11": 6e5}
"""10 x the paper's single-task MST (its Table II): the rates of docs/compare.md's DS2 headline."""
GENERATED_SEED = 20261128
"""A seed no other evaluation used, so that no method was developed on these profiles."""
GENERATED_MULTIPLE = 10.0
"""A generated profile's rate: this many times its single-task configuration's MST by the truth (4 GB)."""
MAX_SLOTS = 2000
"""The simulated testbed's size: DS2 and the autoscaler run the job at the rate, so it must hold them."""
DEFAULT_METHODS = ("streambed", "ds2", "autoscaler", "imai", "rafiki", "justin")
"""Every registered method but ``learned``, which needs a training set (``--training`` adds it)."""
ROW_FIELDS = ("method", "verdict", "slots", "memory_mb", "total_memory_mb", "testbed_seconds", "steps", "mst",
              "mst_over_rate", "bottleneck", "error", "unreachable")


def silent(message: str) -> None:
    """A log that says nothing."""


def generated_rate(profile, multiple: float = GENERATED_MULTIPLE, memory_mb: int = 4096) -> float:
    """``multiple`` x the MST of the profile's single-task configuration by the sim's truth."""
    from streambed.model import Configuration
    from streambed.testbed.sim.truth import GroundTruth

    single = Configuration.single_task(profile.query())
    return multiple * GroundTruth(profile).configuration_mst(single, memory_mb).mst


def generated_rate_kept(out_dir: Path, name: str, profile: str) -> float:
    """generated_rate of a profile file, kept in ``out_dir``/generated-rates.json (the truth takes seconds
    per profile; cases run one at a time, so one writer)."""
    from streambed.testbed.sim.profile import load_profile

    rates_file = out_dir / "generated-rates.json"
    rates = json.loads(rates_file.read_text()) if rates_file.is_file() else {}
    if name not in rates:
        rates[name] = generated_rate(load_profile(profile))
        out_dir.mkdir(parents=True, exist_ok=True)
        rates_file.write_text(json.dumps(rates, indent=1) + "\n")
    return rates[name]


def known_rate(out_dir: Path, name: str) -> float | None:
    """The rate kept for a generated profile; None when none was found yet."""
    rates_file = out_dir / "generated-rates.json"
    return json.loads(rates_file.read_text()).get(name) if rates_file.is_file() else None


def compare_row(out_dir: Path, name: str, profile: str | None, rate: float, method: str, seed: int,
                options: dict) -> dict:
    """One method on one profile: its compare campaign's row (ROW_FIELDS), with the profile and rate."""
    from streambed.campaigns.compare import CompareCampaign, CompareSettings
    from streambed.campaigns.settings import CampaignSettings, TestbedSpec

    t0 = time.time()
    rate = rate if rate is not None else generated_rate_kept(out_dir, name, profile)
    directory = out_dir / name / f"compare-{method}"
    campaign = CampaignSettings(name, TestbedSpec(profile=profile, max_slots=MAX_SLOTS), seed=seed,
                                directory=directory, resume=(directory / "ledger.sqlite").exists())  # a stopped case
    data = CompareCampaign(CompareSettings(campaign, rate, methods=(method,),
                                           options={method: options} if options else {})).run()
    (row,) = data["rows"]
    detail = (row.get("sizing") or {}).get("detail") or {}
    scalars = {k: v for k, v in detail.items() if isinstance(v, (bool, int, float, str))}  # DS2's converged, ...
    return {"profile": name, "rate": rate, **{k: row.get(k) for k in ROW_FIELDS}, "detail": scalars,
            "notes": row.get("notes") or [], "wall_s": time.time() - t0}


def _row_in_child(connection, case: tuple) -> None:
    try:
        connection.send(compare_row(*case))
    except Exception as e:  # noqa: BLE001 - a case that raises is a row that says why
        connection.send({"profile": case[1], "rate": case[3], "method": case[4], "verdict": "failed",
                         "error": f"{type(e).__name__}: {e}", "crashed": True})
    connection.close()


def bounded(cases: Sequence[tuple], timeout_s: float) -> Iterator[dict]:
    """Each case (compare_row's arguments) in a child process of its own, one at a time, stopped after
    ``timeout_s`` of wall time: yields its row, or a row saying it was stopped. Only the children this
    function started are stopped, by their own handles."""
    context = multiprocessing.get_context("fork")
    for case in cases:
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=_row_in_child, args=(send, case), daemon=True)
        started = time.time()
        child.start()
        send.close()
        row = None
        while row is None:
            if receive.poll(1.0):
                row = receive.recv()
            elif not child.is_alive():
                row = {"verdict": "failed", "error": f"the case's process ended with status {child.exitcode}"}
            elif time.time() - started > timeout_s:
                child.kill()
                row = {"verdict": "stopped", "error": f"stopped after {timeout_s:.0f} s of wall time"}
        child.join()
        receive.close()
        rate = case[3] if case[3] is not None else known_rate(case[0], case[1])
        yield {"profile": case[1], "rate": rate, "method": case[4], "wall_s": time.time() - started, **row}


def run_cases(cases: Sequence[tuple], out_dir: Path, timeout_s: float, log: Callable[[str], None] = silent,
              run: bool = True) -> list[dict]:
    """The rows of ``cases``: the ones kept under ``out_dir`` read back, the others run and kept (with
    ``run`` False: left out, for the tables of a run still going)."""
    rows, missing = [], []
    for case in cases:
        kept = out_dir / case[1] / f"{case[4]}.json"
        if kept.is_file():
            rows.append(json.loads(kept.read_text()))
        else:
            missing.append(case)
    for row in bounded(missing if run else (), timeout_s):
        if not row.get("crashed"):  # a crash (a bug, not the method's answer) is run again next time
            kept = out_dir / row["profile"] / f"{row['method']}.json"
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_text(json.dumps(row) + "\n")
        rows.append(row)
        log(row_line(row))
    order = {(c[1], c[4]): k for k, c in enumerate(cases)}
    return sorted(rows, key=lambda r: order[(r["profile"], r["method"])])


def row_line(r: dict) -> str:
    if r.get("slots") is None:
        return f"{r['profile']} {r['method']}: {r['verdict']} {r.get('error') or ''}".rstrip()
    return (f"{r['profile']} {r['method']}: {r['slots']} x {r['memory_mb']} MB ({r['total_memory_mb']:,} MB), "
            f"MST / rate {r['mst_over_rate']:.2f}, {r['testbed_seconds'] / 60:.0f} testbed min: {r['verdict']} "
            f"[{r['wall_s']:.0f} s]")


def cases_for(out_dir: Path, nexmark: Sequence[str], count: int, seed: int, methods: Sequence[str], campaign_seed: int,
              options: dict[str, dict]) -> list[tuple]:
    """compare_row's arguments for every profile and method: the Nexmark ones first, then the generated."""
    from streambed.testbed.sim.generate import write_profiles

    profiles = [(q, None, NEXMARK_RATES[q]) for q in nexmark]
    for path in write_profiles(out_dir / "profiles", count, seed) if count else ():
        profiles.append((path.stem, str(path), None))  # its rate is found by its first case (generated_rate_kept)
    return [(out_dir, name, profile, rate, m, campaign_seed, options.get(m, {})) for name, profile, rate in profiles
            for m in methods]


# -- the tables (pure) ---------------------------------------------------------------------------------------

def cheapest_sustaining(rows: Sequence[dict]) -> dict[str, str]:
    """Per profile, the method whose plan sustains the rate by the truth with the least total memory
    (ties: fewer slots, then less testbed time)."""
    best: dict[str, dict] = {}
    for r in rows:
        if r.get("verdict") != "sustains":
            continue
        key = (r["total_memory_mb"], r["slots"], r["testbed_seconds"])
        if r["profile"] not in best or key < best[r["profile"]][0]:
            best[r["profile"]] = (key, r["method"])
    return {p: m for p, (_, m) in best.items()}


def method_summary(rows: Sequence[dict], methods: Sequence[str]) -> list[dict]:
    """Per method over the profiles: verdict counts, the medians of slots, total memory, MST / rate and
    testbed minutes over its planned rows, and how often it was the cheapest plan that sustains."""
    cheapest = cheapest_sustaining(rows)
    out = []
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        planned = [r for r in mine if r.get("slots") is not None]

        def median(key, scale=1.0):
            values = [r[key] * scale for r in planned if r.get(key) is not None]
            return statistics.median(values) if values else None

        out.append({"method": m, "profiles": len(mine),
                    "sustains": sum(r["verdict"] == "sustains" for r in mine),
                    "under": sum(r["verdict"] == "under-provisioned" for r in mine),
                    "unreachable": sum(r["verdict"] == "unreachable" for r in mine),
                    "failed": sum(r["verdict"] in ("failed", "stopped") for r in mine),
                    "cheapest": sum(v == m for v in cheapest.values()),
                    "median_slots": median("slots"), "median_total_mb": median("total_memory_mb"),
                    "median_mst_over_rate": median("mst_over_rate"),
                    "median_testbed_min": median("testbed_seconds", 1 / 60)})
    return out


def _fmt(v, spec: str = ",.0f") -> str:
    return "-" if v is None else format(v, spec)


def markdown_rows(rows: Sequence[dict]) -> list[str]:
    """The per-profile table, one line per row, as docs/compare.md shows it."""
    lines = ["| profile | rate, events/s | method | slots | MB per slot | total MB | MST / rate (truth) | "
             "testbed min | verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['profile']} | {_fmt(r['rate'])} | {r['method']} | {_fmt(r.get('slots'))} | "
                     f"{_fmt(r.get('memory_mb'))} | {_fmt(r.get('total_memory_mb'))} | "
                     f"{_fmt(r.get('mst_over_rate'), '.2f')} | {_fmt(r.get('testbed_seconds') and r['testbed_seconds'] / 60, '.0f')} | "
                     f"{r['verdict']} |")
    return lines


def markdown_summary(summary: Sequence[dict]) -> list[str]:
    lines = ["| method | profiles | sustains | under-provisioned | unreachable | failed or stopped | cheapest that "
             "sustains | median slots | median total MB | median MST / rate | median testbed min |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        lines.append(f"| {s['method']} | {s['profiles']} | {s['sustains']} | {s['under']} | {s['unreachable']} | "
                     f"{s['failed']} | {s['cheapest']} | {_fmt(s['median_slots'])} | {_fmt(s['median_total_mb'])} | "
                     f"{_fmt(s['median_mst_over_rate'], '.2f')} | {_fmt(s['median_testbed_min'])} |")
    return lines


def compare_methods(out_dir: Path, nexmark: Sequence[str] = tuple(NEXMARK_RATES), count: int = 50,
                    seed: int = GENERATED_SEED, methods: Sequence[str] = DEFAULT_METHODS, campaign_seed: int = 0,
                    options: dict[str, dict] | None = None, case_timeout_s: float = 1800.0,
                    log: Callable[[str], None] = silent, run: bool = True) -> dict:
    """The comparison (module docstring): rows, per-method summaries (Nexmark, generated, all), and the
    markdown tables."""
    out_dir = Path(out_dir)
    cases = cases_for(out_dir, nexmark, count, seed, methods, campaign_seed, options or {})
    rows = run_cases(cases, out_dir, case_timeout_s, log, run)
    generated = [r for r in rows if r["profile"] not in NEXMARK_RATES]
    summaries = {"nexmark": method_summary([r for r in rows if r["profile"] in NEXMARK_RATES], methods),
                 "generated": method_summary(generated, methods), "all": method_summary(rows, methods)}
    return {"rows": rows, "summary": summaries, "methods": list(methods), "generated_seed": seed,
            "generated_profiles": len({r["profile"] for r in generated}), "nexmark": list(nexmark),
            "markdown": {"rows": markdown_rows(rows), **{k: markdown_summary(v) for k, v in summaries.items()}}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("campaigns/methods-compare"))
    parser.add_argument("--count", type=int, default=50, help="generated profiles (the first N of --seed)")
    parser.add_argument("--seed", type=int, default=GENERATED_SEED, help="the generated profiles' seed")
    parser.add_argument("--nexmark", default=",".join(NEXMARK_RATES), help="Nexmark profiles ('' for none)")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS))
    parser.add_argument("--training", default=None, help="a learned training set's directory: adds learned")
    parser.add_argument("--case-timeout", type=float, default=1800.0, help="wall seconds per method and profile")
    parser.add_argument("--tables-only", action="store_true", help="print the tables of the rows kept; run nothing")
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    options = {}
    if args.training:
        methods += [] if "learned" in methods else ["learned"]
        options["learned"] = {"training": args.training}
    result = compare_methods(args.out, [q for q in args.nexmark.split(",") if q], args.count, args.seed, methods,
                             options=options, case_timeout_s=args.case_timeout, log=lambda s: print(s, flush=True),
                             run=not args.tables_only)
    for key in ("rows", "nexmark", "generated", "all"):
        print("\n" + "\n".join(result["markdown"][key]))
    if not args.tables_only:
        (args.out / "methods-compare.json").write_text(json.dumps(result, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()

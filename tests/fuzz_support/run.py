"""``make fuzz``: a long generated run, its summary printed and written as JSON.

    python -m fuzz_support.run --examples 2000 --seed 20261126 --out fuzz-out   (from tests/)

Failing cases are kept under <out>/failures/case-N/ with a repro.sh (cd there and run it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from .session import Session, run

DEFAULT_SEED = 20261126


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fuzz")
    p.add_argument("--examples", type=int, default=2000)
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--out", type=Path, default=Path("fuzz-out"))
    args = p.parse_args(argv)
    out = args.out.resolve()
    if (out / "failures").exists():
        shutil.rmtree(out / "failures")
    (out / "failures").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="streambed-fuzz-") as tmp:
        session = Session(Path(tmp), args.seed, keep_failures=out / "failures", progress=True)
        aborted = None
        try:
            run(session, args.examples)
        except Exception as e:  # the fuzz itself broke: still report what ran, and say so
            aborted = f"{type(e).__name__}: {str(e)[:300]}"
        finally:
            session.close()
            summary = session.summary()
            summary["aborted"] = aborted
            (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"fuzz: seed {summary['seed']}, {summary['invocations']} invocations in {summary['seconds_total']} s "
          f"(median {summary['seconds_per_invocation']['median']} s, max {summary['seconds_per_invocation']['max']} s, "
          f"max RSS {summary['max_rss_mb']} MB)")
    print(f"  exits: {summary['exits']}")
    print(f"  failures: {summary['failures']} (tracebacks {summary['tracebacks']}, hangs {summary['hangs']}, "
          f"multi-line errors {summary['multi_line_errors']}); by kind: {summary['problems']}")
    print(f"  stopped at the engine guard: {summary['stopped_at_engine_guard']}")
    print(f"  per command: {summary['per_command']}")
    print("  slowest: " + "; ".join(f"{c['seconds']} s case {c['case']}" for c in summary["slowest"]))
    print("  largest: " + "; ".join(f"{c['max_rss_mb']} MB case {c['case']}" for c in summary["largest"]))
    print("  failures by cause (cases):")
    for key, cases in summary["failure_groups"].items():
        print(f"    {len(cases):4d}  {key}   [{', '.join(map(str, cases[:8]))}{' ...' if len(cases) > 8 else ''}]")
    print(session.report(limit=10))
    print(f"summary: {out / 'summary.json'}; failing cases: {out / 'failures'}/case-N/repro.sh")
    if aborted:
        print(f"fuzz: the run stopped early: {aborted}")
    return 1 if summary["failures"] or aborted else 0


if __name__ == "__main__":
    sys.exit(main())

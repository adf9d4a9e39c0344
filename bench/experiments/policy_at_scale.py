"""The plan's own configuration of budgets beyond the testbed, judged by the sim's truth: whether an
"unreachable" is the surrogate's answer or the configuration's.

For one recorded campaign (its exploration.json) it rebuilds the plan's last pass for one memory per slot
(``ResourceExplorer.final_metrics`` and ``_configured``: the policy on the largest run's rates, with the
max parallelism the plan would set) and, for each budget of ``--slots``, prints the policy's predicted rate,
the truth's MST of that configuration (``GroundTruth.configuration_mst``, as ``sim truth --plan``), the
truth's bottleneck and the configuration. The rates the policy reads are printed first.

    .venv/bin/python bench/experiments/policy_at_scale.py DIR/A-q8-3x --profile q8 --slots 48,224,454,1000,2000

DIR is a ``bench/evaluate.py`` or ``bench/public_cases.py`` output; ``--key-stats``: the plan read the data's
key statistics (``public_cases.py --key-stats``, section G's ``--generated-key-stats``). ``--rate-factor
OPERATOR=F``: what the configurations would be, and sustain, were that operator's rate read F times as high.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from streambed.errors import UserError
from streambed.ledger import Ledger
from streambed.model import Configuration
from streambed.planner.estimator import CapacityEstimator, Timing
from streambed.planner.exploration import Exploration, ExplorerSettings
from streambed.planner.explorer import ResourceExplorer
from streambed.planner.optimizer import ConfigurationOptimizer
from streambed.planner.policies import DEFAULT_POLICY, policy_named
from streambed.testbed.sim.keys import key_statistics
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed
from streambed.testbed.sim.truth import GroundTruth

TESTBED_SLOTS = 48


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("case", type=Path, help="a campaign directory holding exploration.json")
    p.add_argument("--profile", required=True, help="the sim profile it planned (name or path)")
    p.add_argument("--memory", type=int, default=4096, help="memory per slot, MB (default 4096)")
    p.add_argument("--slots", default="48,224,454", help="budgets, comma-separated")
    p.add_argument("--key-stats", action="store_true", help="the plan read the data's key statistics")
    p.add_argument("--rate-factor", action="append", default=[], metavar="OPERATOR=F",
                   help="what if: the policy reads OPERATOR's true rate times F (repeatable)")
    p.add_argument("--json", type=Path, help="also write the rows here")
    args = p.parse_args()
    try:
        budgets = [int(x) for x in args.slots.split(",")]
        if any(b < 1 for b in budgets):
            raise ValueError
    except ValueError:
        sys.exit(f"--slots: expected positive budgets separated by commas, got {args.slots!r}")
    try:
        factors = {op: float(f) for op, f in (item.split("=", 1) for item in args.rate_factor)}
        if any(f <= 0 for f in factors.values()):
            raise ValueError
    except ValueError:
        sys.exit(f"--rate-factor: expected OPERATOR=F with F > 0, got {args.rate_factor}")
    try:
        profile = load_profile(args.profile)
        ex = Exploration.from_dict(json.loads((args.case / "exploration.json").read_text()))
    except UserError as e:
        sys.exit(str(e))
    except OSError as e:
        sys.exit(f"{args.case}: {e.strerror or e}")
    except (ValueError, KeyError, TypeError) as e:
        sys.exit(f"{args.case}/exploration.json: not a campaign's exploration ({e!s:.100})")
    if args.memory not in {pt.memory_mb for pt in ex.points}:
        sys.exit(f"--memory {args.memory}: the campaign measured {sorted({pt.memory_mb for pt in ex.points})} MB")
    tb = SimTestbed(profile, SimSettings(seed=0, max_slots=TESTBED_SLOTS))
    query = tb.query(profile.name)
    settings = ExplorerSettings(seed=0, **({"key_statistics": key_statistics(profile).operators} if args.key_stats else {}))
    truth = GroundTruth(profile)
    rows = []
    with tempfile.TemporaryDirectory() as d, Ledger.open(d, "plan", {"query": profile.name}, resume=False) as ledger:
        optimizer = ConfigurationOptimizer(CapacityEstimator(tb, ledger, Timing.named("paper-complex")), query,
                                           policy_named(DEFAULT_POLICY))
        explorer = ResourceExplorer(optimizer, tb.info(), settings)
        metrics, origin = explorer.final_metrics(ex, args.memory)
        unknown = set(factors) - {op for op, _ in metrics.operators}
        if unknown:
            sys.exit(f"--rate-factor: {', '.join(sorted(unknown))}: not an operator of {profile.name}")
        metrics = replace(metrics, operators=tuple((op, replace(r, true_rate=r.true_rate * factors.get(op, 1.0)))
                                                   for op, r in metrics.operators))
        origin += "".join(f"; {op}'s rate x {f:g} (what if)" for op, f in factors.items())
        print(f"{profile.name} at {args.memory} MB, rates from {origin}:")
        for op, r in metrics.operators:
            print(f"  {op:<26} true rate {r.true_rate:>12,.0f} records/s a task, input ratio {r.input_ratio:.4f}")
        for n in budgets:
            proposal, max_parallelism = explorer._configured(metrics, n)
            own = truth.configuration_mst(Configuration.of(query, proposal.parallelism, max_parallelism), args.memory)
            rows.append({"slots": n, "max_parallelism": max_parallelism, "predicted": proposal.predicted_rate,
                         "truth": own.mst, "bottleneck": own.bottleneck, "configuration": proposal.parallelism})
            print(f"{n:>6} slots, max parallelism {max_parallelism or 'default'}: predicted {proposal.predicted_rate:,.0f}, "
                  f"truth {own.mst:,.0f} ({own.bottleneck}) {proposal.parallelism}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The sim truth's MST of one configuration for several observation lengths: by its sustain rule (the
backlog's trend over whole window periods, testbed/sim/truth.py) and by the reading it replaced (the
backlog at the observation's end less at its start), which depends on where in a slide the observation
ends (docs/sim.md, "Ground truth").

    .venv/bin/python bench/truth_phase.py --profile FILE --config "A=6,B=12,..." [--memory 4096]
        [--observe 300,301.1,302.2]
    .venv/bin/python bench/truth_phase.py --profile q8 --slots 48 --observe 300

With ``--slots`` instead of ``--config`` it judges the best configuration of that budget (the capacity
model's), as ``GroundTruth.true_mst`` does: section A's targets are 3, 10 and 25 x that MST at 48 slots.
"""

from __future__ import annotations

import argparse
import copy

from streambed.model import Configuration
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.truth import GroundTruth, TruthSettings


class EndMinusStart(GroundTruth):
    """The reading replaced on 2026-11-26: what piled up is the backlog at the end less at the start."""

    def _sustains(self, warmed, rate):
        s = self.settings
        eng = copy.deepcopy(warmed, memo={id(warmed.profile): warmed.profile})
        eng.set_rate(rate)
        eng.advance(s.ramp_s)
        e0, o0, b0 = eng.emitted_total, eng.offered_total, eng.backlog
        eng.advance(s.observe_s)
        offered = eng.offered_total - o0
        piled = max(0.0, eng.backlog - b0)
        return offered > 0 and eng.emitted_total - e0 - piled >= s.threshold * offered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", required=True)
    parser.add_argument("--config", help="operator=tasks, comma-separated")
    parser.add_argument("--slots", type=int, help="instead of --config: the best configuration of this budget")
    parser.add_argument("--memory", type=int, default=4096)
    parser.add_argument("--observe", default="300,301.1,302.2")
    args = parser.parse_args()
    profile = load_profile(args.profile)
    if args.config:
        tasks = {k: int(v) for k, v in (kv.split("=") for kv in args.config.split(","))}
        config = Configuration.of(profile.query(), tasks)
    elif args.slots:
        config, _ = GroundTruth(profile).model(args.memory).best_configuration(args.slots)
    else:
        parser.error("--config or --slots: expected one of them")
    for observe in (float(x) for x in args.observe.split(",")):
        settings = TruthSettings(observe_s=observe)
        trend = GroundTruth(profile, settings).configuration_mst(config, args.memory)
        ends = EndMinusStart(profile, settings).configuration_mst(config, args.memory)
        print(f"observe {observe:g} s: trend rule {trend.mst:,.0f} events/s, end minus start {ends.mst:,.0f}, "
              f"capacity model {trend.model_mst:,.0f}")


if __name__ == "__main__":
    main()

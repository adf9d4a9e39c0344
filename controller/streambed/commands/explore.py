"""``streambed explore``: the Resource Explorer alone, its measurements and the surrogate model."""

from __future__ import annotations

from ..campaigns.settings import ExploreSettings
from ..report.console import Output
from .args import count, memory_list
from .common import campaign_options, campaign_settings, input_options, logs, output_options, planner_options, run


def explorer_options(sp) -> None:
    """The options explore and plan share: the query and the search space."""
    sp.add_argument("--query", required=True, help="the query to plan (a sim profile or a flink/queries/*.sql)")
    sp.add_argument("--memory", "--profiles", dest="memory", type=memory_list,
                    help="memory per slot to explore, MB, e.g. 2048,4096 (default: all the testbed offers; "
                         "--profiles is accepted too)")
    sp.add_argument("--max-measurements", type=count, default=ExploreSettings.max_measurements,
                    help="the explorer stops at this many optimizer calls")


def register(sub) -> None:
    sp = sub.add_parser("explore", help="Resource Explorer alone: measurements and the surrogate model")
    explorer_options(sp)
    campaign_options(sp, "explore", testbed_size=True)
    input_options(sp)
    planner_options(sp)
    output_options(sp)
    sp.set_defaults(func=cmd_explore)


def explorer_settings(cls, args, **more):
    """``cls`` (ExploreSettings or PlanSettings) from the shared options and ``more``."""
    return cls(campaign_settings(args), memories=args.memory or (), timing=args.timing, policy=args.policy,
               max_measurements=args.max_measurements, **more)


def cmd_explore(args, out: Output) -> None:
    from ..campaigns.explore import ExploreCampaign
    from ..report.tables import exploration_table

    ex = run(ExploreCampaign(explorer_settings(ExploreSettings, args), **logs(args, out)), out)
    data = ex.to_dict()
    exploration_table(out, data)
    out.info(f"stop: {ex.stop_reason}; model by the split rule: {ex.family}; "
             f"{ex.optimizer_calls} optimizer calls, {ex.estimator_calls} estimator calls, "
             f"{ex.testbed_seconds / 60:.0f} min of testbed")
    out.result(data)

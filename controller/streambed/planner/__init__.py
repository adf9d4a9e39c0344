"""Ways to size a job, behind one Planner protocol (planner/base.py).

A new method is one module in this package and one line in ``PLANNERS``: ``streambed compare`` and
``make evaluate`` find it here. Methods are imported when asked for, so that a method's heavier
dependencies (a solver, a learning library) load only when it runs.
"""

from __future__ import annotations

from importlib import import_module

from ..errors import UserError
from .base import Planner, PlanningRequest, Sizing, Step

PLANNERS: dict[str, str] = {
    "streambed": "streambed:StreamBedPlanner",  # the Resource Explorer: explore, fit, inverse-solve (sections IV-VI)
    "ds2": "ds2:Ds2Loop",  # DS2's scaling loop (Kalavri et al.)
    "autoscaler": "ds2:Autoscaler",  # the Flink Kubernetes operator's autoscaler (DS2 + its defaults)
    "imai": "imai:Imai",  # Imai et al.'s MST models 1 and 2, chosen by validation points
    "rafiki": "rafiki:Rafiki",  # Rafiki's back-pressure profiling and capacity table
    "learned": "learned:LearnedCostModel",  # PDSP-Bench's learned cost models (LR, MLP, forest, graph) over the plan graph
    "justin": "justin:Justin",  # Justin's hybrid scaling: DS2's loop, memory levels where the state does not fit
}
"""Method name (the --methods option of ``streambed compare``) -> "module:Class": a module of this package,
or a dotted module path anywhere (a method kept outside the package, a test double)."""


def planner_named(name: str) -> Planner:
    """The planner registered as ``name``; one line naming the known ones when there is none."""
    try:
        where = PLANNERS[name]
    except KeyError:
        raise UserError(f"method: unknown planner {name!r} (expected one of {', '.join(PLANNERS) or 'none'})") from None
    module, cls = where.split(":")
    return getattr(import_module(module if "." in module else f"{__name__}.{module}"), cls)()


__all__ = ["PLANNERS", "Planner", "PlanningRequest", "Sizing", "Step", "planner_named"]

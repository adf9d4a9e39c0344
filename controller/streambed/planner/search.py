"""The candidate search of the Resource Explorer (paper section VI): which (memory per slot, slots)
to measure next.

D starts with the corners of the search space (``corners``); a search strategy then proposes one
point at a time and is told each point's cost, the best LOOCV RMSE of D once it holds the point
(Eq. 9), until the stop rule (``should_stop``) ends the exploration. A new strategy (a Theodolite-style
linear search, a learned acquisition) is a class with ``ask`` and ``tell`` and one line in
``SEARCHES``.

* ``bayesian`` (the paper's): scikit-optimize's Gaussian process with Expected Improvement, after a
  space-filling Halton design.
* ``grid``: slot counts evenly spaced over the space, every memory per slot, the widest gaps first;
  it ignores the costs.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from importlib import import_module
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import UserError
from .exploration import ExplorerSettings


@dataclass(frozen=True)
class SearchSpace:
    """Slot counts from ``min_slots`` to ``max_slots`` (both included), and the memories per slot offered."""

    min_slots: int
    max_slots: int
    memories: tuple[int, ...]


@runtime_checkable
class SearchStrategy(Protocol):
    """Proposes the next point of D and learns from each point's cost."""

    name: str

    def ask(self) -> tuple[int, int]:
        """The next point to measure: (slots, memory per slot in MB)."""

    def tell(self, slots: int, memory_mb: int, cost: float) -> None:
        """The cost of a measured point (the best LOOCV RMSE of D with it; inf: too few points yet)."""


SEARCHES: dict[str, str] = {"bayesian": "search:BayesianSearch", "grid": "search:GridSearch"}
"""Strategy name (ExplorerSettings.search) -> "module:Class": a module of the planner package, or a dotted
module path anywhere (a strategy kept outside the package, a test double). The class is built as
``Class(space, seed=..., initial_points=...)``."""


def search_class(name: str) -> type:
    """The strategy class registered as ``name``; one line naming the known ones when there is none."""
    try:
        where = SEARCHES[name]
    except KeyError:
        raise UserError(f"search: unknown search strategy {name!r} (expected one of {', '.join(SEARCHES)})") from None
    module, cls = where.split(":")
    package = __name__.rpartition(".")[0]
    return getattr(import_module(module if "." in module else f"{package}.{module}"), cls)


def search_named(name: str, space: SearchSpace, *, seed: int, initial_points: int) -> SearchStrategy:
    """The strategy registered as ``name`` over ``space``. ``initial_points``: points measured before the
    strategy's model is trusted (the corners and the first searches); ``seed``: its random draws."""
    return search_class(name)(space, seed=seed, initial_points=initial_points)


class BayesianSearch:
    """Section VI's search: a Gaussian process with Expected Improvement (scikit-optimize) over slots and,
    when the space offers several, the memory per slot."""

    name = "bayesian"

    def __init__(self, space: SearchSpace, *, seed: int = 0, initial_points: int = 0):
        from skopt import Optimizer
        from skopt.space import Categorical, Integer

        self.memories = tuple(space.memories)
        dims = [Integer(space.min_slots, space.max_slots, name="slots")]
        if len(self.memories) > 1:
            dims.append(Categorical(list(self.memories), name="memory_mb"))
        # The first measurements after the corners come from a space-filling (Halton) design, then the
        # Gaussian process takes over. Its cost (the best LOOCV RMSE) is lowest where points exist
        # already: started right after the corners, it only ever proposes the corners' two slot
        # counts, between which the three families cannot be told apart.
        self._optimizer = Optimizer(dims, base_estimator="GP", acq_func="EI", n_initial_points=initial_points,
                                    initial_point_generator="halton", random_state=seed)
        self._asked: list | None = None

    def ask(self) -> tuple[int, int]:
        with warnings.catch_warnings():
            # skopt warns when it proposes a point measured before: re-measuring is intended (runs vary).
            warnings.simplefilter("ignore")
            x = self._optimizer.ask()
        self._asked = x
        return int(x[0]), int(x[1]) if len(self.memories) > 1 else self.memories[0]

    def tell(self, slots: int, memory_mb: int, cost: float) -> None:
        x = self._asked
        if x is None or int(x[0]) != slots or (len(x) > 1 and int(x[1]) != memory_mb):
            x = [slots, memory_mb] if len(self.memories) > 1 else [slots]
        self._asked = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._optimizer.tell(x, _cost(cost))


GRID_LEVELS = 8
"""Slot counts the grid search spaces evenly over the search space."""


class GridSearch:
    """Slot counts evenly spaced from the fewest to the most slots, each with every memory per slot,
    visited widest gap first (``bisection_order``); points already measured come last, and once every
    point is measured the grid starts over (runs vary). It ignores the costs."""

    name = "grid"

    def __init__(self, space: SearchSpace, *, seed: int = 0, initial_points: int = 0, levels: int = GRID_LEVELS):
        slots = sorted({int(round(v)) for v in np.linspace(space.min_slots, space.max_slots, levels)})
        order = [slots[i] for i in bisection_order(len(slots))]
        self.points = [(p, m) for p in order for m in sorted(space.memories)]
        self.measured: set[tuple[int, int]] = set()

    def ask(self) -> tuple[int, int]:
        fresh = [pt for pt in self.points if pt not in self.measured]
        if not fresh:
            self.measured.clear()
            fresh = self.points
        return fresh[0]

    def tell(self, slots: int, memory_mb: int, cost: float) -> None:
        self.measured.add((slots, memory_mb))


def bisection_order(n: int) -> list[int]:
    """The indices 0..n-1, both ends first, then the middle of the widest gap left, recursively (breadth
    first): any prefix of the order covers the range as evenly as its length allows."""
    if n <= 0:
        return []
    order = [0] + ([n - 1] if n > 1 else [])
    gaps = [(0, n - 1)]
    while gaps:
        nxt = []
        for lo, hi in gaps:
            if hi - lo > 1:
                mid = (lo + hi) // 2
                order.append(mid)
                nxt += [(lo, mid), (mid, hi)]
        gaps = nxt
    return order


def corners(min_slots: int, max_slots: int, memories: Sequence[int]) -> list[tuple[int, int]]:
    """The bootstrap points (memory, slots): lowest and highest P with lowest and highest M. With a
    single memory per slot or a single slot count, midpoints keep at least three distinct points."""
    ms = sorted({min(memories), max(memories)})
    ps = sorted({min_slots, max_slots})
    pts = [(m, p) for m in ms for p in ps]
    if len(pts) < 3 and max_slots > min_slots + 1:
        pts.append((ms[0], (min_slots + max_slots) // 2))
    return pts


def should_stop(rmse_history: Sequence[float], corners: int, settings: ExplorerSettings) -> str | None:
    """The stop rule of section VI: after at least ``min_after_corners`` measurements beyond the corners,
    stop when the RMSE grew by more than ``rmse_growth`` since the previous measurement; always stop at
    ``max_measurements``. Returns the reason, or None to go on."""
    n = len(rmse_history)
    if n >= settings.max_measurements:
        return f"reached {settings.max_measurements} measurements"
    if n - corners >= settings.min_after_corners:
        prev, last = rmse_history[-2], rmse_history[-1]
        if math.isfinite(prev) and last > (1.0 + settings.rmse_growth) * prev:
            # an exact fit (RMSE 0, say on a fake testbed) grows by an unbounded fraction: say so, do not divide
            growth = f"{100 * (last / prev - 1):.0f} %" if prev > 0 else f"from 0 to {last:.3g}"
            return f"RMSE grew by {growth} (> {100 * settings.rmse_growth:.0f} %)"
    return None


def _cost(rmse: float) -> float:
    """skopt needs finite costs; too few points for LOOCV count as a very bad fit."""
    return rmse if math.isfinite(rmse) else 1e30


"""The explorer's search strategies (planner/search.py): the grid, Bayesian optimisation, and the seam a
new strategy plugs into (SEARCHES), exercised on the simulated testbed."""

import sys
import types

import pytest

from streambed.errors import UserError
from streambed.ledger import Ledger
from streambed.planner.estimator import CapacityEstimator, Timing
from streambed.planner.exploration import ExplorerSettings
from streambed.planner.explorer import ResourceExplorer
from streambed.planner.optimizer import ConfigurationOptimizer
from streambed.planner.search import (SEARCHES, BayesianSearch, GridSearch, SearchSpace, SearchStrategy, bisection_order,
                                      search_class, search_named)
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed

QUICK = Timing("q", warmup_s=20, cooldown_s=5, cooldown_rate_per_source=200, ramp_s=10, observe_s=20,
               max_iterations=10, warmup_observe_s=10)


def test_bisection_order_visits_the_ends_then_the_widest_gaps():
    assert bisection_order(0) == []
    assert bisection_order(1) == [0]
    assert bisection_order(2) == [0, 1]
    assert bisection_order(5) == [0, 4, 2, 1, 3]
    order = bisection_order(9)
    assert sorted(order) == list(range(9)) and order[:3] == [0, 8, 4] and set(order[3:5]) == {2, 6}


def test_the_grid_covers_the_space_widest_gap_first_and_skips_what_was_measured():
    grid = GridSearch(SearchSpace(3, 48, (512, 4096)), levels=4)  # slot levels 3, 18, 33, 48
    for slots in (3, 48):  # the corners
        for memory in (512, 4096):
            grid.tell(slots, memory, float("inf"))
    asked = []
    for _ in range(4):
        asked.append(grid.ask())
        grid.tell(*asked[-1], 1.0)
    assert asked == [(18, 512), (18, 4096), (33, 512), (33, 4096)]
    assert grid.ask() == (3, 512)  # every point measured: the grid starts over (runs vary)


def test_bayesian_search_proposes_points_of_the_space_and_repeats_itself_for_a_seed():
    space = SearchSpace(3, 48, (512, 4096))

    def proposals(seed):
        search = BayesianSearch(space, seed=seed, initial_points=3)
        out = []
        for i in range(5):
            slots, memory = search.ask()
            out.append((slots, memory))
            search.tell(slots, memory, 100.0 + (slots - 20) ** 2)
        return out

    first = proposals(7)
    assert all(3 <= s <= 48 and m in (512, 4096) for s, m in first)
    assert proposals(7) == first
    one = BayesianSearch(SearchSpace(3, 48, (4096,)), seed=0, initial_points=1)
    assert one.ask()[1] == 4096


def test_an_unknown_strategy_is_one_line_naming_the_known_ones():
    with pytest.raises(UserError, match=r"^search: unknown search strategy 'nope' \(expected one of bayesian, grid"):
        search_class("nope")
    assert isinstance(search_named("grid", SearchSpace(2, 8, (4096,)), seed=0, initial_points=0), SearchStrategy)


class Planted:
    """A strategy that walks up the slot counts one at a time, recording what it was told."""

    name = "planted"

    def __init__(self, space, *, seed=0, initial_points=0):
        self.space, self.told, self.next = space, [], space.min_slots + 1
        Planted.last = self

    def ask(self):
        slots, self.next = self.next, self.next + 1
        return slots, self.space.memories[0]

    def tell(self, slots, memory_mb, cost):
        self.told.append((slots, memory_mb))


def sim_explorer(tmp_path, settings: ExplorerSettings):
    prof = load_profile("paper-q1-linear")
    tb = SimTestbed(prof, SimSettings(seed=0, max_slots=12))
    ledger = Ledger.open(tmp_path, "explore", {}, resume=False)
    co = ConfigurationOptimizer(CapacityEstimator(tb, ledger, QUICK), tb.query(prof.name))
    return ResourceExplorer(co, tb.info(), settings), ledger


def test_a_planted_strategy_is_found_by_its_registered_name_and_drives_the_exploration(tmp_path, monkeypatch):
    module = types.ModuleType("planted.search")
    module.Planted = Planted
    monkeypatch.setitem(sys.modules, "planted.search", module)
    monkeypatch.setitem(SEARCHES, "planted", "planted.search:Planted")
    explorer, ledger = sim_explorer(tmp_path, ExplorerSettings(search="planted", max_measurements=5))
    with ledger:
        ex = explorer.explore([4096])
    searched = [(p.slots, p.memory_mb) for p in ex.points if p.phase == "search"]
    corners = [(p.slots, p.memory_mb) for p in ex.points if p.phase == "corner"]
    lo = min(s for s, _ in corners)
    assert searched == [(lo + 1, 4096), (lo + 2, 4096)]  # 3 corners, then its proposals up to 5
    assert Planted.last.told == corners + searched  # told every corner, then each point it proposed
    assert ex.family and ex.model


def test_an_unknown_strategy_is_refused_before_the_testbed_is_touched(tmp_path):
    explorer, ledger = sim_explorer(tmp_path, ExplorerSettings(search="nope"))
    measured = []
    explorer.optimizer.optimize = lambda budget, key: measured.append(key)
    with ledger, pytest.raises(UserError, match="search: unknown"):
        explorer.explore([4096])
    assert measured == []

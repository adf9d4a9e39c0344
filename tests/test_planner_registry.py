"""The Planner seam: a method registered in PLANNERS is found by name, with nothing else touched."""

import sys
import types

import pytest

from streambed.errors import UserError
from streambed.planner import PLANNERS, Planner, PlanningRequest, Sizing, Step, planner_named
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimTestbed


class Planted:
    """A planning method that sizes every query at one slot per operator, without measuring."""

    name = "planted"

    def explore(self, testbed, request, log=print):
        return {"query": testbed.query(request.query)}

    def plan(self, evidence, request):
        ops = {op: 1 for op in evidence["query"].operators}
        return Sizing(self.name, request.query, request.rate, len(ops), 1024, ops, 0.0, 0,
                      steps=(Step(len(ops), 1024, ops, None),))


def test_a_planted_method_is_found_by_its_registered_name(monkeypatch):
    sim_testbed = SimTestbed(load_profile("q5"))
    module = types.ModuleType("planted.methods")
    module.Planted = Planted
    monkeypatch.setitem(sys.modules, "planted.methods", module)
    monkeypatch.setitem(PLANNERS, "planted", "planted.methods:Planted")
    planner = planner_named("planted")
    assert isinstance(planner, Planner)
    request = PlanningRequest("q5", 1e5)
    sizing = planner.plan(planner.explore(sim_testbed, request), request)
    assert sizing.slots == len(sim_testbed.query("q5").operators) == sum(sizing.configuration.values())
    assert sizing.total_memory_mb == 1024 * sizing.slots
    assert sizing.to_dict()["steps"][0]["configuration"] == dict(sizing.configuration)


def test_an_unknown_method_is_one_line_naming_the_known_ones(monkeypatch):
    monkeypatch.setitem(PLANNERS, "planted", "planted.methods:Planted")
    with pytest.raises(UserError, match=r"^method: unknown planner 'nope' \(expected one of .*planted.*\)$"):
        planner_named("nope")


def test_per_operator_memory_adds_up_over_each_operators_tasks():
    s = Sizing("m", "q", 1.0, 3, 4096, {"a": 1, "b": 2}, 0.0, 0, memory_by_operator={"a": 4096, "b": 1024})
    assert s.total_memory_mb == 4096 + 2 * 1024

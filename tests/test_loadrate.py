"""A task's true rate that falls with its load (model/loadrate.py), the metrics that carry the limit
(SingleTaskMetrics.with_load_limits) and the caveat a plan loading a task beyond what was seen gets."""

from __future__ import annotations

import random

import pytest

from streambed.model import SingleTaskMetrics
from streambed.model.loadrate import LoadPoint, load_dependent, points_of, sustained_load
from streambed.model.measurement import OperatorMetrics, OperatorRates
from streambed.planner.caveats import unseen_reasons


def state_bound_rate(load: float) -> float:
    """A window task whose working set grows with its load: 50,000 records/s with its state in memory,
    slower as misses grow (the shape of testbed/sim/formulas.memory_slowdown). Fixed point: 10,000."""
    return 50_000 / (1 + load / 2_500)


def test_points_of_reads_the_mean_and_the_busiest_task_where_they_were_busy():
    om = OperatorMetrics("win", 4, 40_000, 40_000, 0.2, 0.5, 0.0, task_input=(5_000.0, 5_000.0, 10_000.0, 20_000.0))
    assert points_of([om]) == [LoadPoint(10_000, 50_000), LoadPoint(20_000, 40_000)]
    idle = OperatorMetrics("win", 4, 400, 400, 0.01, 0.02, 0.0, task_input=(100.0,) * 4)
    assert points_of([idle]) == []  # busyness under the floor's reach says nothing of the rate


def test_a_rate_that_does_not_move_with_the_load_is_not_load_dependent():
    rng = random.Random(7)
    noisy = [LoadPoint(x, 30_000 * (1 + rng.gauss(0, 0.05))) for x in (1_000, 2_000, 5_000, 9_000, 20_000)]
    assert not load_dependent(noisy)
    assert sustained_load(noisy) is None
    assert sustained_load([LoadPoint(5_000, 30_000)]) is None  # one point shows no trend


def test_a_falling_rate_gives_the_fixed_point_between_the_heaviest_load_and_its_rate():
    points = [LoadPoint(x, state_bound_rate(x)) for x in (1_000, 2_000, 4_000, 6_000)]
    assert load_dependent(points)
    limit = sustained_load(points)
    assert 6_000 <= limit <= state_bound_rate(6_000)  # at least what a task took, at most the rate read there
    # the light loads alone read 35,700-41,700 records/s: a plan on them loads a task 3.5 x too much
    assert limit < 0.5 * state_bound_rate(2_000)


def test_the_limit_is_never_below_a_load_a_task_was_seen_taking():
    # scattered points whose line's fixed point (8,396) lies below the heaviest load seen (9,000)
    points = [LoadPoint(1_000, 30_000), LoadPoint(2_000, 5_000), LoadPoint(9_000, 9_100)]
    assert sustained_load(points) == pytest.approx(9_000)


def test_metrics_with_load_limits_lower_only_and_keep_the_inputs_imbalance():
    m = SingleTaskMetrics("q", 1024, (("map", OperatorRates(100_000, 1.0)),
                                      ("win", OperatorRates(50_000, 0.5, True, imbalance=2.4, measured_parallelism=8,
                                                            input_imbalance=1.3))))
    limited = dict(m.with_load_limits({"win": 12_000, "map": 200_000}).operators)
    assert limited["win"].true_rate == 12_000 and limited["win"].imbalance == pytest.approx(1.3)
    assert limited["map"].true_rate == 100_000  # a limit above the rate read changes nothing


def test_a_plan_loading_a_task_beyond_the_heaviest_seen_says_so():
    lines = unseen_reasons({"win": 4}, {"win": 8}, ["win"], heavier={"win": (15_000.0, 10_000.0)})
    assert any("not seen" in line and "15,000" in line and "10,000" in line for line in lines)
    assert not unseen_reasons({"win": 4}, {"win": 8}, ["win"], heavier={"win": (10_500.0, 10_000.0)})


# -- load probes (planner/probes.py) and the plan's last pass reading them (ResourceExplorer.final_metrics) --

def test_a_probe_that_fell_short_of_its_sized_rate_shows_its_task_s_limit():
    from streambed.model.loadrate import probe_limit

    assert probe_limit(600_000, 1_860_000, 0.06) == pytest.approx(36_000)
    assert probe_limit(1_800_000, 1_860_000, 0.06) is None  # it reached what it was sized for: no limit shown
    assert probe_limit(600_000, 0.0, 0.06) is None


def test_load_probe_targets_are_keyed_operators_planned_past_the_heaviest_seen_by_more_than_noise():
    from streambed.planner.probes import load_probe_targets

    loads = {"win": (48_000.0, 4_700.0), "join": (8_500.0, 8_000.0), "agg": (9_000.0, 8_000.0),
             "map": (90_000.0, 1_000.0)}
    assert load_probe_targets(loads, {"win", "join", "agg"}) == ["agg", "win"]  # the map holds no state


def test_a_load_probe_loads_one_task_and_sizes_the_others_within_the_testbed():
    from streambed.planner.probes import load_probe_configuration

    m = SingleTaskMetrics("q", 4096, (("map", OperatorRates(20_000, 1.0)), ("win", OperatorRates(100_000, 0.05, True)),
                                      ("sink", OperatorRates(1e6, 0.05))))
    # the window's task is busy at 2,000,000 events/s: 100 map tasks; 64 slots take 62 of them
    cfg = load_probe_configuration(m, "win", 64, floor=10_000)
    assert cfg["win"] == 1 and sum(cfg.values()) <= 64 and cfg["map"] >= 40
    assert cfg["map"] * 20_000 * 0.05 >= 10_000  # the window's task is loaded past the floor
    assert load_probe_configuration(m, "win", 8, floor=10_000) is None  # 8 slots cannot load it so


def _run(ops, achieved=1000.0):
    from streambed.model import Measurement

    return Measurement(achieved, achieved, 0, 0, 0, 0, 0, 30, operators=tuple(
        OperatorMetrics(name, p, input_rate=rin, output_rate=rin, busyness=busy, busyness_max=busy, backpressure=0)
        for name, p, rin, busy in ops)).to_dict()


class _Measured:
    """An optimizer fake: the single-task metrics measured so far, none asked for."""

    def __init__(self, query):
        self.query = query

    def measured_single_task(self):
        return {}

    def single_task(self, memory_mb):
        raise AssertionError("the plan's last pass must not need a single-task run here")


def test_the_last_pass_holds_a_window_to_the_load_its_probe_sustained():
    from streambed.model import Query, TestbedInfo
    from streambed.planner.exploration import LOAD_PROBE, Exploration, ExplorationPoint, ExplorerSettings
    from streambed.planner.explorer import ResourceExplorer

    q = Query("q", ("map", "win"), (("source", "map"), ("map", "win")), keyed=("win",))
    # D: the window lightly loaded (5,000 records/s a task at 5 % busy: 100,000 read)
    light = _run([("map", 8, 100_000.0, 0.6), ("win", 1, 5_000.0, 0.05)], achieved=100_000.0)
    # the probe: sized for 2,000,000 events/s, it stopped at 600,000, the window's task at 30,000
    probe = _run([("map", 40, 600_000.0, 0.75), ("win", 1, 30_000.0, 0.98)], achieved=600_000.0)
    points = [ExplorationPoint(4096, 9, 100_000.0, {"map": 8, "win": 1}, 0, 0, 0, "corner", measurement=light)]
    probes = [ExplorationPoint(4096, 41, 600_000.0, {"map": 40, "win": 1}, 2_000_000.0, 0, 0, LOAD_PROBE,
                               measurement=probe, probed="win")]
    explorer = ResourceExplorer(_Measured(q), TestbedInfo("t", 64, (4096,)), ExplorerSettings())
    rates = dict(explorer.final_metrics(Exploration(points), 4096)[0].operators)
    assert rates["win"].true_rate == pytest.approx(100_000)  # without the probe: the light rate
    metrics, origin = explorer.final_metrics(Exploration(points, probes=probes), 4096)
    assert dict(metrics.operators)["win"].true_rate == pytest.approx(30_000, rel=0.02)
    assert "win at most 30,0" in origin
    assert dict(metrics.operators)["map"].true_rate == pytest.approx(100_000 / 8 / 0.6)  # a map is not held


def test_a_plan_loads_no_task_beyond_what_the_testbed_could_show_it():
    """Where no configuration within the testbed loads the window's task further, or its load probe was
    measured, the plan gives a task of it at most 1.1 x the heaviest load seen (its state beyond was never
    held); a task planned under 5 % busy is not held."""
    from streambed.model import Query, TestbedInfo
    from streambed.planner.exploration import LOAD_PROBE, Exploration, ExplorationPoint, ExplorerSettings
    from streambed.planner.explorer import ResourceExplorer

    q = Query("q", ("map", "win"), (("source", "map"), ("map", "win")), keyed=("win",))
    light = _run([("map", 8, 100_000.0, 0.6), ("win", 1, 5_000.0, 0.05)], achieved=100_000.0)
    points = [ExplorationPoint(4096, 9, 100_000.0, {"map": 8, "win": 1}, 0, 0, 0, "corner", measurement=light)]

    def window(slots, probes=()):
        explorer = ResourceExplorer(_Measured(q), TestbedInfo("t", slots, (4096,)), ExplorerSettings())
        metrics, origin = explorer.final_metrics(Exploration(points, probes=list(probes)), 4096)
        return dict(metrics.operators)["win"].true_rate, origin

    assert window(64)[0] == pytest.approx(100_000)  # a load probe could show more: not held
    rate, origin = window(2)  # 2 slots cannot load the window's task past 5,500 records/s
    assert rate == pytest.approx(5_500) and "the heaviest load the testbed could show a task of it" in origin
    # a probe that loaded its task to 30,000 records/s at 30 % busy: its rate held, the load seen grows
    probe = _run([("map", 40, 600_000.0, 0.75), ("win", 1, 30_000.0, 0.3)], achieved=600_000.0)
    probed = ExplorationPoint(4096, 41, 600_000.0, {"map": 40, "win": 1}, 2_000_000.0, 0, 0, LOAD_PROBE,
                              measurement=probe, probed="win")
    assert window(64, [probed])[0] == pytest.approx(33_000)


def test_a_cap_that_rests_on_the_hold_is_not_called_a_ceiling():
    """A hot key (20 %) caps the window at its task's rate over the key's share of the events (the window
    takes 5 % of them); where the task is held to the load the testbed could show (5,500 records/s on 2
    slots: 550,000 events/s), that cap is what was not seen, not a ceiling the runs showed (issue 35,
    item 5). A rate beyond the cap of the rate as read (10 M events/s) is a ceiling."""
    from streambed.model import Query, TestbedInfo
    from streambed.model.keystats import KeyStatistics
    from streambed.planner.exploration import Exploration, ExplorationPoint, ExplorerSettings
    from streambed.planner.explorer import ResourceExplorer

    q = Query("q", ("map", "win"), (("source", "map"), ("map", "win")), keyed=("win",))
    light = _run([("map", 8, 100_000.0, 0.6), ("win", 1, 5_000.0, 0.05)], achieved=100_000.0)
    points = [ExplorationPoint(4096, 9, 100_000.0, {"map": 8, "win": 1}, 0, 0, 0, "corner", measurement=light)]
    hot = KeyStatistics("win", "k", records=100, distinct_keys=11, sum_squares=20 ** 2 + 10 * 8 ** 2,
                        top_counts=(20,) + (8,) * 10)
    explorer = ResourceExplorer(_Measured(q), TestbedInfo("t", 2, (4096,)), ExplorerSettings(key_statistics=(hot,)))
    ex = Exploration(points)
    assert explorer._capped(ex, 4096, 500_000.0) == ([], [])
    capped, unshown = explorer._capped(ex, 4096, 1_000_000.0)
    assert capped == [] and len(unshown) == 1 and unshown[0].startswith("win") and "5,500 records/s" in unshown[0]
    capped, unshown = explorer._capped(ex, 4096, 20_000_000.0)
    assert len(capped) == 1 and unshown == []


def test_a_jobs_own_max_parallelism_is_no_ceiling_a_plan_may_raise_it():
    """A job that fixes 140 key groups caps a keyed operator at 140 tasks, but a plan sets the job's max
    parallelism where its own would cost slots (ResourceExplorer._configure): the ceiling is Flink's
    32,768 tasks over as many groups (a generated join was called unreachable at 343 tasks where the
    truth's minimum ran it over 32,768 groups)."""
    from streambed.model import Query, TestbedInfo
    from streambed.planner.exploration import Exploration, ExplorationPoint, ExplorerSettings
    from streambed.planner.explorer import ResourceExplorer

    q = Query("q", ("map", "win"), (("source", "map"), ("map", "win")), keyed=("win",), max_parallelism=140)
    light = _run([("map", 8, 100_000.0, 0.6), ("win", 1, 5_000.0, 0.05)], achieved=100_000.0)
    points = [ExplorationPoint(4096, 9, 100_000.0, {"map": 8, "win": 1}, 0, 0, 0, "corner", measurement=light)]
    explorer = ResourceExplorer(_Measured(q), TestbedInfo("t", 2, (4096,)), ExplorerSettings())
    ex = Exploration(points)
    # a task of the window: 100,000 records/s, 2 M events/s at its 5 % input ratio; 140 tasks hold 280 M
    assert explorer._capped(ex, 4096, 1e9) == ([], [])
    capped, _ = explorer._capped(ex, 4096, 1e11)
    window = [line for line in capped if line.startswith("win ")]
    # its tasks held to the 5,500 records/s the testbed could show one: 110,000 events/s a task
    assert window == ["win sustains at most 3,604,480,000 events/s at 32,768 tasks over 32,768 key groups"]

"""From per-task samples to a measurement: shared by every testbed."""

import numpy as np
import pytest

from streambed.metrics import window
from streambed.model import Measurement


def test_operator_metrics_group_tasks_by_operator():
    ops = window.operator_metrics(["a", "b"], [1, 2], busy=np.array([0.5, 0.2, 0.9]),
                                  backpressured=np.array([0.1, 0.0, 0.0]),
                                  records_in=np.array([100.0, 30.0, 70.0]), records_out=np.array([90.0, 30.0, 70.0]))
    a, b = ops
    assert (a.operator, a.parallelism, a.input_rate, a.busyness) == ("a", 1, 100.0, 0.5)
    assert b.input_rate == 100.0
    assert b.busyness == pytest.approx(0.55)
    assert b.busyness_max == pytest.approx(0.9)
    assert b.task_busyness == (0.2, 0.9)


def test_what_an_operator_is_offered_is_what_its_inputs_passed_on_along_their_edges():
    ops = window.operator_metrics(["a", "b", "j", "x"], [1, 1, 1, 1], busy=np.zeros(4), backpressured=np.zeros(4),
                                  records_in=np.array([100.0, 50.0, 60.0, 5.0]),
                                  records_out=np.array([50.0, 40.0, 0.0, 0.0]))
    # Flink: every consumer gets all its upstream emits (share 1); a join sums its inputs
    a, b, j, x = window.with_offered(ops, {"a": [("source", 1.0)], "b": [("a", 1.0)], "j": [("a", 1.0), ("b", 1.0)]},
                                     {o.operator: o.output_rate for o in ops}, source_rate=120.0)
    assert (a.offered_rate, b.offered_rate, j.offered_rate) == (120.0, 50.0, 90.0)
    assert x.offered_rate is None  # no edges known: not judged
    # the sim: an edge carries a share of what its upstream counts out (SimProfile.edge_shares)
    _, b, j, _ = window.with_offered(ops, {"b": [("a", 0.5)], "j": [("a", 0.1), ("b", 1.0)]},
                                     {o.operator: o.input_rate for o in ops}, source_rate=120.0)
    assert (b.offered_rate, j.offered_rate) == (50.0, 60.0)


def test_slope_and_variation():
    assert window.slope([0, 1, 2, 3], [5, 7, 9, 11]) == pytest.approx(2.0)
    assert window.slope([1], [5]) == 0.0
    assert window.coefficient_of_variation([10, 10, 10]) == 0.0
    assert window.coefficient_of_variation([9, 11]) == pytest.approx(0.1)


def test_measurement_uses_counter_differences_and_round_trips():
    m = window.measurement(start=100, end=130, target_rate=1000, emitted=27_000, offered=30_000,
                           sample_times=[105, 110, 115, 120, 125, 130], sample_emitted_rates=[900] * 6,
                           sample_pending=[500, 1000, 1500, 2000, 2500, 3000], pending_start=0,
                           operators=(), source_saturated=False)
    assert m.achieved_rate == pytest.approx(900)
    assert m.target_rate == pytest.approx(1000)
    assert m.ratio == pytest.approx(0.9)
    assert not m.sustained()
    assert m.pending_slope == pytest.approx(100)
    assert Measurement.from_dict(m.to_dict()) == m
    with pytest.raises(ValueError):
        window.measurement(start=1, end=1, target_rate=1, emitted=0, offered=0, sample_times=[],
                           sample_emitted_rates=[], sample_pending=[], pending_start=0, operators=(),
                           source_saturated=False)

"""PDSP-Bench's learned cost models (planner/learned.py, planner/learned_features.py): the q-error, the
features (a function of the query and its measurements only), the graph model's propagation, the models
on a toy training set, and the planner through ``streambed compare --methods learned`` on the sim."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from methods_learned import generated_records, sampled_configurations
from streambed.cli import main
from streambed.errors import UserError
from streambed.model import OperatorRates, Query, SingleTaskMetrics
from streambed.planner import PLANNERS, PlanningRequest, planner_named
from streambed.planner.learned import (MODELS, PlanRecord, TrainingSet, candidate_slots, fit, learned_options,
                                       q_error, q_error_summary, query_from_dict, query_to_dict, smallest_sustaining)
from streambed.planner.learned_features import (OPERATOR_FEATURES, adjacency, graph_vector, operator_kind,
                                                operator_matrix, plan_vector, pool, propagate, selectivities)

# -- q-error ---------------------------------------------------------------------------------------------


def test_q_error_is_the_factor_either_way():
    assert q_error(200.0, 100.0) == pytest.approx(2.0)
    assert q_error(50.0, 100.0) == pytest.approx(2.0)
    assert q_error(7.0, 7.0) == pytest.approx(1.0)
    assert np.isinf(q_error(0.0, 5.0)) and np.isinf(q_error(5.0, 0.0))
    assert q_error([1.0, 3.0], [2.0, 1.0]).tolist() == pytest.approx([2.0, 3.0])


def test_q_error_summary_median_and_p95():
    true = np.ones(21)
    pred = np.arange(1, 22, dtype=float)  # q-errors 1..21
    s = q_error_summary(pred, true)
    assert s["median"] == pytest.approx(11.0)
    assert s["p95"] == pytest.approx(20.0)  # numpy's linear interpolation: 1 + 0.95 x 20
    assert s["plans"] == 21
    with pytest.raises(UserError, match="q-error"):
        q_error_summary([], [])


# -- features ------------------------------------------------------------------------------------------

CHAIN = Query("toy", ("Calc#1", "GroupWindowAggregate#2", "Sink#3"),
              (("source", "Calc#1"), ("Calc#1", "GroupWindowAggregate#2"), ("GroupWindowAggregate#2", "Sink#3")),
              keyed=frozenset({"GroupWindowAggregate#2"}), max_parallelism=128)


def metrics(window_rate: float = 2e4) -> SingleTaskMetrics:
    """Measured single-task rates of the toy chain: Calc passes half its input on, the window a tenth."""
    return SingleTaskMetrics("toy", 1024, (("Calc#1", OperatorRates(1e6, 1.0)),
                                           ("GroupWindowAggregate#2", OperatorRates(window_rate, 0.5, keyed=True)),
                                           ("Sink#3", OperatorRates(5e5, 0.05))), 2e4, 128)


def column(x: np.ndarray, name: str) -> np.ndarray:
    return x[:, OPERATOR_FEATURES.index(name)]


def test_operator_features_are_the_measurements_and_the_configuration():
    x = operator_matrix(CHAIN, metrics(), {"Calc#1": 1, "GroupWindowAggregate#2": 4, "Sink#3": 1}, 1024)
    assert x.shape == (3, len(OPERATOR_FEATURES))
    assert [operator_kind(op) for op in CHAIN.operators] == ["Calc", "GroupWindowAggregate", "Sink"]
    assert column(x, "kind_GroupWindowAggregate").tolist() == [0, 1, 0]
    assert column(x, "log_parallelism") == pytest.approx([0, math.log10(4), 0])
    assert column(x, "keyed").tolist() == [0, 1, 0]
    assert column(x, "log_groups_per_task")[1] == pytest.approx(math.log10(128 / 4))
    # capacity in source events/s: p x per-task rate / input ratio (the window: 4 x 2e4 / 0.5)
    assert column(x, "log_capacity") == pytest.approx([6.0, math.log10(1.6e5), math.log10(1e7)])
    assert selectivities(CHAIN, metrics()) == pytest.approx({"Calc#1": 0.5, "GroupWindowAggregate#2": 0.1,
                                                             "Sink#3": 1.0})
    assert column(x, "log2_memory_gb") == pytest.approx([0, 0, 0])


def test_features_depend_on_the_query_and_measurements_only():
    """Built from a Query and measured rates with no sim profile anywhere; equal inputs give equal
    features, and a measured rate, a parallelism or the memory each move them."""
    config = {"Calc#1": 2, "GroupWindowAggregate#2": 3, "Sink#3": 1}
    same = query_from_dict(query_to_dict(CHAIN))
    a = plan_vector(CHAIN, metrics(), config, 1024)
    assert np.array_equal(a, plan_vector(same, SingleTaskMetrics.from_dict(metrics().to_dict()), dict(config), 1024))
    assert not np.array_equal(a, plan_vector(CHAIN, metrics(window_rate=3e4), config, 1024))
    assert not np.array_equal(a, plan_vector(CHAIN, metrics(), {**config, "Sink#3": 2}, 1024))
    assert not np.array_equal(a, plan_vector(CHAIN, metrics(), config, 4096))
    unkeyed = Query("toy", CHAIN.operators, CHAIN.edges, max_parallelism=128)
    assert not np.array_equal(a, plan_vector(unkeyed, metrics(), config, 1024))


def test_graph_propagation_on_a_three_operator_chain():
    a = adjacency(CHAIN)
    assert a.tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 0]]  # the first operator reads the source only
    h = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])
    one = propagate(h, a, 1)
    assert one.tolist() == [[1, 10, 0, 0], [2, 20, 1, 10], [3, 30, 2, 20]]
    two = propagate(h, a, 2)
    assert two.shape == (3, 8)
    assert two[2, 6:].tolist() == [1, 10]  # two edges upstream of the sink: the first operator
    assert pool(h).tolist() == [2, 20, 1, 10, 3, 30]
    v = graph_vector(CHAIN, metrics(), {"Calc#1": 1, "GroupWindowAggregate#2": 1, "Sink#3": 1}, 1024, rounds=2)
    assert v.shape == (3 * 4 * len(OPERATOR_FEATURES),)


def test_a_join_receives_the_mean_of_its_inputs():
    q = Query("j", ("Calc#1", "Calc#2", "Join#3"),
              (("source", "Calc#1"), ("source", "Calc#2"), ("Calc#1", "Join#3"), ("Calc#2", "Join#3")))
    h = np.array([[2.0], [4.0], [0.0]])
    assert propagate(h, adjacency(q), 1)[2].tolist() == [0.0, 3.0]


# -- models and the training set ------------------------------------------------------------------------


def toy_records(n: int = 40) -> list[PlanRecord]:
    """Plans of the toy chain whose MST is the weakest operator's capacity (DS2's law)."""
    rng = np.random.default_rng(0)
    out = []
    for k in range(n):
        c = {op: int(rng.integers(1, 9)) for op in CHAIN.operators}
        m = metrics(float(rng.uniform(1e4, 5e4)))
        mst = min(c[op] * r.true_rate / r.input_ratio for op, r in m.operators)
        out.append(PlanRecord(CHAIN, m, c, 1024, mst, workload=f"w{k}"))
    return out


@pytest.mark.parametrize("model", MODELS)
def test_each_model_learns_the_linear_law_with_the_ratio_target(model):
    train, held = toy_records(40), toy_records(50)[40:]
    fitted = fit(train, model, "ratio", seed=0)
    q = q_error(fitted.predict([r.plan() for r in held]), [r.mst for r in held])
    assert np.median(q) < 1.2, (model, q)


def test_the_forest_beats_a_constant_on_log_mst():
    train, held = toy_records(40), toy_records(50)[40:]
    fitted = fit(train, "forest", "mst", seed=0)
    q_model = q_error(fitted.predict([r.plan() for r in held]), [r.mst for r in held])
    constant = math.exp(np.mean(np.log([r.mst for r in train])))
    q_constant = q_error(np.full(len(held), constant), [r.mst for r in held])
    assert np.median(q_model) < np.median(q_constant)


def test_training_set_round_trip(tmp_path):
    ts = TrainingSet(toy_records(3), {"seed": 1})
    ts.save(tmp_path)
    back = TrainingSet.load(tmp_path)
    assert back.built == {"seed": 1} and [r.to_dict() for r in back.records] == [r.to_dict() for r in ts.records]
    with pytest.raises(UserError, match="no training set"):
        TrainingSet.load(tmp_path / "nothing")


def test_generated_configurations_are_seeded_by_their_key():
    m = metrics()
    a = sampled_configurations(CHAIN, m, (0, 1, 1024), perturb=2)
    assert a == sampled_configurations(CHAIN, m, (0, 1, 1024), perturb=2)
    assert a != sampled_configurations(CHAIN, m, (0, 2, 1024), perturb=2)
    assert all(set(c) == set(CHAIN.operators) and min(c.values()) >= 1 for c in a)


def test_candidate_slots_and_the_smallest_sustaining():
    c = candidate_slots(3, 1000)
    assert c[:3] == [3, 4, 5] and c[-1] == 1000 and c == sorted(set(c))
    assert smallest_sustaining([3, 4, 5], [1.0, 5.0, 9.0], 4.0) == 4
    assert smallest_sustaining([3, 4], [1.0, 2.0], 4.0) is None


def test_bad_options_are_one_line_each():
    with pytest.raises(UserError, match="model") as e:
        learned_options({"model": "svm"})
    assert "\n" not in str(e.value)
    with pytest.raises(UserError, match="no option 'depth'"):
        learned_options({"depth": 3})
    with pytest.raises(UserError, match="safety"):
        learned_options({"safety": 0})


# -- the planner on the sim ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def training_dir(tmp_path_factory):
    """A tiny training set: 4 generated profiles, the default policy's configurations and one perturbation
    each, labelled by the sim's capacity model (instant), the single-task rates measured with the quick
    timing (about 1 s a profile)."""
    d = tmp_path_factory.mktemp("learned-training")
    records = generated_records(0, range(4), [1024], perturb=1, labels="capacity", timing="quick")
    TrainingSet(records, {"test": True}).save(d)
    return d


def test_learned_is_registered():
    assert PLANNERS["learned"] == "learned:LearnedCostModel"
    assert planner_named("learned").name == "learned"


def test_compare_runs_the_learned_planner(training_dir, tmp_path, capsys):
    code = main(["compare", "--query", "q1", "--rate", "2e6", "--methods", "learned", "--max-slots", "64",
                 "--memory", "1024", "--out", str(tmp_path), "--json", "--quiet",
                 "--set", f"learned.training={training_dir}", "--set", "learned.timing=quick",
                 "--set", "learned.target=ratio"])
    assert code == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["method"] == "learned" and row["verdict"] in ("sustains", "under-provisioned"), row
    assert row["slots"] >= 2 and row["memory_mb"] == 1024 and row["mst"] > 0
    detail = row["sizing"]["detail"]
    trained = len(TrainingSet.load(training_dir).records)
    assert detail["model"]["records"] == trained and detail["training"]["sources"] == {"generated": trained}
    entry = detail["entries"]["1024"]
    assert entry["predicted_mst"] >= 2e6 * 1.10  # the model's smallest sustaining configuration, with the safety
    assert row["steps"] == 1 and row["testbed_seconds"] > 0  # one single-task estimate at the one memory


def test_the_planner_answers_a_lower_rate_with_no_more_slots(training_dir):
    from streambed.testbed.sim.profile import load_profile
    from streambed.testbed.sim.testbed import SimSettings, SimTestbed

    planner = planner_named("learned")
    options = {"training": str(training_dir), "timing": "quick", "target": "ratio"}
    request = PlanningRequest("q1", 4e6, memories=(1024,), options=options)
    evidence = planner.explore(SimTestbed(load_profile("q1"), SimSettings(max_slots=64)), request)
    high = planner.plan(evidence, request)
    low = planner.plan(evidence, PlanningRequest("q1", 1e6, memories=(1024,), options=options))
    assert low.slots <= high.slots and sum(high.configuration.values()) == high.slots
    unreachable = planner.plan(evidence, PlanningRequest("q1", 1e15, memories=(1024,),
                                                         options={**options, "plan_limit": 10}))
    assert unreachable.slots is None and "predicts at most" in unreachable.unreachable


def test_compare_refuses_a_bad_learned_option_in_one_line(tmp_path, capsys):
    code = main(["compare", "--query", "q1", "--rate", "1e6", "--methods", "learned", "--set", "learned.model=svm",
                 "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "model" in err and "svm" in err


def test_compare_without_a_training_set_fails_that_row_naming_the_option(tmp_path, capsys):
    code = main(["compare", "--query", "q1", "--rate", "1e6", "--methods", "learned", "--memory", "1024",
                 "--set", f"learned.training={tmp_path / 'none'}", "--out", str(tmp_path), "--json", "--quiet"])
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert code == 0 and row["verdict"] == "failed" and "training" in row["error"]

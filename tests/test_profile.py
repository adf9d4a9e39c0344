"""Simulation profiles: loading, the derived query and input ratios, and one-line validation errors."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import pytest
import yaml

from streambed.errors import ProfileError, UserError
from streambed.model import SOURCE
from streambed.testbed.sim.profile import MAX_KEY_COUNT, load_profile, parse_profile, shipped_profiles

DOC = Path(__file__).resolve().parents[1] / "docs" / "sim-profiles.md"
ANALYTIC = {"family": "linear", "a": 1.0, "b": 1000.0, "c": 0.0}


def minimal() -> dict:
    """source -> A (map) -> S (sink)."""
    return {
        "name": "t",
        "operators": [
            {"name": "A", "kind": "map", "rate": 1000, "inputs": [{"from": "source"}]},
            {"name": "S", "kind": "sink", "rate": 2000, "inputs": [{"from": "A"}]},
        ],
    }


def join_profile() -> dict:
    """Two filters off the source, a keyed join of both, a sink."""
    return {
        "name": "j",
        "operators": [
            {"name": "L", "kind": "filter", "rate": 1e6, "inputs": [{"from": "source", "selectivity": 0.5}]},
            {"name": "R", "kind": "filter", "rate": 1e6, "inputs": [{"from": "source", "selectivity": 2.0}]},
            {"name": "J", "kind": "join", "rate": 1e5, "keys": {"count": 100, "zipf": 0.5}, "inputs": [
                {"from": "L", "selectivity": 0.5, "partitioning": "hash"},
                {"from": "R", "selectivity": 0.25, "partitioning": "hash"},
            ]},
            {"name": "S", "kind": "sink", "rate": 1e6, "inputs": [{"from": "J", "selectivity": 0.1}]},
        ],
    }


def error_of(data, origin: str = "test.yaml") -> str:
    with pytest.raises(ProfileError) as info:
        parse_profile(data, origin)
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert msg.startswith(f"{origin}: "), msg
    return msg


def file_error(ref) -> str:
    with pytest.raises(ProfileError) as info:
        load_profile(ref)
    msg = str(info.value)
    assert "\n" not in msg, msg
    return msg


# ------------------------------------------------------------------------------------------------
# Shipped profiles


def test_shipped_profiles_include_the_paper_queries():
    names = shipped_profiles()
    assert {"q1", "q2", "q5", "q8", "q11"} <= set(names)
    assert names == sorted(names)


@pytest.mark.parametrize("name", shipped_profiles())
def test_shipped_profile_loads_and_query_is_consistent(name):
    p = load_profile(name)
    assert p.name == name
    assert p.origin == f"{name}.yaml"
    q = p.query()
    assert q.name == p.name
    assert q.operators == tuple(op.name for op in p.operators)
    assert q.edges == tuple((i.source, op.name) for op in p.operators for i in op.inputs)
    seen = {SOURCE}
    for op in p.operators:
        assert op.inputs, op.name
        assert set(q.inputs(op.name)) == {i.source for i in op.inputs}
        assert all(up in seen for up in q.inputs(op.name)), f"{op.name} reads a later operator"
        seen.add(op.name)
        assert op.window is None or op.kind == "window"
        if p.analytic is None:  # a borrowed graph (analytic) keeps kinds but drops windows
            assert (op.window is not None) == (op.kind == "window")
        assert (op.keys is not None) == any(i.partitioning == "hash" for i in op.inputs)
        assert op.rate > 0
        if op.kind == "sink":
            assert q.outputs(op.name) == ()
    assert q.outputs(p.operators[-1].name) == ()
    ratios = p.input_ratios()
    assert list(ratios) == list(q.operators)
    assert all(r > 0 for r in ratios.values())


def test_q5_join_ratio_is_the_sum_of_its_inputs():
    p = load_profile("q5")
    r = p.input_ratios()
    assert r["Calc#1"] == pytest.approx(1.0)
    assert r["GroupWindowAggregate#2"] == pytest.approx(0.92)
    assert r["Calc#3"] == pytest.approx(0.92 * 0.387)
    assert r["Calc#6"] == pytest.approx(0.92 * 0.387 * 0.0003)
    assert r["Join#7"] == pytest.approx(r["Calc#3"] + r["Calc#6"])
    assert r["Sink#9"] == pytest.approx(r["Join#7"] * 0.08)
    assert ("Calc#3", "Join#7") in p.query().edges and ("Calc#6", "Join#7") in p.query().edges


def test_load_by_path_equals_load_by_name():
    path = Path(load_profile.__code__.co_filename).parent / "profiles" / "q8.yaml"
    assert load_profile(path).operators == load_profile("q8").operators


# ------------------------------------------------------------------------------------------------
# Input ratios and defaults on hand-made profiles


def test_input_ratios_chain():
    d = minimal()
    d["operators"][0]["inputs"][0]["selectivity"] = 0.5
    d["operators"][1]["inputs"][0]["selectivity"] = 3.0
    assert parse_profile(d, "test.yaml").input_ratios() == pytest.approx({"A": 0.5, "S": 1.5})


def test_input_ratios_two_input_join_is_the_sum():
    p = parse_profile(join_profile(), "test.yaml")
    r = p.input_ratios()
    assert r["L"] == pytest.approx(0.5)
    assert r["R"] == pytest.approx(2.0)
    assert r["J"] == pytest.approx(0.5 * 0.5 + 2.0 * 0.25)
    assert r["S"] == pytest.approx(0.75 * 0.1)
    assert p.query().inputs("J") == ("L", "R")
    assert p.query().edges == (("source", "L"), ("source", "R"), ("L", "J"), ("R", "J"), ("J", "S"))


def test_defaults_apply_and_operator_values_override():
    d = minimal()
    d["defaults"] = {"buffer_records": 500, "noise": 0.1}
    d["operators"][1]["noise"] = 0.0
    p = parse_profile(d, "test.yaml")
    a, s = p.operators
    assert (a.buffer_records, a.noise, a.noise_correlation_s) == (500.0, 0.1, 10.0)
    assert (s.buffer_records, s.noise) == (500.0, 0.0)
    assert a.inputs[0].selectivity == 1.0 and a.inputs[0].partitioning == "rebalance"
    assert p.description == "t"
    assert p.state_fraction == 0.4
    assert p.max_parallelism is None
    assert p.source_max_rate is None
    assert p.data_seed == 7
    assert p.analytic is None


def test_window_and_state_defaults():
    d = minimal()
    d["operators"][0].update(kind="window", window={"size_s": 10, "fire_cost_us": 2.0}, state={})
    op = parse_profile(d, "test.yaml").operators[0]
    w, s = op.window, op.state
    assert w.slide_s == 10.0  # tumbling
    assert w.fire_cost_s == pytest.approx(2e-6)
    assert math.isinf(w.straggler_tail) and w.straggler_mean == 0.0 and w.straggler_cap == 20.0
    assert s.retention_s == 10.0  # the window size
    assert (s.miss_exponent, s.warmup_s, s.warmup_speedup) == (1.0, 60.0, 1.0)


def test_top_level_options():
    d = minimal()
    d.update(memory={"state_fraction": 1.0}, source={"max_rate": 5e5}, max_parallelism=256, data_seed=3,
             reference={"single_task_mst": 900, "shape": "log", "poor_memory_mb": [512, 1024], "notes": "n"})
    p = parse_profile(d, "test.yaml")
    assert (p.state_fraction, p.source_max_rate, p.max_parallelism, p.data_seed) == (1.0, 5e5, 256, 3)
    assert p.reference.poor_memory_mb == (512, 1024) and p.reference.shape == "log"
    d["max_parallelism"] = "flink"
    assert parse_profile(d, "test.yaml").max_parallelism is None


@pytest.mark.parametrize("tail", ["inf", ".inf", float("inf")])
def test_straggler_tail_accepts_infinity(tail):
    d = minimal()
    d["operators"][0].update(kind="window", window={"size_s": 5, "straggler_tail": tail})
    assert math.isinf(parse_profile(d, "test.yaml").operators[0].window.straggler_tail)


# ------------------------------------------------------------------------------------------------
# Analytic profiles


def test_analytic_graph_borrows_q5():
    d = {"name": "a5", "graph": "q5", "analytic": {"family": "log", "a": -7700, "b": 578000, "c": -1.2e6}}
    p = parse_profile(d, "test.yaml")
    q5 = load_profile("q5")
    assert len(p.operators) == 9
    assert p.query().operators == q5.query().operators
    assert p.query().edges == q5.query().edges
    assert all(i.partitioning == "rebalance" for op in p.operators for i in op.inputs)
    assert all(op.window is None and op.state is None and op.keys is None for op in p.operators)
    assert all(op.noise == 0.0 for op in p.operators)
    assert [op.rate for op in p.operators] == [op.rate for op in q5.operators]
    assert p.input_ratios() == pytest.approx(q5.input_ratios())
    a = p.analytic
    assert (a.memory_feature, a.slots_per_taskmanager, a.log_transform, a.noise, a.floor) == (
        "taskmanager_mb", 16, "log1p", 0.0, 1000.0)


def test_analytic_capacity_formulas():
    base = {"name": "f", "graph": "q1"}

    def law(**kw):
        return parse_profile({**base, "analytic": {**ANALYTIC, **kw}}, "test.yaml").analytic

    assert law(family="linear", a=2, b=3, c=5, memory_feature="slot_mb").capacity(1000, 10) == 2035
    assert law(family="linear", a=1, b=0, c=0).capacity(1000, 10) == 16000  # taskmanager_mb x 16
    assert law(family="linear", a=1, b=0, c=0, slots_per_taskmanager=4).capacity(1000, 10) == 4000
    assert law(family="sqrt", a=1, b=100, c=0, memory_feature="slot_mb", floor=1).capacity(1600, 16) == \
        pytest.approx(440)
    assert law(family="log", a=0, b=1000, c=0, log_transform="log").capacity(512, math.e ** 3) == \
        pytest.approx(3000)
    assert law(family="log", a=0, b=1000, c=0).capacity(512, math.e ** 3 - 1) == pytest.approx(3000)
    assert law(family="linear", a=0, b=-1, c=0, floor=7).capacity(512, 10) == 7


def test_analytic_with_operators_keeps_them():
    d = join_profile()
    d["analytic"] = dict(ANALYTIC)
    p = parse_profile(d, "test.yaml")
    assert p.analytic.family == "linear"
    assert p.operator("J").keys is not None


# ------------------------------------------------------------------------------------------------
# Validation errors: one line, naming the field path


def op0(**fields):
    def mutate(d):
        d["operators"][0].update(fields)
    return mutate


def window_op(**window):
    return op0(kind="window", window={"size_s": 10, **window})


def set_top(**fields):
    def mutate(d):
        d.update(fields)
    return mutate


def drop(key):
    def mutate(d):
        del d[key]
    return mutate


def analytic_graph(**fields):
    def mutate(d):
        del d["operators"]
        d.update({"graph": "q5", "analytic": dict(ANALYTIC)}, **fields)
    return mutate


def add_sink_feeding_sink(d):
    d["operators"].insert(1, {"name": "K", "kind": "sink", "rate": 1, "inputs": [{"from": "A"}]})
    d["operators"][2]["inputs"].append({"from": "K"})


CASES = [
    # (id, mutation, expected substrings)
    ("missing name", drop("name"), ["name: missing"]),
    ("name not text", set_top(name=["x"]), ["name: expected non-empty text"]),
    ("unknown top-level field", set_top(colour="red"), ["colour: unknown field", "operators"]),
    ("unknown operator field", op0(colour="red"), ["operators[0].colour: unknown field"]),
    ("unknown input field", op0(inputs=[{"from": "source", "weight": 1}]), ["operators[0].inputs[0].weight"]),
    ("kind not allowed", op0(kind="reduce"), ["operators[0].kind", "map, filter, window", "'reduce'"]),
    ("kind missing", lambda d: d["operators"][0].pop("kind"), ["operators[0].kind: missing"]),
    ("rate zero", op0(rate=0), ["operators[0].rate", "> 0"]),
    ("rate negative", op0(rate=-5), ["operators[0].rate", "> 0"]),
    ("rate missing", lambda d: d["operators"][0].pop("rate"), ["operators[0].rate: missing"]),
    ("rate string", op0(rate="1000"), ["operators[0].rate", "expected a number", "'1000'"]),
    ("rate exponent text", op0(rate="1e6"), ["operators[0].rate", "1.0e+6"]),
    ("rate bool", op0(rate=True), ["operators[0].rate", "expected a number"]),
    ("rate nan", op0(rate=float("nan")), ["operators[0].rate", "finite"]),
    ("rate inf", op0(rate=float("inf")), ["operators[0].rate", "finite"]),
    ("rate too large for a float", op0(rate=10 ** 400), ["operators[0].rate", "finite"]),
    ("selectivity negative", lambda d: d["operators"][1]["inputs"][0].update(selectivity=-0.5),
     ["operators[1].inputs[0].selectivity", ">= 0"]),
    ("partitioning unknown", op0(inputs=[{"from": "source", "partitioning": "broadcast"}]),
     ["operators[0].inputs[0].partitioning", "rebalance, hash"]),
    ("hash without keys", op0(inputs=[{"from": "source", "partitioning": "hash"}]),
     ["operators[0].keys: missing"]),
    ("keys without hash input", op0(keys={"count": 10}), ["operators[0].keys: unused"]),
    ("keys count zero", op0(inputs=[{"from": "source", "partitioning": "hash"}], keys={"count": 0}),
     ["operators[0].keys.count", ">= 1"]),
    ("keys count float", op0(inputs=[{"from": "source", "partitioning": "hash"}], keys={"count": 10.0}),
     ["operators[0].keys.count", "integer"]),
    ("keys count beyond the bound", op0(inputs=[{"from": "source", "partitioning": "hash"}], keys={"count": 10 ** 11}),
     ["operators[0].keys.count", "[1, 10,000,000]", "100000000000"]),
    ("keys zipf text", op0(inputs=[{"from": "source", "partitioning": "hash"}], keys={"count": 9, "zipf": "high"}),
     ["operators[0].keys.zipf", "'high'"]),
    ("inputs empty", op0(inputs=[]), ["operators[0].inputs: expected a non-empty list"]),
    ("inputs not a list", op0(inputs={"from": "source"}), ["operators[0].inputs: expected a non-empty list"]),
    ("input not a mapping", op0(inputs=["source"]), ["operators[0].inputs[0]: expected a mapping"]),
    ("input from unknown operator", lambda d: d["operators"][1]["inputs"][0].update({"from": "nope"}),
     ["operators[1].inputs[0].from", "'nope'"]),
    ("input from later operator", op0(inputs=[{"from": "S"}]),
     ["operators[0].inputs[0].from", "earlier operator", "'S'"]),
    ("input from itself", op0(inputs=[{"from": "A"}]), ["operators[0].inputs[0].from", "earlier operator"]),
    ("duplicate operator names", lambda d: d["operators"].insert(1, copy.deepcopy(d["operators"][0])),
     ["operators[1].name", "duplicate", "'A'"]),
    ("operator named source", lambda d: d["operators"][0].update(name="source"), ["operators[0].name", "reserved"]),
    ("operator not a mapping", lambda d: d["operators"].__setitem__(0, "A"), ["operators[0]: expected a mapping"]),
    ("window slide larger than size", window_op(slide_s=20), ["operators[0].window.slide_s", "<= size_s"]),
    ("window size zero", window_op(size_s=0), ["operators[0].window.size_s", "> 0"]),
    ("window size missing", op0(kind="window", window={"slide_s": 1}), ["operators[0].window.size_s: missing"]),
    ("straggler_tail 1", window_op(straggler_tail=1), ["operators[0].window.straggler_tail", "> 1"]),
    ("straggler_tail below 1", window_op(straggler_tail=0.5), ["operators[0].window.straggler_tail", "> 1"]),
    ("straggler_tail text", window_op(straggler_tail="heavy"), ["operators[0].window.straggler_tail"]),
    ("unknown window field", window_op(every_s=3), ["operators[0].window.every_s: unknown field"]),
    ("window kind without window", op0(kind="window"), ["operators[0].window: missing"]),
    ("window on non-window kind", op0(window={"size_s": 10}), ["operators[0].kind", "window"]),
    ("state_fraction above 1", set_top(memory={"state_fraction": 1.5}), ["memory.state_fraction", "(0, 1]"]),
    ("state_fraction zero", set_top(memory={"state_fraction": 0}), ["memory.state_fraction", "> 0"]),
    ("unknown memory field", set_top(memory={"slot_mb": 1}), ["memory.slot_mb: unknown field"]),
    ("warmup_speedup below 1", op0(state={"warmup_speedup": 0.5}), ["operators[0].state.warmup_speedup", ">= 1"]),
    ("miss_exponent zero", op0(state={"miss_exponent": 0}), ["operators[0].state.miss_exponent", "> 0"]),
    ("unknown state field", op0(state={"size_mb": 1}), ["operators[0].state.size_mb: unknown field"]),
    ("buffer zero", op0(buffer_records=0), ["operators[0].buffer_records", "> 0"]),
    ("noise negative", op0(noise=-0.1), ["operators[0].noise", ">= 0"]),
    ("noise correlation zero", op0(noise_correlation_s=0), ["operators[0].noise_correlation_s", "> 0"]),
    ("defaults unknown field", set_top(defaults={"rate": 5}), ["defaults.rate: unknown field"]),
    ("defaults bad noise", set_top(defaults={"noise": -1}), ["defaults.noise", ">= 0"]),
    ("sink feeding another operator", add_sink_feeding_sink,
     ["operators[2].inputs[1].from", "not a sink", "'K'"]),
    ("empty operator list", set_top(operators=[]), ["operators: expected a non-empty list"]),
    ("no operators", drop("operators"), ["operators: expected a non-empty list"]),
    ("source max_rate zero", set_top(source={"max_rate": 0}), ["source.max_rate", "> 0"]),
    ("max_parallelism zero", set_top(max_parallelism=0), ["max_parallelism", "'flink'"]),
    ("max_parallelism above Flink's bound", set_top(max_parallelism=40000), ["max_parallelism", "32768"]),
    ("max_parallelism text", set_top(max_parallelism="auto"), ["max_parallelism", "'auto'"]),
    ("data_seed negative", set_top(data_seed=-1), ["data_seed", ">= 0"]),
    ("reference shape unknown", set_top(reference={"shape": "exp"}), ["reference.shape", "linear, log, sqrt"]),
    ("reference poor_memory_mb bools", set_top(reference={"poor_memory_mb": [True]}), ["reference.poor_memory_mb"]),
    ("reference poor_memory_mb text", set_top(reference={"poor_memory_mb": "512"}), ["reference.poor_memory_mb"]),
    ("analytic unknown family", set_top(analytic={**ANALYTIC, "family": "exp"}),
     ["analytic.family", "linear, log, sqrt", "'exp'"]),
    ("analytic missing coefficient", set_top(analytic={"family": "log", "a": 1, "b": 1}), ["analytic.c: missing"]),
    ("analytic memory_feature", set_top(analytic={**ANALYTIC, "memory_feature": "gb"}),
     ["analytic.memory_feature", "slot_mb, taskmanager_mb"]),
    ("analytic log_transform", set_top(analytic={**ANALYTIC, "log_transform": "ln"}),
     ["analytic.log_transform", "log, log1p"]),
    ("analytic slots_per_taskmanager", set_top(analytic={**ANALYTIC, "slots_per_taskmanager": 0}),
     ["analytic.slots_per_taskmanager"]),
    ("analytic floor zero", set_top(analytic={**ANALYTIC, "floor": 0}), ["analytic.floor", "> 0"]),
    ("analytic not a mapping", set_top(analytic="log"), ["analytic: expected a mapping"]),
    ("graph on non-analytic profile", lambda d: (d.pop("operators"), d.update(graph="q5")),
     ["graph", "only analytic profiles"]),
    ("graph and operators", set_top(graph="q5", analytic=dict(ANALYTIC)), ["graph", "not both"]),
    ("graph with defaults", analytic_graph(defaults={"noise": 0.1}), ["defaults: unused with graph"]),
    ("graph unknown profile", analytic_graph(graph="q99"), ["graph: unknown profile 'q99'", "q5"]),
    ("graph missing file", analytic_graph(graph="no/such.yaml"), ["graph: file not found"]),
]


@pytest.mark.parametrize("mutate,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_profile_is_one_line_naming_the_field(mutate, expected):
    d = minimal()
    mutate(d)
    msg = error_of(d)
    for part in expected:
        assert part in msg, f"{part!r} not in {msg!r}"


def test_profile_not_a_mapping():
    assert "profile: expected a mapping, got list" in error_of([1, 2])
    assert "profile: expected a mapping" in error_of(None)


def test_profile_error_is_a_user_error():
    assert issubclass(ProfileError, UserError)


# ------------------------------------------------------------------------------------------------
# Files


def write(tmp_path, name: str, text) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_load_valid_file(tmp_path):
    path = write(tmp_path, "mine.yaml", yaml.safe_dump(join_profile()))
    p = load_profile(path)
    assert p.origin == "mine.yaml"
    assert p.input_ratios()["J"] == pytest.approx(0.75)
    assert load_profile(str(path)).operators == p.operators


def test_field_errors_name_the_file(tmp_path):
    d = minimal()
    d["operators"][1]["inputs"][0]["selectivity"] = -1
    msg = file_error(write(tmp_path, "neg.yaml", yaml.safe_dump(d)))
    assert msg.startswith("neg.yaml: operators[1].inputs[0].selectivity:")


def test_broken_yaml_names_file_and_line(tmp_path):
    text = "name: t\noperators:\n  - {name: A, kind: map, rate: 1\n  - name: S\n"
    msg = file_error(write(tmp_path, "broken.yaml", text))
    assert msg.startswith("broken.yaml:")
    assert re.search(r"line \d+", msg)
    assert "not valid YAML" in msg


def test_yaml_error_line_number(tmp_path):
    msg = file_error(write(tmp_path, "tab.yaml", "name: t\ndescription: x\n\toperators: []\n"))
    assert msg.startswith("tab.yaml: line 3:")


def test_duplicate_yaml_key_is_rejected(tmp_path):
    text = ("name: t\noperators:\n  - name: A\n    kind: map\n    rate: 5\n    rate: 7\n"
            "    inputs: [{from: source}]\n")
    msg = file_error(write(tmp_path, "dup.yaml", text))
    assert msg.startswith("dup.yaml: line 6:")
    assert "duplicate key 'rate'" in msg


def test_yaml_merge_keys_still_work(tmp_path):
    text = ("name: t\noperators:\n  - &a {name: A, kind: map, rate: 1.0e+6, inputs: [{from: source}]}\n"
            "  - <<: *a\n    name: S\n    kind: sink\n    inputs: [{from: A}]\n")
    p = load_profile(write(tmp_path, "merge.yaml", text))
    assert [(o.name, o.kind, o.rate) for o in p.operators] == [("A", "map", 1e6), ("S", "sink", 1e6)]


def test_empty_file(tmp_path):
    assert "empty.yaml: profile: expected a mapping" in file_error(write(tmp_path, "empty.yaml", ""))


def test_not_utf8_file(tmp_path):
    msg = file_error(write(tmp_path, "bin.yaml", b"\xff\xfe name: t\n"))
    assert msg.startswith("bin.yaml: not UTF-8")


def test_missing_file(tmp_path):
    missing = tmp_path / "nowhere.yaml"
    msg = file_error(missing)
    assert "file not found" in msg and str(missing) in msg


def test_key_count_bound_is_accepted_and_documented():
    d = minimal()
    d["operators"][0].update(inputs=[{"from": "source", "partitioning": "hash"}], keys={"count": MAX_KEY_COUNT})
    assert parse_profile(d).operators[0].keys.count == MAX_KEY_COUNT
    assert f"`count`: integer in [1, {MAX_KEY_COUNT}]" in DOC.read_text(encoding="utf-8")


def test_directory_is_not_a_profile(tmp_path):
    msg = file_error(tmp_path)
    assert msg == f"profile: {tmp_path} is a directory, not a profile YAML file"


def test_errors_about_the_reference_name_the_option():
    assert file_error_with("q99", "--query").startswith("--query: unknown profile 'q99'")
    assert file_error_with("no/such.yaml", "--profile") == "--profile: file not found: no/such.yaml"


def file_error_with(ref, option: str) -> str:
    with pytest.raises(ProfileError) as info:
        load_profile(ref, option=option)
    return str(info.value)


def test_unknown_shipped_name_lists_shipped_names():
    msg = file_error("q99")
    assert "unknown profile 'q99'" in msg
    for name in shipped_profiles():
        assert name in msg


def test_graph_borrowed_in_a_cycle(tmp_path):
    law = "analytic: {family: linear, a: 1, b: 1, c: 1}\n"
    a = write(tmp_path, "a.yaml", f"name: a\ngraph: {tmp_path / 'b.yaml'}\n{law}")
    write(tmp_path, "b.yaml", f"name: b\ngraph: {a}\n{law}")
    msg = file_error(a)
    assert msg.startswith("a.yaml: graph: b.yaml: graph:")
    assert "borrow its graph back" in msg
    self_ref = write(tmp_path, "self.yaml", f"name: s\ngraph: {tmp_path / 'self.yaml'}\n{law}")
    assert file_error(self_ref).startswith("self.yaml: graph:")


def test_graph_from_a_file(tmp_path):
    base = write(tmp_path, "base.yaml", yaml.safe_dump(join_profile()))
    p = parse_profile({"name": "g", "graph": str(base), "analytic": dict(ANALYTIC)}, "test.yaml")
    assert p.query().edges == parse_profile(join_profile()).query().edges
    assert all(op.keys is None for op in p.operators)


# ------------------------------------------------------------------------------------------------
# The documentation's examples are valid profiles


def doc_examples() -> list[dict]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    return [yaml.safe_load(b) for b in blocks]


def test_doc_examples_load(tmp_path):
    examples = doc_examples()
    assert len(examples) == 2
    full, analytic = (parse_profile(e, "doc.yaml") for e in examples)
    assert full.input_ratios() == pytest.approx(
        {"Clicks": 1.0, "Impressions": 1.0, "Join": 0.52, "Count": 0.52, "Sink": 0.026})
    assert full.operator("Count").state.retention_s == 10.0
    assert full.source_max_rate == 5e6
    assert len(analytic.operators) == 9
    assert analytic.analytic.capacity(4096, 48) == pytest.approx(964076, rel=1e-5)
    assert analytic.analytic.capacity(512, 4) == 1000.0
    # and the same through the file loader
    for i, e in enumerate(examples):
        load_profile(write(tmp_path, f"ex{i}.yaml", yaml.safe_dump(e)))


def test_each_edge_carries_its_share_of_what_its_upstream_counts_out():
    """The engine counts an operator's records out at its largest out-edge selectivity; an edge of
    selectivity s then carries s / that of them (the memory-join probe: Calc#1 feeds its aggregate
    at 0.5 and its join at 0.1)."""
    shares = load_profile(str(Path(__file__).resolve().parent.parent / "bench" / "profiles" / "probe-memory-join.yaml")).edge_shares()
    assert shares["Calc#1"] == [("source", 1.0)]
    assert shares["GroupAggregate#2"] == [("Calc#1", 1.0)]
    assert shares["Join#4"] == [("Calc#3", 1.0), ("Calc#1", pytest.approx(0.2))]


# ------------------------------------------------------------------------------------------------
# Bounds: numbers a formula can take, names without control characters, YAML within limits


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d["operators"][0].update(noise=1e300), "operators[0].noise: expected a number >= 0 and <= 1"),
    (lambda d: d.update(defaults={"noise": 5.0}), "defaults.noise: expected a number >= 0 and <= 1"),
    (lambda d: d["operators"][0].update(rate=1e300), "operators[0].rate: expected a number > 0 and <= 1e+15"),
    (lambda d: d["operators"][0].update(name="Calc\n#1"), "operators[0].name: expected a name without control"),
    (lambda d: d.update(name="ti\x1bny"), "name: expected a name without control"),
])
def test_numbers_and_names_beyond_their_bounds_are_refused(mutate, fragment):
    d = minimal()
    mutate(d)
    assert fragment in error_of(d)


def test_a_yaml_alias_bomb_in_a_text_field_is_refused(tmp_path):
    levels = "".join(f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("l0: &l0 [x,x,x,x,x,x,x,x,x]\n" + levels + "name: bomb\ndescription: *l9\n")
    msg = file_error(bomb)  # unbounded: 54 s and 3.2 GB, then a MemoryError
    assert "more than 50,000 YAML values" in msg and msg.startswith("bomb.yaml: ")


@pytest.mark.parametrize("keys, fragment", [(200_000, "more than the 1,048,576 a YAML input may have"),
                                            (30_000, "more than 50,000 YAML values")])
def test_many_unknown_keys_are_refused_before_they_are_read(tmp_path, keys, fragment):
    f = tmp_path / "keys.yaml"
    f.write_text("name: k\n" + "".join(f"k{i}: 1\n" for i in range(keys)))
    assert fragment in file_error(f)  # unbounded, 200,000 keys took 21 s to say: unknown field


def test_a_shipped_name_wins_over_a_file_or_directory_of_that_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shipped = load_profile("q5")
    (tmp_path / "q5").write_text("name: impostor\n")
    assert load_profile("q5") == shipped
    (tmp_path / "q5").unlink()
    (tmp_path / "q5").mkdir()
    assert load_profile("q5") == shipped
    assert "is a directory" in file_error("./q5")  # a path still names the file


def test_a_file_without_a_yaml_suffix_is_still_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny").write_text(yaml.safe_dump(minimal()))
    assert load_profile("tiny").name == minimal()["name"]
    assert "unknown profile 'nothing'" in file_error("nothing")


def test_a_newline_in_a_path_stays_on_one_line():
    msg = file_error("no\nsuch.yaml")
    assert "no\\nsuch.yaml" in msg

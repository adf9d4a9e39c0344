"""Generated sim profiles (testbed/sim/generate.py): the sampling laws, validity, determinism, coverage of
the documented ranges, and that generated profiles run on the engine and under ground truth."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from clitools import error_line, json_result, streambed
from streambed.cli import main
from streambed.testbed.sim import generate as g
from streambed.testbed.sim.formulas import state_memory_mb
from streambed.testbed.sim.profile import load_profile, parse_profile
from streambed.testbed.sim.testbed import run_once
from streambed.testbed.sim.truth import GroundTruth, TruthSettings

COUNT = 200


# -- the sampling laws -----------------------------------------------------------------------------

def test_log_uniform_spans_its_range_evenly_in_log():
    assert g.log_uniform(0.0, 1e-3, 1.0) == pytest.approx(1e-3)
    assert g.log_uniform(1.0, 1e-3, 1.0) == pytest.approx(1.0)
    assert g.log_uniform(0.5, 1e-3, 1.0) == pytest.approx(math.sqrt(1e-3))


def test_log_uniform_int_reaches_both_ends_and_stays_inside():
    assert g.log_uniform_int(0.0, 20, 10_000_000) == 20
    assert g.log_uniform_int(0.999999999, 20, 10_000_000) == 10_000_000
    values = [g.log_uniform_int(u, 128, 4096) for u in np.linspace(0, 1, 1001)]
    assert min(values) == 128 and max(values) == 4096


def test_choose_follows_cumulative_probabilities():
    weighted = (("a", 0.25), ("b", 0.5), ("c", 0.25))
    assert [g.choose(u, weighted) for u in (0.0, 0.24, 0.25, 0.74, 0.75, 0.999)] == ["a", "a", "b", "b", "c", "c"]


def test_zipf_exponent_is_uniform_keys_or_a_draw_in_range():
    assert g.zipf_exponent(g.UNIFORM_KEYS / 2, 0.9) == 0.0
    assert g.zipf_exponent(g.UNIFORM_KEYS, 0.0) == g.ZIPF[0]
    assert g.zipf_exponent(0.9, 1.0) == pytest.approx(g.ZIPF[1])


def test_window_slide_tumbles_or_slides_by_a_divisor_with_a_floor():
    assert g.window_slide(10.0, 0.0, 0.5) == 10.0
    assert g.window_slide(10.0, 0.9, 0.0) == 5.0  # k = 2
    assert g.window_slide(10.0, 0.9, 0.99) == 1.0  # k = 10
    assert g.window_slide(2.0, 0.9, 0.99) == g.MIN_SLIDE_S  # 0.2 s raised to the floor
    assert g.window_slide(0.3, 0.9, 0.99) == 0.3  # never beyond the size


@pytest.mark.parametrize("pressure,fixed", [(0.1, 0.0), (2.0, 0.5), (4.0, 0.8)])
def test_state_split_gives_the_working_set_asked_for(pressure, fixed):
    available = 1638.4
    ws_mb, per_record = g.state_split(pressure, fixed, 2e5, 10.0, available)
    assert ws_mb == pytest.approx(fixed * pressure * available)
    assert ws_mb + per_record * 2e5 * 10.0 / 1e6 == pytest.approx(pressure * available)


@pytest.mark.parametrize("count,zipf", [(20, 0.0), (20, 1.3), (50_000, 0.7), (50_000, 1.0), (200_000, 1.2)])
def test_top_key_share_matches_the_exact_sum(count, zipf):
    exact = 1.0 / np.sum(np.arange(1, count + 1, dtype=np.float64) ** -zipf)
    assert g.top_key_share(count, zipf) == pytest.approx(exact, rel=1e-6)


# -- files: valid, deterministic, a prefix per seed ---------------------------------------------------

@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> list[Path]:
    return g.write_profiles(tmp_path_factory.mktemp("gen") / "s0", COUNT, 0)


@pytest.fixture(scope="module")
def profiles(generated):
    return [load_profile(p) for p in generated]


def test_every_generated_profile_passes_sim_check(generated, capsys):
    assert len(generated) == COUNT
    for path in generated:
        assert main(["sim", "check", str(path), "--json"]) == 0, path
    capsys.readouterr()


def test_the_same_seed_writes_identical_files_and_a_smaller_count_is_a_prefix(generated, tmp_path):
    again = g.write_profiles(tmp_path / "again", 10, 0)
    assert [p.name for p in again] == [p.name for p in generated[:10]]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(again, generated))
    other = g.write_profiles(tmp_path / "other", 10, 1)
    assert sum(a.read_text().split("\n", 2)[2] == b.read_text().split("\n", 2)[2]
               for a, b in zip(other, generated)) == 0


def test_a_profile_depends_only_on_its_seed_and_index():
    assert g.generate_profile(7, 3) == g.generate_profile(7, 3)
    assert g.generate_profile(7, 3) != g.generate_profile(7, 4)
    assert g.generate_profile(7, 3) != g.generate_profile(8, 3)


def test_a_named_draw_does_not_depend_on_the_draws_before_it():
    draw = g.Draws(7, 3)
    first = draw(2, "keys", "zipf")
    for k in range(50):
        draw(k, "rate")
    assert g.Draws(7, 3)(2, "keys", "zipf") == first
    assert draw(2, "keys", "count") != first and g.Draws(7, 4)(2, "keys", "zipf") != first
    values = [g.Draws(0, i)("noise") for i in range(2000)]
    assert 0.0 <= min(values) < 0.01 and 0.99 < max(values) < 1.0
    assert abs(np.mean(values) - 0.5) < 0.02


def test_a_draw_added_to_the_generator_moves_no_other(monkeypatch):
    """The hot key's two draws are the latest addition: without them every other field is unchanged."""
    with_hot = g.generate_profile(0, 8)
    assert any("hot" in op.get("keys", {}) for op in with_hot["operators"])
    monkeypatch.setattr(g, "hot_share", lambda u_hot, u_share: 0.0)
    without = g.generate_profile(0, 8)
    for op in with_hot["operators"]:
        op.get("keys", {}).pop("hot", None)
    assert with_hot == without


def test_hot_share_is_absent_or_log_uniform_in_its_range():
    assert g.hot_share(g.HOT_KEY, 0.5) == 0.0
    assert g.hot_share(0.0, 0.0) == pytest.approx(g.HOT_SHARE[0])
    assert g.hot_share(g.HOT_KEY / 2, 1.0) == pytest.approx(g.HOT_SHARE[1])


def test_a_hot_key_carries_its_share_to_one_task():
    """keys.hot: the first key carries that share on top of the Zipf keys, so one task of any width
    receives at least it (partitioning.key_weights)."""
    from streambed.testbed.sim.partitioning import KeyedStream, key_weights

    w = key_weights(1000, 0.5, 0.2)
    assert w.sum() == pytest.approx(1.0)
    assert w[0] == pytest.approx(0.2 + 0.8 * g.top_key_share(1000, 0.5))
    assert w[0] == pytest.approx(g.top_key_share(1000, 0.5, 0.2))
    hot, plain = KeyedStream(100_000, 0.0, seed=3, hot=0.1), KeyedStream(100_000, 0.0, seed=3)
    assert hot.max_share(64) >= 0.1 > 3 * plain.max_share(64)


# -- coverage of the documented ranges across 200 draws ----------------------------------------------

def test_the_draws_cover_the_documented_shapes_and_ranges(profiles):
    sizes = {len(p.operators) for p in profiles}
    assert min(sizes) == g.OPERATORS[0] and max(sizes) == g.OPERATORS[1]
    joins = [len(o.inputs) for p in profiles for o in p.operators if o.kind == "join"]
    assert joins.count(2) >= 10 and joins.count(3) >= 10
    chains = [p for p in profiles if all(len(o.inputs) == 1 for o in p.operators)
              and len({i.source for o in p.operators for i in o.inputs}) == len(p.operators)]
    assert len(chains) >= 40
    forked = [p for p in profiles if any(o.kind == "join" for o in p.operators)
              and sum(i.source == "source" for o in p.operators for i in o.inputs) == 1]
    assert len(forked) >= 10  # diamonds: the join's branches fork from one upstream operator
    kinds = {o.kind for p in profiles for o in p.operators}
    assert kinds == {"filter", "map", "window", "aggregate", "join", "sink"}

    keys = [o.keys for p in profiles for o in p.operators if o.keys]
    assert all(g.KEY_COUNT[0] <= k.count <= g.KEY_COUNT[1] for k in keys)
    assert any(k.count < 100 for k in keys) and any(k.count > 1_000_000 for k in keys)
    assert all(g.ZIPF[0] <= k.zipf <= g.ZIPF[1] for k in keys)
    assert sum(k.zipf == 0 for k in keys) >= 20 and sum(k.zipf > 1.0 for k in keys) >= 20
    hot = [g.top_key_share(k.count, k.zipf, k.hot) for k in keys]
    assert sum(h >= 0.05 for h in hot) >= 20  # a key with 5 % or more of its operator's input
    assert sum(k.hot > 0 for k in keys) >= 40 and all(g.HOT_SHARE[0] <= k.hot <= g.HOT_SHARE[1]
                                                      for k in keys if k.hot > 0)
    assert any(k.hot > 0 and k.count > 1_000_000 for k in keys)  # a hot key among many others
    # a hot key on a join's input: the held-out case of issue 35
    assert any(g.top_key_share(o.keys.count, o.keys.zipf, o.keys.hot) >= 0.05 for p in profiles
               for o in p.operators if o.kind == "join")

    maxp = [p.max_parallelism for p in profiles]
    assert sum(m is None for m in maxp) >= 50
    set_ = [m for m in maxp if m is not None]
    assert len(set_) >= 50 and all(g.MAX_PARALLELISM[0] <= m <= g.MAX_PARALLELISM[1] for m in set_)

    windows = [o.window for p in profiles for o in p.operators if o.window]
    assert any(w.slide_s == w.size_s for w in windows) and any(w.slide_s < w.size_s for w in windows)
    assert any(w.straggler_mean == 0 for w in windows)
    assert any(w.straggler_mean > 0 and math.isfinite(w.straggler_tail) for w in windows)

    noise = [o.noise for p in profiles for o in p.operators]
    assert all(g.NOISE[0] <= n <= g.NOISE[1] for n in noise) and max(noise) > 0.04 and min(noise) < 0.01

    sel = [i.selectivity for p in profiles for o in p.operators for i in o.inputs]
    assert all(1e-3 <= s <= 1 for s in sel) and min(sel) < 2e-3 and max(sel) == 1.0


def test_state_fits_some_slots_and_not_others(profiles):
    def working_set(o):  # one task at its full rate, state full
        return o.state.working_set_mb + o.state.bytes_per_record * o.rate * o.state.retention_s / 1e6

    stateful = [(p, o) for p in profiles for o in p.operators if o.state]
    at = {mb: [working_set(o) <= state_memory_mb(mb, p.state_fraction) for p, o in stateful] for mb in (1024, 4096)}
    assert sum(at[1024]) >= 30  # fits even 1 GB
    assert sum(a and not b for a, b in zip(at[4096], at[1024])) >= 30  # fits 4 GB only
    assert sum(not a for a in at[4096]) >= 30  # fits neither


# -- generated profiles run -----------------------------------------------------------------------------

SAMPLE = (2, 8, 5, 0)
"""A chain, a join of two streams, a diamond with a 3-input join and a 3-input join of three streams (seed 0)."""


@pytest.mark.parametrize("index", SAMPLE)
def test_a_sample_runs_on_the_engine_and_under_ground_truth(profiles, index):
    profile = profiles[index]
    n = len(profile.operators)
    gt = GroundTruth(profile, TruthSettings(warmup_s=30, ramp_s=10, observe_s=60, sensibility=0.02))
    truth = gt.true_mst(n, 4096)
    assert truth.mst > 0 and truth.configuration.slots == n
    configuration, measurement, samples = run_once(profile, 4096, 0.5 * truth.mst, 30.0, seed=1)
    assert measurement.target_rate == pytest.approx(0.5 * truth.mst)
    assert measurement.achieved_rate == pytest.approx(0.5 * truth.mst, rel=0.05)  # half its MST: sustained
    assert len(samples.time) > 0


def test_the_cli_generates_runs_and_judges_a_generated_profile(tmp_path):
    d = json_result(streambed("sim", "generate", "--count", "3", "--seed", "5", "--out", "gen", "--json", cwd=tmp_path))
    assert [r["name"] for r in d] == ["gen-5-0000", "gen-5-0001", "gen-5-0002"]
    path = d[1]["file"]
    truth = json_result(streambed("sim", "truth", "--profile", path, "--slots", str(d[1]["operators"]),
                                  "--memory", "2048", "--json", cwd=tmp_path, timeout=300))
    assert truth["mst"] > 0
    run = json_result(streambed("sim", "run", "--profile", path, "--rate", f"{0.5 * truth['mst']:.0f}",
                                "--duration", "20", "--json", cwd=tmp_path, timeout=300))
    assert run["configuration"]


def test_generate_refuses_a_file_as_its_directory_in_one_line(tmp_path):
    (tmp_path / "taken").write_text("x")
    line = error_line(streambed("sim", "generate", "--count", "2", "--out", "taken", cwd=tmp_path))
    assert "--out" in line and "not a directory" in line
    line = error_line(streambed("sim", "generate", "--count", "0", "--out", "d", cwd=tmp_path))
    assert "--count" in line


# -- section G's summary (bench/evaluate.py) ---------------------------------------------------------------

def _evaluate():
    import importlib.util

    from conftest import REPO

    spec = importlib.util.spec_from_file_location("bench_evaluate_g", REPO / "bench" / "evaluate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(planned, true_min, own_over_rate, verdict):
    return {"profile": "gen-0-0000", "multiple": 3, "memory_mb": 4096, "planned_slots": planned,
            "true_min": true_min, "own_over_rate": own_over_rate, "verdict": verdict}


def test_the_generated_summary_counts_short_entries_wrong_unreachable_and_slot_ratios():
    ev = _evaluate()
    records = [_record(110, 100, 1.10, ev.RIGHT), _record(120, 100, 0.98, ev.UNDER),
               _record(150, 100, 0.96, ev.UNDER), _record(300, 100, 2.0, ev.OVER),
               _record(None, 500, None, ev.UNREACHABLE_LIMIT),  # beyond its stated limit: still wrong here
               _record(None, None, None, ev.UNREACHABLE_AGREED)]
    s = ev.generated_summary(records)
    assert (s["entries"], s["planned"], s["short"], s["under"], s["over"], s["right"]) == (6, 4, 1, 2, 1, 1)
    assert (s["unreachable_wrong"], s["unreachable_agreed"], s["reachable"]) == (1, 1, 5)
    assert s["unreachable_wrong_share"] == pytest.approx(1 / 6)
    assert s["unreachable_wrong_share_of_reachable"] == pytest.approx(1 / 5)
    assert s["median_slots_over_truth"] == pytest.approx(1.35)
    assert s["p95_slots_over_truth"] == pytest.approx(np.percentile([1.1, 1.2, 1.5, 3.0], 95))
    assert s["worst_slots_over_truth"] == 3.0
    line = ev.generated_summary_line(s)
    assert "1 whose own configuration sustains < 0.97" in line and "median 1.35" in line


def test_the_generated_summary_of_nothing_planned_has_no_ratios():
    ev = _evaluate()
    s = ev.generated_summary([_record(None, None, None, ev.UNREACHABLE_AGREED)])
    assert s["median_slots_over_truth"] is None and s["unreachable_wrong_share_of_reachable"] is None
    assert "median -" in ev.generated_summary_line(s)


def _sleeping_case(out_dir, path, seconds, seed):
    import time

    time.sleep(seconds)
    return {"profile": path, "multiple": seconds, "slept": True}


def test_section_g_stops_a_case_past_its_time_limit_and_keeps_the_others(monkeypatch):
    ev = _evaluate()
    monkeypatch.setattr(ev, "generated_case", _sleeping_case)
    results = list(ev.bounded_cases([(None, "a", 0.1, 0), (None, "b", 30.0, 0), (None, "c", 0.2, 0)], 2, 2.0))
    done = {r["profile"]: r for r in results}
    assert done["a"].get("slept") and done["c"].get("slept")
    assert done["b"]["timeout"] and "timed out after 2 s" in done["b"]["error"] and done["b"]["wall_s"] < 10


def test_section_g_keeps_each_case_s_record_as_it_ends_when_the_run_is_stopped(monkeypatch, tmp_path):
    ev = _evaluate()

    def one_then_stopped(cases, jobs, timeout_s):
        yield {"profile": "gen-0-0000", "multiple": cases[0][2], "memories": {}, "rate": 1.0, "wall_s": 0.1}
        yield {"profile": "gen-0-0000", "multiple": cases[1][2], "error": "ValueError: x", "wall_s": 0.1}
        raise KeyboardInterrupt

    monkeypatch.setattr(ev, "bounded_cases", one_then_stopped)
    with pytest.raises(KeyboardInterrupt):
        ev.section_g(tmp_path, 1, 0)
    lines = [json.loads(line) for line in (tmp_path / ev.CASES_FILE).read_text().splitlines()]
    assert [(r["multiple"], "error" in r) for r in lines] == [(ev.GENERATED_MULTIPLES[0], False),
                                                              (ev.GENERATED_MULTIPLES[1], True)]


def _case_record(case, **extra):
    return {"profile": Path(case[1]).stem, "multiple": case[2], "memories": {}, "rate": 1.0, "wall_s": 0.1, **extra}


def test_section_g_resumed_runs_only_the_cases_the_earlier_run_did_not_end(monkeypatch, tmp_path):
    ev = _evaluate()
    multiples = ev.GENERATED_MULTIPLES

    def first_run(cases, jobs, timeout_s):  # judged, stopped at its limit, failed; then the run is killed
        yield _case_record(cases[0])
        yield _case_record(cases[1], error="timed out after 1 s", timeout=True)
        yield _case_record(cases[2], error="ValueError: x")
        raise KeyboardInterrupt

    monkeypatch.setattr(ev, "bounded_cases", first_run)
    with pytest.raises(KeyboardInterrupt):
        ev.section_g(tmp_path, 1, 0)
    with (tmp_path / ev.CASES_FILE).open("a") as f:  # killed while it wrote the next case's record
        f.write(json.dumps(_case_record((None, "gen-0-0000.yaml", multiples[3])))[:30])
    given = []

    def second_run(cases, jobs, timeout_s):
        given.extend(c[2] for c in cases)
        yield from (_case_record(c) for c in cases)

    monkeypatch.setattr(ev, "bounded_cases", second_run)
    monkeypatch.setattr(ev, "memory_records", lambda rows: [])
    result = ev.section_g(tmp_path, 1, 0, resume=True)
    assert given == list(multiples[2:])  # the failed case again, the judged and the stopped ones not
    assert sorted(r["multiple"] for r in result["rows"]) == sorted([multiples[0], *multiples[2:]])
    assert [e["multiple"] for e in result["errors"]] == [multiples[1]]
    lines = [json.loads(line) for line in (tmp_path / ev.CASES_FILE).read_text().splitlines()]
    assert sorted(r["multiple"] for r in lines) == sorted(multiples)  # the kept two, then the rest


def test_section_g_refuses_to_resume_a_run_of_other_seeds_or_code(monkeypatch, tmp_path, capsys):
    ev = _evaluate()
    monkeypatch.setattr(ev, "bounded_cases", lambda cases, jobs, timeout_s: iter(()))
    monkeypatch.setattr(ev, "memory_records", lambda rows: [])
    ev.section_g(tmp_path / "G", 1, 0)
    with pytest.raises(ev.ResumeMismatch, match="profile_seed 0, this one 7"):
        ev.section_g(tmp_path / "G", 1, 7, resume=True)
    with pytest.raises(ev.ResumeMismatch, match="key_stats False, this one True"):  # planned without the data's keys
        ev.section_g(tmp_path / "G", 1, 0, resume=True, key_stats=True)
    (tmp_path / "G" / ev.RUN_FILE).write_text("{not json")
    with pytest.raises(ev.ResumeMismatch, match="not readable as a run's record"):
        ev.resumed_cases(tmp_path / "G", ev.generated_run(0, 0))
    ev.section_g(tmp_path / "G", 1, 0)
    monkeypatch.setattr(ev, "source_digest", lambda: "other")
    monkeypatch.setattr(sys, "argv", ["evaluate.py", "--sections", "G", "--resume", "--out", str(tmp_path)])
    assert ev.main() == 2
    err = capsys.readouterr().err
    assert err.startswith("--resume: the run in") and "has code" in err and "'other'" in err and "Traceback" not in err


def test_section_g_with_the_data_s_key_statistics_gives_every_keyed_operator_its_counts(generated):
    ev = _evaluate()
    for path in generated[:12]:
        profile = load_profile(str(path))
        given = ev.data_key_statistics(str(path))["key_statistics"]
        assert {s.operator for s in given} == set(profile.query().keyed)
        assert all(s.key_groups and s.distinct_keys > 0 for s in given)

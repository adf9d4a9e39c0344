"""Skew probes (planner/probes.py) and what a plan says it did not see (planner/caveats.py): each rule
on its own, then a probe on a sim profile whose hot key the narrow testbed misses."""

from __future__ import annotations

import math
import sys

import pytest

from streambed.model import Plan, PlanEntry
from streambed.planner import caveats
from streambed.planner.exploration import cpu_disturbance
from streambed.planner.probes import PROBE_RATIO, decides, probe_configuration, probe_targets, probe_width, widest_runs

# -- probe selection --------------------------------------------------------------------------------------


def test_widest_runs_takes_the_most_tasks_each_operator_ran_with():
    assert widest_runs([{"a": 1, "b": 3}, {"a": 4, "b": 2}]) == {"a": 4, "b": 3}


def test_a_keyed_operator_planned_far_wider_than_it_ran_is_probed():
    planned = [{"src": 10, "join": 30}, {"src": 12, "join": 20}]
    assert probe_targets(planned, {"src": 5, "join": 2}, keyed={"join"}, width=45) == ["join"]


def test_an_operator_planned_within_a_few_times_its_widest_run_is_not_probed():
    planned = [{"join": int(PROBE_RATIO * 5)}]
    assert probe_targets(planned, {"join": 5}, keyed={"join"}, width=45) == []


def test_an_operator_that_is_not_keyed_is_never_probed():
    assert probe_targets([{"map": 500}], {"map": 1}, keyed=set(), width=45) == []


def test_an_operator_a_hidden_key_could_hold_below_the_rate_is_probed_within_a_few_times():
    planned = [{"agg": 11}]
    assert probe_targets(planned, {"agg": 4}, keyed={"agg"}, width=40) == []
    assert probe_targets(planned, {"agg": 4}, keyed={"agg"}, width=40, suspects={"agg"}) == ["agg"]
    # a probe no wider than the runs shows nothing new: not taken for a suspect either
    assert probe_targets(planned, {"agg": 30}, keyed={"agg"}, width=40, suspects={"agg"}) == []


def test_a_suspect_the_probe_would_decide_is_probed_however_little_wider():
    planned = [{"agg": 119}]
    # 40 tasks against the 27 seen: short of PROBE_GAIN x, taken only where the probe decides the suspect
    assert probe_targets(planned, {"agg": 27}, keyed={"agg"}, width=40, ratio=5.0, suspects={"agg"}) == []
    assert probe_targets(planned, {"agg": 27}, keyed={"agg"}, width=40, ratio=5.0, suspects={"agg"},
                         decisive={"agg"}) == ["agg"]
    assert probe_targets(planned, {"agg": 27}, keyed={"agg"}, width=40, ratio=5.0, decisive={"agg"}) == []
    assert probe_targets(planned, {"agg": 40}, keyed={"agg"}, width=40, suspects={"agg"}, decisive={"agg"}) == []


def test_a_probe_decides_where_every_key_it_could_miss_leaves_the_plan_at_the_rate():
    """A Zipf-like key set (H = 0.0007, about 1,400 keys' worth) seen on 27 tasks: a key too faint for those
    runs could hold 119 tasks below rates it would not at 42 tasks' view; a probe of 42 decides rates up
    to what the faintest key it could miss leaves, and no narrower probe decides more than the runs did."""
    from dataclasses import replace

    from streambed.model import OperatorRates
    from streambed.model.keyskew import KeySkew
    from streambed.planner.policies import skew

    rates = OperatorRates(10_000.0, 1.0, keyed=True, measured_parallelism=27,
                          key_skew=KeySkew(0.0007, tested_parallelism=27, tested_max_parallelism=128))
    seen = skew.hidden_key_capacity(rates, 119)
    wide = skew.hidden_key_capacity(replace(rates, key_skew=replace(rates.key_skew, tested_parallelism=42,
                                                                    tested_max_parallelism=128)), 119)
    assert seen < wide < skew.capacity(rates, 119)
    assert decides(rates, 42, 119, (seen + wide) / 2)
    assert not decides(rates, 42, 119, 1.01 * wide)
    assert not decides(rates, 27, 119, (seen + wide) / 2)
    assert not decides(replace(rates, key_skew=None), 42, 119, seen / 2)


def test_no_probe_when_the_testbed_cannot_run_the_operator_wider_than_it_did():
    # q11-like: the window ran on 43 tasks, the probe could give it 45
    assert probe_targets([{"win": 1300}], {"win": 43}, keyed={"win"}, width=45) == []


def test_probe_width_leaves_one_slot_to_every_other_operator_within_the_key_groups():
    assert probe_width(48, 4) == 45
    assert probe_width(48, 4, max_parallelism=32) == 32
    assert probe_configuration(("a", "b", "c"), "b", 46) == {"a": 1, "b": 46, "c": 1}


# -- risk: the families' disagreement, combined sources -----------------------------------------------------


def test_family_risk_floor_is_the_share_of_families_planning_more():
    assert caveats.family_risk_floor({"linear": 100, "log": 170, "sqrt": 120}, 110) == pytest.approx(2 / 3)
    assert caveats.family_risk_floor({"linear": 100, "log": 100}, 110) == 0.0
    # a family with no answer within its guard rails says where it stops being trusted, not that it needs more
    assert caveats.family_risk_floor({"linear": 100, "log": None}, 110) == 0.0
    assert caveats.family_risk_floor({"linear": 100, "log": None, "sqrt": 187}, 110) == pytest.approx(1 / 3)
    assert caveats.family_risk_floor({}, 110) == 0.0
    assert caveats.family_risk_floor({"linear": 100}, None) == 0.0


def test_combined_risk_of_independent_sources():
    assert caveats.combined_risk(0.005, 1 / 3) == pytest.approx(1 - 0.995 * 2 / 3)
    assert caveats.combined_risk(None, 0.1) == pytest.approx(0.1)
    assert caveats.combined_risk(None, None) is None
    assert caveats.combined_risk(0.0, 0.0) == 0.0


# -- unseen reasons --------------------------------------------------------------------------------------


def test_unseen_names_a_keyed_operator_whose_skew_was_never_seen_at_scale():
    lines = caveats.unseen_reasons({"src": 40, "join": 25}, {"src": 40, "join": 1}, {"join"})
    assert len(lines) == 1 and lines[0].startswith("join: key skew seen on at most 1 tasks, planned on 25")


def test_unseen_is_empty_when_the_testbed_ran_the_plan_s_parallelism():
    assert caveats.unseen_reasons({"src": 40, "join": 6}, {"src": 40, "join": 4}, {"join"},
                                  groups_per_task={"join": 128 / 4}) == ()


def test_unseen_names_a_memory_bound_operator_planned_far_wider():
    lines = caveats.unseen_reasons({"agg": 200}, {"agg": 20}, set(), memory_bound={"agg": 1.6})
    assert len(lines) == 1 and "1.60 x between the memories" in lines[0]
    assert caveats.unseen_reasons({"agg": 200}, {"agg": 20}, set(), memory_bound={"agg": 1.05}) == ()


def test_unseen_names_key_group_steps_the_testbed_did_not_have():
    # 100 tasks over Flink's default 256 groups: 2.56 per task; the testbed ran 40 over 128 (3.2): no step seen?
    assert not any("key groups" in x for x in caveats.unseen_reasons({"w": 100}, {"w": 40}, {"w"},
                                                                        groups_per_task={"w": 3.2}, ratio=10))
    lines = caveats.unseen_reasons({"w": 100}, {"w": 10}, {"w"}, groups_per_task={"w": 12.8}, ratio=10)
    assert any("100 tasks over 256 key groups" in x for x in lines)


def test_unseen_names_an_operator_planned_with_few_keys_a_task():
    # 3,000 even keys over 1,437 tasks: two a task, whole keys set the busiest
    lines = caveats.unseen_reasons({"w": 1437}, {"w": 1437}, {"w"}, keys={"w": 3000.0})
    assert len(lines) == 1 and "about 3,000 even keys' worth over 1,437 tasks (2.1 a task)" in lines[0]
    assert caveats.unseen_reasons({"w": 100}, {"w": 100}, {"w"}, keys={"w": 3000.0}) == ()  # 30 a task
    assert caveats.unseen_reasons({"m": 1437}, {"m": 1437}, set(), keys={"m": 3000.0}) == ()  # not keyed


def test_unseen_leaves_out_the_skew_the_data_s_key_groups_count():
    both = caveats.unseen_reasons({"w": 1437}, {"w": 1}, {"w"}, keys={"w": 3000.0})
    assert len(both) == 2  # skew not seen at scale, few keys a task
    assert caveats.unseen_reasons({"w": 1437}, {"w": 1}, {"w"}, keys={"w": 3000.0}, counted={"w"}) == ()
    memory = caveats.unseen_reasons({"w": 1437}, {"w": 1}, {"w"}, memory_bound={"w": 2.0}, counted={"w"})
    assert len(memory) == 1 and "between the memories" in memory[0]  # the data counts keys, not state


def test_unseen_says_when_the_configuration_sets_key_groups_the_model_never_ran():
    lines = caveats.unseen_reasons({"w": 4}, {"w": 4}, {"w"}, max_parallelism=4096, measured_max_parallelisms={None})
    assert any("max parallelism to 4,096" in x for x in lines)
    assert caveats.unseen_reasons({"w": 4}, {"w": 4}, {"w"}, max_parallelism=4096,
                                  measured_max_parallelisms={4096}) == ()


def test_unseen_says_a_budget_lies_beyond_the_trusted_limit():
    lines = caveats.unseen_reasons({"a": 900}, {"a": 900}, set(), trusted_slots=775, slots=900)
    assert lines == ("the budget (900 slots) lies beyond the model's trusted limit (775)",)
    assert caveats.unseen_risk(lines) == caveats.UNSEEN_RISK and caveats.unseen_risk(()) == 0.0


def test_a_key_the_testbed_could_not_exclude_enters_the_risk():
    assert caveats.hidden_key_risk("W: a key with up to 1.4 % of its input ...") == caveats.HIDDEN_KEY_RISK > 0.0
    assert caveats.hidden_key_risk(None) == 0.0
    # with the unseen reasons' floor, as the explorer combines them
    both = caveats.combined_risk(0.0, caveats.UNSEEN_RISK, caveats.HIDDEN_KEY_RISK)
    assert both == pytest.approx(1 - (1 - caveats.UNSEEN_RISK) * (1 - caveats.HIDDEN_KEY_RISK))


# -- disturbed measurements ------------------------------------------------------------------------------


def _budget(slots, mst, busy, memory=4096):
    from streambed.planner.exploration import ExplorationPoint

    ops = [{"operator": op, "busyness_max": b} for op, b in busy.items()]
    return ExplorationPoint(memory, slots, mst, {op: 1 for op in busy}, 0.0, math.nan, 0.0, "search",
                            measurement={"operators": ops})


def test_a_loss_no_busy_operator_accounts_for_is_said_and_enters_the_risk():
    """caveats.unattributed_loss: a largest budget at 64 % of its prediction, its busiest operator 66 % busy
    (a straggling window's stalls, seed 20261218): the line names the budget and what tells; a busy
    operator, or a small loss, accounts for it; the lowest MST of a repeated budget is the one read."""
    busy = {"Calc#1": 0.66, "GroupWindowAggregate#2": 0.28}
    points = [_budget(24, 5e7, {"Calc#1": 0.99}), _budget(48, 9.6e7, busy)]
    line = caveats.unattributed_loss(points, 4096, 48, 0.64)
    assert line is not None and "(48 slots) sustained 64 %" in line and "66 % busy" in line
    assert "--checkpoint-slots" in line
    assert caveats.unattributed_loss(points, 4096, 48, 0.85) is None  # a small loss
    assert caveats.unattributed_loss(points, 1024, 48, 0.64) is None  # no budget of that memory
    saturated = [_budget(48, 9.6e7, {**busy, "GroupWindowAggregate#2": 0.95})]
    assert caveats.unattributed_loss(saturated, 4096, 48, 0.64) is None  # a busy operator is the bound
    repeated = [_budget(48, 9.0e7, {"Calc#1": 0.5}), _budget(48, 9.6e7, {"Calc#1": 0.9})]
    assert "50 % busy" in caveats.unattributed_loss(repeated, 4096, 48, 0.64)
    assert caveats.unattributed_risk(line) == caveats.UNATTRIBUTED_RISK and caveats.unattributed_risk(None) == 0.0
    assert caveats.combined_risk(0.0, caveats.unseen_risk((line,)), caveats.unattributed_risk(line)) == \
        pytest.approx(1 - (1 - caveats.UNSEEN_RISK) * (1 - caveats.UNATTRIBUTED_RISK))


def test_disturbance_warns_when_a_window_was_repeated_or_taken_short_of_cpu():
    share, warning = caveats.disturbance_warning([(0, 0.0), (1, 0.02), (0, 0.08), (0, 0.01)])
    assert share == 0.5 and "2 of the 4 measurements" in warning and "1 window(s) repeated" in warning
    assert caveats.disturbance_warning([(0, 0.0), (0, 0.04)]) == (0.0, None)
    assert caveats.disturbance_warning([]) == (0.0, None)


def test_cpu_disturbance_reads_an_estimates_recorded_windows():
    window = {"measurement": {"cpu": {"seconds": 10, "shortfall": 0.3, "quota": 2.0, "groups": 2},
                              "discarded": [{}, {}]}}
    assert cpu_disturbance({"windows": [window, {"measurement": {}}]}) == (2, pytest.approx(0.15))
    assert cpu_disturbance({"windows": []}) == (0, 0.0)


# -- beyond the trusted range ----------------------------------------------------------------------------


def test_beyond_trusted_plans_only_where_every_family_s_unbounded_answer_agrees():
    # every family reaches the rate within 1.5 x of the others: the largest answer, grown by the last pass
    assert caveats.beyond_trusted_start({"linear": 900, "sqrt": 1200, "log": 1300}, "sqrt") == 1300
    # they disagree (or one never reaches it): the measurements cannot tell, unreachable
    assert caveats.beyond_trusted_start({"linear": 900, "sqrt": 4000, "log": 1000}, "sqrt") is None
    assert caveats.beyond_trusted_start({"linear": 900, "sqrt": 1000, "log": None}, "sqrt") is None


def test_the_other_beyond_trusted_rules():
    answers = {"linear": 900, "sqrt": 4000, "log": None}
    assert caveats.beyond_trusted_start(answers, "sqrt", "smallest") == 900
    assert caveats.beyond_trusted_start(answers, "sqrt", "chosen") == 4000
    assert caveats.beyond_trusted_start(answers, "sqrt", "off") is None
    # the chosen family reaches the rate nowhere: a flat tail, a ceiling, whatever the rule
    assert caveats.beyond_trusted_start(answers, "log", "smallest") is None
    with pytest.raises(ValueError):
        caveats.beyond_trusted_start(answers, "sqrt", "largest")


@pytest.mark.parametrize("field,value", [("beyond_trusted_keys", "largest"), ("below_model_with_keys", 0.5),
                                         ("rates_hold_floor", 1.5), ("decline_law", "quadratic"),
                                         ("stalls", "false")])
def test_the_settings_of_the_rules_with_the_data_s_keys_refuse_a_value_out_of_range(field, value):
    from streambed.planner.exploration import ExplorerSettings

    with pytest.raises(ValueError, match=field):
        ExplorerSettings(**{field: value})


def test_plan_json_round_trip_keeps_the_new_fields():
    e = PlanEntry(4096, 10, 1e6, {"a": 4, "b": 6}, 1.1e6, {"linear": 10}, "x", 8, 9e5, unseen=("a: not seen",),
                  beyond_trusted=True, checkpoint="--checkpoint-slots 10")
    p = Plan("q", 1e6, 1.1, "linear", {}, (e,), warnings=("disturbed",), key_skew={"b": {"source": "data"}},
             probes=({"operator": "b", "tasks": 45, "memory_mb": 4096, "mst": 1.0, "testbed_seconds": 60.0},))
    back = Plan.from_dict(p.to_dict())
    assert back == p
    assert math.isclose(back.entries[0].max_rate, 9e5)


# -- a probe on the sim: a hot key the narrow testbed misses ------------------------------------------------

HOT_JOIN = """\
name: probe-test-hot-join
description: "A keyed aggregate behind a selective filter: one task on the testbed, a hot key at scale"
reference: {single_task_mst: 400000, shape: linear, notes: "test profile"}
defaults: {buffer_records: 20000, noise: 0.0}
operators:
  - name: "Calc#1"
    kind: filter
    rate: 400000
    inputs:
      - {from: source, selectivity: 1.0, partitioning: rebalance}
  - name: "GroupAggregate#2"
    kind: aggregate
    rate: 400000
    inputs:
      - {from: "Calc#1", selectivity: 0.05, partitioning: hash}
    keys: {count: 20000, zipf: 0.3, hot: 0.15}
  - name: "Sink#3"
    kind: sink
    rate: 2000000
    inputs:
      - {from: "GroupAggregate#2", selectivity: 0.1, partitioning: rebalance}
"""


def _hot_join_explorer(tmp_path, probes: bool, text: str = HOT_JOIN):
    from streambed.ledger import Ledger
    from streambed.planner.estimator import CapacityEstimator, Timing
    from streambed.planner.exploration import ExplorerSettings
    from streambed.planner.explorer import ResourceExplorer
    from streambed.planner.optimizer import ConfigurationOptimizer
    from streambed.planner.policies import policy_named
    from streambed.testbed.sim.profile import load_profile
    from streambed.testbed.sim.testbed import SimSettings, SimTestbed

    path = tmp_path / "probe-test-hot-join.yaml"
    path.write_text(text)
    prof = load_profile(str(path))
    tb = SimTestbed(prof, SimSettings(seed=0, max_slots=16))
    ledger = Ledger.open(tmp_path / ("on" if probes else "off"), "plan", {}, resume=False)
    quick = Timing("q", warmup_s=20, cooldown_s=5, cooldown_rate_per_source=200, ramp_s=10, observe_s=20,
                   max_iterations=10, warmup_observe_s=10)
    est = CapacityEstimator(tb, ledger, quick)
    opt = ConfigurationOptimizer(est, tb.query(prof.name), policy_named("bids2-skew"))
    settings = ExplorerSettings(seed=0, min_after_corners=1, max_measurements=5, probes=probes)
    return ResourceExplorer(opt, tb.info(), settings), ledger, est


def test_a_probe_finds_the_hot_key_the_narrow_testbed_missed(tmp_path):
    """The aggregate takes 5 % of the input: every run of D gives it one or two tasks, no run shows its 15 %
    key, and a plan at 20 x the testbed gives it many tasks as if its input spread evenly. The probe runs it
    on 14 tasks (16 slots less one each for the others); its hot key then caps the plan, which says so."""
    explorer, ledger, est = _hot_join_explorer(tmp_path, probes=True)
    with ledger:
        ex = explorer.explore([4096])
        agg = "GroupAggregate#2"
        assert max(p.configuration[agg] for p in ex.points) == 1  # never wide enough to show a key
        rate = 20 * max(p.mst for p in ex.points)
        before = explorer.plan(ex, rate, [4096]).entry(4096)
        assert before.slots is not None and before.configuration[agg] > 4
        assert any(line.startswith(f"{agg}: key skew seen on at most") for line in before.unseen)
        seconds = est.testbed_seconds
        probes = explorer.probe(ex, explorer.plan(ex, rate, [4096]), est)
        assert [max(p.configuration.values()) for p in probes] == [14]
        assert probes[0].configuration == {"Calc#1": 1, agg: 14, "Sink#3": 1}
        assert est.testbed_seconds - seconds == pytest.approx(probes[0].testbed_seconds) and probes[0].testbed_seconds > 0
        skew = explorer.key_skew(ex)[0][agg]
        assert skew.tested_parallelism == 14 and skew.hottest > 0.08  # the 15 % key, seen
        after = explorer.plan(ex, rate, [4096])
    assert after.probes and after.probes[0]["operator"] == agg and after.probes[0]["tasks"] == 14
    entry = after.entry(4096)
    # one key holds 15 % of the aggregate's input: its task caps the operator wherever the plan puts it
    cap = 400000 / (0.05 * 0.15)
    assert rate > cap
    assert entry.slots is None and "GroupAggregate#2 sustains at most" in entry.unreachable


def test_without_probes_the_same_plan_trusts_the_narrow_view(tmp_path):
    explorer, ledger, est = _hot_join_explorer(tmp_path, probes=False)
    with ledger:
        ex = explorer.explore([4096])
        rate = 20 * max(p.mst for p in ex.points)
        plan = explorer.plan(ex, rate, [4096])
        assert explorer.probe(ex, plan, est) == [] and ex.probes == []
    assert plan.entry(4096).slots is not None  # planned, the hot key unseen
    assert plan.key_skew == {}  # one task in every run: nothing inferred


def test_key_statistics_of_the_data_give_the_skew_the_runs_could_not(tmp_path):
    """The same narrow exploration, with the data's key counts (--key-stats): the 15 % key is counted,
    the more pessimistic skew is the data's, and the plan shows both and names the cap."""
    from dataclasses import replace

    from streambed.model.keystats import statistics_of_counts

    explorer, ledger, est = _hot_join_explorer(tmp_path, probes=False)
    agg = "GroupAggregate#2"
    counts = {(k,): 1 for k in range(850)} | {(10_000,): 150}  # one key of 15 %, 850 even ones
    stats = statistics_of_counts(agg, "bid.bidder", counts)
    with ledger:
        ex = explorer.explore([4096])
        rate = 20 * max(p.mst for p in ex.points)
        explorer.settings = replace(explorer.settings, key_statistics=(stats,))
        plan = explorer.plan(ex, rate, [4096])
    shown = plan.key_skew[agg]
    assert shown["source"] == "data" and shown["inferred"] is None
    assert shown["data"]["hottest"] == pytest.approx(0.15)
    entry = plan.entry(4096)
    assert entry.slots is None and f"{agg} sustains at most" in entry.unreachable


def test_a_plan_on_more_tasks_than_keys_waits_for_the_data_or_a_checkpoint(tmp_path):
    """40 keys at Zipf 0.6 (about 20 keys' worth; the hottest 11 %) on every record, run on at most 8 tasks of a
    16-slot testbed, where a 20 % key would not stand out. At 3 x the testbed the policy gives the aggregate
    hundreds of tasks, as if each held one key of a typical hashing; the sim's truth of that configuration
    falls short of the rate. With ``outnumbered_keys`` (the default) the entry says unreachable as far as the
    testbed can tell, naming the operator and what would tell."""
    from dataclasses import replace

    from streambed.model import Configuration
    from streambed.planner.explorer import OUTNUMBERED
    from streambed.testbed.sim.profile import load_profile
    from streambed.testbed.sim.truth import GroundTruth

    text = HOT_JOIN.replace("selectivity: 0.05, partitioning: hash", "selectivity: 1.0, partitioning: hash").replace(
        "keys: {count: 20000, zipf: 0.3, hot: 0.15}", "keys: {count: 40, zipf: 0.6}")
    explorer, ledger, _ = _hot_join_explorer(tmp_path, probes=False, text=text)
    profile = load_profile(str(tmp_path / "probe-test-hot-join.yaml"))
    agg = "GroupAggregate#2"
    with ledger:
        ex = explorer.explore([4096])
        rate = 3 * max(p.mst for p in ex.points)
        entry = explorer.plan(ex, rate, [4096]).entry(4096)
        explorer.settings = replace(explorer.settings, outnumbered_keys=False)
        warned = explorer.plan(ex, rate, [4096]).entry(4096)
    assert entry.slots is None and entry.unreachable.startswith(OUTNUMBERED)
    assert f"{agg} would run" in entry.unreachable and "--key-stats" in entry.unreachable
    assert warned.slots is not None and warned.configuration[agg] > 20 and warned.key_warning.startswith(agg)
    own = GroundTruth(profile).configuration_mst(Configuration.of(profile.query(), warned.configuration,
                                                                  warned.max_parallelism), 4096).mst
    assert own < 0.97 * rate


def _zipf_head_plans(tmp_path, multiple: float, family: str | None = None, **settings):
    """A Zipf 0.7 head over 2,500 keys behind the hot join's selective filter, explored at 4 GB and planned
    for ``multiple`` x D's best MST without and with the sim's key statistics (`streambed sim keys`), both with
    the explorer ``settings`` and model ``family`` (None: the one D chose) given: (the sim's truth of an entry's
    own configuration, the rate, the entry without, the plan with)."""
    from dataclasses import replace

    from streambed.model import Configuration
    from streambed.testbed.sim.keys import key_statistics
    from streambed.testbed.sim.profile import load_profile
    from streambed.testbed.sim.truth import GroundTruth

    text = HOT_JOIN.replace("keys: {count: 20000, zipf: 0.3, hot: 0.15}", "keys: {count: 2500, zipf: 0.7}")
    explorer, ledger, est = _hot_join_explorer(tmp_path, probes=False, text=text)
    profile = load_profile(str(tmp_path / "probe-test-hot-join.yaml"))
    stats, = key_statistics(profile).operators
    with ledger:
        ex = explorer.explore([4096])
        rate = multiple * max(p.mst for p in ex.points)
        explorer.settings = replace(explorer.settings, **settings)
        without = explorer.plan(ex, rate, [4096], family).entry(4096)
        explorer.settings = replace(explorer.settings, key_statistics=(stats,))
        plan = explorer.plan(ex, rate, [4096], family)

    def own(entry) -> float:
        return GroundTruth(profile).configuration_mst(
            Configuration.of(profile.query(), entry.configuration, entry.max_parallelism), 4096).mst
    return own, rate, without, plan


def test_the_data_s_key_groups_size_the_head_the_runs_could_not_see(tmp_path):
    """A Zipf 0.7 head over 2,500 keys behind the same selective filter: no run shows its 1.6 % key, and the
    law of H plans a typical hashing. With the sim's key statistics (`streambed sim keys`) the plan reads its
    busiest task from the data's key groups: its own configuration sustains the rate (the sim's truth), and
    the plan does not call the skew unseen."""
    agg = "GroupAggregate#2"
    own, rate, law, plan = _zipf_head_plans(tmp_path, 12)
    assert plan.key_skew[agg]["source"] == "data" and plan.key_skew[agg]["data"]["key_groups_counted"] == 32768
    entry = plan.entry(4096)
    assert entry.slots is not None and entry.configuration[agg] > law.configuration[agg]
    assert own(entry) >= rate
    assert not any(line.startswith(f"{agg}: key skew seen") for line in entry.unseen)


def test_with_the_data_s_keys_the_safety_factor_costs_its_share_of_slots(tmp_path):
    """With the data's key statistics, where reaching 1.1 x the rate costs more than 1.1 x the slots that
    reach the rate, the plan takes the latter (sizing.margin_budget) and says so; its own configuration
    still sustains the rate (the sim's truth). Without them the factor stays on the rate."""
    import math
    import re

    own, rate, without, plan = _zipf_head_plans(tmp_path, 20)
    entry = plan.entry(4096)
    assert "the safety factor on the slots" not in without.configured_from
    said = re.search(r"the safety factor on the slots: ([\d,]+), 1\.1 x the ([\d,]+) whose configuration reaches the "
                     r"rate \(on the rate: ([\d,]+) slots\)", entry.configured_from)
    assert said, entry.configured_from
    capped, exact, on_rate = (int(g.replace(",", "")) for g in said.groups())
    assert capped == math.ceil(1.1 * exact) < on_rate and entry.slots <= capped
    assert own(entry) >= rate


@pytest.mark.parametrize("rule", ["configured", "agree"])
def test_with_the_data_s_keys_a_rate_beyond_the_trusted_range_is_sized_by_its_own_configuration(tmp_path, monkeypatch,
                                                                                                rule):
    """Beyond the trusted range (2 x the testbed's 16 slots here) where the families disagree (sqrt made to ask
    10 x its slots), a plan with the data's key statistics takes the smallest budget between their answers whose
    own configuration reaches the rate at the measured efficiency: marked beyond the trusted range, with the
    checkpoint that would confirm it, and its own configuration sustains the rate (the sim's truth). Without the
    keys, or with ``beyond_trusted_keys`` "agree", the disagreement leaves it unreachable."""
    from streambed.planner import explorer as explorer_module

    real = explorer_module.plans_by_family

    def split(*args, **kwargs):
        return {f: 10 * v if f == "sqrt" and v is not None else v for f, v in real(*args, **kwargs).items()}

    monkeypatch.setattr(explorer_module, "plans_by_family", split)
    own, rate, without, plan = _zipf_head_plans(tmp_path, 6, max_extrapolation=2.0, beyond_trusted_keys=rule)
    entry = plan.entry(4096)
    assert without.slots is None and "the families disagree" in without.unreachable
    if rule == "agree":
        assert entry.slots is None and "the families disagree" in entry.unreachable
        return
    assert entry.slots is not None and entry.beyond_trusted and entry.slots > entry.max_slots
    assert entry.checkpoint == f"--checkpoint-slots {entry.slots}"
    assert "sized by its own configuration with the data's keys" in entry.configured_from
    reached = [v for v in entry.by_family.values() if v is not None]
    assert min(reached) <= entry.model_slots and entry.slots <= 1.5 * max(reached)
    assert own(entry) >= rate


SLOWING_LAW = """\
analytic:
  family: sqrt
  a: 0.0
  b: 1000000.0
  c: 0.0
  memory_feature: taskmanager_mb
  slots_per_taskmanager: 16
  log_transform: log1p
  noise: 0.0
"""
"""A square-root law (testbed/sim/profiles/paper-q8-sqrt.yaml's form): every task slowed so that the best
configuration of P slots sustains 10^6 sqrt(P) events/s, as a job bound by something no configuration model
sees would be."""


@pytest.mark.parametrize("floor", [None, 0.0])
def test_where_the_runs_rates_fall_with_the_budget_the_configuration_is_not_trusted_beyond_them(
        tmp_path, monkeypatch, floor):
    """The keyed query of the tests above under a law that slows every task as the budget grows: its runs read
    MSTs falling below what the smallest run's rates predict (sizing.rates_hold), so with the data's keys the
    plan neither scans below the model's budget nor sizes a disagreement beyond the trusted range by its
    configuration (q8's keyed operators under paper-q8-sqrt's law: 0.75 of the target that way,
    bench/experiments/keys_on_concave.py). It stays unreachable,
    naming the disagreement and the staged measurement that would settle it."""
    from streambed.planner import explorer as explorer_module
    from streambed.planner.sizing import rates_hold

    real = explorer_module.plans_by_family
    monkeypatch.setattr(explorer_module, "plans_by_family", lambda *a, **k: {
        f: 10 * v if f == "sqrt" and v is not None else v for f, v in real(*a, **k).items()})
    text = HOT_JOIN.replace("defaults:", SLOWING_LAW + "defaults:")
    monkeypatch.setattr(sys.modules[__name__], "HOT_JOIN", text)
    own, rate, without, plan = _zipf_head_plans(tmp_path, 3, max_extrapolation=2.0,
                                                **({} if floor is None else {"rates_hold_floor": floor}))
    entry = plan.entry(4096)
    if floor == 0.0:  # the guard off: sized by the configuration, which the law makes short
        assert entry.beyond_trusted and own(entry) < rate
        return
    assert entry.slots is None and "the families disagree" in entry.unreachable
    assert "a staged measurement (--checkpoint-slots" in entry.unreachable
    assert rates_hold([(4, 1.0), (48, 0.95)]) and not rates_hold([(4, 0.8), (48, 0.66)])
    assert not rates_hold([(48, 1.0)])  # one budget tells nothing


@pytest.mark.parametrize("below", [1.5, 1.0])
def test_with_the_data_s_keys_the_last_pass_may_take_fewer_slots_than_the_model(tmp_path, below):
    """A square-root curve put on a query that scales linearly asks more slots than its configuration needs.
    With the data's key statistics the last pass scans from the model's budget / ``below_model_with_keys``
    (1.5) for the smallest budget whose own configuration reaches 1.1 x the rate at the measured efficiency;
    its own configuration still sustains the rate (the sim's truth). Without the keys, or with 1, it only
    grows the model's budget."""
    import math

    own, rate, without, plan = _zipf_head_plans(tmp_path, 3, "sqrt", below_model_with_keys=below)
    entry = plan.entry(4096)
    assert without.slots == without.model_slots == entry.model_slots
    if below == 1.0:
        assert entry.slots == entry.model_slots
        return
    assert math.ceil(entry.model_slots / below) <= entry.slots < entry.model_slots
    assert own(entry) >= rate


def test_a_plan_warns_when_its_measurements_were_disturbed_and_counts_them_in_its_risk(tmp_path):
    explorer, ledger, est = _hot_join_explorer(tmp_path, probes=False)
    with ledger:
        ex = explorer.explore([4096])
        rate = 2 * max(p.mst for p in ex.points)
        calm = explorer.plan(ex, rate, [4096])
        ex.points[0].repeated_windows = 2  # the testbed observed two windows again: its host was short of CPU
        ex.points[1].cpu_shortfall = 0.08  # a window kept while its CPU groups waited for 8 % of their quota
        disturbed = explorer.plan(ex, rate, [4096])
    assert calm.warnings == () and len(disturbed.warnings) == 1
    assert f"2 of the {len(ex.points)} measurements were disturbed" in disturbed.warnings[0]
    share = 2 / len(ex.points)
    before, after = calm.entry(4096), disturbed.entry(4096)
    assert after.slots == before.slots  # a warning and a risk, not another budget
    assert after.risk == pytest.approx(1 - (1 - before.risk) * (1 - share))


def test_where_the_runs_read_more_skew_than_the_data_gives_the_plan_does_not_send_the_user_to_the_data(tmp_path):
    """40 keys at Zipf 0.6 run on up to 8 tasks (as above), planned with key statistics of 100,000 even keys
    (another data set, or the whole of one the runs replay a part of): the runs read more skew than the data
    give, the plan keeps the runs' (key_skew's source "tasks"), and what it cannot exclude is settled by a
    checkpoint, not by the data it already read; without the statistics, by either."""
    from dataclasses import replace

    from streambed.model.keystats import statistics_of_counts

    agg = "GroupAggregate#2"
    text = HOT_JOIN.replace("selectivity: 0.05, partitioning: hash", "selectivity: 1.0, partitioning: hash").replace(
        "keys: {count: 20000, zipf: 0.3, hot: 0.15}", "keys: {count: 40, zipf: 0.6}")
    explorer, ledger, _ = _hot_join_explorer(tmp_path, probes=False, text=text)
    even = statistics_of_counts(agg, "bid.bidder", {(k,): 1 for k in range(100_000)})
    with ledger:
        ex = explorer.explore([4096])
        rate = 3 * max(p.mst for p in ex.points)
        without = explorer.plan(ex, rate, [4096]).entry(4096)
        explorer.settings = replace(explorer.settings, key_statistics=(even,))
        plan = explorer.plan(ex, rate, [4096])
        explorer.settings = replace(explorer.settings, outnumbered_keys=False)
        warned = explorer.plan(ex, rate, [4096]).entry(4096)
        assert explorer.beyond_data(ex) == {agg}
    assert plan.key_skew[agg]["source"] == "tasks" and plan.key_skew[agg]["data"] is not None
    for text in (plan.entry(4096).unreachable, warned.key_warning):
        assert "runs read more skew" in text and "--checkpoint-slots" in text and "(--input" not in text
    assert "(--input, --key-stats)" in without.unreachable

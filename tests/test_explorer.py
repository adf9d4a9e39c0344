"""Resource Explorer (paper section VI): bootstrap, stop rule, model selection, plan."""

import math

import numpy as np
import pytest

from streambed.errors import UserError
from streambed.planner.estimator import Timing, CapacityEstimator
from streambed.planner import caveats
from streambed.planner.exploration import ExplorerSettings
from streambed.planner.explorer import ResourceExplorer
from streambed.planner.search import corners, should_stop
from streambed.planner.selection import select_family
from streambed.ledger import Ledger
from streambed.planner.optimizer import ConfigurationOptimizer
from streambed.model import Features, Observation
from streambed.planner.surrogates import inverse_solve
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed

QUICK = Timing("q", warmup_s=20, cooldown_s=5, cooldown_rate_per_source=200, ramp_s=10, observe_s=20,
                      max_iterations=10, warmup_observe_s=10)


def test_corners_are_the_extremes_of_the_search_space():
    assert corners(2, 48, [512, 1024, 4096]) == [(512, 2), (512, 48), (4096, 2), (4096, 48)]
    assert corners(9, 48, [4096]) == [(4096, 9), (4096, 48), (4096, 28)]  # one memory: a midpoint too


def test_stop_rule():
    s = ExplorerSettings(min_after_corners=3, max_measurements=20, rmse_growth=0.10)
    hist = [math.inf, math.inf, math.inf, 100.0]
    assert should_stop(hist + [90, 95], 4, s) is None  # only 2 beyond the corners
    assert should_stop(hist + [90, 95, 104], 4, s) is None  # +9.5 %: keep going
    assert "grew" in should_stop(hist + [90, 95, 105], 4, s)  # +10.5 %
    assert "20" in should_stop([100.0] * 20, 4, s)


def test_split_selection_falls_back_to_loocv_when_its_training_half_has_one_slot_count():
    obs = [Observation(m, p, 1000.0 * p) for m in (512, 4096) for p in (2, 2, 2, 48)]
    loocv = {"linear": 1.0, "log": 2.0, "sqrt": 3.0}
    family, rule = select_family(obs, Features(), ("linear", "log", "sqrt"), loocv)
    assert rule.startswith("loocv") and family == "linear"
    spread = [Observation(4096, p, 1000.0 * p) for p in (2, 5, 9, 16, 24, 32, 40, 48)]
    assert select_family(spread, Features(), ("linear", "log", "sqrt"), loocv) == ("linear", "split")


def test_split_judges_families_on_one_slot_slope_for_every_memory():
    """The train half holds two budgets a memory; with a slot slope per memory, one small run read 25 %
    high bends that memory's slope and the split takes the square root for an MST that grows in
    proportion to the slots (section G's flat tails)."""
    from streambed.planner.surrogates import select_by_split

    def mst(memory_mb, slots):  # three fixed tasks, then 250,000 events/s a slot
        return 250_000.0 * (slots - 1.5) * (1.25 if (memory_mb, slots) == (4096, 5) else 1.0)

    obs = [Observation(m, p, mst(m, p)) for m, ps in ((1024, (3, 9, 20, 48)), (4096, (3, 5, 31, 48))) for p in ps]
    per_memory = Features(interaction=True)
    families = ("linear", "log", "sqrt")
    assert select_by_split(obs, per_memory, families)[0] == "sqrt"  # what the split chose on these features
    loocv = {f: 1.0 for f in families}
    assert select_family(obs, per_memory, families, loocv) == ("linear", "split")


def test_the_split_chooses_only_among_families_that_describe_d():
    """D of a generated profile (seed 20261129, profile 16: 7 operators, MST in proportion to the slots
    past its one-task-per-operator start): the train half's jump from 7 to 9 slots bends the square
    root to it, which wins the split while it misses D's points far more than the linear family does."""
    from streambed.planner.surrogates import loocv_rmse, select_by_split

    measured = {1024: ((7, 94_555), (12, 372_303), (22, 807_596), (48, 1_987_238)),
                4096: ((7, 95_399), (9, 270_134), (33, 1_272_647), (48, 1_917_865))}
    obs = [Observation(m, p, mst) for m, points in measured.items() for p, mst in points]
    families = ("linear", "log", "sqrt")
    loocv = {f: loocv_rmse(f, obs, Features()) for f in families}
    split = select_by_split(obs, Features(), families)[0]
    assert split != "linear" and loocv[split] > 1.5 * loocv["linear"]  # the case the guard is for
    family, rule = select_family(obs, Features(), families, loocv)
    assert family == "linear" and rule.startswith("split among")
    assert select_family(obs, Features(), families, loocv, describes=float("inf")) == (split, "split")
    assert select_family(obs, Features(), families, dict.fromkeys(families, float("nan"))) == (split, "split")


def explorer(tmp_path, profile="paper-q11-linear", seed=0, max_slots=48):
    prof = load_profile(profile)
    tb = SimTestbed(prof, SimSettings(seed=seed, max_slots=max_slots))
    ledger = Ledger.open(tmp_path, "explore", {}, resume=False)
    est = CapacityEstimator(tb, ledger, QUICK)
    co = ConfigurationOptimizer(est, tb.query(prof.name))
    return ResourceExplorer(co, tb.info(), ExplorerSettings(seed=seed)), ledger, est


def test_explorer_recovers_the_family_of_an_analytic_profile_and_plans_by_inverse_solve(tmp_path):
    ex_, ledger, est = explorer(tmp_path)
    with ledger:
        ex = ex_.explore([512, 4096])
        assert ex.family == "linear"
        assert [p.phase for p in ex.points[:4]] == ["corner"] * 4
        assert 4 + 3 <= len(ex.points) <= 20
        assert len({p.slots for p in ex.points}) >= 4  # the search spreads over P, not only the corners
        plan = ex_.plan(ex, 20e6, [512, 4096])
    from streambed.model import Surrogate

    for e in plan.entries:
        # the model's budget, or more where its own configuration needs it (key-group steps of the window)
        assert e.slots >= inverse_solve(Surrogate.from_dict(plan.model), e.memory_mb, 20e6, safety=1.10, min_slots=4)
        assert sum(e.configuration.values()) == e.slots
        assert e.predicted_mst >= 1.10 * 20e6
        assert e.efficiency * e.bids2_rate >= 1.10 * 20e6 * (1 - 1e-9)
    # the paper's Table IV for this model: 565 (0.5 GB) and 559 (4 GB) slots
    assert plan.entry(512).slots == pytest.approx(565, rel=0.05)
    assert plan.entry(4096).slots == pytest.approx(559, rel=0.05)
    assert est.calls >= len(ex.points) - 2  # the 4 GB and 0.5 GB single-task corners are one call each


def test_an_unreachable_rate_is_reported_not_invented(tmp_path):
    ex_, ledger, _ = explorer(tmp_path, "paper-q5-log")
    with ledger:
        ex = ex_.explore([2048, 4096])
        plan = ex_.plan(ex, 1e12, [4096])
    assert plan.entry(4096).slots is None and plan.entry(4096).configuration is None


def test_explorer_refuses_memory_the_testbed_does_not_offer(tmp_path):
    ex_, ledger, _ = explorer(tmp_path)
    with ledger, pytest.raises(UserError, match="offers"):
        ex_.explore([3000])


def test_plans_by_family_inverse_solves_each_family_on_the_same_measurements():
    from streambed.planner.exploration import ExplorerSettings
    from streambed.planner.sizing import plans_by_family
    from streambed.model import Features, Observation
    from streambed.planner.surrogates import fit, inverse_solve

    # exactly linear: the linear family plans the smallest P with 1000 P + 5 M >= 1.1 x rate
    obs = [Observation(m, p, 1000.0 * p + 5.0 * m) for m in (512, 4096) for p in (2, 4, 8, 16, 32, 48)]
    unguarded = ExplorerSettings(min_marginal=0.0, max_extrapolation=1e6)
    plans = plans_by_family(obs, Features(), ("linear", "log", "sqrt"), 4096, 1e6, safety=1.1, min_slots=2,
                            max_slots=100_000, settings=unguarded)
    assert set(plans) == {"linear", "log", "sqrt"}
    for family, slots in plans.items():
        assert slots == inverse_solve(fit(family, obs, Features()), 4096, 1e6, safety=1.1, min_slots=2,
                                      max_slots=100_000)
    # with the guard rails (the default) a concave family's far plan is refused, the linear one kept
    guarded = plans_by_family(obs, Features(), ("linear", "log", "sqrt"), 4096, 1e6, safety=1.1, min_slots=2,
                              max_slots=100_000)
    assert guarded["linear"] == plans["linear"] and guarded["log"] is None
    assert plans["linear"] == math.ceil((1e6 * 1.1 - 5.0 * 4096) / 1000)  # 1,080
    # concave families bend away from the linear data and need far more slots, or never get there
    assert plans["sqrt"] is None or plans["sqrt"] > plans["linear"]


def test_family_spread():
    from streambed.model import family_spread

    assert family_spread({"linear": 100, "log": 100, "sqrt": 100}) == 1.0
    assert family_spread({"linear": 100, "log": 400, "sqrt": 200}) == 4.0
    assert family_spread({"linear": 100, "log": None, "sqrt": 200}) == math.inf
    assert family_spread({"linear": None, "log": None}) == 1.0


def _window(ops):
    from streambed.model import Measurement, OperatorMetrics

    return Measurement(1000.0, 1000.0, 0, 0, 0, 0, 0, 30, operators=tuple(
        OperatorMetrics(name, p, input_rate=rin, output_rate=rin, busyness=busy, busyness_max=busy, backpressure=0)
        for name, p, rin, busy in ops)).to_dict()


class _NoSingleTask:
    """An optimizer whose single-task metrics must not be needed."""

    def __init__(self, query):
        self.query = query
        self.asked = []

    def measured_single_task(self):
        return {}  # none measured: what is measured so far is read, never asked for

    def single_task(self, memory_mb):
        self.asked.append(memory_mb)
        from streambed.model import OperatorRates, SingleTaskMetrics

        return SingleTaskMetrics(self.query.name, memory_mb, tuple(
            (n, OperatorRates(1.0, 1.0)) for n in self.query.operators))


def test_the_plans_last_bids2_pass_takes_the_rates_of_the_largest_run_of_its_profile():
    """Section VI, model usage: "true processing rates and busyness levels collected for the largest
    number of cores in D with the selected resource profile"; a profile D never ran falls back to
    its single-task run."""
    from streambed.planner.exploration import Exploration, ExplorationPoint
    from streambed.model import Query, TestbedInfo

    q = Query("q", ("a", "b"), (("source", "a"), ("a", "b")))
    small = _window([("a", 1, 1000.0, 0.5), ("b", 1, 1000.0, 0.25)])
    large = _window([("a", 6, 1000.0, 0.2), ("b", 2, 1000.0, 0.5)])
    ex = Exploration([ExplorationPoint(4096, 2, 1000.0, {"a": 1, "b": 1}, 0, 0, 0, "corner", measurement=small),
                      ExplorationPoint(4096, 8, 1000.0, {"a": 6, "b": 2}, 0, 0, 0, "corner", measurement=large),
                      ExplorationPoint(512, 8, 0.0, {"a": 6, "b": 2}, 0, 0, 0, "corner", measurement=large)])
    co = _NoSingleTask(q)
    re_ = ResourceExplorer(co, TestbedInfo("t", 8, (512, 4096)), ExplorerSettings())
    metrics, origin = re_.final_metrics(ex, 4096)
    rates = dict(metrics.operators)
    assert rates["a"].true_rate == pytest.approx(1000 / 6 / 0.2)  # per task over busyness, at 8 slots
    assert rates["b"].true_rate == pytest.approx(1000 / 2 / 0.5)
    assert "8 slots" in origin and co.asked == []
    # 512 MB sustained nothing in D: its single-task run
    _, origin = re_.final_metrics(ex, 512)
    assert origin == "the single-task run" and co.asked == [512]


def test_a_single_task_configuration_asked_for_again_is_measured_again(tmp_path):
    """Section V: the cache serves BIDS2, but the explorer's explicit request for the single-task
    configuration is an evaluation (a repeated point reduces noise only if it is measured)."""
    from streambed.model import Budget

    ex_, ledger, est = explorer(tmp_path, "paper-q11-linear")
    with ledger:
        co = ex_.optimizer
        size = co.query.size
        first = co.optimize(Budget(size, 4096), "co00")
        assert est.calls == 1  # the single-task run is the answer
        again = co.optimize(Budget(size, 4096), "co01")
        assert est.calls == 2
        assert again.configuration == first.configuration
        assert ledger.has("co01/w0") and not ledger.has("co00/w0")


def test_guard_rails_stop_a_plan_where_the_model_is_no_longer_trusted():
    from streambed.planner.exploration import ExplorerSettings
    from streambed.planner.sizing import guarded_solve, trusted_slots
    from streambed.model import Features, Surrogate

    f = Features(memory="slot_mb", log="log")
    s = ExplorerSettings()
    linear = Surrogate("linear", 0.0, 1000.0, 0.0, f)
    assert trusted_slots(linear, 4096, 48, s)[0] == 50 * 48  # the extrapolation limit
    log = Surrogate("log", 0.0, 1e5, 0.0, f)
    limit, why = trusted_slots(log, 4096, 48, s)
    assert limit == pytest.approx(4 * 48, abs=2) and "gains less than 25 %" in why  # d/dP log P = 1/P
    sqrt = Surrogate("sqrt", 0.0, 1e5, 0.0, f)
    assert trusted_slots(sqrt, 4096, 48, s)[0] == pytest.approx(16 * 48.5, abs=2)  # a slot gains ~1/(2 sqrt(P + 0.5))
    flat = Surrogate("linear", 0.0, -5.0, 1e6, f)
    limit, why = trusted_slots(flat, 4096, 48, s)
    assert limit == 48 and "does not grow" in why
    # within the limit: planned; beyond: unreachable, with the most it supports and what to measure next
    assert guarded_solve(linear, 4096, 1e6, min_slots=2, measured_slots=48, settings=s).slots == 1100
    far = guarded_solve(log, 4096, 1e6, min_slots=2, measured_slots=48, settings=s)
    assert far.slots is None and far.max_rate == pytest.approx(1e5 * math.log(far.max_slots) / 1.1)
    assert "the most this plan supports" in far.unreachable and "measure larger budgets" in far.unreachable


def _point(slots, mst, configuration, memory=4096):
    from streambed.planner.exploration import ExplorationPoint

    return ExplorationPoint(memory, slots, mst, configuration, 0.0, math.nan, 0.0, "search")


def test_efficiency_is_the_largest_budgets_and_declines_where_the_measurements_do():
    from streambed.planner.sizing import efficiency

    predict = lambda p: 1000.0 * p.configuration["A"]  # noqa: E731 - a policy whose prediction is linear in A's tasks
    flat = [_point(p, 900.0 * p, {"A": p}) for p in (4, 16, 48)]
    eta, top, eta_top = efficiency(flat, 4096, predict)
    assert top == 48 and eta_top == pytest.approx(0.9) and eta(1000) == pytest.approx(0.9)
    # repeats of the largest budget: the lowest counts
    eta, _, eta_top = efficiency(flat + [_point(48, 800.0 * 48, {"A": 48})], 4096, predict)
    assert eta_top == pytest.approx(0.8)
    # eta falls from 1.0 at 4 tasks to 0.5 at 48: beyond, it keeps falling along its log trend
    falling = [_point(p, 1000.0 * p * (1 - 0.5 * math.log(p / 4) / math.log(12)), {"A": p}) for p in (4, 12, 48)]
    eta, _, eta_top = efficiency(falling, 4096, predict)
    assert eta_top == pytest.approx(0.5) and eta(480) < 0.5 and eta(48) == pytest.approx(0.5)
    # between the two largest budgets (a testbed's and a checkpoint's): linear in sqrt(2 ln P) from one to
    # the other, the scale of the slowest of P tasks' lag (explorer.spread)
    from streambed.planner.sizing import spread
    at_12 = 1 - 0.5 * math.log(3) / math.log(12)
    assert spread(24) == pytest.approx(math.sqrt(2 * math.log(24)))
    assert eta(24) == pytest.approx(at_12 + (0.5 - at_12) * (spread(24) - spread(12)) / (spread(48) - spread(12)))
    # beyond the largest budget: down along the trend fitted on sqrt(2 ln P), slower than along ln P; by
    # default the lag law (1 / eta linear in spread), the linear law on request
    slope = float(np.polyfit([spread(p) for p in (4, 12, 48)],
                             [1 - 0.5 * math.log(p / 4) / math.log(12) for p in (4, 12, 48)], 1)[0])
    assert 1 / eta(480) == pytest.approx(1 / 0.5 + (-slope / 0.5 ** 2) * (spread(480) - spread(48)))
    linear, _, _ = efficiency(falling, 4096, predict, law="linear")
    assert linear(480) == pytest.approx(0.5 + slope * (spread(480) - spread(48)))
    assert linear(480) < eta(480) < 0.5
    assert efficiency(flat, 512, predict) is None  # no measurement of that memory


def test_the_lag_law_keeps_the_measured_slope_and_never_reaches_zero():
    """sizing.lagged: beyond the largest budget the time per record (1 / eta) grows linearly in spread(P),
    with the slope measured there; the linear law falls to 0 where a steep decline is carried far."""
    from streambed.planner.sizing import lagged

    top, slope = 2.78, -0.39  # eta 0.34 at 48 slots, falling as a straggling window's did on the testbed
    h = 1e-6
    assert (lagged(0.34, slope, top, top + h) - 0.34) / h == pytest.approx(slope, rel=1e-4)
    assert lagged(0.34, slope, top, top) == pytest.approx(0.34)
    assert lagged(0.34, slope, top, top + 0.87, law="linear") == pytest.approx(0.0, abs=1e-3)
    far = [lagged(0.34, slope, top, top + d) for d in (0.2, 0.87, 5.0, 50.0)]
    assert all(a > b > 0 for a, b in zip(far, far[1:]))
    assert lagged(0.34, slope, top, top + 0.2) == pytest.approx(0.34 / (1 + 0.39 / 0.34 * 0.2))
    # a gentle decline: the two laws agree within 2 % out to 1,000 slots (spread 3.72 against 2.78)
    assert lagged(0.9, -0.1, top, 3.72) == pytest.approx(lagged(0.9, -0.1, top, 3.72, law="linear"), rel=0.02)
    # never raised; nothing to lower below zero
    assert lagged(0.5, 0.05, top, 5.0) == 0.5 and lagged(0.0, -0.1, top, 5.0) == 0.0


def test_the_efficiencys_decline_is_pooled_over_memories_each_at_its_own_level():
    """pooled_decline: one slope along spread(P) for every memory, fitted on the measurements centred
    per memory, so that one memory's noisy pair of budgets does not set its own decline; a memory
    with one budget adds nothing. efficiency(decline=...) then lowers every memory by that slope."""
    from streambed.planner.sizing import efficiency, pooled_decline, spread

    x4, x48 = spread(4), spread(48)
    # two memories with the same true slope -0.02 at levels 0.95 and 0.80: the pooled slope is it
    a = [(4, 0.95 - 0.02 * x4), (48, 0.95 - 0.02 * x48)]
    b = [(4, 0.80 - 0.02 * x4), (48, 0.80 - 0.02 * x48)]
    assert pooled_decline([a, b]) == pytest.approx(-0.02)
    # opposite noisy slopes (q11 on the sim: 0.988 -> 0.933 at 4 GB, 0.951 -> 0.983 at 512 MB) partly cancel
    q11 = pooled_decline([[(4, 0.988), (48, 0.933)], [(4, 0.951), (48, 0.983)]])
    own = (0.933 - 0.988) / (x48 - x4)
    assert own < q11 < 0
    assert q11 == pytest.approx(((0.933 - 0.988) + (0.983 - 0.951)) / 2 / (x48 - x4))
    # a single budget has no slope; none at all gives None (each memory then keeps its own)
    assert pooled_decline([a, [(48, 0.5)]]) == pytest.approx(-0.02)
    assert pooled_decline([[(48, 0.5)]]) is None

    predict = lambda p: 1000.0 * p.configuration["A"]  # noqa: E731
    steep = [_point(4, 1000.0 * 4, {"A": 4}), _point(48, 500.0 * 48, {"A": 48})]
    eta_own, _, _ = efficiency(steep, 4096, predict)
    eta_pooled, _, eta_top = efficiency(steep, 4096, predict, decline=-0.01)
    assert eta_top == pytest.approx(0.5) and eta_pooled(48) == pytest.approx(0.5)
    assert 1 / eta_pooled(2000) == pytest.approx(1 / 0.5 + 0.01 / 0.5 ** 2 * (spread(2000) - x48))
    assert eta_own(2000) < eta_pooled(2000)
    # a rising pooled slope never raises eta beyond the largest budget
    assert efficiency(steep, 4096, predict, decline=0.05)[0](2000) == pytest.approx(0.5)


def test_a_slot_slope_per_memory_where_cross_validation_prefers_it():
    """select_features: a memory-bound query (small memories flat in P, 4 GB steep) gets the
    interaction; a query whose memory does not change a slot's worth keeps Eq. 6-8."""
    from streambed.planner.selection import select_features
    from streambed.model import FAMILIES, Features, Observation

    rng = np.random.default_rng(3)
    budgets = [(m, p) for m in (512, 1024, 2048, 4096) for p in (9, 14, 24, 33, 48)]
    bound = [Observation(m, p, (m / 4096) ** 2 * 170_000 * p * (1 + 0.02 * rng.standard_normal())) for m, p in budgets]
    plain = [Observation(m, p, (40_000 * p + 30 * m) * (1 + 0.02 * rng.standard_normal())) for m, p in budgets]
    assert select_features(bound, Features(), FAMILIES).interaction
    assert not select_features(plain, Features(), FAMILIES).interaction


def test_the_plans_own_configuration_gets_the_slots_it_needs():
    from streambed.planner.sizing import configured_slots
    from streambed.model import OperatorRates, SingleTaskMetrics
    from streambed.planner.policies import policy_named

    m = SingleTaskMetrics("q", 4096, (("A#1", OperatorRates(1000.0, 1.0, keyed=True)),))
    policy = policy_named("bids2-skew")
    # 128 key groups: 43 tasks work like 42.7, 64 like 64: 50,000 events/s needs 64 tasks at eta 1
    slots, most = configured_slots(policy, m, lambda p: 1.0, 50_000, 43, 1000)
    assert slots == 64 and most >= 50_000
    slots, _ = configured_slots(policy, m, lambda p: 1.0, 40_000, 43, 1000)
    assert slots == 43  # the model's budget suffices as it is
    assert configured_slots(policy, m, lambda p: 0.5, 1e9, 43, 1000)[0] is None


def test_the_safety_factor_past_a_key_group_step_costs_its_share_of_slots_not_double():
    from streambed.model import OperatorRates, SingleTaskMetrics
    from streambed.planner.policies import policy_named
    from streambed.planner.sizing import configured_slots, margin_budget

    m = SingleTaskMetrics("q", 4096, (("A#1", OperatorRates(1000.0, 1.0, keyed=True)),))
    policy = policy_named("bids2-skew")
    # 128 key groups: 64 tasks (2 groups each) reach 60,000 events/s; 1.1 x that waits for Flink's default
    # max parallelism to reach 256 groups (86 tasks, 3 groups each)
    exact, _ = configured_slots(policy, m, lambda p: 1.0, 60_000, 43, 1000)
    on_rate, _ = configured_slots(policy, m, lambda p: 1.0, 66_000, 43, 1000)
    assert (exact, on_rate) == (64, 86)
    assert margin_budget(on_rate, exact, 1.1, 1000) == 71  # 1.1 x 64 slots, not 1.34 x
    assert margin_budget(70, exact, 1.1, 1000) == 70  # a margin that costs less than the factor stays
    assert margin_budget(None, exact, 1.1, 1000) == 71  # the factor's rate out of reach, the rate within it
    assert margin_budget(None, 995, 1.1, 1000) == 1000  # never past the trusted limit
    assert margin_budget(128, None, 1.1, 1000) == 128 and margin_budget(None, None, 1.1, 1000) is None
    # that many slots' configuration short of the rate (a key-group step down): the first budget from there that
    # reaches it, no further than the factor on the rate; none: the factor stays on the rate
    assert margin_budget(on_rate, exact, 1.1, 1000, lambda lo, hi: 75 if lo <= 75 <= hi else None) == 75
    assert margin_budget(on_rate, exact, 1.1, 1000, lambda lo, hi: None) == on_rate
    assert margin_budget(None, exact, 1.1, 1000, lambda lo, hi: None) is None
    seen = []
    margin_budget(None, exact, 1.1, 1000, lambda lo, hi: seen.append((lo, hi)))
    assert seen == [(71, 1000)]
    first = margin_budget(on_rate, exact, 1.1, 1000,
                          lambda lo, hi: configured_slots(policy, m, lambda p: 1.0, 60_000, lo, hi)[0])
    assert first == 71 and policy.configure(m, 71).predicted_rate >= 60_000


def test_the_safety_factor_on_the_slots_counts_from_the_key_groups_that_reach_the_rate_on_fewer():
    import math
    from dataclasses import replace

    from streambed.model import OperatorRates, SingleTaskMetrics
    from streambed.planner.policies import policy_named
    from streambed.planner.sizing import configured_slots, margin_over_choices

    default = SingleTaskMetrics("q", 4096, (("A#1", OperatorRates(1000.0, 1.0, keyed=True)),))
    fine = replace(default, max_parallelism=32768)
    policy = policy_named("bids2-skew")

    def choice(m):
        exact = configured_slots(policy, m, lambda p: 1.0, 60_000, 43, 1000)[0]
        return exact, lambda lo, hi: configured_slots(policy, m, lambda p: 1.0, 60_000, lo, hi)[0]

    (coarse, _), (finer, _) = choice(default), choice(fine)
    assert finer < coarse == 64  # 128 default groups step at 64 tasks; 32,768 groups reach 60,000 on fewer
    budget, exact, chosen = margin_over_choices(86, 1.1, 1000, [choice(default), choice(fine)])
    assert (exact, chosen) == (finer, 1) and budget < 71 and policy.configure(fine, budget).predicted_rate >= 60_000
    # the default groups alone: 1.1 x their 64; a choice that only gives back the factor on the rate is not taken
    assert margin_over_choices(86, 1.1, 1000, [choice(default)]) == (71, 64, 0)
    assert margin_over_choices(86, 1.1, 1000, [choice(default), (None, lambda lo, hi: None)]) == (71, 64, 0)
    # a margin on the rate that costs less than the default groups' factor: still the finer groups' fewer
    assert margin_over_choices(70, 1.1, 1000, [choice(default), choice(fine)]) == (math.ceil(1.1 * finer), finer, 1)


def test_the_risk_bound_asks_for_more_slots_the_noisier_the_measurements():
    from streambed.planner.sizing import risk_of, risk_solve
    from streambed.model import Features, Observation
    from streambed.planner.surrogates import bootstrap_fits

    rng = __import__("numpy").random.default_rng(3)
    plans = []
    for noise in (0.01, 0.10):
        obs = [Observation(4096, p, 1000.0 * p * (1 + noise * rng.standard_normal())) for p in (4, 8, 16, 24, 32, 40, 48)]
        fits = bootstrap_fits("linear", obs, Features(), samples=300, seed=1)
        assert fits == bootstrap_fits("linear", obs, Features(), samples=300, seed=1)  # from the seed alone
        slots = risk_solve(fits, 4096, 1e6, 0.05, 2, 5000)
        assert risk_of(fits, 4096, slots, 1e6) <= 0.05 < risk_of(fits, 4096, slots - 1, 1e6)
        plans.append(slots)
    assert plans[0] < plans[1]


@pytest.mark.parametrize("risk", [None, 0.05])
def test_the_plan_within_a_cluster_serves_the_highest_rate_that_fits_it(tmp_path, risk):
    """plan_within reads the plan backwards: its budget fits the slots given, and a few per cent more
    rate no longer does; an exploration read back from its JSON plans the same."""
    from dataclasses import replace as with_

    from streambed.planner.exploration import Exploration

    ex_, ledger, _ = explorer(tmp_path, "paper-q5-log")
    ex_.settings = with_(ex_.settings, risk=risk, bootstrap_samples=100)
    with ledger:
        ex = ex_.explore([4096])
    for slots in (20, 60):
        plan = ex_.plan_within(ex, 4096, slots)
        entry = plan.entry(4096)
        assert entry.memory_mb == 4096 and entry.slots <= slots
        assert sum(entry.configuration.values()) == entry.slots
        more = ex_.plan(ex, plan.rate * 1.03, [4096]).entry(4096)
        assert more.slots is None or more.slots > slots
    assert ex_.plan_within(Exploration.from_dict(ex.to_dict()), 4096, 60) == plan
    with pytest.raises(UserError, match="one per operator"):
        ex_.plan_within(ex, 4096, 2)


def test_a_checkpoint_measures_where_the_families_diverge_most():
    from streambed.planner.checkpoints import checkpoint_budget
    from streambed.planner.surrogates import fit

    # a curve that bends: the three families agree on the testbed and part beyond it
    obs = [Observation(4096, p, 1e5 * math.sqrt(p)) for p in (4, 8, 16, 24, 32, 48)]
    families = ("linear", "log", "sqrt")
    fits = [fit(f, obs, Features()) for f in families]

    def spread(p):
        pred = [float(m.predict(4096, p)) for m in fits]
        return max(pred) / min(pred)

    best = checkpoint_budget(obs, Features(), families, 4096, 49, 2000)
    assert 49 <= best <= 2000
    assert all(spread(best) >= spread(p) for p in (49, 100, 300, 1000, 2000))
    assert checkpoint_budget(obs, Features(), families, 4096, 49, 120) <= 120


def test_a_checkpoint_looks_no_further_than_the_families_answers():
    from streambed.planner.checkpoints import checkpoint_range
    from streambed.model import PlanEntry

    agreed = PlanEntry(4096, 120, 1.0, {"a": 120}, 1.0, {"linear": 100, "log": 300, "sqrt": 150}, model_slots=100)
    assert checkpoint_range(agreed, 1000) == 300 and checkpoint_range(agreed, 200) == 200
    split = PlanEntry(4096, None, None, None, None, {"linear": 100, "log": None, "sqrt": 150})
    assert checkpoint_range(split, 1000) == 150  # where some family reaches the rate: up to its answer
    nowhere = PlanEntry(4096, None, None, None, None, {"linear": None, "log": None, "sqrt": None})
    assert checkpoint_range(nowhere, 1000) == 1000


def test_a_checkpoint_where_the_families_disagree_refits_that_memory_on_its_own_points(tmp_path):
    """paper-q5-log planned far beyond a 24-slot testbed: log says unreachable, linear plans, so one
    staged measurement on a 400-slot cluster; that memory's plan then rests on its own points."""
    from streambed.planner.exploration import CHECKPOINT

    ex_, ledger, est = explorer(tmp_path, "paper-q5-log", max_slots=24)
    with ledger:
        ex = ex_.explore([4096])
        rate = 6 * max(p.mst for p in ex.points)
        before = ex_.plan(ex, rate, [4096])
        assert before.entry(4096).model is None
        with pytest.raises(UserError, match="must exceed the largest budget measured on the testbed"):
            ex_.checkpoint(ex, before, est, 24)
        staged = CapacityEstimator(SimTestbed(load_profile("paper-q5-log"), SimSettings(max_slots=400)), ledger, QUICK)
        points = ex_.checkpoint(ex, before, staged, 400)
    assert [p.phase for p in points] == [CHECKPOINT] and 24 < points[0].slots <= 400
    assert ex.points[-1] is points[0] and staged.calls == 1
    model, obs, local = ex_.model_for(ex, 4096)
    assert local
    assert max(o.slots for o in obs) == points[0].slots
    after = ex_.plan(ex, rate, [4096]).entry(4096)
    assert after.model == model.to_dict()
    assert after.max_slots >= 4 * points[0].slots  # trusted from the checkpoint on, not the testbed
    # D's own model is unchanged: memories without a checkpoint plan as before
    assert ex.model == before.model


def test_a_checkpoint_on_a_cluster_of_n_slots_measures_no_more_than_n_for_any_memory(tmp_path):
    """Each memory's checkpoint lies beyond the testbed's budgets, not beyond the memory measured before it:
    counted with them, a checkpoint on the 436 slots a plan named asked 437 for its second memory."""
    ex_, ledger, _ = explorer(tmp_path, "paper-q5-log", max_slots=24)
    with ledger:
        ex = ex_.explore([1024, 4096])
        rate = 6 * max(p.mst for p in ex.points)
        before = ex_.plan(ex, rate, [1024, 4096])
        staged = CapacityEstimator(SimTestbed(load_profile("paper-q5-log"), SimSettings(max_slots=120)), ledger, QUICK)
        named = {m: ex_.checkpoint_at(ex, before.entry(m), ex_.model_for(ex, m)[1], 120) for m in (1024, 4096)}
        points = ex_.checkpoint(ex, before, staged, 120)
    assert len(points) == 2 and all(24 < p.slots <= 120 for p in points)
    assert {p.memory_mb: p.slots for p in points} == named  # what a plan names is where the checkpoint measures


def test_a_checkpoint_that_held_the_rate_is_the_plan_where_the_model_says_unreachable():
    from streambed.model import PlanEntry
    from streambed.planner.checkpoints import held_at_checkpoint
    from streambed.planner.exploration import CHECKPOINT, ExplorationPoint

    def point(slots, mst, memory_mb=4096):
        return ExplorationPoint(memory_mb, slots, mst, {"a": slots - 1, "b": 1}, 2 * mst, 0.0, 600.0, CHECKPOINT,
                                max_parallelism=4096 if slots > 500 else None)

    rate = 1e6
    unreachable = PlanEntry(4096, None, None, None, None, {"linear": 420, "log": None, "sqrt": 900},
                            unreachable="unreachable within 200 slots: no configuration supports it")
    staged = [point(600, 1.3e6), point(520, 1.12e6), point(450, 1.05e6), point(300, 2e6, memory_mb=2048)]
    planned = held_at_checkpoint(unreachable, staged, rate, safety=1.10)
    assert (planned.slots, planned.configuration, planned.predicted_mst) == (520, {"a": 519, "b": 1}, 1.12e6)
    assert planned.max_parallelism == 4096 and planned.unreachable is None and planned.risk is None
    assert "measured at a checkpoint: 520 slots" in planned.configured_from
    assert "no configuration supports it" in planned.configured_from  # the model's own answer is kept
    assert planned.by_family == unreachable.by_family
    # 1.05 x the rate does not hold it with the safety factor; another memory's checkpoint is not this one's
    assert held_at_checkpoint(unreachable, staged[2:], rate, safety=1.10) == unreachable
    solved = PlanEntry(4096, 700, 1.2e6, {"a": 699, "b": 1}, 2e6)
    assert held_at_checkpoint(solved, staged, rate, safety=1.10) == solved  # a plan stands as solved


def test_the_family_that_predicted_the_checkpoint_best_is_kept():
    from streambed.planner.checkpoints import checkpoint_family

    families = ("linear", "log", "sqrt")
    testbed = [Observation(4096, p, 1e5 * math.sqrt(p) + 1e3 * (-1) ** p) for p in (4, 8, 16, 24, 32, 48)]
    for truth, family in ((lambda p: 1e5 * math.sqrt(p), "sqrt"), (lambda p: 1e5 * math.log(p) * 2.4, "log")):
        assert checkpoint_family(testbed, [Observation(4096, 500, truth(500))], Features(), families) == family
    assert checkpoint_family(testbed[:1], [Observation(4096, 500, 1e6)], Features(), families) is None


def test_a_key_the_testbed_cannot_see_is_checked_at_the_plans_scale(tmp_path):
    """q11 planned 30 x beyond a 24-slot testbed: the families agree, but a key too faint for 21 window
    tasks could hold the planned ones, and the plan says so (key_warning). A checkpoint then measures
    there; its tasks read the keys at that scale, and the plan's key concentration comes from them too."""
    from streambed.planner.exploration import CHECKPOINT
    from streambed.model.measurement import Measurement, key_skews

    ex_, ledger, _ = explorer(tmp_path, "q11", max_slots=24)
    with ledger:
        ex = ex_.explore([4096])
        rate = 30 * max(p.mst for p in ex.points)
        before = ex_.plan(ex, rate, [4096]).entry(4096)
        assert before.slots is not None and "GroupWindowAggregate#2: a key with up to" in before.key_warning
        assert before.risk >= caveats.HIDDEN_KEY_RISK  # the key may exist: the risk says so
        staged = CapacityEstimator(SimTestbed(load_profile("q11"), SimSettings(max_slots=1000)), ledger, QUICK)
        points = ex_.checkpoint(ex, ex_.plan(ex, rate, [4096]), staged, 1000)
    assert [p.phase for p in points] == [CHECKPOINT] and points[0].slots > 24
    widest = max(Measurement.from_dict(p.measurement).operator("GroupWindowAggregate#2").parallelism
                 for p in ex.points if p.measurement)
    assert widest > 100  # the checkpoint's window tasks
    q = ex_.optimizer.query
    runs = [(Measurement.from_dict(p.measurement), p.max_parallelism) for p in ex.points if p.measurement]
    metrics, _ = ex_.final_metrics(ex, 4096)
    skew = dict(metrics.operators)["GroupWindowAggregate#2"].key_skew
    assert skew == key_skews(q, runs)["GroupWindowAggregate#2"] and skew.tested_parallelism == widest
    after = ex_.plan(ex, rate, [4096]).entry(4096)
    # read at the checkpoint's scale, a key that could hold the plan would have shown
    assert after.key_warning is None or f"among the {widest:,} tasks measured" in after.key_warning


KEY_GROUP_STEPS = """\
name: key-group-steps
description: "An even-keyed aggregate whose testbed runs use Flink's default 128 key groups"
defaults: {buffer_records: 20000, noise: 0.0}
operators:
  - {name: "Calc#1", kind: map, rate: 2000000, inputs: [{from: source, selectivity: 1.0, partitioning: rebalance}]}
  - name: "W#2"
    kind: aggregate
    rate: 200000
    inputs: [{from: "Calc#1", selectivity: 1.0, partitioning: hash}]
    keys: {count: 90000, zipf: 0.0}
  - {name: "Calc#3", kind: map, rate: 2000000, inputs: [{from: "W#2", selectivity: 0.01, partitioning: rebalance}]}
  - {name: "Sink#4", kind: sink, rate: 2000000, inputs: [{from: "Calc#3", selectivity: 1.0, partitioning: rebalance}]}
"""


def test_key_group_steps_on_the_testbed_do_not_bend_the_model(tmp_path):
    """128 key groups over the 22-42 tasks of D's budgets give the busiest 1.05-1.16 x the mean: the raw
    MSTs bend down as budgets grow, a sqrt fit on them asked 3.9 x the slots at 5 x the testbed. Fitted on
    the MSTs without the steps (ResourceExplorer.observations), the plan is the truth's within 1.25 x."""
    from streambed.model import Configuration
    from streambed.testbed.sim.truth import GroundTruth

    path = tmp_path / "key-group-steps.yaml"
    path.write_text(KEY_GROUP_STEPS)
    prof = load_profile(str(path))
    tb = SimTestbed(prof, SimSettings(seed=0, max_slots=48))
    quick = Timing("q", warmup_s=20, cooldown_s=5, cooldown_rate_per_source=200, ramp_s=10, observe_s=20,
                   max_iterations=10, warmup_observe_s=10)
    with Ledger.open(tmp_path / "l", "plan", {}, resume=False) as ledger:
        opt = ConfigurationOptimizer(CapacityEstimator(tb, ledger, quick), tb.query(prof.name))
        explorer = ResourceExplorer(opt, tb.info(), ExplorerSettings(seed=0, max_measurements=8))
        ex = explorer.explore([4096])
        assert max(p.configuration["W#2"] for p in ex.points) > 20 and all(p.max_parallelism is None for p in ex.points)
        gains = [o.mst / p.mst for o, p in zip(explorer.observations(ex), ex.points)]
        assert max(gains) > 1.04 and min(gains) >= 1.0 - 1e-9
        rate = 5 * max(p.mst for p in ex.points)
        entry = explorer.plan(ex, rate, [4096]).entry(4096)
    truth = GroundTruth(prof)
    least = truth.least_budget(rate, 4096)[0]
    own = truth.configuration_mst(Configuration.of(opt.query, entry.configuration, entry.max_parallelism), 4096).mst
    assert own >= rate and entry.slots <= 1.25 * least


class _ShortEstimator:
    """An estimator whose every measurement reads ``share`` of what the model predicted: a model refuted at
    each budget it proposes."""

    def __init__(self, share):
        self.share, self.budgets = share, []

    def estimate(self, query, budget, configuration, label):
        from types import SimpleNamespace

        self.budgets.append((budget.slots, budget.memory_mb))
        mst = self.share * self.predicted
        d = {"mst": mst, "testbed_seconds": 60.0, "windows": [], "measurement": None}
        return SimpleNamespace(mst=mst, to_dict=lambda: d)


def test_a_plan_the_testbed_holds_is_measured_and_the_measurement_decides(tmp_path):
    """Within the testbed the plan's own configuration is measured (confirm): a confirmed plan stays; one
    refuted confirm_rounds times gives way to the smallest budget D measured at the rate, in the
    configuration measured there; with none, the plan says so and its risk is 1."""
    from dataclasses import replace as with_

    ex_, ledger, est = explorer(tmp_path, max_slots=600)
    ex_.settings = with_(ex_.settings, bootstrap_samples=50)
    with ledger:
        ex = ex_.explore([4096])
        rate = 0.5 * max(p.mst for p in ex.points)
        first = ex_.plan(ex, rate, [4096]).entry(4096)
        assert first.slots < 600
        confirmed = ex_.confirmed_plan(ex, rate, [4096], est).entry(4096)
    # the linear profile's model is right: one measurement confirms it, nothing moves
    confirms = [p for p in ex.points if p.phase == "confirm"]
    assert [(p.slots, p.memory_mb) for p in confirms] == [(first.slots, 4096)] and confirms[0].mst >= rate
    assert confirmed.slots == first.slots and "measured on the testbed at" in confirmed.configured_from

    ex.points = [p for p in ex.points if p.phase != "confirm"]
    short = _ShortEstimator(0.5)
    short.predicted = rate
    refuted = ex_.confirmed_plan(ex, rate, [4096], short).entry(4096)
    assert len(short.budgets) == ex_.settings.confirm_rounds
    # each budget measured short is followed by a larger one (the model's next answer, or grown by the shortfall)
    assert all(a[0] < b[0] for a, b in zip(short.budgets, short.budgets[1:])), short.budgets
    held = min((p for p in ex.points if p.phase != "confirm" and p.mst >= rate), key=lambda p: p.slots)
    assert (refuted.slots, refuted.configuration, refuted.predicted_mst) == (held.slots, held.configuration, held.mst)
    assert refuted.configured_from.startswith("measured on the testbed")

    # no budget measured the rate (D without its budgets that did): the model's entry stays, saying so,
    # at a risk of 1
    ex.points = [p for p in ex.points if p.phase != "confirm" and p.mst < rate]
    short.budgets, short.share = [], 0.97  # just short: the refitted model stays within the testbed
    entry = ex_.confirmed_plan(ex, rate, [4096], short).entry(4096)
    assert len(short.budgets) == ex_.settings.confirm_rounds and ex_.holds(entry)
    assert entry.risk == 1.0 and any("no budget of 4096 MB measured the rate" in u for u in entry.unseen)
    ex_.settings = with_(ex_.settings, confirm_rounds=0)
    assert ex_.confirmed_plan(ex, rate, [4096], short).entry(4096).slots == ex_.plan(ex, rate, [4096]).entry(4096).slots


def test_a_budget_measured_short_grows_by_its_shortfall_and_the_safety_factor():
    from streambed.planner.sizing import confirm_step

    assert confirm_step(35, 587_199, 598_335, 1.10) == 40  # ceil(35 x 1.10 x 1.019)
    assert confirm_step(100, 50.0, 100.0, 1.0) == 200
    assert confirm_step(10, 99.99, 100.0, 1.0) == 11  # at least one slot more
    assert confirm_step(10, 0.0, 100.0, 1.1) == 20  # nothing measured: twice the slots

"""Each effect the StreamBed paper names as what makes capacity planning hard, on small profiles,
measured through the Testbed protocol of the simulated testbed."""

import numpy as np
import pytest

from streambed.errors import JobRestarted
from streambed.model import Budget, Configuration
from streambed.testbed import base
from streambed.testbed.sim import formulas
from streambed.testbed.sim.capacity import CapacityModel
from streambed.testbed.sim.partitioning import keyed_streams
from streambed.testbed.sim.profile import parse_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed


def chain(*, map_rate=100_000, agg=None, sink_rate=1e7, source_max=None):
    """source -> map -> [agg] -> sink."""
    ops = [{"name": "map", "kind": "map", "rate": map_rate, "inputs": [{"from": "source"}]}]
    last = "map"
    if agg:
        ops.append({"name": "agg", "kind": agg.pop("kind", "aggregate"), "inputs": [
            {"from": "map", "selectivity": agg.pop("selectivity", 1.0), "partitioning": agg.pop("partitioning", "hash")}],
            **agg})
        last = "agg"
    ops.append({"name": "sink", "kind": "sink", "rate": sink_rate, "inputs": [{"from": last}]})
    data = {"name": "toy", "operators": ops}
    if source_max:
        data["source"] = {"max_rate": source_max}
    return parse_profile(data, "toy.yaml")


def run(profile, parallelism, rate, *, memory=4096, noise=False, seed=0, warmup=60, window=60, sample=5.0):
    tb = SimTestbed(profile, SimSettings(max_slots=1000, memory_per_slot=(512, 1024, 4096), noise=noise, seed=seed,
                                         sample_period=sample))
    q = tb.query(profile.name)
    cfg = Configuration.of(q, parallelism)
    tb.prepare(Budget(cfg.slots, memory))
    r = tb.start(profile.name, cfg, rate)
    tb.wait(r, warmup)
    return tb, r, tb.observe(r, window)


def test_sim_testbed_implements_the_protocol():
    assert isinstance(SimTestbed(chain()), base.Testbed)


def test_below_capacity_the_source_achieves_its_target_and_nothing_piles_up():
    _, _, m = run(chain(), {"map": 1, "sink": 1}, 60_000)
    assert m.achieved_rate == pytest.approx(60_000, rel=1e-6)
    assert m.pending_end == pytest.approx(0, abs=1)
    assert m.sustained()


def test_above_capacity_achieved_is_capacity_and_pending_records_grow_linearly():
    tb, r, m = run(chain(), {"map": 1, "sink": 1}, 150_000)
    assert m.achieved_rate == pytest.approx(100_000, rel=0.005)
    assert not m.sustained()
    assert m.pending_slope == pytest.approx(50_000, rel=0.02)
    # linear: the next window adds the same amount again
    m2 = tb.observe(r, 60)
    assert (m2.pending_end - m2.pending_start) == pytest.approx(m.pending_end - m.pending_start, rel=0.02)
    busy = m.operator("map")
    assert busy.busyness == pytest.approx(1.0, abs=0.01)


def test_noise_keeps_achieved_near_capacity():
    _, _, m = run(chain(), {"map": 2, "sink": 1}, 400_000, noise=True, window=300)
    assert m.achieved_rate == pytest.approx(200_000, rel=0.03)


def test_skew_limits_a_keyed_operator_to_what_its_most_loaded_task_allows():
    skewed = chain(agg={"rate": 20_000, "keys": {"count": 50, "zipf": 1.0}}, map_rate=1e6)
    even = chain(agg={"rate": 20_000, "keys": {"count": 100_000, "zipf": 0.0}}, map_rate=1e6)
    p = 4
    max_share = keyed_streams(skewed)["agg"].max_share(p)
    assert max_share > 0.3  # a hot key makes one task carry far more than 1/4
    _, _, m = run(skewed, {"map": 1, "agg": p, "sink": 1}, 200_000)
    assert m.achieved_rate == pytest.approx(20_000 / max_share, rel=0.01)
    # the most loaded task is saturated while others idle
    agg = m.operator("agg")
    assert agg.busyness_max == pytest.approx(1.0, abs=0.02)
    assert agg.busyness < 0.8
    _, _, m_even = run(even, {"map": 1, "agg": p, "sink": 1}, 200_000)
    assert m_even.achieved_rate > 1.5 * m.achieved_rate
    assert m_even.achieved_rate == pytest.approx(p * 20_000, rel=0.03)


def test_memory_below_the_working_set_slows_a_stateful_operator():
    state = {"working_set_mb": 300, "bytes_per_record": 500, "retention_s": 10, "miss_penalty": 20,
             "miss_exponent": 1.0, "warmup_s": 1, "warmup_speedup": 1.0}
    prof = chain(agg={"rate": 50_000, "keys": {"count": 1000, "zipf": 0.0}, "state": state})
    cfg = {"map": 1, "agg": 1, "sink": 1}
    _, _, big = run(prof, cfg, 200_000, memory=4096)
    _, _, small = run(prof, cfg, 200_000, memory=1024, window=120)
    assert big.achieved_rate == pytest.approx(50_000, rel=0.01)
    expected = formulas.sustainable_task_rate(50_000, 1024 * prof.state_fraction, 300, 500, 10, 20, 1.0)
    assert expected < 0.8 * 50_000
    assert small.achieved_rate == pytest.approx(expected, rel=0.03)
    # and less memory still is worse
    _, _, tiny = run(prof, cfg, 200_000, memory=512, window=120)
    assert tiny.achieved_rate < small.achieved_rate


def test_a_fresh_job_accepts_more_than_its_steady_capacity_during_warm_up():
    state = {"working_set_mb": 50, "bytes_per_record": 0, "retention_s": 10, "warmup_s": 60, "warmup_speedup": 1.4}
    prof = chain(agg={"rate": 50_000, "keys": {"count": 1000, "zipf": 0.0}, "state": state})
    tb, r, early = run(prof, {"map": 1, "agg": 1, "sink": 1}, 100_000, warmup=0, window=20)
    tb.wait(r, 600)
    steady = tb.observe(r, 60)
    assert steady.achieved_rate == pytest.approx(50_000, rel=0.01)
    assert early.achieved_rate > 1.15 * steady.achieved_rate


def test_empty_buffers_absorb_a_burst_above_capacity_at_start():
    prof = parse_profile({"name": "toy", "operators": [
        {"name": "map", "kind": "map", "rate": 100_000, "buffer_records": 200_000, "inputs": [{"from": "source"}]},
        {"name": "sink", "kind": "sink", "rate": 1e7, "inputs": [{"from": "map"}]}]}, "toy.yaml")
    tb, r, first = run(prof, {"map": 1, "sink": 1}, 300_000, warmup=0, window=1.0, sample=1.0)
    # in the first second the source emits more than the map's capacity: its empty buffer fills
    assert first.achieved_rate > 100_000 + 0.5 * 200_000
    later = tb.observe(r, 30)
    assert later.achieved_rate == pytest.approx(100_000, rel=0.01)


def test_same_seed_same_series_and_another_seed_another():
    prof = chain(agg={"rate": 30_000, "keys": {"count": 1000, "zipf": 0.5}})
    cfg = {"map": 1, "agg": 2, "sink": 1}

    def series(seed):
        tb, r, _ = run(prof, cfg, 70_000, noise=True, seed=seed, warmup=30, window=120)
        s = tb.engine(r).samples
        return np.array(s.emitted), np.array(s.busy_ms_per_s)

    a, b, c = series(7), series(7), series(8)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[1], c[1])


def test_window_bursts_give_a_saw_tooth_load_downstream():
    prof = parse_profile({"name": "win", "operators": [
        {"name": "map", "kind": "map", "rate": 1e6, "inputs": [{"from": "source"}]},
        {"name": "win", "kind": "window", "rate": 100_000, "keys": {"count": 10_000, "zipf": 0},
         "inputs": [{"from": "map", "partitioning": "hash"}],
         "window": {"size_s": 10, "slide_s": 10, "fire_cost_us": 0.1}},
        {"name": "join", "kind": "join", "rate": 40_000, "inputs": [{"from": "win", "selectivity": 0.5}]},
        {"name": "sink", "kind": "sink", "rate": 1e7, "inputs": [{"from": "join"}]},
    ]}, "win.yaml")
    tb, r, m = run(prof, {"map": 1, "win": 1, "join": 1, "sink": 1}, 50_000, warmup=20, window=60, sample=1.0)
    assert m.sustained()
    busy = np.array(tb.engine(r).samples.busy_ms_per_s)[-60:]  # ms per second, as Flink's busyTimeMsPerSecond
    join, mapper = busy[:, 2], busy[:, 0]
    # the join digests each 10-s burst in about 25k/40k = 6 s, then idles: saw-tooth
    assert join.max() > 950 and join.min() < 50
    assert 500 < join.mean() < 750
    assert mapper.std() < 10  # upstream of the window the load is flat
    # the burst comes every slide: strong autocorrelation at a lag of 10 samples
    z = join - join.mean()
    assert np.dot(z[:-10], z[10:]) / np.dot(z, z) > 0.7


def straggling_window(tail):
    """source -> map -> tumbling window (8 tasks) -> sink; firings stretched by 1 + xi, xi of mean 0.5
    and Pareto tail index ``tail`` (inf: every firing stretched by exactly the mean, no straggler)."""
    return parse_profile({"name": "strag", "operators": [
        {"name": "map", "kind": "map", "rate": 1e6, "inputs": [{"from": "source"}]},
        {"name": "win", "kind": "window", "rate": 50_000, "keys": {"count": 100_000, "zipf": 0},
         "inputs": [{"from": "map", "partitioning": "hash"}], "buffer_records": 50_000,
         "window": {"size_s": 10, "slide_s": 10, "fire_cost_us": 1, "straggler_mean": 0.5,
                    "straggler_tail": tail, "straggler_cap": 20}},
        {"name": "sink", "kind": "sink", "rate": 1e7, "inputs": [{"from": "win"}]},
    ]}, "strag.yaml")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_window_stragglers_lower_the_rate_a_windowed_operator_sustains(seed):
    cfg = {"map": 1, "win": 8, "sink": 1}
    with_tail, without = straggling_window(2.0), straggling_window(float("inf"))
    # Same mean firing cost, so the same steady capacity of the window operator (about 365k events/s);
    # 330k is 90 % of it.
    rate = 330_000
    operator_cap = CapacityModel(without, 4096).operator_capacity("win", 8)
    assert operator_cap == pytest.approx(CapacityModel(with_tail, 4096).operator_capacity("win", 8))
    assert rate < 0.95 * operator_cap
    # The capacity model says the same: its straggler constraint binds only with the tail.
    c = Configuration.of(without.query(), cfg)
    assert CapacityModel(with_tail, 4096).capacity(c).mst < rate <= CapacityModel(without, 4096).capacity(c).mst
    _, _, plain = run(without, cfg, rate, seed=seed, warmup=60, window=200)
    _, _, straggling = run(with_tail, cfg, rate, seed=seed, warmup=60, window=200)
    # Without stragglers each firing (10 s x 41k records/s x 1 us x 1.5 = 0.6 s per task) fits in the
    # slack of the task's buffer (50k records, 1.2 s of its input): 330k is sustained.
    assert plain.sustained()
    assert plain.achieved_rate == pytest.approx(rate, rel=1e-3)
    # With a heavy tail, the slowest of the 8 tasks fires for seconds now and then; upstream tasks
    # block on its full channel and the source falls behind: the same rate is no longer sustained.
    assert not straggling.sustained()
    assert straggling.achieved_rate < 0.99 * plain.achieved_rate
    # ... although no window task is saturated: the loss is stalls, not missing task capacity.
    assert straggling.operator("win").busyness_max < 0.95


def test_back_pressure_propagates_upstream_to_the_source():
    _, _, m = run(chain(map_rate=1e6, sink_rate=50_000), {"map": 1, "sink": 1}, 200_000)
    assert m.achieved_rate == pytest.approx(50_000, rel=0.01)
    mapper = m.operator("map")
    assert mapper.backpressure > 0.1  # blocked by the sink, not busy
    assert mapper.busyness < 0.1
    assert m.operator("sink").busyness == pytest.approx(1.0, abs=0.01)


def test_the_sample_log_reports_flink_units_and_measurements_fractions():
    # Flink's task metrics: busy / back-pressured time in ms per second, records per second.
    tb, r, m = run(chain(map_rate=1e6, sink_rate=50_000), {"map": 1, "sink": 1}, 200_000, warmup=60, window=60)
    s = tb.engine(r).samples
    n = int(60 / 5)  # the window's samples: the last 12 of 5 s
    busy = np.array(s.busy_ms_per_s)[-n:]
    bp = np.array(s.backpressured_ms_per_s)[-n:]
    assert busy.shape == bp.shape == (n, 2)
    assert np.all((busy >= 0) & (busy <= 1000)) and np.all((bp >= 0) & (bp <= 1000))
    assert busy[:, 1].mean() == pytest.approx(1000, abs=10)  # the sink: 1000 ms/s busy
    assert bp[:, 0].mean() > 100  # the map, blocked by the sink: over 100 ms/s back-pressured
    assert np.array(s.records_in)[-n:, 1].mean() == pytest.approx(50_000, rel=0.01)
    # the Measurement keeps fractions of time
    assert m.operator("sink").busyness == pytest.approx(busy[:, 1].mean() / 1000, rel=1e-9)
    assert m.operator("map").backpressure == pytest.approx(bp[:, 0].mean() / 1000, rel=1e-9)


def test_a_join_takes_the_sum_of_its_inputs():
    prof = parse_profile({"name": "j", "operators": [
        {"name": "a", "kind": "filter", "rate": 1e6, "inputs": [{"from": "source", "selectivity": 0.2}]},
        {"name": "b", "kind": "filter", "rate": 1e6, "inputs": [{"from": "source", "selectivity": 0.3}]},
        {"name": "j", "kind": "join", "rate": 1e6, "keys": {"count": 1000, "zipf": 0},
         "inputs": [{"from": "a", "partitioning": "hash"}, {"from": "b", "partitioning": "hash"}]},
        {"name": "s", "kind": "sink", "rate": 1e7, "inputs": [{"from": "j", "selectivity": 0.5}]},
    ]}, "j.yaml")
    assert prof.input_ratios()["j"] == pytest.approx(0.5)
    _, _, m = run(prof, {"a": 1, "b": 1, "j": 1, "s": 1}, 100_000)
    assert m.operator("j").input_rate == pytest.approx(50_000, rel=0.01)
    assert m.operator("s").input_rate == pytest.approx(25_000, rel=0.01)


def test_the_source_never_caps_a_measurement_unnoticed():
    _, _, m = run(chain(source_max=80_000), {"map": 1, "sink": 1}, 90_000)
    assert m.source_saturated
    assert m.achieved_rate == pytest.approx(80_000, rel=0.01)
    _, _, ok = run(chain(source_max=80_000), {"map": 1, "sink": 1}, 70_000)
    assert not ok.source_saturated


def test_a_restart_during_a_window_is_reported_and_pending_records_survive_it():
    tb, r, m = run(chain(), {"map": 1, "sink": 1}, 150_000)
    pending = tb.engine(r).pending
    tb.schedule_restart(r, 10)
    with pytest.raises(JobRestarted):
        tb.observe(r, 30)
    assert tb.engine(r).pending > pending
    assert tb.observe(r, 30).achieved_rate > 0  # the job runs on after the restart


def test_rate_changes_take_effect_without_restarting():
    tb, r, m = run(chain(), {"map": 1, "sink": 1}, 50_000)
    tb.set_rate(r, 80_000)
    tb.wait(r, 1)
    m2 = tb.observe(r, 30)
    assert m2.achieved_rate == pytest.approx(80_000, rel=1e-3)
    assert tb.engine(r).restarts == 0


def test_measured_capacity_matches_the_capacity_model():
    prof = chain(agg={"rate": 20_000, "keys": {"count": 300, "zipf": 0.7}}, map_rate=1e6)
    cfg_map = {"map": 1, "agg": 6, "sink": 1}
    cap = CapacityModel(prof, 4096).capacity(Configuration.of(prof.query(), cfg_map)).mst
    _, _, m = run(prof, cfg_map, 2 * cap)
    assert m.achieved_rate == pytest.approx(cap, rel=0.01)

"""Hash partitioning as Flink does it: key groups in contiguous ranges, Zipf-skewed keys."""

import math

import numpy as np
import pytest

from streambed.testbed.sim.partitioning import (
    KeyedStream, flink_default_max_parallelism, key_hashes, task_shares_from_key_groups, zipf_weights)


@pytest.mark.parametrize("p, expected", [(1, 128), (85, 128), (86, 256), (100, 256), (1000, 2048),
                                         (30_000, 32768)])
def test_flink_default_max_parallelism(p, expected):
    assert flink_default_max_parallelism(p) == expected


def test_zipf_weights():
    w = zipf_weights(1000, 1.0)
    assert w.sum() == pytest.approx(1.0)
    assert w[0] / w[1] == pytest.approx(2.0)
    np.testing.assert_allclose(zipf_weights(10, 0.0), 0.1)


def test_key_groups_go_to_tasks_in_contiguous_ranges():
    mass = np.full(128, 1 / 128)
    # 128 key groups over 48 tasks: some tasks own 3 groups, others 2 (Flink's uneven ranges)
    shares = task_shares_from_key_groups(mass, 48)
    assert shares.sum() == pytest.approx(1.0)
    assert sorted(set(np.round(shares * 128).astype(int))) == [2, 3]
    assert np.allclose(task_shares_from_key_groups(mass, 32), 1 / 32)


def shares_key_by_key(count, exponent, seed, parallelism):
    """Each task's share, assigned key by key as Flink does (KeyGroupRangeAssignment): key group =
    hash mod max parallelism, task = key group x parallelism // max parallelism; weights 1 / rank^s."""
    max_parallelism = flink_default_max_parallelism(parallelism)
    weights = [1.0 / rank ** exponent for rank in range(1, count + 1)]
    total = math.fsum(weights)
    per_task = [0.0] * parallelism
    for w, h in zip(weights, key_hashes(count, seed).tolist()):
        per_task[(h % max_parallelism) * parallelism // max_parallelism] += w / total
    return per_task


def test_skewed_keys_put_more_than_a_fair_share_on_the_busiest_task():
    uniform = KeyedStream(100_000, 0.0, seed=1)
    skewed = KeyedStream(100_000, 1.0, seed=1)
    # Zipf(1) over 100k keys: the hottest key alone is 1 / H(100k) = 8.3 % of the stream
    hottest = 1.0 / math.fsum(1.0 / k for k in range(1, 100_001))
    assert hottest == pytest.approx(0.0827, abs=1e-4)
    for p in (4, 16, 64):
        assert uniform.shares(p).sum() == pytest.approx(1.0)
        # hashing 100k keys into 128 key groups is itself a little uneven (a few %, not more)
        assert 1 / p <= uniform.max_share(p) <= 1.1 / p
        # the shares match a key-by-key assignment computed independently of the vectorised code
        np.testing.assert_allclose(skewed.shares(p), shares_key_by_key(100_000, 1.0, 1, p), rtol=1e-9)
        # the busiest task carries most of the hottest key on top of a fair share: well above uniform
        assert skewed.max_share(p) > uniform.max_share(p) + 0.75 * hottest


def test_shares_depend_on_the_data_seed_not_on_the_call():
    a, b = KeyedStream(1000, 0.8, seed=3), KeyedStream(1000, 0.8, seed=3)
    np.testing.assert_array_equal(a.shares(7), b.shares(7))
    assert not np.allclose(a.shares(7), KeyedStream(1000, 0.8, seed=4).shares(7))


def test_fixed_max_parallelism_is_respected():
    ks = KeyedStream(10_000, 0.0, seed=1, max_parallelism=4096)
    assert ks.max_parallelism(100) == 4096
    assert ks.max_share(100) < KeyedStream(10_000, 0.0, seed=1).max_share(100)

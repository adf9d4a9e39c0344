"""Whole units per task (model/keygroups.py: key groups or a topic's partitions) and the source
bound (model/partitions.py): the arithmetic the optimizer's deployment constraints use."""

from __future__ import annotations

import pytest

from streambed.errors import UserError
from streambed.model import Query, keygroups, partitions


@pytest.mark.parametrize("p, m, expected", [(1, 128, (128, 128)), (42, 128, (3, 4)), (32, 128, (4, 4)),
                                            (128, 128, (1, 1)), (5, 8, (1, 2))])
def test_units_per_task_are_floor_and_ceil(p, m, expected):
    assert keygroups.units_per_task(p, m) == expected


def test_units_per_task_refuses_zero():
    with pytest.raises(ValueError):
        keygroups.units_per_task(0, 128)


@pytest.mark.parametrize("p, m, expected", [(32, 128, 1.0), (42, 128, 4 * 42 / 128), (3, 128, 43 * 3 / 128),
                                            (7, 7, 1.0)])
def test_imbalance_is_one_exactly_when_p_divides_m(p, m, expected):
    assert keygroups.imbalance(p, m) == pytest.approx(expected)
    assert (keygroups.imbalance(p, m) == 1.0) == (m % p == 0)


@pytest.mark.parametrize("p, m, expected", [(42, 128, 32), (50, 128, 43), (32, 128, 32), (7, 128, 7),
                                            (100, 256, 86), (12, 8, 8), (5, 8, 4)])
def test_aligned_is_the_fewest_tasks_with_the_same_busiest_task(p, m, expected):
    a = keygroups.aligned(p, m)
    assert a == expected
    assert keygroups.units_per_task(a, m)[1] == keygroups.units_per_task(min(p, m), m)[1]
    assert a == 1 or keygroups.units_per_task(a - 1, m)[1] > keygroups.units_per_task(a, m)[1]


def test_aligned_keyed_keeps_flinks_default_key_groups():
    assert keygroups.aligned_keyed(42) == 32  # 128 key groups either way
    assert keygroups.aligned_keyed(100) == 86  # 256 groups, 3 each: 86 is still on 256
    assert keygroups.aligned_keyed(172, 512) == 171  # a fixed max parallelism: 3 each
    assert keygroups.aligned_keyed(171) == 128  # 256 default groups at both (128 + 64 rounds up to 256), 2 each
    for p in range(1, 600):  # Flink's default never moves an aligned count onto other key groups
        a = keygroups.aligned_keyed(p)
        assert keygroups.max_parallelism(a) == keygroups.max_parallelism(p) and a <= p


def test_group_bound_capacity_is_the_busiest_task_full():
    assert keygroups.group_bound_capacity(1000.0, 32, 128) == pytest.approx(32_000)
    assert keygroups.group_bound_capacity(1000.0, 42, 128) == pytest.approx(32_000)  # 10 tasks add nothing
    assert keygroups.group_bound_capacity(1000.0, 43, 128) == pytest.approx(128_000 / 3)


QUERY = Query("q", ("read", "agg", "sink"), (("source", "read"), ("read", "agg"), ("agg", "sink")),
              keyed=frozenset({"agg"}), source_partitions=8)


def test_readers_are_the_unkeyed_operators_reading_the_source_alone():
    assert partitions.readers(QUERY) == ("read",)
    keyed_reader = Query("k", ("agg", "sink"), (("source", "agg"), ("agg", "sink")), keyed=frozenset({"agg"}))
    assert partitions.readers(keyed_reader) == ()


def test_a_source_reader_never_exceeds_the_partitions():
    assert partitions.bounded(12, 8) == 8
    assert partitions.bounded(5, 8) == 5
    assert partitions.bounded(500, None) == 500  # unknown: no bound


@pytest.mark.parametrize("bad", [0, -3, 2.5, "8"])
def test_a_query_refuses_bad_partitions_in_one_line(bad):
    with pytest.raises(UserError, match="source_partitions") as e:
        Query("q", ("a",), (("source", "a"),), source_partitions=bad)
    assert "\n" not in str(e.value)

"""The optimizer's deployment constraints (planner/optimizer.py: DeploymentConstraints): a source
reader never beyond the topic's partitions, keyed operators at whole key groups per task, on known
single-task rates so that every capacity can be computed by hand."""

from __future__ import annotations

import pytest

from streambed.ledger import Ledger
from streambed.model import Budget, OperatorRates, Query, SingleTaskMetrics, keygroups
from streambed.planner.estimator import Timing
from streambed.planner.optimizer import (ConfigurationOptimizer, DeploymentConstraints, alignment, alignment_notes,
                                         group_bound)
from streambed.planner.estimator import CapacityEstimator
from streambed.planner.policies import policy_named
from fake_testbed import FakeTestbed

KEYED = Query("k", ("read", "agg", "sink"), (("source", "read"), ("read", "agg"), ("agg", "sink")),
              keyed=frozenset({"agg"}))
RATES = {"read": (100_000.0, 1.0), "agg": (1_000.0, 1.0), "sink": (1_000_000.0, 0.01)}
"""Per source event/s: read carries 100k per task, agg 1k, sink 100M: agg is the operator that grows."""


def metrics(query: Query, rates=RATES, max_parallelism: int | None = None) -> SingleTaskMetrics:
    ops = tuple((op, OperatorRates(o, r, keyed=op in query.keyed)) for op, (o, r) in rates.items())
    return SingleTaskMetrics(query.name, 1024, ops, max_parallelism=max_parallelism)


@pytest.mark.parametrize("policy", ["bids2", "bids2-skew"])
def test_the_budget_stays_whole_and_is_predicted_with_whole_key_groups(policy):
    inner = policy_named(policy)
    constrained = DeploymentConstraints(inner, KEYED)
    m = metrics(KEYED)
    got = constrained.configure(m, 46)  # agg is the bottleneck: no other operator gains from its tasks
    assert sum(got.parallelism.values()) == 46
    p = got.parallelism["agg"]
    assert got.predicted_rate == pytest.approx(min(inner.predict(m, got.parallelism),
                                                   keygroups.group_bound_capacity(1_000.0, p, 128)))


class Fixed:
    """A policy stub: a fixed configuration, capacities linear in the tasks (as bids2 assumes)."""

    name = "fixed"

    def __init__(self, parallelism):
        self.parallelism = parallelism

    def configure(self, metrics, slots):
        from streambed.planner.policies import Proposal

        return Proposal(dict(self.parallelism), self.predict(metrics, self.parallelism))

    def predict(self, metrics, parallelism):
        return min(parallelism[op] * r.true_rate / r.input_ratio for op, r in metrics.operators)


def test_tasks_a_keyed_operator_cannot_use_go_to_the_bottleneck():
    rates = {"read": (1_000.0, 1.0), "agg": (1_000.0, 1.0), "sink": (1_000_000.0, 1.0)}
    m = metrics(KEYED, rates)
    # agg's 45 tasks own 3 of 128 groups at most, as 43 do: 2 tasks that add nothing; read is the bottleneck
    got = DeploymentConstraints(Fixed({"read": 10, "agg": 45, "sink": 1}), KEYED).configure(m, 56)
    assert got.parallelism == {"read": 12, "agg": 43, "sink": 1}
    assert got.predicted_rate == pytest.approx(12_000)


def test_plain_bids2_is_sized_with_the_imbalance_of_whole_key_groups():
    c = DeploymentConstraints(policy_named("bids2"), KEYED)
    m = metrics(KEYED)
    par = {"read": 1, "agg": 42, "sink": 1}
    assert c.policy.predict(m, par) == pytest.approx(42_000)  # 1/p of the input per task
    assert c.predict(m, par) == pytest.approx(32_000)  # the busiest of 42 owns 4 of 128 groups
    assert group_bound(KEYED, m, {**par, "agg": 32}) == pytest.approx(32_000)


def test_a_source_reader_never_exceeds_the_topics_partitions():
    q = Query("p", ("read", "sink"), (("source", "read"), ("read", "sink")), source_partitions=4)
    m = metrics(q, {"read": (1_000.0, 1.0), "sink": (1_000_000.0, 1.0)})
    unbounded = policy_named("bids2").configure(m, 12)
    got = DeploymentConstraints(policy_named("bids2"), q).configure(m, 12)
    assert unbounded.parallelism["read"] > 4 and got.parallelism["read"] == 4
    assert got.predicted_rate == pytest.approx(4_000)
    # the reader is the bottleneck: the slots it cannot use are not spent on the sink, which gains nothing
    assert got.parallelism["sink"] == 1


def test_partitions_that_do_not_divide_evenly_are_aligned_like_key_groups():
    q = Query("p", ("read", "sink"), (("source", "read"), ("read", "sink")), source_partitions=10)
    m = metrics(q, {"read": (1_000.0, 1.0), "sink": (1_000_000.0, 1.0)})
    c = DeploymentConstraints(policy_named("bids2"), q)
    wide = c.configure(m, 9)  # 8 readers: 2 partitions for the busiest, as with 5
    assert wide.parallelism["read"] == 8 and wide.predicted_rate == pytest.approx(5_000)
    assert alignment(q, wide.parallelism)["read"] == {"tasks": 8, "units": "partitions", "count": 10,
                                                      "per_task": [1, 2], "imbalance": pytest.approx(1.6)}
    # so the smallest budget that reaches 5,000 (what a plan's last pass takes) has 5 readers, evenly split
    narrow = c.configure(m, 6)
    assert narrow.parallelism["read"] == 5 and narrow.predicted_rate == pytest.approx(5_000)
    assert alignment(q, narrow.parallelism)["read"]["imbalance"] == 1.0


def test_nothing_keyed_nor_partitioned_is_the_policys_answer_unchanged():
    q = Query("u", ("read", "sink"), (("source", "read"), ("read", "sink")))
    m = metrics(q, {"read": (1_000.0, 1.0), "sink": (3_000.0, 1.0)})
    inner = policy_named("bids2")
    assert DeploymentConstraints(inner, q).configure(m, 9) == inner.configure(m, 9)


def test_the_alignment_report_names_key_groups_and_imbalance():
    a = alignment(KEYED, {"read": 1, "agg": 42, "sink": 1})
    assert a == {"agg": {"tasks": 42, "units": "key groups", "count": 128, "per_task": [3, 4],
                         "imbalance": pytest.approx(4 * 42 / 128)}}
    assert alignment(KEYED, {"read": 1, "agg": 42, "sink": 1}, fixed=84)["agg"]["imbalance"] == 1.0


def test_the_optimizer_measures_the_constrained_configuration(tmp_path):
    q = Query("p", ("read", "sink"), (("source", "read"), ("read", "sink")), source_partitions=3)
    tb = FakeTestbed(q, {"read": (1_000.0, 1.0), "sink": (1_000_000.0, 1.0)}, max_slots=8, memory_per_slot=(1024,))
    timing = Timing("t", warmup_s=10, cooldown_s=2, cooldown_rate_per_source=10, ramp_s=2, observe_s=5,
                    max_iterations=12, sensibility=0.01, warmup_observe_s=5, max_cooldown_s=10)
    with Ledger.open(tmp_path, "t", {}, resume=False) as ledger:
        opt = ConfigurationOptimizer(CapacityEstimator(tb, ledger, timing), q, policy_named("bids2"))
        result = opt.optimize(Budget(8, 1024), "b8")
    assert result.configuration["read"] == 3
    assert result.mst == pytest.approx(3_000, rel=0.03)
    assert opt.policy.name == "bids2"


def test_alignment_notes_name_only_uneven_splits():
    report = alignment(KEYED, {"read": 1, "agg": 42, "sink": 1})
    (line,) = alignment_notes(report)
    assert line == "agg: 42 tasks over 128 key groups (4 for the busiest): sized for an imbalance of 1.31"
    assert alignment_notes(alignment(KEYED, {"read": 1, "agg": 32, "sink": 1})) == ()


@pytest.mark.parametrize("line, expected", [("", None), ("source_partitions: 8\n", 8)])
def test_the_flink_testbeds_partitions_come_from_its_inventory(tmp_path, line, expected):
    pytest.importorskip("pyflink")
    import shutil

    from conftest import REPO
    from streambed.infra.provider import Inventory
    from streambed.infra.services import flink_settings

    inv = tmp_path / "inventories" / "mine"
    shutil.copytree(REPO / "inventories" / "local", inv)
    (inv / "testbed.yml").write_text((inv / "testbed.yml").read_text() + line)
    assert flink_settings(Inventory.load(inv)).source_partitions == expected


def test_partitions_below_one_in_the_inventory_are_one_line(tmp_path):
    pytest.importorskip("pyflink")
    import shutil

    from conftest import REPO
    from streambed.errors import UserError
    from streambed.infra.provider import Inventory
    from streambed.infra.services import flink_settings

    inv = tmp_path / "inventories" / "mine"
    shutil.copytree(REPO / "inventories" / "local", inv)
    (inv / "testbed.yml").write_text((inv / "testbed.yml").read_text() + "source_partitions: 0\n")
    with pytest.raises(UserError, match="source_partitions 0") as e:
        flink_settings(Inventory.load(inv))
    assert "\n" not in str(e.value)

"""The sim's stand-in for the data's key statistics (testbed/sim/keys.py, ``streambed sim keys``): what it
counts is what the sim's engine hashes, and ``plan --key-stats`` reads it as it reads Spark's."""

import numpy as np
import pytest

from clitools import error_line, json_result, streambed
from streambed.model import keygroups, keystats
from streambed.testbed.sim.keys import key_statistics
from streambed.testbed.sim.partitioning import keyed_streams
from streambed.testbed.sim.profile import load_profile, parse_profile


def _profile(max_parallelism=None, count=2500):
    data = {"name": "keys-test", "data_seed": 11, "operators": [
        {"name": "Calc#1", "kind": "filter", "rate": 4e5, "inputs": [{"from": "source", "selectivity": 1.0}]},
        {"name": "GroupAggregate#2", "kind": "aggregate", "rate": 4e5,
         "inputs": [{"from": "Calc#1", "selectivity": 0.5, "partitioning": "hash"}],
         "keys": {"count": count, "zipf": 0.7, "hot": 0.01}},
        {"name": "Sink#3", "kind": "sink", "rate": 2e6,
         "inputs": [{"from": "GroupAggregate#2", "selectivity": 0.1, "partitioning": "rebalance"}]}]}
    if max_parallelism:
        data["max_parallelism"] = max_parallelism
    return parse_profile(data)


@pytest.mark.parametrize("p", [1, 2, 13, 48, 85, 86, 300, 1500])
def test_the_counted_key_groups_give_the_busiest_task_the_sim_runs(p):
    profile = _profile()
    stats, = key_statistics(profile).operators
    stream = keyed_streams(profile)["GroupAggregate#2"]
    assert keystats.busiest_task_share(stats, p) == pytest.approx(stream.max_share(p), rel=1e-9)
    skew = keystats.key_skew(stats)
    assert skew.busiest_share(p, keygroups.default_max_parallelism(p)) == pytest.approx(
        stream.max_share(p), rel=1e-9)
    assert stats.distinct_keys == 2500
    assert stats.top_share(1) == pytest.approx(stream.weights.max(), rel=1e-9)
    assert stats.concentration == pytest.approx(float(np.sum(stream.weights ** 2)), rel=1e-6)


@pytest.mark.parametrize("m", [624, 1304])
def test_few_keys_give_the_busiest_task_at_a_job_s_own_key_groups(m):
    profile = _profile(max_parallelism=m)
    stats, = key_statistics(profile).operators
    stream = keyed_streams(profile)["GroupAggregate#2"]
    skew = keystats.key_skew(stats)
    assert skew.exact(m)
    for p in (7, 41, 300):
        assert skew.busiest_share(p, m) == pytest.approx(stream.max_share(p), rel=1e-9)


def test_many_keys_at_a_profile_s_own_key_groups_leave_the_model():
    stats, = key_statistics(_profile(max_parallelism=1304, count=keystats.HASHED_KEYS + 1)).operators
    assert stats.key_hashes is None
    assert not keystats.key_skew(stats).exact(1304) and keystats.key_skew(stats).exact(1024)


def test_sim_keys_writes_statistics_plan_reads(tmp_path):
    out = tmp_path / "keys" / "q5.json"
    result = json_result(streambed("sim", "keys", "--profile", "q5", "--out", str(out), "--json", cwd=tmp_path))
    assert {o["operator"] for o in result["operators"]} == set(load_profile("q5").query().keyed)
    assert all("key_groups" not in o and "key_hashes" not in o for o in result["operators"])  # they stay in the file
    read = keystats.read(out)
    assert read.query == "q5" and all(o.key_groups for o in read.operators)


def test_sim_keys_refusals_are_one_line(tmp_path):
    assert "q1 has no keyed operator" in error_line(streambed("sim", "keys", "--profile", "q1", "--out",
                                                              str(tmp_path / "k.json"), cwd=tmp_path))
    assert "--out" in error_line(streambed("sim", "keys", "--profile", "q5", "--out", str(tmp_path), cwd=tmp_path))
    assert "--profile" in error_line(streambed("sim", "keys", "--profile", "nope", "--out", str(tmp_path / "k.json"),
                                               cwd=tmp_path))
    (tmp_path / "a-file").write_text("")
    assert "--out: cannot write" in error_line(streambed("sim", "keys", "--profile", "q5", "--out",
                                                         str(tmp_path / "a-file" / "k.json"), cwd=tmp_path))

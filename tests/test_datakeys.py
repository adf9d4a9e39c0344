"""The key statistics a plan reads (campaigns/datakeys.py): --key-stats where given; for a campaign that
replays a data set, that data set's own file, counted (here by a fake counter; tests/test_spark_keys.py runs
Spark's) only where it is missing; nothing for the generator, --no-key-stats, or a query keyed by no column
at rest."""

from pathlib import Path

import pytest
from test_dataset import make

from streambed.campaigns import datakeys, explore
from streambed.campaigns.plan import PlanCampaign
from streambed.campaigns.settings import CampaignSettings, PlanSettings, TestbedSpec
from streambed.cli import main
from streambed.model import keystats
from streambed.testbed.sim.keys import key_statistics
from streambed.testbed.sim.profile import load_profile
from streambed.testbed.sim.testbed import SimSettings, SimTestbed


def lake_with(tmp_path: Path) -> Path:
    make(tmp_path / "lake", "d", events=1000, kinds={"person": 10, "auction": 90, "bid": 900})
    return tmp_path / "lake"


class Counter:
    """A stand-in for Spark's count: writes the sim's statistics of the query's profile where asked."""

    def __init__(self):
        self.calls = []

    def __call__(self, data, query, operators, target):
        self.calls.append((data.name, query, operators, target))
        result = key_statistics(load_profile(query))
        target.parent.mkdir(parents=True, exist_ok=True)
        result.write(target)
        return result


def test_a_replayed_data_set_is_counted_once_then_its_file_is_read(tmp_path):
    lake, count, said = lake_with(tmp_path), Counter(), []
    first = datakeys.replayed_key_stats("q5", None, "d", lake, count=count, status=said.append)
    assert first == lake / "d" / "keys" / "q5.json" and first.is_file()
    assert [c[:3] for c in count.calls] == [("d", "q5", keystats.QUERY_KEYS["q5"])]
    again = datakeys.replayed_key_stats("q5", None, "d", lake, count=count, status=said.append)
    assert again == first and len(count.calls) == 1  # the data set does not change: no second count
    assert any("with Spark" in s for s in said) and said[-1].startswith("key statistics of d: ")


@pytest.mark.parametrize("query,given,input_name,counted", [
    ("q5", None, None, True),        # the generator: no data at rest
    ("q5", None, "d", False),        # --no-key-stats
    ("q1", None, "d", True),         # a query with no keyed operator whose key is a column of the data
])
def test_without_a_data_set_to_count_the_plan_infers_the_skew(tmp_path, query, given, input_name, counted):
    lake, count = lake_with(tmp_path), Counter()
    assert datakeys.replayed_key_stats(query, given, input_name, lake, counted=counted, count=count) is None
    assert count.calls == [] and not (lake / "d" / "keys").exists()


def test_key_stats_given_are_read_as_given_and_nothing_is_counted(tmp_path):
    lake, count, given = lake_with(tmp_path), Counter(), tmp_path / "mine.json"
    assert datakeys.replayed_key_stats("q5", given, "d", lake, count=count) == given and count.calls == []


def test_a_plan_replaying_a_data_set_reads_its_key_statistics(tmp_path, monkeypatch):
    """The plan campaign's wiring: the data set's file becomes the explorer's key statistics, and
    --no-key-stats leaves them out. (The sim replays nothing, so its testbed stands in for Flink's.)"""
    lake = lake_with(tmp_path)
    (lake / "d" / "keys").mkdir()
    data = key_statistics(load_profile("q5"))
    data.write(lake / "d" / "keys" / "q5.json")
    assert data.operators
    monkeypatch.setattr(explore, "testbed_of", lambda c, status, timing=None: SimTestbed(
        load_profile("q5"), SimSettings(seed=0, max_slots=16)))
    for counted, want in ((True, {s.operator for s in data.operators}), (False, set())):
        campaign = CampaignSettings("q5", TestbedSpec("flink"), directory=tmp_path / "c", input="d", lake=lake)
        plan = PlanCampaign(PlanSettings(campaign, memories=(1024,), data_keys=counted))
        assert {s.operator for s in plan.key_statistics} == want


def test_key_stats_and_no_key_stats_together_are_refused_in_one_line(capsys):
    code = main(["plan", "--testbed", "sim", "--query", "q5", "--key-stats", "k.json", "--no-key-stats"])
    assert code == 2
    assert capsys.readouterr().err.strip() == ("streambed: error: argument --no-key-stats: not allowed with "
                                               "argument --key-stats")


def test_a_data_set_this_user_cannot_write_to_is_refused_before_spark_starts(tmp_path, monkeypatch):
    from streambed.errors import UserError

    lake, count = lake_with(tmp_path), Counter()
    monkeypatch.setattr(datakeys.os, "access", lambda path, mode: Path(path) != lake / "d")  # root writes anywhere
    with pytest.raises(UserError, match=r"--input d: its key statistics would be written to .*/d/keys/q5\.json, "
                                        r"which this user cannot write; give --key-stats FILE"):
        datakeys.replayed_key_stats("q5", None, "d", lake, count=count)
    assert count.calls == []

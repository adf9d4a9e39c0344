"""``streambed compare`` (campaigns/compare.py, commands/compare.py) on the simulated testbed."""

from __future__ import annotations

import json

import pytest

from streambed.campaigns.compare import CompareCampaign, CompareSettings, check_methods, verdict
from streambed.campaigns.settings import CampaignSettings, TestbedSpec
from streambed.cli import main
from streambed.errors import UserError
from streambed.planner import PLANNERS


def test_one_json_row_per_method_judged_by_the_truth(tmp_path, capsys):
    code = main(["compare", "--query", "q1", "--rate", "4e6", "--methods", "ds2,autoscaler", "--max-slots", "64",
                 "--memory", "1024", "--out", str(tmp_path), "--json", "--quiet",
                 "--set", "autoscaler.warmup_s=30", "--set", "autoscaler.window_s=60"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["method"] for r in data["rows"]] == ["ds2", "autoscaler"]
    for row in data["rows"]:
        assert row["memory_mb"] == 1024
        assert row["total_memory_mb"] == row["slots"] * 1024
        assert row["mst"] > 0 and row["mst_over_rate"] == pytest.approx(row["mst"] / 4e6)
        assert row["verdict"] == verdict(row["mst"], 4e6)
        assert row["steps"] == len(row["sizing"]["steps"]) >= 2
    ds2, autoscaler = data["rows"]
    assert autoscaler["slots"] > ds2["slots"]  # 0.7 utilization and catch-up headroom cost slots
    assert autoscaler["testbed_seconds"] > 0 and ds2["testbed_seconds"] > 0
    assert (tmp_path / "compare-q1" / "ledger.sqlite").exists()


def test_unknown_method_is_one_line_listing_the_known(capsys):
    code = main(["compare", "--query", "q1", "--rate", "1e6", "--methods", "ds2,nope"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "'nope'" in err and all(m in err for m in PLANNERS)


def test_bad_option_is_one_line(capsys, tmp_path):
    code = main(["compare", "--query", "q1", "--rate", "1e6", "--methods", "ds2", "--set", "ds2.utilization=2",
                 "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "utilization" in err


def test_option_for_a_method_not_compared_is_refused():
    with pytest.raises(UserError, match="autoscaler"):
        CompareCampaign(CompareSettings(CampaignSettings("q1"), 1e6, methods=("ds2",),
                                        options={"autoscaler": {"utilization": 0.5}}))


def test_every_registered_method_by_default():
    assert check_methods(()) == tuple(PLANNERS)
    assert check_methods(("ds2", "ds2")) == ("ds2",)


def test_unknown_query_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(UserError):
        CompareCampaign(CompareSettings(CampaignSettings("q99", TestbedSpec(), directory=tmp_path / "c"), 1e6,
                                        methods=("ds2",)))
    assert not (tmp_path / "c").exists()


# -- a method that needs an input the user did not give (learned: a training set) ------------------------

def test_the_default_leaves_out_learned_without_a_training_set_and_says_how_to_include_it(tmp_path):
    c = CompareCampaign(CompareSettings(CampaignSettings("q1", TestbedSpec(), directory=tmp_path / "c"), 1e6))
    assert "learned" not in c.methods and set(c.methods) == set(PLANNERS) - {"learned"}
    assert "--set learned.training=DIR" in c.left_out["learned"]
    given = CompareCampaign(CompareSettings(CampaignSettings("q1", TestbedSpec(), directory=tmp_path / "d"), 1e6,
                                            options={"learned": {"training": str(tmp_path)}}))
    assert given.methods == tuple(PLANNERS) and given.left_out == {}


def test_learned_asked_by_name_without_a_training_set_is_refused_in_one_line(tmp_path, capsys):
    code = main(["compare", "--query", "q1", "--rate", "1e6", "--methods", "ds2,learned", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "learned" in err and "learned.training=DIR" in err
    assert not (tmp_path / "compare-q1").exists()


def test_a_bare_compare_runs_the_others_and_prints_the_left_out_line(tmp_path, capsys, monkeypatch):
    for name in [m for m in PLANNERS if m not in ("ds2", "learned")]:  # keep the run short: ds2 and learned
        monkeypatch.delitem(PLANNERS, name)
    args = ["compare", "--query", "q1", "--rate", "4e6", "--max-slots", "64", "--memory", "1024", "--out", str(tmp_path)]
    assert main(args) == 0
    shown = capsys.readouterr()
    assert "learned: left out, needs a training set: add --set learned.training=DIR" in shown.out + shown.err
    assert main([*args, "--json", "--quiet", "--resume"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["method"] for r in data["rows"]] == ["ds2"] and set(data["left_out"]) == {"learned"}

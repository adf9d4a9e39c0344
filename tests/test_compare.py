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

"""A validation names the cluster it ran on (the production inventory's, e.g. lab-production): in its
JSON, its console table, its report page and its Grafana annotations (tag ``cluster:<name>`` and the
text), so that the lab's validation on inventories/lab-production is told apart from the plan on the
testbed. Grafana is the STAND-IN of tests/test_annotations.py (no Grafana server can be had here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clitools import q1_plan
from test_annotations import GrafanaStandIn, run_campaign
from streambed.campaigns.settings import TestbedSpec
from streambed.campaigns.validate import cluster_of
from streambed.report.grafana.annotations import GrafanaAnnotations, GrafanaSettings, tags


def test_the_cluster_is_the_inventory_directory():
    lab = cluster_of(TestbedSpec("flink", inventory=Path("inventories/lab-production")), "flink@http://10.213.0.21:8081")
    assert lab == {"name": "lab-production", "inventory": "inventories/lab-production",
                   "testbed": "flink@http://10.213.0.21:8081"}
    # without --inventory, the provider's default inventory
    local = cluster_of(TestbedSpec("flink"), "flink@http://localhost:8081", lambda: Path("inventories/local"))
    assert local["name"] == "local" and local["inventory"] == "inventories/local"
    assert cluster_of(TestbedSpec("sim"), "sim") == {"name": "sim", "inventory": None, "testbed": "sim"}


def test_annotations_tag_and_name_the_cluster_once_told():
    with GrafanaStandIn() as grafana:
        watcher = GrafanaAnnotations(GrafanaSettings(grafana.url), campaign="validate", query="q11", warn=pytest.fail)
        with watcher.phase("warm-up", "before"):
            pass
        watcher.on_cluster("lab-production")
        with watcher.phase("validation", "validate/1x"):
            pass
    before, after = grafana.regions()
    assert before["tags"] == tags("validate", "q11", "warm-up") and before["text"] == "before"
    assert after["tags"] == ["streambed", "campaign:validate", "query:q11", "phase:validation", "cluster:lab-production"]
    assert after["text"] == "validate/1x (on lab-production)"


def test_a_validation_names_its_cluster_in_json_table_report_and_annotations(tmp_path):
    """The campaign wired end to end on the simulated testbed, given the production inventory's path (the
    sim reads nothing from it: the name comes from the path, as for Flink)."""
    (tmp_path / "plan.json").write_text(q1_plan())
    inventory = tmp_path / "inventories" / "lab-production"
    inventory.mkdir(parents=True)
    args = ("validate", "--query", "q1", "--plan", "plan.json", "--testbed", "sim", "--multipliers", "1",
            "--ramp", "30", "--duration", "60")
    with GrafanaStandIn() as grafana:
        proc = run_campaign(tmp_path, *args, "--inventory", str(inventory), "--json", url=grafana.url)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["cluster"]["name"] == "lab-production" and result["cluster"]["inventory"] == str(inventory)
    runs = [r for r in grafana.regions() if "phase:validation" in r["tags"]]
    assert runs and all("cluster:lab-production" in r["tags"] and r["text"].endswith("(on lab-production)")
                        for r in runs)
    page = (tmp_path / result["files"]["report"]).read_text()
    assert "On the cluster <b>lab-production</b>" in page
    # the console's table says it too
    shown = run_campaign(tmp_path, *args, "--inventory", str(inventory), "--campaign-dir", str(tmp_path / "c2"),
                         url=None)
    assert shown.returncode == 0, shown.stderr
    assert "Validation on lab-production:" in shown.stdout + shown.stderr


def test_a_validation_without_an_inventory_names_no_cluster_in_its_annotations(tmp_path):
    (tmp_path / "plan.json").write_text(q1_plan())
    with GrafanaStandIn() as grafana:
        proc = run_campaign(tmp_path, "validate", "--query", "q1", "--plan", "plan.json", "--testbed", "sim",
                            "--multipliers", "1", "--ramp", "30", "--duration", "60", "--json", url=grafana.url)
    assert json.loads(proc.stdout)["cluster"] == {"name": "sim", "inventory": None, "testbed": "sim:q1"}
    assert not any(t.startswith("cluster:") for r in grafana.regions() for t in r["tags"])

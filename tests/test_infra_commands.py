"""``streambed infra provision|deploy|destroy --env`` (make provision/deploy/destroy ENV=...): the
platform by name, its inventory, and the whole site deployed and stopped (Ansible recorded, not run:
tests/test_ansible.py applies site.yml for real; Terraform's local example runs for real)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from streambed.cli import main
from streambed.infra import services
from streambed.infra.ansible import PlaybookResult
from streambed.infra.provider import Inventory

TERRAFORM = shutil.which("terraform")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def playbook_runs(monkeypatch):
    runs: list[dict] = []

    def record(playbook, inventory, extra_vars, on_task=None, tags=None):
        assert tags is None  # the whole site: every play of site.yml
        runs.append(extra_vars)
        return PlaybookResult(ok=3, changed=1, failed=0, skipped=0, rc=0, elapsed_s=1.0)

    monkeypatch.setattr(services, "run_playbook", record)
    return runs


@pytest.fixture
def repo_cwd(monkeypatch):
    """Commands run where make runs them: at the repository's root (terraform/examples, inventories/)."""
    monkeypatch.chdir(REPO)


def test_an_unknown_platform_is_one_line_listing_the_known_ones(capsys, repo_cwd):
    code, _, err = run(capsys, "infra", "provision", "--env", "azure")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "azure" in err and all(p in err for p in ("cloudlab", "ec2", "grid5000", "local"))


def test_deploying_a_platform_not_provisioned_says_to_provision_first(capsys, repo_cwd, tmp_path):
    code, _, err = run(capsys, "infra", "deploy", "--env", "ec2", "--inventory", str(tmp_path / "none"))
    assert code == 2 and "make provision ENV=ec2" in err and "Traceback" not in err


def test_a_variable_file_that_is_not_a_json_object_is_one_line(capsys, repo_cwd, tmp_path):
    bad = tmp_path / "v.json"
    bad.write_text("[1, 2]")
    code, _, err = run(capsys, "infra", "provision", "--env", "local", "--var-file", str(bad),
                       "--inventory", str(tmp_path / "inv"))
    assert code == 2 and "--var-file" in err and "JSON object" in err


@pytest.mark.skipif(TERRAFORM is None, reason="terraform is not installed")
def test_provisioning_local_writes_an_inventory_the_controller_loads(capsys, repo_cwd, tmp_path):
    inv = tmp_path / "inv"
    code, out, err = run(capsys, "infra", "provision", "--env", "local", "--inventory", str(inv), "--json",
                         "--quiet")
    assert code == 0, err
    assert Inventory.load(inv).testbed == Inventory.load(REPO / "inventories" / "local").testbed
    hosts = yaml.safe_load((inv / "hosts.yml").read_text())
    assert set(hosts["all"]["children"]) == {"jobmanager", "taskmanagers", "monitoring"}


def test_deploy_applies_the_whole_site_and_destroy_stops_every_service(capsys, repo_cwd, playbook_runs):
    code, out, err = run(capsys, "infra", "deploy", "--env", "local", "--json", "--quiet")
    assert code == 0, err
    assert playbook_runs == [{}]  # every service the inventory runs, nothing overridden
    services.SiteService(Inventory.load(REPO / "inventories" / "local")).destroy()
    stopped = playbook_runs[-1]
    assert set(stopped) == {f"{s}_state" for s in services.SERVICES} and set(stopped.values()) == {"stopped"}
    roles = {p.name for p in (REPO / "ansible" / "roles").iterdir()
             if (p / "defaults" / "main.yml").is_file()
             and f"{p.name}_state:" in (p / "defaults" / "main.yml").read_text()}
    assert roles == set(services.SERVICES)  # a role that runs a process is stopped by destroy


def test_deploy_and_destroy_take_the_production_inventory_beside_the_testbeds(capsys, repo_cwd, playbook_runs,
                                                                           tmp_path, monkeypatch):
    """provision writes <inventory>-production for the production cluster: make deploy brings up both
    clusters, make destroy stops both before the machines go."""
    from streambed.infra import terraform

    testbed = tmp_path / "inventories" / "ec2"
    for where in (testbed, tmp_path / "inventories" / "ec2-production"):
        shutil.copytree(REPO / "inventories" / "local", where)
    (tmp_path / "ansible").mkdir()
    shutil.copy(REPO / "ansible" / "site.yml", tmp_path / "ansible" / "site.yml")  # runs are faked
    code, out, err = run(capsys, "infra", "deploy", "--env", "ec2", "--inventory", str(testbed), "--json", "--quiet")
    assert code == 0, err
    assert [d["inventory"] for d in json.loads(out)["deployed"]] == [str(testbed), str(tmp_path / "inventories" / "ec2-production")]
    destroyed = []
    monkeypatch.setattr(terraform, "destroy", lambda *a, **k: destroyed.append(a[0]))
    code, out, err = run(capsys, "infra", "destroy", "--env", "ec2", "--inventory", str(testbed), "--json", "--quiet")
    assert code == 0, err
    assert json.loads(out)["stopped"] == [str(testbed), str(tmp_path / "inventories" / "ec2-production")]
    assert destroyed == [Path("terraform/examples/ec2")]
    assert [set(v.values()) for v in playbook_runs] == [set(), set(), {"stopped"}, {"stopped"}]

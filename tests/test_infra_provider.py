"""Providers and inventories: where the hosts are and what the testbed's settings are come from the
inventory, never from code (no Ansible run here: run_playbook is recorded, not run)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REPO
from streambed.errors import UserError
from streambed.infra import services
from streambed.infra.ansible import PlaybookResult
from streambed.infra.local import INVENTORY_VARIABLE, LocalProvider, create_testbed, default_inventory
from streambed.infra.provider import Inventory, Provider
from streambed.model import Budget
from streambed.testbed.base import TestbedRequest

LOCAL = REPO / "inventories" / "local"

OTHER_GROUP_VARS = """\
streambed_state_dir: "{{ inventory_dir }}/state"
streambed_playbook: "{{ inventory_dir | dirname }}/deploy/site.yml"
streambed_job_jar: "{{ inventory_dir }}/jobs/job.jar"
streambed_queries_dir: "{{ inventory_dir }}/sql"
flink_rest_address: jm.example
flink_rest_port: 18181
prometheus_listen_host: mon.example
prometheus_port: 19999
"""
OTHER_TESTBED = """\
max_slots: 6
source_parallelism: 2
memory_per_slot_mb: [2048, 4096]
max_source_rate: 1000000
sample_period_s: 5
"""


@pytest.fixture
def other(tmp_path) -> Path:
    """An inventory unlike the local one: other hosts, ports, paths and offer."""
    inv = tmp_path / "site" / "cluster"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "group_vars" / "all.yml").write_text(OTHER_GROUP_VARS)
    (inv / "testbed.yml").write_text(OTHER_TESTBED)
    (inv / "hosts.yml").write_text("all:\n  hosts:\n    localhost:\n")
    (inv.parent / "deploy").mkdir()
    (inv.parent / "deploy" / "site.yml").write_text("- hosts: all\n  tasks: []\n")  # exists; runs are faked
    return inv


@pytest.fixture
def playbook_runs(monkeypatch):
    """run_playbook replaced by a recorder: (playbook, inventory, extra vars) of each call."""
    runs: list[tuple[Path, Path, dict]] = []

    def record(playbook, inventory, extra_vars, on_task=None, tags=None):
        assert tags == "testbed"  # a budget re-applies the testbed's plays only, never a cluster's Kafka or Spark
        runs.append((playbook, inventory, extra_vars))
        return PlaybookResult(ok=1, changed=0, failed=0, skipped=0, rc=0, elapsed_s=0.0)

    monkeypatch.setattr(services, "run_playbook", record)
    return runs


def _one_line(e: pytest.ExceptionInfo) -> str:
    message = str(e.value)
    assert "\n" not in message
    return message


def test_provision_of_a_missing_inventory_is_one_line_naming_the_option_and_path(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(UserError) as e:
        LocalProvider(missing).provision()
    assert _one_line(e).startswith(f"--inventory: no inventory at {missing} ")


def test_an_inventory_without_its_testbed_file_is_refused(other):
    (other / "testbed.yml").unlink()
    with pytest.raises(UserError, match=r"^--inventory: .*cluster is not a testbed inventory: testbed.yml is missing$"):
        LocalProvider(other).provision()


def test_the_local_inventory_says_where_the_playbook_jar_and_queries_are():
    inventory = LocalProvider(LOCAL).provision()
    assert isinstance(LocalProvider(LOCAL), Provider)
    assert inventory.path == LOCAL.resolve()
    assert inventory.playbook == REPO / "ansible" / "site.yml" and inventory.playbook.is_file()
    assert inventory.path_setting("streambed_job_jar") == REPO / "flink" / "build" / "streambed-job.jar"
    assert (inventory.path_setting("streambed_queries_dir") / "q1.sql").is_file()
    assert inventory.testbed["max_slots"] == 10


def test_settings_come_from_the_inventory(other):
    pytest.importorskip("pyflink")
    s = services.flink_settings(Inventory.load(other))
    assert (s.rest_url, s.prometheus_url) == ("http://jm.example:18181", "http://mon.example:19999")
    assert (s.jar, s.queries_dir, s.state_dir) == (other / "jobs" / "job.jar", other / "sql", other / "state")
    assert (s.max_slots, s.source_parallelism, s.memory_per_slot) == (6, 2, (2048, 4096))
    assert (s.max_source_rate, s.sample_period) == (1e6, 5.0)


def test_extra_variables_override_the_inventorys_settings(other):
    pytest.importorskip("pyflink")
    inventory = Inventory.load(other).with_vars({"flink_rest_port": 28081, "streambed_state_dir": "/tmp/x"})
    s = services.flink_settings(inventory)
    assert s.rest_url == "http://jm.example:28081" and s.state_dir == Path("/tmp/x")
    assert dict(inventory.extra_vars) == {"flink_rest_port": 28081, "streambed_state_dir": "/tmp/x"}
    assert Inventory.load(other).settings["flink_rest_port"] == 18181  # the loaded value itself is untouched


def test_a_setting_the_inventory_lacks_is_named(other):
    pytest.importorskip("pyflink")
    text = OTHER_GROUP_VARS.replace("prometheus_port: 19999\n", "").replace('streambed_playbook: "{{ inventory_dir | dirname }}/deploy/site.yml"\n', "")
    (other / "group_vars" / "all.yml").write_text(text)
    inventory = Inventory.load(other)
    with pytest.raises(UserError, match=r"missing setting prometheus_port"):
        services.flink_settings(inventory)
    with pytest.raises(UserError, match=r"group_vars/all.yml must set streambed_playbook \(a path\)$"):
        inventory.playbook


def test_deploying_a_budget_applies_the_inventorys_playbook_with_its_extra_variables(other, playbook_runs):
    inventory = Inventory.load(other).with_vars({"flink_rest_port": 28081})
    services.FlinkService(inventory).deploy(Budget(4, 2048), source_parallelism=2)
    services.FlinkService(inventory).destroy()
    (deploy_pb, deploy_inv, deploy_vars), (stop_pb, _, stop_vars) = playbook_runs
    assert deploy_pb == stop_pb == other.parent / "deploy" / "site.yml"
    assert deploy_inv == other
    assert deploy_vars == {"flink_rest_port": 28081, "flink_memory_per_slot_mb": 2048, "flink_cpu_per_slot": 0.0,
                           "flink_cluster_taskmanagers": 1, "flink_taskmanager_slots": 6}
    assert stop_vars == {"flink_rest_port": 28081, "flink_state": "stopped", "prometheus_state": "stopped"}


def test_the_testbed_deploys_through_the_service_when_a_budget_needs_other_memory(other, playbook_runs):
    pytest.importorskip("pyflink")
    testbed = services.flink_testbed(Inventory.load(other))
    # no cluster here (the deploys are what is checked): every slot is free
    testbed._wait_slots = lambda slots, memory_mb=None: None
    testbed.prepare(Budget(3, 4096))
    testbed.prepare(Budget(5, 4096))  # same memory per slot, slots all there: no redeploy
    assert [run[2] for run in playbook_runs] == [{"flink_memory_per_slot_mb": 4096, "flink_cpu_per_slot": 0.0,
                                                  "flink_cluster_taskmanagers": 1, "flink_taskmanager_slots": 8}]


def test_slots_with_a_cpu_share_deploy_as_taskmanagers_of_a_few_slots_each(other, playbook_runs):
    pytest.importorskip("pyflink")
    (other / "testbed.yml").write_text(OTHER_TESTBED + "cpu_per_slot: 0.2\nslots_per_taskmanager: 3\n")
    testbed = services.flink_testbed(Inventory.load(other))
    assert (testbed.settings.cpu_per_slot, testbed.settings.slots_per_taskmanager) == (0.2, 3)
    testbed._wait_slots = lambda slots, memory_mb=None: None
    testbed.prepare(Budget(3, 2048))
    # 6 slots for operators and 2 for the sources: 3 TaskManagers of 3 slots (0.6 core each), 1 spare
    assert playbook_runs[-1][2] == {"flink_memory_per_slot_mb": 2048, "flink_cpu_per_slot": 0.2,
                                    "flink_cluster_taskmanagers": 3, "flink_taskmanager_slots": 3}
    assert services.taskmanagers(8, 1) == {"flink_cluster_taskmanagers": 8, "flink_taskmanager_slots": 1}
    assert services.taskmanagers(8, 0) == {"flink_cluster_taskmanagers": 1, "flink_taskmanager_slots": 8}


@pytest.mark.parametrize("line, named", [("cpu_per_slot: 0.001", "cpu_per_slot 0.001"),
                                         ("cpu_per_slot: .nan", "cpu_per_slot nan"),
                                         ("slots_per_taskmanager: -1", "slots_per_taskmanager -1"),
                                         ("cpu_per_slot: lots", "bad setting")])
def test_a_bad_cpu_share_is_one_line_naming_it(other, line, named):
    pytest.importorskip("pyflink")
    (other / "testbed.yml").write_text(OTHER_TESTBED + line + "\n")
    with pytest.raises(UserError) as e:
        services.flink_settings(Inventory.load(other))
    assert named in _one_line(e)


def test_local_provider_destroy_stops_flink_and_prometheus(playbook_runs):
    provider = LocalProvider(LOCAL)
    provider.destroy(provider.provision())
    [(playbook, inventory, extra_vars)] = playbook_runs
    assert (playbook, inventory) == (REPO / "ansible" / "site.yml", LOCAL.resolve())
    assert extra_vars == {"flink_state": "stopped", "prometheus_state": "stopped"}


def test_the_default_inventory_is_configuration_not_code(tmp_path):
    assert default_inventory({}) == Path("inventories") / "local"
    assert default_inventory({INVENTORY_VARIABLE: str(tmp_path)}) == tmp_path


def test_the_flink_factory_refuses_a_sim_profile():
    with pytest.raises(UserError, match=r"^--profile: only the simulated testbed takes a profile \(--testbed sim\)$"):
        create_testbed(TestbedRequest("q1", profile="q1"), print)


def test_the_flink_factory_names_a_missing_inventory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(INVENTORY_VARIABLE, raising=False)
    with pytest.raises(UserError, match=r"^--inventory: no inventory at inventories/local "):
        create_testbed(TestbedRequest("q1"), print)
    monkeypatch.setenv(INVENTORY_VARIABLE, str(tmp_path / "elsewhere"))
    with pytest.raises(UserError, match=rf"^--inventory: no inventory at {tmp_path / 'elsewhere'} "):
        create_testbed(TestbedRequest("q1"), print)
    with pytest.raises(UserError, match=rf"^--inventory: no inventory at {tmp_path / 'given'} "):
        create_testbed(TestbedRequest("q1", inventory=tmp_path / "given"), print)


def test_the_flink_factory_checks_the_query_in_the_inventorys_queries(other):
    pytest.importorskip("pyflink")
    (other / "sql").mkdir()
    (other / "sql" / "q7.sql").write_text("-- not read\n")
    with pytest.raises(UserError, match=rf"^query: no q1.sql in {other / 'sql'} \(expected one of q7\)$"):
        create_testbed(TestbedRequest("q1", inventory=other), print)


def test_the_flink_factory_without_pyflink_says_to_install_it(other, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyflink", None)  # import pyflink now raises ModuleNotFoundError
    with pytest.raises(UserError) as e:
        create_testbed(TestbedRequest("q1", inventory=other), print)
    assert _one_line(e) == ("--testbed flink needs the 'flink' extra: pip install 'streambed[flink]', then pip install "
                            "--no-deps apache-flink==2.3.0 for pyflink (make install does both)")


def test_an_inventory_copied_under_another_name_has_a_state_directory_of_its_own(tmp_path):
    """Two inventories side by side (the local one and a variant of it) never write into each
    other's state directory: it follows the inventory's name."""
    for name in ("local", "local-variant"):
        shutil.copytree(LOCAL, tmp_path / "checkout" / "inventories" / name)
    dirs = [services.flink_settings(LocalProvider(tmp_path / "checkout" / "inventories" / name).provision()).state_dir
            for name in ("local", "local-variant")]
    assert dirs == [tmp_path / "checkout" / ".streambed" / "local", tmp_path / "checkout" / ".streambed" / "local-variant"]


def test_the_finer_local_inventory_shares_the_hosts_but_not_the_state_or_the_offer():
    """inventories/local-fine links local's hosts and group_vars: same addresses and ports, its own
    state directory (and so its own cgroup parent), and its own slots, share and memory."""
    local, fine = (LocalProvider(REPO / "inventories" / name).provision() for name in ("local", "local-fine"))
    assert services.flink_settings(fine).state_dir == REPO / ".streambed" / "local-fine"
    assert services.flink_settings(local).state_dir == REPO / ".streambed" / "local"
    assert fine.settings["flink_rest_port"] == local.settings["flink_rest_port"]
    assert fine.testbed["max_slots"] > local.testbed["max_slots"]
    assert fine.testbed["cpu_per_slot"] * (fine.testbed["max_slots"] + fine.testbed["source_parallelism"]) < 1.5


def test_the_local_inventory_copied_elsewhere_points_at_its_own_tree(tmp_path):
    """The paths are relative to the inventory: a copy of the repository's layout is self-contained."""
    copy = tmp_path / "checkout" / "inventories" / "local"
    shutil.copytree(LOCAL, copy)
    (tmp_path / "checkout" / "ansible").mkdir()
    shutil.copy(REPO / "ansible" / "site.yml", tmp_path / "checkout" / "ansible" / "site.yml")
    inventory = LocalProvider(copy).provision()
    assert inventory.playbook == tmp_path / "checkout" / "ansible" / "site.yml"
    assert inventory.path_setting("streambed_state_dir") == tmp_path / "checkout" / ".streambed" / "local"


def test_testbed_stop_stops_the_inventorys_flink_and_prometheus(other, playbook_runs, capsys):
    from streambed.cli import main

    assert main(["testbed", "stop", "--inventory", str(other), "--json"]) == 0
    (playbook, inventory, variables), = playbook_runs
    assert (playbook, inventory) == (other.parent / "deploy" / "site.yml", other)
    assert variables == {"flink_state": "stopped", "prometheus_state": "stopped"}
    assert '"stopped"' in capsys.readouterr().out


def test_testbed_stop_names_a_missing_inventory(tmp_path, capsys):
    from streambed.cli import main

    assert main(["testbed", "stop", "--inventory", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_what_the_roles_say_reaches_the_testbeds_log(other, monkeypatch):
    said = "CPU shares: no cgroup cpu controller under /x; the TaskManagers run unconfined"
    monkeypatch.setattr(services, "run_playbook", lambda *a, **k: PlaybookResult(
        ok=1, changed=0, failed=0, skipped=0, rc=0, elapsed_s=0.0, messages=(said,)))
    log: list[str] = []
    services.FlinkService(Inventory.load(other), log=log.append).deploy(Budget(2, 1024), source_parallelism=1)
    assert log == [said]

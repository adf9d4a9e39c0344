"""The lab end to end, as a team runs a cluster: provision, deploy, estimate, validate, lose a
TaskManager, destroy.

A lab of its own (name, subnet, bridge and lab directory of its own, so that a developer's `make
provision ENV=lab` keeps running beside it): Terraform makes 9 hosts as network namespaces, `streambed
infra deploy` applies the unchanged site.yml over SSH as the non-root admin with become to both
inventories (testbed and production), then

* the Kafka node's loop disk is formatted and mounted, and no broker runs (kafka_distribution=none);
* one short estimate of q11 on the testbed cluster (2 TaskManager hosts), during which a TaskManager is
  killed on its host with `streambed nodes stop-taskmanager`: its supervisor brings it back within a
  minute, the estimator discards the window it spoiled and the estimate finishes;
* one validation run of that configuration on the production cluster (3 TaskManager hosts) through
  the production inventory: its job ran on the production JobManager;
* destroy leaves no namespace, bridge, process, mount or loop device.

Each step's duration is printed (`pytest -s`). Performance means nothing here (9 hosts on 2 shared
cores): the assertions are about the path, never about rates.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import yaml

from conftest import REPO
from streambed.infra import terraform as tfw
from test_lab import EXAMPLE, _leftovers, _ssh

NAME, SUBNET, BRIDGE = "sbe", "10.213.9.0/24", "sb-labe"
QUERY = "q11"
CONFIG = "Calc#1=1,GroupWindowAggregate#2=1,Calc#3=1,Sink#4=1"
TM_BACK_S = 60.0


def _streambed(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streambed", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def _taskmanagers(rest: str) -> int:
    try:
        return int(requests.get(f"{rest}/overview", timeout=5).json().get("taskmanagers", 0))
    except (requests.RequestException, ValueError):
        return -1


def _heartbeat_ms(rest: str, taskmanager: str) -> int:
    """When the JobManager last heard from ``taskmanager`` (epoch ms; 0 when it is not registered).
    A restarted TaskManager registers under the same resource id (``<host>-tm-<n>``), so a heartbeat
    later than the kill is the new process's."""
    try:
        listed = requests.get(f"{rest}/taskmanagers", timeout=5).json()["taskmanagers"]
    except (requests.RequestException, ValueError, KeyError):
        return 0
    return max((int(t.get("timeSinceLastHeartbeat", 0)) for t in listed if t.get("id") == taskmanager), default=0)


def _estimate_killing_a_taskmanager(inventory: Path, host: str, rest: str, campaign: Path,
                                    timings: dict) -> tuple[dict, float]:
    """The estimate, with the first TaskManager of ``host`` killed right after its first window:
    its result, and how long the TaskManager took to be registered again."""
    proc = subprocess.Popen([sys.executable, "-m", "streambed", "estimate", "--query", QUERY, "--testbed", "flink",
                             "--inventory", str(inventory), "--memory", "1024", "--config", CONFIG,
                             "--timing", "quick", "--campaign-dir", str(campaign), "--verbose", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    back_s, lines = None, []
    started = time.monotonic()
    try:
        for line in proc.stderr:
            lines.append(line.rstrip())
            print(f"[estimate] {line.rstrip()}")
            if back_s is None and "events/s ->" in line:
                killed = _streambed("nodes", "stop-taskmanager", "--inventory", str(inventory), host, "--json",
                                    timeout=600)
                assert killed.returncode == 0, killed.stderr
                gone, gone_ms = time.monotonic(), time.time() * 1000  # the process is gone (the command waits)
                while (_heartbeat_ms(rest, f"{host}-tm-1") <= gone_ms
                       and time.monotonic() - gone < TM_BACK_S + 60):
                    time.sleep(1)
                back_s = time.monotonic() - gone
                print(f"[estimate] TaskManager {json.loads(killed.stdout)['pid']} on {host} killed; "
                      f"registered again after {back_s:.1f} s")
        out = proc.stdout.read()
        assert proc.wait(timeout=1800) == 0, "\n".join(lines[-5:])
    finally:
        if proc.poll() is None:
            proc.kill()
    timings["estimate (with a TaskManager killed)"] = time.monotonic() - started
    assert back_s is not None, "the estimate measured no window: " + "\n".join(lines[-5:])
    return json.loads(out), back_s


@pytest.mark.lab
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("tini") is None or not Path("/usr/sbin/sshd").exists(),
                    reason="the lab needs root, sshd and tini (make lab-packages)")
def test_lab_provision_deploy_estimate_validate_lose_a_taskmanager_and_destroy(tmp_path_factory):
    # Not under /tmp: every host mounts a private /tmp over it.
    lab_dir = Path(f"/var/tmp/streambed-e2e-lab-{os.getpid()}")
    work = tmp_path_factory.mktemp("e2e")
    inventory = work / "lab"
    production = tfw.production_dir(inventory)
    state = work / "state"
    # The inventories live outside the repository: name the repository's playbook, job and queries.
    paths = {"streambed_playbook": str(REPO / "ansible" / "site.yml"),
             "streambed_job_jar": str(REPO / "flink" / "build" / "streambed-job.jar"),
             "streambed_queries_dir": str(REPO / "flink" / "queries")}
    variables = {"name": NAME, "subnet": SUBNET, "bridge": BRIDGE, "lab_dir": str(lab_dir), "group_vars": paths}
    timings: dict[str, float] = {}

    def timed(step: str, fn):
        started = time.monotonic()
        result = fn()
        timings[step] = time.monotonic() - started
        print(f"[e2e] {step}: {timings[step]:.1f} s")
        return result

    try:
        timed("provision", lambda: tfw.provision(EXAMPLE, inventory, variables, state_dir=state))
        deployed = timed("deploy", lambda: _streambed("infra", "deploy", "--env", "lab", "--inventory", str(inventory),
                                                      timeout=3600))
        assert deployed.returncode == 0, deployed.stderr[-2000:]
        assert "STAND-IN (kafka_distribution=none)" in deployed.stderr

        hosts = yaml.safe_load((inventory / "hosts.yml").read_text())["all"]["hosts"]
        kafka = hosts[f"{NAME}-kafka-01"]
        mounted = _ssh(lab_dir, kafka["ansible_host"], "findmnt -n -o SOURCE,FSTYPE /var/lib/streambed/kafka-data")
        assert mounted.returncode == 0, mounted.stderr
        source, fstype = mounted.stdout.split()
        assert (source, fstype) == (os.path.realpath(kafka["kafka_data_device"]), "ext4")
        assert _ssh(lab_dir, kafka["ansible_host"], "pgrep -f kafka[.]Kafka").returncode == 1  # no broker

        settings = yaml.safe_load((inventory / "group_vars" / "all.yml").read_text())
        rest = f"http://{settings['flink_rest_address']}:{settings['flink_rest_port']}"
        estimate, back_s = _estimate_killing_a_taskmanager(inventory, f"{NAME}-tb-tm-01", rest, work / "estimate",
                                                           timings)
        assert back_s <= TM_BACK_S, f"the killed TaskManager was back after {back_s:.0f} s"
        assert estimate["discarded_windows"] >= 1, estimate  # the spoiled window, not a number
        assert estimate["mst"] > 0, estimate

        rate = max(100.0, round(estimate["mst"] / 2))
        validated = timed("validate (production)", lambda: _streambed(
            "validate", "--query", QUERY, "--testbed", "flink", "--inventory", str(production), "--config", CONFIG,
            "--memory", "1024", "--rate", str(rate), "--multipliers", "1", "--ramp", "10", "--duration", "30",
            "--window", "10", "--campaign-dir", str(work / "validate"), "--json", timeout=1800))
        assert validated.returncode == 0, validated.stderr[-2000:]
        report = json.loads(validated.stdout)
        assert len(report["runs"]) == 1 and report["runs"][0]["windows"], report
        # It ran on the production cluster (its own JobManager, 3 TaskManager hosts), not on the testbed's.
        prod = yaml.safe_load((production / "group_vars" / "all.yml").read_text())
        prod_rest = f"http://{prod['flink_rest_address']}:{prod['flink_rest_port']}"
        assert prod_rest != rest
        # and its report names that cluster (the production inventory's directory)
        assert report["cluster"]["name"] == production.name and report["cluster"]["testbed"].endswith(prod_rest), \
            report["cluster"]
        assert _taskmanagers(prod_rest) == 3
        jobs = requests.get(f"{prod_rest}/jobs/overview", timeout=10).json()["jobs"]
        assert len(jobs) >= 1, jobs
    finally:
        # The hosts go with every service still running (Flink, Prometheus, Spark, the mounted Kafka
        # disk): what must be left is nothing. Through this test's own Terraform state, never the
        # developer's lab's. (`make destroy` stops the services with Ansible first, for machines that
        # outlive their services; the lab's host teardown does not need it, and it costs minutes.)
        timed("destroy", lambda: tfw.destroy(EXAMPLE, variables, state_dir=state))
        print("[e2e] " + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))
    assert _leftovers(lab_dir, NAME, BRIDGE) == []
    assert not lab_dir.exists()

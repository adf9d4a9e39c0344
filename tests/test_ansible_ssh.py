"""site.yml over SSH as a non-root user with become, as on EC2 and the lab's hosts.

An sshd of this module's own on 127.0.0.1 and a throw-away admin user with passwordless sudo (as the
cloud images' `admin`); the inventory names the host by address, sets ansible_become and the five
roots (ansible/README.md) under a directory of its own. Applied for real: Flink (JobManager and two
TaskManagers, each held to its CPU share in a cgroup the flink user moves itself into), Prometheus
(targets from file_sd) and the node exporter, each as its own service user under streambed-supervise
(this machine has no systemd). Then: a second run changes nothing, a TaskManager killed with SIGKILL
is back with its slots within a minute, and the stopped state leaves no process.
A first run killed halfway (the JobManager up without its fingerprint, no TaskManager) is completed by
the next one. Needs root (to create the user), sshd, sudo and Java; skips with the reason otherwise.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests
import yaml

from conftest import REPO, port_open
from streambed.infra.ansible import PlaybookResult, run_playbook
from test_nodes import _sshd_binary, free_port

PLAYBOOK = REPO / "ansible" / "site.yml"
ADMIN = "sbtest-admin"
# Below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 on): a fixed port there can be
# held by any outgoing connection at the moment a process binds it (Ansible opens one per task here).
REST_PORT, RPC_PORT, PROMETHEUS_PORT, NODE_EXPORTER_PORT = 24081, 24123, 24090, 24100
REPORTER_PORTS = (24250, 24253)
REST = f"http://127.0.0.1:{REST_PORT}"


def _skip_unless_possible() -> None:
    if os.geteuid() != 0:
        pytest.skip("creating the admin user needs root")
    if shutil.which("sudo") is None:
        pytest.skip("sudo is not installed (make lab-packages)")
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: Flink cannot run here")
    if not Path("/usr/bin/prometheus").exists():  # the node exporter the role installs itself when missing
        pytest.skip("Prometheus is not installed (make install)")
    busy = [p for p in (REST_PORT, RPC_PORT, PROMETHEUS_PORT, NODE_EXPORTER_PORT, *range(*REPORTER_PORTS)) if port_open(p)]
    if busy:
        pytest.fail(f"test ports already in use (a leftover deployment?): {busy}")


def _pyflink_home() -> str:
    import importlib.util

    spec = importlib.util.find_spec("pyflink")
    if spec is None:
        pytest.skip("Flink from PyPI is not installed (make install)")
    return spec.submodule_search_locations[0]


def _admin_user(d: Path) -> None:
    """ADMIN: a login shell, passwordless sudo (a sudoers drop-in of this test), no password."""
    try:
        pwd.getpwnam(ADMIN)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", ADMIN], check=True)
    # no password, but not locked: sshd without PAM refuses key logins of a locked account ("!")
    subprocess.run(["usermod", "--password", "*", ADMIN], check=True)
    sudoers = Path(f"/etc/sudoers.d/{ADMIN}")
    sudoers.write_text(f"{ADMIN} ALL=(ALL) NOPASSWD: ALL\n")
    sudoers.chmod(0o440)


def _sshd(d: Path) -> tuple[subprocess.Popen, int]:
    sshd = _sshd_binary()
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    (d / "authorized_keys").chmod(0o644)
    port = free_port()
    (d / "sshd_config").write_text("\n".join([
        "ListenAddress 127.0.0.1", f"Port {port}", f"HostKey {d / 'host_key'}", f"PidFile {d / 'sshd.pid'}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}", "PubkeyAuthentication yes", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PermitRootLogin no", f"AllowUsers {ADMIN}", "UsePAM no",
        "StrictModes no", ""]))
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(d / "sshd_config")], stdout=subprocess.DEVNULL,
                            stderr=open(d / "sshd.log", "w"))
    deadline = time.monotonic() + 10
    while not port_open(port, "127.0.0.1"):
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.skip(f"sshd did not start: {(d / 'sshd.log').read_text().strip()[-300:]}")
        time.sleep(0.1)
    return proc, port


class Node:
    """One host reached over SSH; `apply` runs site.yml with the inventory's variables and overrides."""

    __test__ = False

    def __init__(self, base: Path, port: int, key: Path):
        self.base = base
        self.roots = {"streambed_software_dir": base / "opt", "streambed_config_dir": base / "etc",
                      "streambed_state_dir": base / "lib", "streambed_log_dir": base / "log",
                      "streambed_run_dir": base / "run"}
        host = {"ansible_host": "127.0.0.1", "ansible_port": port, "ansible_user": ADMIN,
                "ansible_ssh_private_key_file": str(key), "ansible_become": True,
                "ansible_python_interpreter": sys.executable,
                "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
                # no persistent master connection: nothing of ADMIN's outlives a run (teardown removes ADMIN)
                "ansible_ssh_args": "-o ControlMaster=no"}
        inventory = {"all": {
            "hosts": {"node1": host},
            "vars": {**{k: str(v) for k, v in self.roots.items()},
                     "streambed_services": ["flink", "prometheus", "node_exporter"],
                     "flink_home": _pyflink_home(),
                     "flink_rest_port": REST_PORT, "flink_jobmanager_rpc_port": RPC_PORT,
                     "flink_metrics_port_min": REPORTER_PORTS[0], "flink_metrics_port_max": REPORTER_PORTS[1],
                     "flink_taskmanagers": 2, "flink_taskmanager_slots": 1, "flink_memory_per_slot_mb": 512,
                     "flink_cpu_per_slot": 0.5,
                     "prometheus_listen_host": "127.0.0.1", "prometheus_port": PROMETHEUS_PORT,
                     "node_exporter_port": NODE_EXPORTER_PORT},
            "children": {g: {"hosts": {"node1": None}} for g in ("jobmanager", "taskmanagers", "monitoring")}}}
        self.inventory = base / "inventory.yml"
        self.inventory.write_text(yaml.safe_dump(inventory))
        self.runs: dict[str, PlaybookResult] = {}

    def apply(self, label: str, **overrides) -> PlaybookResult:
        started = time.monotonic()
        result = run_playbook(PLAYBOOK, self.inventory, overrides, private_dir=self.base / "ansible")
        self.runs[label] = result
        print(f"\n[ssh] {label}: {result} ({time.monotonic() - started:.0f} s)")
        return result

    def supervisors(self) -> list[int]:
        found = subprocess.run(["pgrep", "-f", f"streambed-supervise start {self.roots['streambed_run_dir']}/"],
                               capture_output=True, text=True).stdout.split()
        return [int(p) for p in found]

    def taskmanagers(self) -> list[int]:
        conf = self.roots["streambed_config_dir"] / "flink"
        found = subprocess.run(["pgrep", "-f", f"TaskManagerRunner .*--configDir {conf}( |$)"],
                               capture_output=True, text=True).stdout.split()
        return [int(p) for p in found]


def _user_of(pid: int) -> str:
    return pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name


@pytest.fixture(scope="module")
def node():
    _skip_unless_possible()
    base = Path(tempfile.mkdtemp(prefix="streambed-ssh-"))
    base.chmod(0o755)  # the service users traverse it to their roots
    _admin_user(base)
    sshd, port = _sshd(base)
    bed = Node(base, port, base / "client_key")
    try:
        yield bed
    finally:
        try:
            bed.apply("teardown", flink_state="stopped", prometheus_state="stopped", node_exporter_state="stopped")
        except Exception as exc:  # report, then make sure nothing is left
            print(f"[ssh] teardown failed: {exc}")
        for pid in bed.supervisors():
            os.kill(pid, signal.SIGTERM)
        time.sleep(1)
        for pattern in (f"--configDir {bed.roots['streambed_config_dir']}", f"--config.file={bed.roots['streambed_config_dir']}",
                        f"directory={bed.roots['streambed_state_dir']}"):
            for pid in subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split():
                os.kill(int(pid), signal.SIGKILL)
        sshd.terminate()
        sshd.wait(timeout=10)
        for pid in subprocess.run(["pgrep", "-u", ADMIN], capture_output=True, text=True).stdout.split():
            os.kill(int(pid), signal.SIGTERM)  # sessions of the test's own user (the sshd above is gone)
        Path(f"/etc/sudoers.d/{ADMIN}").unlink(missing_ok=True)
        subprocess.run(["userdel", "--remove", ADMIN], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def test_a_deploy_killed_halfway_is_completed_by_the_next_run(node):
    """ansible-playbook killed right after the JobManager started, before its fingerprint was recorded
    and before any TaskManager: the next run (the test below) must converge from there."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "ANSIBLE_CONFIG": str(REPO / "ansible" / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    run = subprocess.Popen([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(node.inventory), str(PLAYBOOK)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    seen = []
    for line in run.stdout:
        seen.append(line)
        if line.startswith("TASK [flink : Record the JobManager's configuration fingerprint]"):
            os.killpg(run.pid, signal.SIGKILL)
            break
    run.wait(timeout=60)
    assert run.returncode == -signal.SIGKILL, "".join(seen[-40:])
    assert node.taskmanagers() == [] and not (node.roots["streambed_run_dir"] / "jobmanager.fingerprint").exists()
    deadline = time.monotonic() + 60  # the JobManager's supervisor was started: its REST API comes up
    while not port_open(REST_PORT, "127.0.0.1") and time.monotonic() < deadline:
        time.sleep(1)
    assert requests.get(f"{REST}/overview", timeout=10).json()["taskmanagers"] == 0


def test_first_apply_over_ssh_with_become_deploys_every_service_as_its_user(node):
    first = node.apply("first")
    assert first.failed == 0 and first.changed > 0
    overview = requests.get(f"{REST}/overview", timeout=5).json()
    assert (overview["taskmanagers"], overview["slots-total"]) == (2, 2)
    tms = node.taskmanagers()
    assert len(tms) == 2 and {_user_of(p) for p in tms} == {"flink"}
    prometheus = subprocess.run(["pgrep", "-f", f"^/usr/bin/prometheus .*--config.file={node.roots['streambed_config_dir']}"],
                                capture_output=True, text=True).stdout.split()
    assert len(prometheus) == 1 and _user_of(int(prometheus[0])) == "prometheus"
    supervisors = node.supervisors()
    assert len(supervisors) == 5  # JobManager, 2 TaskManagers, Prometheus, node exporter
    assert {_user_of(p) for p in supervisors} == {"flink", "prometheus"}, "no supervisor stays root"
    # each TaskManager in a cgroup of its own, moved there by the flink user itself
    probe = subprocess.run([str(REPO / "ansible" / "roles" / "flink" / "files" / "cpu-share"), "probe", "/sys/fs/cgroup"],
                           capture_output=True, text=True).stdout
    if probe.startswith(("v1 ", "v2 ")):
        groups = {_cpu_cgroup(p) for p in tms}
        assert {g.rsplit("/", 1)[1] for g in groups} == {"tm-1", "tm-2"}, groups
    else:
        assert any("run unconfined" in m for m in first.messages), first.messages


def _cpu_cgroup(pid: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "" or "cpu" in controllers.split(","):
            return path
    return ""


def test_prometheus_finds_every_flink_process_through_file_sd(node):
    expected = {f"127.0.0.1:{REPORTER_PORTS[0] + i}" for i in range(3)}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        targets = requests.get(f"http://127.0.0.1:{PROMETHEUS_PORT}/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
        flink = {t["labels"]["instance"]: t for t in targets if t["labels"]["job"] == "flink"}
        up = {i for i, t in flink.items() if t["health"] == "up"}
        if up == expected:
            break
        time.sleep(1)
    missing = {i: flink[i].get("lastError", "") if i in flink else "not a target" for i in expected - up}
    assert up == expected, f"not up: {missing}; listening: {_listeners(REPORTER_PORTS)}"
    node_up = [t for t in targets if t["labels"]["job"] == "node" and t["health"] == "up"]
    assert [t["labels"]["instance"] for t in node_up] == [f"127.0.0.1:{NODE_EXPORTER_PORT}"]


def _listeners(ports: tuple[int, int]) -> str:
    """The sockets on the range's ports (ss), so that a failure says whether a reporter never bound."""
    if shutil.which("ss") is None:
        return "unknown (no ss)"
    wanted = {str(p) for p in range(ports[0], ports[1] + 1)}
    found = [" ".join(line.split()) for line in subprocess.run(["ss", "-Htanp"], capture_output=True, text=True).stdout.splitlines()
             if len(line.split()) > 3 and line.split()[3].rsplit(":", 1)[-1] in wanted]
    return "; ".join(found) or "none"


def test_second_apply_over_ssh_changes_nothing(node):
    second = node.apply("second")
    assert second.failed == 0 and second.changed == 0, second


def test_a_killed_taskmanager_is_back_within_a_minute(node):
    victim = node.taskmanagers()[0]
    os.kill(victim, signal.SIGKILL)
    started = time.monotonic()
    back = None
    while time.monotonic() - started < 60:
        now = node.taskmanagers()
        overview = requests.get(f"{REST}/overview", timeout=5).json()
        if len(now) == 2 and victim not in now and overview["slots-total"] == 2 and overview["taskmanagers"] == 2:
            back = time.monotonic() - started
            break
        time.sleep(1)
    assert back is not None, "the killed TaskManager was not back with its slot within 60 s"
    print(f"\n[ssh] TaskManager back with its slot {back:.1f} s after SIGKILL (held to 0.5 core)")


def test_stopped_leaves_no_process(node):
    stopped = node.apply("stop", flink_state="stopped", prometheus_state="stopped", node_exporter_state="stopped")
    assert stopped.failed == 0 and stopped.changed > 0
    assert node.supervisors() == [] and node.taskmanagers() == []
    assert not any(port_open(p) for p in (REST_PORT, PROMETHEUS_PORT, NODE_EXPORTER_PORT))
    again = node.apply("stop again", flink_state="stopped", prometheus_state="stopped", node_exporter_state="stopped")
    assert again.failed == 0 and again.changed == 0, again

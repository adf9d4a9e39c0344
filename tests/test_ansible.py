"""The Ansible deployment: lint, then the real site.yml applied to this machine.

The deployment tests apply ansible/site.yml to localhost (inventories/local) with their own ports and a
state directory under pytest's tmp dir, so they never touch a local testbed that may be running
(8081/9090/9250-9260): REST 18081, JobManager RPC 16123, Prometheus 19090, reporters 19250-19255.
They share one module-scoped deployment and run in file order; the fixture always stops it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from conftest import REPO, port_open
from streambed.infra.ansible import DeploymentError, PlaybookResult, inventory_settings, run_playbook

ANSIBLE_DIR = REPO / "ansible"
PLAYBOOK = ANSIBLE_DIR / "site.yml"
INVENTORY = REPO / "inventories" / "local" / "hosts.yml"
VENV_BIN = Path(sys.executable).parent

REST_PORT = 18081
RPC_PORT = 16123
PROMETHEUS_PORT = 19090
REPORTER_PORTS = range(19250, 19256)
REST = f"http://localhost:{REST_PORT}"
PROMETHEUS = f"http://127.0.0.1:{PROMETHEUS_PORT}"


def _java_available() -> bool:
    try:
        return subprocess.run(["java", "-version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _pyflink_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("pyflink") is not None


def test_ansible_lint_offline():
    """The whole directory: every role and site.yml (ansible-lint finds them itself)."""
    lint = VENV_BIN / "ansible-lint"
    if not lint.exists():
        pytest.skip("ansible-lint is not installed in this environment (pip install -e '.[test]')")
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    proc = subprocess.run(
        [str(lint), "--offline", "--nocolor"], cwd=ANSIBLE_DIR, env=env, capture_output=True, text=True, timeout=300
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Passed" in out and "0 failure(s), 0 warning(s)" in out, out
    assert "Profile 'production' was required, and it passed" in out, out


def test_inventory_settings_are_plain_yaml():
    settings = inventory_settings(INVENTORY)
    assert settings["streambed_state_dir"] == str(REPO / ".streambed" / "local")
    assert settings["flink_rest_port"] == 8081
    assert settings["prometheus_port"] == 9090
    assert (settings["flink_metrics_port_min"], settings["flink_metrics_port_max"]) == (9250, 9279)
    assert (settings["flink_taskmanagers"], settings["flink_taskmanager_slots"]) == (1, 4)
    assert settings["flink_memory_per_slot_mb"] == 1024
    # what the controller deploys and submits, relative to the inventory like the state directory
    assert settings["streambed_playbook"] == str(PLAYBOOK)
    assert settings["streambed_job_jar"] == str(REPO / "flink" / "build" / "streambed-job.jar")
    assert settings["streambed_queries_dir"] == str(REPO / "flink" / "queries")


CLUSTER_BINDS = """
- hosts: all
  gather_facts: false
  vars_files: [{defaults}]
  tasks:
    - ansible.builtin.copy:
        dest: "{{{{ out }}}}/{{{{ inventory_hostname }}}}"
        content: "{{{{ [flink_jobmanager_bind_host, flink_rest_bind_address, flink_taskmanager_bind_host] | join(' ') }}}}"
      delegate_to: localhost
"""


def test_the_roles_defaults_bind_each_service_to_its_hosts_address_not_every_interface(tmp_path):
    """On a cluster inventory (no group_vars of ours), Flink's RPC, REST API (which runs uploaded jars
    without authentication) and TaskManagers listen on the host's own address, never 0.0.0.0."""
    (tmp_path / "hosts.yml").write_text(
        "all:\n  children:\n    jobmanager: {hosts: {jm: {ansible_host: 10.0.0.5}}}\n"
        "    taskmanagers: {hosts: {tm1: {ansible_host: 10.0.0.7}}}\n")
    (tmp_path / "play.yml").write_text(CLUSTER_BINDS.format(defaults=ANSIBLE_DIR / "roles/flink/defaults/main.yml"))
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "ANSIBLE_NOCOLOR": "1"}
    run = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                          "-e", f"out={tmp_path} ansible_connection=local ansible_python_interpreter={sys.executable}"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert (tmp_path / "jm").read_text().split() == ["10.0.0.5", "10.0.0.5", "10.0.0.5"]
    assert (tmp_path / "tm1").read_text().split() == ["10.0.0.5", "10.0.0.5", "10.0.0.7"]


def test_missing_inventory_is_one_line_error(tmp_path):
    with pytest.raises(DeploymentError, match="inventory not found"):
        run_playbook(PLAYBOOK, tmp_path / "nope.yml")


def _pid(path: Path) -> int:
    lines = [ln for ln in path.read_text().split() if ln.strip()]
    assert len(lines) == 1, f"{path}: {lines}"
    return int(lines[0])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class Testbed:
    """One deployment on test ports; ``apply`` records every run with its duration."""

    __test__ = False

    def __init__(self, state_dir: Path):
        self.state_dir = state_dir
        self.vars: dict = {
            "streambed_state_dir": str(state_dir),
            "flink_rest_port": REST_PORT,
            "flink_jobmanager_rpc_port": RPC_PORT,
            "prometheus_port": PROMETHEUS_PORT,
            "flink_metrics_port_min": REPORTER_PORTS[0],
            "flink_metrics_port_max": REPORTER_PORTS[-1],
            "flink_taskmanagers": 1,
            "flink_taskmanager_slots": 2,
            "flink_memory_per_slot_mb": 512,
        }
        self.runs: dict[str, PlaybookResult] = {}
        self.tasks: list[str] = []

    def apply(self, label: str, **overrides) -> PlaybookResult:
        self.vars.update(overrides)
        result = run_playbook(
            PLAYBOOK, INVENTORY, self.vars, on_task=self.tasks.append, private_dir=self.state_dir / "ansible"
        )
        self.runs[label] = result
        print(f"\n[ansible] {label}: {result}")
        return result

    def deployed(self) -> "Testbed":
        """Deploys once if no test has yet: a test run alone (make test-cluster selects one) needs it."""
        if not self.runs:
            first = self.apply("first")
            assert first.failed == 0 and first.rc == 0, first
        return self

    @property
    def jobmanager_pid(self) -> int:
        return _pid(self.state_dir / "run" / "flink-streambed-standalonesession.pid")

    @property
    def taskmanager_pid(self) -> int:
        return _pid(self.state_dir / "run" / "flink-streambed-taskexecutor.pid")


@pytest.fixture(scope="module")
def testbed(tmp_path_factory):
    if not _java_available():
        pytest.skip("no java on PATH: Flink cannot run here")
    if not _pyflink_available():
        pytest.skip("Flink from PyPI is not installed (make install)")
    busy = [p for p in (REST_PORT, RPC_PORT, PROMETHEUS_PORT, *REPORTER_PORTS) if port_open(p)]
    if busy:
        pytest.fail(f"test ports already in use (a leftover deployment?): {busy}")
    bed = Testbed(tmp_path_factory.mktemp("testbed"))
    try:
        yield bed
    finally:
        if not (bed.runs and list(bed.runs)[-1] == "stop"):  # else test_stop_frees_every_port stopped it all
            _teardown(bed)


def _teardown(bed: Testbed) -> None:
    try:
        bed.apply("teardown", flink_state="stopped", prometheus_state="stopped")
    except DeploymentError as exc:  # report, but still leave nothing running
        print(f"[ansible] teardown failed: {exc}")
        # supervisors first (their command lines name their PID files), or they restart what is killed
        for pattern in (f"streambed-supervise start {bed.state_dir}", f"--configDir {bed.state_dir}", f"--config.file={bed.state_dir}"):
            found = subprocess.run(["pgrep", "-f", "--", pattern], capture_output=True, text=True)
            for pid in found.stdout.split():
                os.kill(int(pid), 9)


def test_first_apply_deploys_flink_and_prometheus(testbed):
    first = testbed.apply("first")
    assert first.failed == 0 and first.rc == 0
    assert first.changed > 0
    overview = requests.get(f"{REST}/overview", timeout=5).json()
    assert overview["taskmanagers"] == 1
    assert overview["slots-total"] == 2
    assert requests.get(f"{PROMETHEUS}/-/ready", timeout=5).status_code == 200
    assert any(t.startswith("flink : Start the TaskManagers") for t in testbed.tasks)
    config = (testbed.state_dir / "conf" / "flink" / "config.yaml").read_text()
    assert "taskmanager.memory.process.size: 1536m" in config  # 2 x 512 + 512
    assert f"metrics.reporter.prom.port: {REPORTER_PORTS[0]}-{REPORTER_PORTS[-1]}" in config
    # the source's per-split watermark gauges stay out of every scrape (docs/flink-testbed.md)
    assert "metrics.reporter.prom.filter.excludes:\n- '*.split.watermark'" in config


def test_second_apply_changes_nothing(testbed):
    jm, tm = testbed.jobmanager_pid, testbed.taskmanager_pid
    second = testbed.apply("second")
    assert second.changed == 0, second
    assert second.failed == 0
    assert (testbed.jobmanager_pid, testbed.taskmanager_pid) == (jm, tm)


def test_prometheus_scrapes_flink(testbed):
    deadline = time.monotonic() + 30
    up: list = []
    while time.monotonic() < deadline:
        reply = requests.get(f"{PROMETHEUS}/api/v1/query", params={"query": 'up{job="flink"}'}, timeout=5).json()
        up = [r["metric"]["instance"] for r in reply["data"]["result"] if r["value"][1] == "1"]
        if up:
            break
        time.sleep(1)
    assert up, "no Flink reporter target is up in Prometheus"
    # file_sd: exactly the running processes, each on its own port (JobManager: the first, TaskManager n: first + n)
    targets = requests.get(f"{PROMETHEUS}/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
    flink = {(t["labels"]["instance"], t["labels"]["flink_process"]) for t in targets if t["labels"]["job"] == "flink"}
    assert flink == {(f"localhost:{REPORTER_PORTS[0]}", "jobmanager"), (f"localhost:{REPORTER_PORTS[1]}", "taskmanager")}
    sd = json.loads((testbed.state_dir / "conf" / "file_sd" / "flink-localhost.json").read_text())
    assert [g["targets"] for g in sd] == [[f"localhost:{REPORTER_PORTS[0]}"], [f"localhost:{REPORTER_PORTS[1]}"]]


def test_a_killed_taskmanager_is_restarted_by_its_supervisor(testbed):
    """SIGKILL to the TaskManager's JVM: streambed-supervise starts it again (5 s later) and its slots
    register again; nothing in Ansible runs meanwhile."""
    tm = testbed.deployed().taskmanager_pid
    os.kill(tm, signal.SIGKILL)
    started = time.monotonic()
    back = None
    while time.monotonic() - started < 60:
        tms = requests.get(f"{REST}/taskmanagers", timeout=5).json()["taskmanagers"]
        pids = subprocess.run(["pgrep", "-f", f"TaskManagerRunner .*--configDir {testbed.state_dir}/conf/flink"],
                              capture_output=True, text=True).stdout.split()
        if len(pids) == 1 and int(pids[0]) != tm and len(tms) == 1 and tms[0]["slotsNumber"] == 2:
            back = time.monotonic() - started
            break
        time.sleep(1)
    assert back is not None, "the TaskManager did not come back within 60 s"
    assert [t["id"] for t in tms] == ["localhost-tm-1"], "the same resource ID after the restart"
    print(f"\n[supervise] TaskManager back with its slots {back:.1f} s after SIGKILL")
    log = (testbed.state_dir / "log" / "flink-taskmanager-1.supervise.log").read_text()
    assert f"{tm} exited with status -9" in log
    again = testbed.apply("after the restart")
    assert again.failed == 0 and again.changed == 0, again


def test_memory_change_restarts_only_the_taskmanager(testbed):
    jm, tm = testbed.jobmanager_pid, testbed.taskmanager_pid
    before = requests.get(f"{REST}/taskmanagers", timeout=5).json()["taskmanagers"]
    assert [t["memoryConfiguration"]["totalProcessMemory"] for t in before] == [1536 << 20]

    redeploy = testbed.apply("memory 512 -> 768 MB per slot", flink_memory_per_slot_mb=768)
    assert redeploy.changed > 0
    print(f"\n[ansible] memory change redeployed in {redeploy.elapsed_s:.0f} s")  # a figure, not an assert: load varies
    assert testbed.jobmanager_pid == jm and _alive(jm), "the JobManager must not restart"
    assert testbed.taskmanager_pid != tm and not _alive(tm), "the TaskManager must restart"

    overview = requests.get(f"{REST}/overview", timeout=5).json()
    assert (overview["taskmanagers"], overview["slots-total"]) == (1, 2)
    after = requests.get(f"{REST}/taskmanagers", timeout=5).json()["taskmanagers"]
    assert [t["memoryConfiguration"]["totalProcessMemory"] for t in after] == [2048 << 20]  # 2 x 768 + 512
    # the resource ID names the TaskManager's place (host, number), kept by the new process
    assert after[0]["id"] == before[0]["id"] == "localhost-tm-1"


def _cpu_cgroup(pid: int) -> str:
    """The cpu controller's group of a process (cgroup v1 line '<n>:cpu[,cpuacct]:<path>', v2 '0::<path>')."""
    return _cpu_cgroup_of(f"/proc/{pid}")


def _cpu_cgroup_of(proc: str) -> str:
    """The same for a /proc entry: a process, or one of its threads (/proc/<pid>/task/<tid>)."""
    lines = Path(f"{proc}/cgroup").read_text().splitlines()
    v1 = [ln.split(":", 2)[2] for ln in lines if "cpu" in ln.split(":", 2)[1].split(",")]
    return v1[0] if v1 else next(ln.split(":", 2)[2] for ln in lines if ln.startswith("0::"))


def test_cpu_shares_put_each_taskmanager_in_a_cgroup_of_its_own(testbed):
    """Slots as CPU shares (issue 12): two 1-slot TaskManagers of half a core each, applied for real."""
    probe = subprocess.run([str(ANSIBLE_DIR / "roles" / "flink" / "files" / "cpu-share"), "probe", "/sys/fs/cgroup"],
                           capture_output=True, text=True).stdout.strip()
    jm = testbed.jobmanager_pid
    shared = testbed.apply("2 TaskManagers of 1 slot, 0.5 core each", flink_taskmanagers=2,
                           flink_taskmanager_slots=1, flink_cpu_per_slot=0.5)
    assert shared.failed == 0 and shared.changed > 0
    assert testbed.jobmanager_pid == jm, "a CPU share is the TaskManagers' business: the JobManager stays"
    overview = requests.get(f"{REST}/overview", timeout=5).json()
    assert (overview["taskmanagers"], overview["slots-total"]) == (2, 2)
    config = (testbed.state_dir / "conf" / "flink" / "config.yaml").read_text()
    assert "taskmanager.cpu.cores: 0.5" in config and "-XX:ActiveProcessorCount=1" in config
    pids = [int(p) for p in (testbed.state_dir / "run" / "flink-streambed-taskexecutor.pid").read_text().split()]
    assert len(pids) == 2 and all(_alive(p) for p in pids)
    if not probe.startswith(("v1 ", "v2 ")):
        # no cgroup can be written here: one line says so, and the TaskManagers run unconfined
        assert any("run unconfined" in m for m in shared.messages), shared.messages
        return
    groups = [_cpu_cgroup(p) for p in pids]
    assert len(set(groups)) == 2 and all(g.rsplit("/", 1)[1] in ("tm-1", "tm-2") for g in groups), groups
    hierarchy = Path(probe.split(" ", 1)[1])
    for g in groups:
        quota = (hierarchy / g.lstrip("/") / "cpu.cfs_quota_us")
        assert quota.read_text().split() == ["5000"] if quota.exists() else \
            (hierarchy / g.lstrip("/") / "cpu.max").read_text().split() == ["5000", "10000"]
    if probe.startswith("v1 "):
        # the JIT compiler's threads (all started with the JVM) run in the parent group, outside the quota
        for pid, g in zip(pids, groups):
            threads = {t.name: (t / "comm").read_text().strip() for t in Path(f"/proc/{pid}/task").iterdir()}
            compilers = [tid for tid, name in threads.items() if name.startswith(("C1 CompilerThre", "C2 CompilerThre"))]
            assert compilers, threads
            assert {_cpu_cgroup_of(f"/proc/{pid}/task/{tid}") for tid in compilers} == {g.rsplit("/", 1)[0]}
            assert _cpu_cgroup_of(f"/proc/{pid}/task/{pid}") == g
    again = testbed.apply("the same shares again")
    assert again.changed == 0, again
    testbed.cpu_groups = [hierarchy / g.lstrip("/") for g in groups]


def test_without_a_writable_cgroup_the_taskmanagers_run_unconfined_and_say_so(testbed, tmp_path):
    """A host whose cgroup file system has no cpu controller (here: an empty directory as its root)."""
    fallback = testbed.apply("no cgroup cpu controller", flink_cgroup_root=str(tmp_path))
    assert fallback.failed == 0
    said = [m for m in fallback.messages if "run unconfined" in m]
    assert len(said) == 1 and f"no cgroup cpu controller under {tmp_path}" in said[0], fallback.messages
    pids = [int(p) for p in (testbed.state_dir / "run" / "flink-streambed-taskexecutor.pid").read_text().split()]
    assert len(pids) == 2 and all(_alive(p) for p in pids)
    # unconfined: in the cpu group they were started from (this test's own), not one of their own
    assert all(_cpu_cgroup(p) == _cpu_cgroup(os.getpid()) for p in pids), [_cpu_cgroup(p) for p in pids]
    overview = requests.get(f"{REST}/overview", timeout=5).json()
    assert (overview["taskmanagers"], overview["slots-total"]) == (2, 2)
    testbed.vars.pop("flink_cgroup_root")


def test_stop_frees_every_port(testbed):
    stopped = testbed.apply("stop", flink_state="stopped", prometheus_state="stopped")
    assert stopped.failed == 0 and stopped.changed > 0
    busy = [p for p in (REST_PORT, RPC_PORT, PROMETHEUS_PORT, *REPORTER_PORTS) if port_open(p)]
    assert busy == []
    for pattern in (f"--configDir {testbed.state_dir}", f"--config.file={testbed.state_dir}"):
        assert subprocess.run(["pgrep", "-f", "--", pattern], capture_output=True).returncode == 1
    # the TaskManagers' cgroups went with them
    assert not any(g.exists() for g in getattr(testbed, "cpu_groups", [])), testbed.cpu_groups
    print("\n[ansible] timings: " + ", ".join(f"{k} {r.elapsed_s:.1f}s" for k, r in testbed.runs.items()))


# ---------------------------------------------------------------------- the cluster install path

INSTALL_PLAYBOOK = """\
- name: Install Flink the way the flink role does on a cluster
  hosts: jobmanager
  gather_facts: false
  tasks:
    - name: Install from the release tarball
      ansible.builtin.include_role:
        name: flink
        tasks_from: install
"""


def _release_tarball(directory: Path, version: str) -> tuple[Path, str]:
    """A stand-in for the Apache release tarball (archive.apache.org is out of reach here): the
    same layout (flink-<version>/bin/jobmanager.sh), so the role's download, checksum and unpack
    steps run for real. Returns the file and its SHA-512."""
    import hashlib
    import tarfile

    tree = directory / "tree" / f"flink-{version}"
    (tree / "bin").mkdir(parents=True)
    (tree / "bin" / "jobmanager.sh").write_text("#!/bin/sh\necho stand-in\n")
    (tree / "lib").mkdir()
    (tree / "lib" / "flink-dist.jar").write_bytes(os.urandom(4096))
    tarball = directory / f"flink-{version}-bin-scala_2.12.tgz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(tree, arcname=tree.name)
    return tarball, hashlib.sha512(tarball.read_bytes()).hexdigest()


@pytest.fixture
def tarball_install(tmp_path):
    play = tmp_path / "play"
    play.mkdir()
    (play / "install.yml").write_text(INSTALL_PLAYBOOK)
    (play / "ansible.cfg").write_text(f"[defaults]\nroles_path = {ANSIBLE_DIR / 'roles'}\n")
    tarball, sha512 = _release_tarball(tmp_path / "mirror", "2.3.0")

    def apply(checksum: str):
        return run_playbook(play / "install.yml", INVENTORY, {
            "flink_install": "tarball", "flink_install_dir": str(tmp_path / "opt"),
            "flink_tarball_url": tarball.as_uri(), "flink_tarball_sha512": checksum})

    return apply, sha512, tmp_path / "opt"


def test_tarball_install_downloads_verifies_and_unpacks_once(tarball_install):
    apply, sha512, install_dir = tarball_install
    first = apply(sha512)
    assert first.failed == 0 and first.changed >= 2  # the directory, the download, the unpack
    assert (install_dir / "flink-2.3.0" / "bin" / "jobmanager.sh").is_file()
    again = apply(sha512)
    assert again.failed == 0 and again.changed == 0


def test_tarball_with_a_wrong_checksum_is_refused(tarball_install):
    apply, sha512, install_dir = tarball_install
    wrong = ("0" if sha512[0] != "0" else "1") + sha512[1:]
    with pytest.raises(DeploymentError, match=r"(?i)checksum"):
        apply(wrong)
    assert not (install_dir / "flink-2.3.0").exists()


@pytest.mark.parametrize("total, shares", [(5, [2, 2, 1]), (3, [1, 1, 1]), (2, [1, 1, 0]), (0, [4, 4, 4])])
def test_a_clusters_taskmanagers_are_shared_out_over_its_hosts(tmp_path, total, shares):
    """A budget's TaskManagers are the cluster's (services.taskmanagers): the flink role gives each
    taskmanagers host its share, the first hosts one more; 0 keeps flink_taskmanagers (4) per host."""
    hosts = ["tm1", "tm2", "tm3"]
    (tmp_path / "hosts.yml").write_text(
        "all:\n  vars:\n    ansible_connection: local\n    ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n"
        "  children:\n    jobmanager:\n      hosts:\n        jm:\n    taskmanagers:\n      hosts:\n"
        + "".join(f"        {h}:\n" for h in hosts))
    role = ANSIBLE_DIR / "roles" / "flink"
    (tmp_path / "play.yml").write_text(f"""
- hosts: all
  gather_facts: false
  vars_files: ["{role}/defaults/main.yml", "{role}/vars/main.yml"]
  tasks:
    - ansible.builtin.copy:
        content: "{{{{ flink_host_taskmanagers | int }}}} {{{{ flink_expected_taskmanagers | int }}}}"
        dest: "{tmp_path}/{{{{ inventory_hostname }}}}"
      delegate_to: localhost
""")
    done = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                           "-e", f"flink_cluster_taskmanagers={total}", "-e", "flink_taskmanagers=4"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    expected = total or 4 * len(hosts)
    assert [(tmp_path / h).read_text() for h in hosts] == [f"{s} {expected}" for s in shares]
    assert (tmp_path / "jm").read_text() == f"0 {expected}"  # the JobManager host runs no TaskManager

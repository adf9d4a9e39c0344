"""Node operations (streambed.infra.nodes, ``streambed nodes``), the hosts they read (infra.hosts) and the
transports they run through (infra.transport), on inventories of their own.

* The local transport for real: logs collected from a temporary state directory, disks checked on a
  temporary directory, a TaskManager stopped - a dummy process started here whose command line
  matches the TaskManager pattern with a temporary configuration directory, so the real testbed's
  TaskManagers (another configuration directory) can never match.
* The fabric transport for real over SSH: an sshd of its own on 127.0.0.1 (its own config, host key
  and client key; installed from Debian when absent, else the SSH tests are skipped with the reason),
  started once for the module and stopped at its end. Also through a ProxyJump and a ProxyCommand.
* Kafka's end offsets: no broker can run here (../shared/PLATFORM.md), so Kafka's tools are stand-ins:
  a scripted transport for the parsing and errors, and fake ``kafka-get-offsets.sh`` /
  ``kafka-run-class.sh`` scripts that check the arguments they get, to run the command built for real.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from clitools import error_line, json_result, streambed
from streambed.errors import UserError
from streambed.infra.hosts import NodeError, find_host, load_hosts
from streambed.infra.nodes import (TASKMANAGER_CLASS, check_disks, collect_logs, end_offsets_command,
                                   kafka_end_offsets, parse_end_offsets, stop_taskmanager, taskmanager_pattern)
from streambed.infra.provider import Inventory
from streambed.infra.transport import Completed, HostTransport, LocalTransport, Transport

TESTBED = {"max_slots": 2, "memory_per_slot_mb": [1024]}


def make_inventory(directory: Path, hosts: dict, all_vars: dict) -> Path:
    """An inventory directory as the controller reads it: hosts.yml, group_vars/all.yml, testbed.yml."""
    (directory / "group_vars").mkdir(parents=True)
    (directory / "hosts.yml").write_text(yaml.safe_dump({"all": hosts}))
    (directory / "group_vars" / "all.yml").write_text(yaml.safe_dump(all_vars))
    (directory / "testbed.yml").write_text(yaml.safe_dump(TESTBED))
    return directory


def write_logs(log_dir: Path) -> dict[str, str]:
    files = {"flink-streambed-standalonesession-0-vm.log": "jobmanager started\n",
             "flink-streambed-taskexecutor-0-vm.out": "x" * 5000,
             "archive/flink-streambed-taskexecutor-0-vm.log.1": "rotated\n"}
    for name, text in files.items():
        (log_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (log_dir / name).write_text(text)
    return files


def fake_kafka(home: Path, tool: str) -> None:
    """Stand-in for Kafka's bin/: ``tool`` prints two partitions of the topic it is asked about (and a
    log line to skip), after checking the arguments of the Kafka release it imitates."""
    (home / "bin").mkdir(parents=True)
    if tool == "kafka-get-offsets.sh":  # Kafka >= 3.0
        check = '[ "$1 $3 $5 $6" = "--bootstrap-server --topic --time -1" ] || { echo "bad args: $*" >&2; exit 2; }'
        topic, server = "$4", "$2"
    else:  # kafka-run-class.sh kafka.tools.GetOffsetShell, Kafka < 3.0
        check = ('[ "$1 $2 $4 $6 $7" = "kafka.tools.GetOffsetShell --broker-list --topic --time -1" ] '
                 '|| { echo "bad args: $*" >&2; exit 2; }')
        topic, server = "$5", "$3"
    script = (f"#!/bin/sh\n{check}\n"
              f'[ "{topic}" = missing ] && {{ echo "Error: Could not match any topic-partitions" >&2; exit 1; }}\n'
              f'echo "[2025-01-01 00:00:00] WARN connecting to {server} (org.apache.kafka.clients.NetworkClient)"\n'
              f'echo "{topic}:0:1200"\necho "{topic}:1:34"\n')
    (home / "bin" / tool).write_text(script)
    (home / "bin" / tool).chmod(0o755)


def dummy_taskmanager(conf_dir: str) -> subprocess.Popen:
    """A process whose command line looks like a TaskManager's of ``conf_dir`` (it only sleeps)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", TASKMANAGER_CLASS,
                             "--configDir", conf_dir, "-D", "taskmanager.numberOfTaskSlots=1"])


def gone(proc: subprocess.Popen, timeout: float = 10) -> int:
    proc.wait(timeout=timeout)
    return proc.returncode


# --- A local inventory ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """Two local hosts: localhost (state dir from a template, with logs) and tm2 (its own state dir,
    no logs); a kafka group on localhost whose bin/ is a stand-in."""
    root = tmp_path_factory.mktemp("local")
    hosts = {"hosts": {"localhost": {"ansible_connection": "local"},
                       "tm2": {"ansible_connection": "local", "streambed_state_dir": str(root / "tm2-state")}},
             "children": {"jobmanager": {"hosts": {"localhost": None}},
                          "taskmanagers": {"hosts": {"localhost": None, "tm2": None}},
                          "kafka": {"hosts": {"localhost": None}}}}
    path = make_inventory(root / "inventory", hosts, {
        "streambed_state_dir": "{{ inventory_dir | dirname }}/state",
        "kafka_home": str(root / "kafka"),
        "kafka_log_dirs": [str(root / "kafka-logs-1"), "{{ inventory_dir | dirname }}/not-yet/kafka-logs-2"]})
    (root / "state" / "log").mkdir(parents=True)
    (root / "kafka-logs-1").mkdir()
    fake_kafka(root / "kafka", "kafka-get-offsets.sh")
    inventory = Inventory.load(path)
    return {"root": root, "inventory": inventory, "hosts": load_hosts(inventory),
            "logs": write_logs(root / "state" / "log")}


def test_hosts_come_from_the_inventory_with_their_variables(local):
    hosts, root = local["hosts"], local["root"]
    assert list(hosts) == ["localhost", "tm2"]
    lh = hosts["localhost"]
    assert lh.connection == "local" and set(lh.groups) == {"jobmanager", "taskmanagers", "kafka"}
    assert lh.state_dir() == str(root / "state")  # {{ inventory_dir | dirname }} rendered
    assert lh.flink_log_dir() == str(root / "state" / "log")
    assert lh.flink_conf_dir() == str(root / "state" / "conf" / "flink")
    assert hosts["tm2"].state_dir() == str(root / "tm2-state")  # a host's own value wins over all.yml
    assert isinstance(HostTransport(), Transport) and isinstance(LocalTransport(), Transport)


def test_collect_logs_copies_each_hosts_log_dir(local, tmp_path):
    collected = collect_logs(local["inventory"], tmp_path / "logs", hosts=local["hosts"])
    by_host = {c.host: c for c in collected}
    assert set(by_host) == {"localhost", "tm2"}
    assert sorted(by_host["localhost"].files) == sorted(local["logs"])
    for name, text in local["logs"].items():
        assert (tmp_path / "logs" / "localhost" / name).read_text() == text
    assert by_host["localhost"].bytes == sum(len(t) for t in local["logs"].values())
    assert by_host["tm2"].missing and by_host["tm2"].files == ()


def test_check_disks_reports_numbers_and_a_verdict_below_the_minimum(local):
    root = local["root"]
    report = check_disks(local["inventory"], 0.001, hosts=local["hosts"])
    paths = {(d.host, d.path) for d in report.disks}
    assert paths == {("localhost", str(root / "state")), ("localhost", str(root / "kafka-logs-1")),
                     ("localhost", str(root / "not-yet" / "kafka-logs-2")), ("tm2", str(root / "tm2-state"))}
    assert report.ok and report.verdicts() == []
    usage = shutil.disk_usage(root)
    first = report.disks[0]
    assert first.total_gb == pytest.approx(usage.total / 1e9, rel=0.01) and 0 < first.free_gb <= first.total_gb
    missing = next(d for d in report.disks if d.path.endswith("kafka-logs-2"))
    assert missing.checked == str(root)  # not created yet: measured where it will be created

    default = check_disks(local["inventory"].with_vars({"kafka_log_dirs": ""}), 0.001)  # the kafka role's default
    assert [d.path for d in default.disks if d.host == "localhost"] == [str(root / "state"),
                                                                        str(root / "state" / "kafka-logs")]

    huge = check_disks(local["inventory"], 1e6, [str(root)], hosts=local["hosts"])
    assert not huge.ok and len(huge.verdicts()) == 2
    assert huge.verdicts()[0].startswith(f"localhost: {root} has ") and "below the minimum of 1e+06 GB" \
        in huge.verdicts()[0]


def test_stop_taskmanager_kills_the_one_asked_and_waits_for_it(local):
    conf_dir = local["hosts"]["localhost"].flink_conf_dir()
    first, second = dummy_taskmanager(conf_dir), dummy_taskmanager(conf_dir)
    try:
        # Only the dummies match: the pattern is anchored on this test's own configuration directory.
        listed = subprocess.run(["pgrep", "-f", taskmanager_pattern(conf_dir)], capture_output=True, text=True)
        assert sorted(int(p) for p in listed.stdout.split()) == sorted([first.pid, second.pid])
        stopped = stop_taskmanager(local["inventory"], "localhost", which=2, hosts=local["hosts"])
        assert stopped.pid == max(first.pid, second.pid) and stopped.signal == "KILL"
        assert stopped.before == tuple(sorted([first.pid, second.pid]))
        assert stopped.remaining == (min(first.pid, second.pid),)
        killed, kept = (second, first) if second.pid > first.pid else (first, second)
        assert gone(killed) == -signal.SIGKILL and kept.poll() is None

        stopped = stop_taskmanager(local["inventory"], "localhost", signal="TERM", hosts=local["hosts"])
        assert stopped.pid == kept.pid and stopped.remaining == () and gone(kept) == -signal.SIGTERM
    finally:
        for p in (first, second):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_stop_taskmanager_refuses_what_it_cannot_do(local):
    hosts = local["hosts"]
    conf_dir = hosts["localhost"].flink_conf_dir()
    # Nothing runs: the shell that runs pgrep (its command line holds the pattern) is not taken for one.
    with pytest.raises(NodeError, match=f"no TaskManager of {conf_dir} is running"):
        stop_taskmanager(local["inventory"], "localhost", hosts=hosts)
    with pytest.raises(NodeError, match="unknown host 'tm9': hosts of the taskmanagers group: localhost, tm2"):
        stop_taskmanager(local["inventory"], "tm9", hosts=hosts)
    dummy = dummy_taskmanager(conf_dir)
    try:
        with pytest.raises(NodeError, match=r"TaskManager 3 asked, but 1 run\(s\) there"):
            stop_taskmanager(local["inventory"], "localhost", which=3, hosts=hosts)
    finally:
        dummy.kill()
        dummy.wait()


# --- Kafka (stand-ins) ------------------------------------------------------------------------------


class ScriptedTransport:
    """Stand-in transport: records the commands and answers each with the next scripted result."""

    def __init__(self, *answers: Completed):
        self.answers = list(answers)
        self.commands: list[tuple[str, str]] = []

    def run(self, host, command, timeout=0):
        self.commands.append((host.name, command))
        return self.answers.pop(0)

    def get(self, host, remote_path, local_path):
        raise AssertionError("not used")


def test_end_offsets_are_parsed_from_kafkas_tool_output():
    out = ("[2025-01-01 00:00:00,000] WARN something (org.apache.kafka.clients.NetworkClient)\n"
           "bids:0:120\nbids:2:7\nbids:1:0\nbids.other:0:99\n\n")
    assert parse_end_offsets("bids", out) == {0: 120, 1: 0, 2: 7}
    assert parse_end_offsets("bids", "nothing useful\n") == {}


def test_end_offsets_command_and_errors_against_a_scripted_transport(local):
    hosts = local["hosts"]
    t = ScriptedTransport(Completed(0, "bids:0:5\nbids:1:6\n", ""))
    offsets = kafka_end_offsets(local["inventory"], "bids", bootstrap="k1:9092,k2:9092", transport=t, hosts=hosts)
    assert offsets.partitions == {0: 5, 1: 6} and offsets.total == 11 and offsets.host == "localhost"
    assert t.commands == [("localhost", end_offsets_command(str(local["root"] / "kafka"), "k1:9092,k2:9092", "bids"))]
    assert "kafka-get-offsets.sh\" --bootstrap-server k1:9092,k2:9092 --topic bids --time -1" in t.commands[0][1]

    t = ScriptedTransport(Completed(1, "", "Error: Could not match any topic-partitions with the specified filters"))
    with pytest.raises(NodeError, match="end offsets of topic bids \\(exit 1\\): Error: Could not match"):
        kafka_end_offsets(local["inventory"], "bids", transport=t, hosts=hosts)
    with pytest.raises(NodeError, match="expected a Kafka topic name"):
        kafka_end_offsets(local["inventory"], "bad topic; rm -rf /", transport=ScriptedTransport(), hosts=hosts)
    with pytest.raises(NodeError, match="unknown host 'tm2': hosts of the kafka group: localhost"):
        kafka_end_offsets(local["inventory"], "bids", host="tm2", transport=ScriptedTransport(), hosts=hosts)


def test_end_offsets_command_runs_against_stand_in_kafka_tools(local, tmp_path):
    offsets = kafka_end_offsets(local["inventory"], "bids", hosts=local["hosts"])
    assert offsets.partitions == {0: 1200, 1: 34} and offsets.bootstrap == "localhost:9092"
    with pytest.raises(NodeError, match="Could not match any topic-partitions"):
        kafka_end_offsets(local["inventory"], "missing", hosts=local["hosts"])
    # A Kafka older than 3.0: no kafka-get-offsets.sh, GetOffsetShell through kafka-run-class.sh.
    fake_kafka(tmp_path / "old", "kafka-run-class.sh")
    inventory = local["inventory"].with_vars({"kafka_home": str(tmp_path / "old"), "kafka_port": 9093,
                                              "kafka_host": "10.0.0.7"})
    offsets = kafka_end_offsets(inventory, "asks")
    assert offsets.partitions == {0: 1200, 1: 34} and offsets.bootstrap == "10.0.0.7:9093"


# --- The command line -------------------------------------------------------------------------------


def test_cli_nodes_commands(local, tmp_path):
    inv = str(local["inventory"].path)
    logs = json_result(streambed("nodes", "logs", "--inventory", inv, "--dest", "out", "--json", cwd=tmp_path))
    assert {h["host"]: len(h["files"]) for h in logs["hosts"]} == {"localhost": 3, "tm2": 0}
    assert (tmp_path / "out" / "localhost" / "archive" / "flink-streambed-taskexecutor-0-vm.log.1").is_file()
    disks = json_result(streambed("nodes", "disks", "--inventory", inv, "--min-free-gb", "1000000", "--json",
                                  cwd=tmp_path))
    assert disks["ok"] is False and len(disks["below"]) == len(disks["disks"]) == 4
    offsets = json_result(streambed("nodes", "offsets", "bids", "--inventory", inv, "--json", cwd=tmp_path))
    assert offsets["partitions"] == {"0": 1200, "1": 34} and offsets["total"] == 1234

    conf_dir = local["hosts"]["tm2"].flink_conf_dir()
    dummy = dummy_taskmanager(conf_dir)
    try:
        stopped = json_result(streambed("nodes", "stop-taskmanager", "tm2", "--inventory", inv, "--json",
                                        cwd=tmp_path))
        assert stopped["pid"] == dummy.pid and stopped["remaining"] == [] and gone(dummy) == -signal.SIGKILL
    finally:
        if dummy.poll() is None:
            dummy.kill()
            dummy.wait()


def test_cli_errors_are_one_line(local, tmp_path):
    inv = str(local["inventory"].path)
    line = error_line(streambed("nodes", "disks", "--inventory", str(tmp_path / "nowhere"), cwd=tmp_path))
    assert "--inventory: no inventory at" in line
    line = error_line(streambed("nodes", "stop-taskmanager", "tm9", "--inventory", inv, cwd=tmp_path))
    assert "unknown host 'tm9'" in line
    line = error_line(streambed("nodes", "disks", "--min-free-gb", "lots", "--inventory", inv, cwd=tmp_path))
    assert "--min-free-gb" in line and "expected GB" in line
    line = error_line(streambed("nodes", "logs", "--inventory", inv, cwd=tmp_path))
    assert "--dest" in line


def test_missing_inventory_is_one_line(tmp_path):
    with pytest.raises(UserError, match="--inventory: no inventory at"):
        Inventory.load(tmp_path / "nowhere")


# --- SSH: a real sshd on 127.0.0.1 ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sshd_binary() -> str:
    """/usr/sbin/sshd, installed from Debian (openssh-server) when absent; skips with the reason when it
    cannot be had."""
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    if os.path.exists(sshd):
        return sshd
    if os.geteuid() != 0:
        pytest.skip("SSH tests: sshd is not installed and installing openssh-server needs root")
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "openssh-server"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for attempt in (install, ["apt-get", "update", "-qq"], install):
        try:
            done = subprocess.run(attempt, capture_output=True, text=True, timeout=180, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"SSH tests: cannot run apt-get ({exc})")
        if attempt is install and done.returncode == 0 and os.path.exists("/usr/sbin/sshd"):
            return "/usr/sbin/sshd"
    last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    pytest.skip(f"SSH tests: openssh-server cannot be installed: {last[0]}")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    """An sshd of this module's own on 127.0.0.1 (key login of the current user), stopped at the end."""
    sshd = _sshd_binary()
    d = tmp_path_factory.mktemp("sshd")
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    port = free_port()
    (d / "sshd_config").write_text("\n".join([
        "ListenAddress 127.0.0.1", f"Port {port}", f"HostKey {d / 'host_key'}", f"PidFile {d / 'sshd.pid'}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}", "PubkeyAuthentication yes", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password", "UsePAM no", "StrictModes no",
        "AllowTcpForwarding yes", "Subsystem sftp /usr/lib/openssh/sftp-server", ""]))
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(d / "sshd_config")], stdout=subprocess.DEVNULL,
                            stderr=open(d / "sshd.log", "w"))
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.skip(f"SSH tests: sshd did not start: {(d / 'sshd.log').read_text().strip()[-300:]}")
                time.sleep(0.1)
        import getpass

        yield {"port": port, "key": str(d / "client_key"), "user": getpass.getuser(), "dir": d}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def ssh_inventory(root: Path, sshd: dict, **host_vars) -> Inventory:
    host = {"ansible_host": "127.0.0.1", "ansible_port": sshd["port"], "ansible_user": sshd["user"],
            "ansible_ssh_private_key_file": sshd["key"], "ansible_ssh_timeout": 5, **host_vars}
    hosts = {"hosts": {"node1": host},
             "children": {g: {"hosts": {"node1": None}} for g in ("jobmanager", "taskmanagers", "kafka")}}
    return Inventory.load(make_inventory(root / "inventory", hosts, {
        "streambed_state_dir": str(root / "state"), "kafka_home": str(root / "kafka")}))


@pytest.fixture(scope="module")
def remote(sshd, tmp_path_factory):
    """node1, reached over SSH (this machine through the module's sshd), with logs and stand-in Kafka tools."""
    root = tmp_path_factory.mktemp("remote")
    (root / "state" / "log").mkdir(parents=True)
    fake_kafka(root / "kafka", "kafka-get-offsets.sh")
    inventory = ssh_inventory(root, sshd)
    return {"root": root, "inventory": inventory, "hosts": load_hosts(inventory),
            "logs": write_logs(root / "state" / "log")}


def test_ssh_operations_through_fabric(remote, tmp_path):
    inventory, hosts, root = remote["inventory"], remote["hosts"], remote["root"]
    node = hosts["node1"]
    assert node.connection == "ssh" and node.address == "127.0.0.1" and node.connect_timeout == 5
    with HostTransport() as t:
        assert t.run(node, "echo $((6 * 7)); echo oops >&2; exit 3") == Completed(3, "42\n", "oops\n")
        collected = collect_logs(inventory, tmp_path / "logs", transport=t, hosts=hosts)
        assert sorted(collected[0].files) == sorted(remote["logs"])
        for name, text in remote["logs"].items():
            assert (tmp_path / "logs" / "node1" / name).read_text() == text  # copied over SFTP
        report = check_disks(inventory, 0.001, transport=t, hosts=hosts)
        assert report.ok and [d.path for d in report.disks] == [str(root / "state"), str(root / "state" / "kafka-logs")]
        assert kafka_end_offsets(inventory, "bids", transport=t, hosts=hosts).partitions == {0: 1200, 1: 34}

        dummy = dummy_taskmanager(node.flink_conf_dir())
        try:
            stopped = stop_taskmanager(inventory, "node1", transport=t, hosts=hosts)
            assert stopped.pid == dummy.pid and gone(dummy) == -signal.SIGKILL
        finally:
            if dummy.poll() is None:
                dummy.kill()
                dummy.wait()


def test_ssh_through_a_proxyjump_and_a_proxycommand(sshd, tmp_path):
    jump = f"{sshd['user']}@127.0.0.1:{sshd['port']}"
    ssh = (f"ssh -i {sshd['key']} -p {sshd['port']} -o BatchMode=yes -o StrictHostKeyChecking=no "
           f"-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -W %h:%p {sshd['user']}@127.0.0.1")
    expected = [(jump, None), (f"{jump},{jump}", None), (None, ssh.replace("%h:%p", f"127.0.0.1:{sshd['port']}"))]
    for i, args in enumerate([f"-o ProxyJump={jump}", f"-J {jump},{jump}", f"-o ProxyCommand='{ssh}'"]):
        inventory = ssh_inventory(tmp_path / str(i), sshd, ansible_ssh_common_args=args)
        node = load_hosts(inventory)["node1"]
        assert (node.gateway, node.proxy_command) == expected[i]
        with HostTransport() as t:
            assert t.run(node, "echo through") == Completed(0, "through\n", "")


def test_ssh_failures_are_one_line(sshd, tmp_path):
    closed = free_port()
    with socket.socket() as silent:  # accepts TCP, never speaks SSH (a hung sshd)
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        cases = [({"ansible_port": closed}, "node1 .*:%d\\) is unreachable: Connection refused on port %d"
                  % (closed, closed)),
                 ({"ansible_port": silent.getsockname()[1], "ansible_ssh_timeout": 1},
                  "is unreachable: no SSH server answered"),
                 ({"ansible_ssh_private_key_file": str(sshd["dir"] / "host_key")}, "SSH authentication failed"),
                 ({"ansible_ssh_private_key_file": str(tmp_path / "no-key")}, "no-key does not exist")]
        for i, (host_vars, message) in enumerate(cases):
            inventory = ssh_inventory(tmp_path / str(i), sshd, **host_vars)
            started = time.monotonic()
            with pytest.raises(NodeError, match=message) as caught:
                check_disks(inventory)
            assert "\n" not in str(caught.value) and time.monotonic() - started < 8
        # The command too: one line, although paramiko logs a traceback when the handshake fails.
        for i in (0, 1):
            line = error_line(streambed("nodes", "disks", "--inventory", str(tmp_path / str(i) / "inventory"),
                                        cwd=tmp_path))
            assert "is unreachable" in line


def test_find_host_names_the_known_ones(local):
    assert find_host(local["hosts"], "tm2").name == "tm2"
    with pytest.raises(NodeError, match="unknown host 'x': hosts of the inventory: localhost, tm2"):
        find_host(local["hosts"], "x")

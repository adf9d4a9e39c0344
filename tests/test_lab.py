"""ENV=lab: hosts as network namespaces on this machine (terraform/modules/lab, terraform/examples/lab).

The end-to-end test (marked ``lab``: ``pytest -m lab``) provisions a lab of its own (its own name,
subnet, bridge and lab directory, so that a developer's lab keeps running), checks each host the way
Ansible and the node commands reach it (SSH as the non-root admin, sudo, its own hostname, private
directories, no route off the machine, the Kafka node's unformatted loop disk), that a second
provision changes nothing, then destroys it and checks that nothing is left: no namespace, bridge,
process, mount or loop device.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO

from streambed.errors import UserError
from streambed.infra import terraform as tfw

EXAMPLE = REPO / "terraform" / "examples" / "lab"
NAME, SUBNET, BRIDGE = "sbt", "10.213.7.0/24", "sb-labt"


def test_a_failed_lab_command_is_its_own_line():
    detail = ("Error running command 'sh ../../modules/lab/scripts/host.sh up': exit status 1. Output: \n"
              "lab: host sbt-tb-jm (10.213.7.14) does not answer over SSH as admin with sudo after 30 s\n")
    assert tfw.diagnostic_line({"summary": "local-exec provisioner error", "detail": detail}) == (
        "local-exec provisioner error: lab: host sbt-tb-jm (10.213.7.14) does not answer over SSH as admin "
        "with sudo after 30 s")


def test_a_bad_value_names_the_variable_from_the_json_snippet():
    diagnostic = {"summary": "Invalid value for variable", "detail": "must be private.\n\nThis was checked by x.",
                  "snippet": {"code": "  subnet = var.subnet", "values": [{"traversal": "var.subnet"}]}}
    assert tfw.diagnostic_line(diagnostic) == "Invalid value for variable: var.subnet: must be private."


def test_a_public_subnet_or_a_lab_dir_the_hosts_hide_is_refused_in_one_line(tmp_path):
    for bad_value, expected in (({"subnet": "8.8.8.0/24"}, "subnet must be a private IPv4 CIDR"),
                                ({"lab_dir": str(tmp_path / "lab")}, "lab_dir must be an absolute path outside")):
        with pytest.raises(UserError) as bad:
            tfw.provision(EXAMPLE, tmp_path / "inv", {"name": NAME, "lab_dir": "/var/tmp/x", **bad_value},
                          state_dir=tmp_path / "state")
        assert "\n" not in str(bad.value) and expected in str(bad.value)
    assert not (tmp_path / "lab").exists() and not (tmp_path / "inv").exists() and not Path("/var/tmp/x").exists()


def _ssh(lab_dir: Path, address: str, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o",
                           f"UserKnownHostsFile={lab_dir}/known_hosts", "-i", str(lab_dir / "id_ed25519"),
                           f"admin@{address}", command], capture_output=True, text=True, timeout=60)


def _leftovers(lab_dir: Path, name: str = NAME, bridge: str = BRIDGE) -> list[str]:
    """What of the lab ``name`` (bridge ``bridge``, directory ``lab_dir``) is still on this machine."""
    left = [f"netns {line.split()[0]}" for line in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                                    text=True).stdout.splitlines()
            if line.startswith(f"{name}-")]
    if subprocess.run(["ip", "link", "show", bridge], capture_output=True).returncode == 0:
        left.append(f"bridge {bridge}")
    left += [f"loop {line}" for line in subprocess.run(["losetup", "-a"], capture_output=True, text=True)
             .stdout.splitlines() if str(lab_dir) in line]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(lab_dir) in cmdline:
            left.append(f"process {pid}: {cmdline[:80]}")
    left += [f"mount {line}" for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(lab_dir) in line]
    # the flink role's per-host cgroups (streambed-<host>-<hash>) on this machine's cgroup file system
    left += [f"cgroup {g}" for pattern in (f"streambed-{name}-*", f"*/streambed-{name}-*")
             for g in Path("/sys/fs/cgroup").glob(pattern)]
    return left


@pytest.mark.lab
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("tini") is None or not Path("/usr/sbin/sshd").exists(),
                    reason="the lab needs root, sshd and tini (make lab-packages)")
def test_lab_provision_reach_and_destroy_leaving_nothing(tmp_path_factory):
    # Not under /tmp: every host mounts a private /tmp over it.
    lab_dir = Path(f"/var/tmp/streambed-test-lab-{os.getpid()}")
    inventory_dir = tmp_path_factory.mktemp("inv") / "lab"
    state = tmp_path_factory.mktemp("state")
    variables = {"name": NAME, "subnet": SUBNET, "bridge": BRIDGE, "lab_dir": str(lab_dir)}
    tf = tfw.Terraform(EXAMPLE, variables, state)
    try:
        inventory = tfw.provision(EXAMPLE, inventory_dir, variables, state_dir=state)
        hosts = yaml.safe_load((inventory_dir / "hosts.yml").read_text())["all"]
        production = yaml.safe_load((tfw.production_dir(inventory_dir) / "hosts.yml").read_text())["all"]
        assert hosts["vars"]["ansible_user"] == "admin" and hosts["vars"]["ansible_become"] in (True, "true")
        assert inventory.settings["streambed_state_dir"] == "/var/lib/streambed"
        assert sorted(hosts["children"]["taskmanagers"]["hosts"]) == [f"{NAME}-tb-tm-01", f"{NAME}-tb-tm-02"]
        assert len(production["children"]["taskmanagers"]["hosts"]) == 3
        addresses = {name: v["ansible_host"] for name, v in {**hosts["hosts"], **production["hosts"]}.items()}
        assert len(addresses) == 9 and len(set(addresses.values())) == 9

        for name, address in addresses.items():
            done = _ssh(lab_dir, address, "id -un; hostname; sudo -n id -u; ip route; "
                                          "sudo -n touch /var/lib/streambed/mark; ls /var/lib/streambed")
            assert done.returncode == 0, f"{name} ({address}): {done.stderr}"
            user, hostname, root, *rest = done.stdout.splitlines()
            assert (user, hostname, root) == ("admin", name, "0")
            assert not any(line.startswith("default") for line in rest), rest  # no route off the machine
            assert "mark" in rest
        # Each host's /var/lib/streambed is its own: the marks above are one per host, none on this machine.
        assert not Path("/var/lib/streambed/mark").exists()
        assert len(list(lab_dir.glob("hosts/*/root/var/lib/streambed/mark"))) == 9

        kafka = f"{NAME}-kafka-01"
        device = hosts["hosts"][kafka]["kafka_data_device"]
        assert os.path.realpath(device).startswith("/dev/loop")
        blkid = subprocess.run(["blkid", "-p", os.path.realpath(device)], capture_output=True, text=True)
        assert blkid.returncode == 2, blkid.stdout  # no file system: the kafka role formats it

        # A second provision plans no change and applies nothing.
        tf.init()
        assert tf.apply() is False
    finally:
        tfw.destroy(EXAMPLE, variables, state_dir=state)
    assert _leftovers(lab_dir) == []
    assert not lab_dir.exists()
    assert json.loads((state / "terraform.tfstate").read_text())["resources"] == []


def test_state_goes_to_the_backend_the_user_configures(tmp_path):
    """A team's backend: a backend_override.tf in the example and BACKEND_CONFIG's file; here the
    local backend at another path stands for S3 (no cloud here), with the same init flags."""
    tree = tmp_path / "terraform"
    shutil.copytree(REPO / "terraform", tree, ignore=shutil.ignore_patterns(".terraform", "*.tfstate*", "tests"))
    example = tree / "examples" / "local"
    (example / "backend_override.tf").write_text('terraform {\n  backend "local" {}\n}\n')
    config = tmp_path / "backend.hcl"
    config.write_text(f'path = "{tmp_path / "team.tfstate"}"\n')
    state = tmp_path / "state"
    tfw.provision(example, tmp_path / "inv", state_dir=state, backend_config=config)
    assert (tmp_path / "team.tfstate").is_file() and not (state / "terraform.tfstate").exists()
    assert not (state / tfw.PLAN_FILE).exists()  # the saved plan is applied, then removed
    with pytest.raises(UserError, match="backend config .*nope.hcl: no such file"):
        tfw.provision(example, tmp_path / "inv", state_dir=state, backend_config=tmp_path / "nope.hcl")


def test_node_commands_take_sudo_and_the_roles_roots_from_the_inventory():
    from streambed.infra.hosts import Host

    roots = {"streambed_state_dir": "/var/lib/streambed", "streambed_config_dir": "/etc/streambed",
             "streambed_log_dir": "/var/log/streambed"}
    node = Host("n", ("taskmanagers",), "ssh", "10.213.0.5", variables={**roots, "ansible_become": "true"})
    assert node.become and node.flink_conf_dir() == "/etc/streambed/flink"
    assert node.flink_log_dir() == "/var/log/streambed"
    assert not Host("n", (), "ssh", "a", variables={"ansible_become": False}).become
    # This machine: no sudo, the older layout inside the state directory.
    local = Host("l", (), "local", "localhost", variables={"streambed_state_dir": "/s", "ansible_become": True})
    assert not local.become and local.flink_conf_dir() == "/s/conf/flink" and local.flink_log_dir() == "/s/log"


def _shim(directory: Path, name: str, script: str) -> None:
    directory.mkdir(exist_ok=True)
    (directory / name).write_text("#!/bin/sh\n" + script + "\n")
    (directory / name).chmod(0o755)


@pytest.mark.skipif(os.geteuid() != 0, reason="the lab's check runs as root (it creates a probe namespace)")
@pytest.mark.parametrize("missing, shim, expected", [
    # `ip netns add` refused (a container without CAP_SYS_ADMIN): the real ip for anything else.
    ("network namespaces", ("ip", 'case "$1 $2" in "netns add") echo "mount --make-shared: denied" >&2; exit 1;; esac; '
                                  'exec /usr/sbin/ip "$@"'),
     "lab: cannot create a network namespace (ip netns add) on this machine"),
    ("tini", ("tini", "exit 127"), None),
])
def test_a_machine_without_what_the_lab_needs_stops_provision_in_one_line(tmp_path, monkeypatch, missing, shim,
                                                                            expected):
    """Before any host is made: one line saying what is missing, and nothing created."""
    shims = tmp_path / "bin"
    name, script = shim
    _shim(shims, name, script)
    path = f"{shims}{os.pathsep}{os.environ['PATH']}"
    if missing == "tini":
        # A PATH on which every tool is found but tini (and /usr/sbin has none either).
        if Path("/usr/sbin/tini").exists():
            pytest.skip("/usr/sbin/tini exists: the check finds it there")
        (shims / "tini").unlink()
        for tool in ("ip", "nsenter", "unshare", "losetup", "flock", "ssh", "ssh-keygen", "sudo", "sh", "id", "env",
                     "mkdir", "chmod", "cat", "rm", "true", "dirname", "sha256sum"):
            found = shutil.which(tool)
            if found:
                (shims / tool).symlink_to(found)
        (shims / "terraform").symlink_to(tfw.terraform_binary())
        path = str(shims)
        expected = "lab: tini is missing: make lab-packages installs openssh-server, sudo and tini"
    monkeypatch.setenv("PATH", path)
    lab_dir = Path(f"/var/tmp/streambed-test-nolab-{os.getpid()}")
    variables = {"name": "sbn", "subnet": "10.213.6.0/24", "bridge": "sb-labn", "lab_dir": str(lab_dir)}
    with pytest.raises(UserError) as refused:
        tfw.provision(EXAMPLE, tmp_path / "inv", variables, state_dir=tmp_path / "state")
    line = str(refused.value)
    assert "\n" not in line and line.endswith(expected), line
    assert not lab_dir.exists() and not (tmp_path / "inv").exists()
    assert subprocess.run(["ip", "link", "show", "sb-labn"], capture_output=True).returncode != 0
    assert not [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if n.startswith("sbn-")]


def test_end_offsets_on_a_kafka_node_without_a_broker_is_one_line_and_connects_nowhere():
    from streambed.infra.hosts import Host, NodeError
    from streambed.infra.nodes import kafka_end_offsets
    from streambed.infra.provider import Inventory

    class NoConnection:
        def run(self, *args, **kwargs):
            raise AssertionError("no broker: nothing to connect to")

    node = Host("lab-kafka-01", ("kafka",), "ssh", "10.213.0.12", variables={"kafka_distribution": "none"})
    inventory = Inventory(Path("inventories/lab"), {}, {})
    with pytest.raises(NodeError, match=r"^host lab-kafka-01 .*10\.213\.0\.12.*: no Kafka broker runs there "
                                        r"\(kafka_distribution=none in the inventory\): topic bids has no end "
                                        r"offsets to read$"):
        kafka_end_offsets(inventory, "bids", transport=NoConnection(), hosts={node.name: node})


def test_the_data_directory_of_a_kafka_node_with_a_data_disk_is_on_that_disk():
    """As the kafka role places log.dirs: on the mounted data disk when the host has one (the lab's
    loop disk, EC2's NVMe), so that `nodes disks` checks the disk Kafka fills, not the root disk."""
    from streambed.infra.hosts import Host
    from streambed.infra.nodes import data_dirs

    roots = {"streambed_state_dir": "/var/lib/streambed"}
    with_disk = Host("k", ("kafka",), "ssh", "10.213.0.10", variables={**roots, "kafka_data_device": "/dev/loop0"})
    assert data_dirs(with_disk) == ["/var/lib/streambed", "/var/lib/streambed/kafka-data/kafka-logs"]
    moved = Host("k", ("kafka",), "ssh", "a", variables={**roots, "kafka_data_device": "/dev/nvme1n1",
                                                           "kafka_data_mount": "/data"})
    assert data_dirs(moved)[1:] == ["/data/kafka-logs"]
    assert data_dirs(Host("k", ("kafka",), "ssh", "a", variables=roots))[1:] == ["/var/lib/streambed/kafka-logs"]

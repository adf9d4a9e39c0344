"""The kafka role's data disk (roles/kafka/tasks/disk.yml) on a real loop device: a blank disk is
formatted and mounted, a second run changes nothing, a run interrupted after mkfs is completed without
a second mkfs, a disk holding another file system is refused in one line and left as it was. The whole
role with kafka_distribution=none (the lab) prepares the disk and log.dirs, installs and starts nothing,
and says so in one marked message.
Needs root and a free loop device; skips with the reason otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO

ANSIBLE_DIR = REPO / "ansible"
VENV_BIN = Path(sys.executable).parent


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, timeout=60)


@pytest.fixture
def disk(tmp_path):
    if os.geteuid() != 0 or shutil.which("losetup") is None or shutil.which("mkfs.ext4") is None:
        pytest.skip("needs root, losetup and mkfs.ext4")
    image = tmp_path / "disk.img"
    with open(image, "wb") as f:
        f.truncate(64 << 20)  # sparse, like the lab's Kafka disks
    attached = _run("losetup", "--find", "--show", str(image), check=False)
    if attached.returncode != 0:
        pytest.skip(f"no loop device: {attached.stderr.strip()}")
    device = attached.stdout.strip()
    mount = tmp_path / "state" / "kafka-data"
    try:
        yield device, mount
    finally:
        _run("umount", str(mount), check=False)
        _run("losetup", "--detach", device, check=False)


def _apply(tmp_path: Path, device: str, tasks_from: str = "disk", **extra) -> tuple[int, str]:
    """disk.yml (or the role's ``tasks_from``) through the role (its dependency, the streambed role,
    first); returns rc and the output."""
    state = tmp_path / "state"
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "The kafka role", "ansible.builtin.include_role": {"name": "kafka", "tasks_from": tasks_from}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "ansible.cfg").write_text(f"[defaults]\nroles_path = {ANSIBLE_DIR / 'roles'}\n")
    variables = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "streambed_state_dir": str(state), "streambed_software_dir": str(tmp_path / "opt"),
                 "streambed_config_dir": str(tmp_path / "etc"), "streambed_log_dir": str(tmp_path / "log"),
                 "streambed_run_dir": str(tmp_path / "run"), "streambed_service_users": False,
                 "streambed_supervision": "supervise", "kafka_data_device": device, **extra}
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    run = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", str(tmp_path / "play.yml"),
                          "-e", json.dumps(variables)], capture_output=True, text=True, env=env, timeout=180)
    return run.returncode, run.stdout


def _tasks(output: str, status: str) -> list[tuple[str, str]]:
    """(task name, the line after it) of the tasks whose result line starts with status ("changed", "fatal")."""
    found, task = [], None
    for line in output.splitlines():
        if line.startswith("TASK ["):
            task = line[len("TASK ["):line.index("]")].split(" : ", 1)[-1]
        elif task and line.startswith(status):
            found.append((task, line))
    return found


def _changed_tasks(output: str) -> list[str]:
    return [name for name, _ in _tasks(output, "changed:")]


def _fs(device: str) -> str:
    return _run("blkid", "-o", "value", "-s", "TYPE", device, check=False).stdout.strip()


def _mounted(mount: Path) -> str:
    return _run("findmnt", "-n", "-o", "SOURCE", "--mountpoint", str(mount), check=False).stdout.strip()


def test_a_blank_disk_is_formatted_and_mounted_once(disk, tmp_path):
    """Named through a link, as the lab names its loop devices (and /dev/disk/by-id names disks)."""
    device, mount = disk
    link = tmp_path / "disk"
    link.symlink_to(device)
    rc, report = _apply(tmp_path, str(link))
    assert rc == 0, report
    assert _fs(device) == "ext4" and _mounted(mount) == device
    assert {"Make the file system on the blank data disk", "Mount the data disk"} <= set(_changed_tasks(report))
    assert not (tmp_path / "etc" / "fstab").exists()  # no fstab line on a host without systemd (default)
    rc, again = _apply(tmp_path, str(link))
    assert rc == 0 and _changed_tasks(again) == [], _changed_tasks(again)


def test_a_run_interrupted_after_mkfs_mounts_without_formatting_again(disk, tmp_path):
    device, mount = disk
    _run("mkfs.ext4", "-q", "-L", "kafka-data", device)  # the interrupted run got this far
    uuid = _run("blkid", "-o", "value", "-s", "UUID", device).stdout.strip()
    rc, report = _apply(tmp_path, device)
    assert rc == 0 and _mounted(mount) == device
    changed = set(_changed_tasks(report))
    assert "Mount the data disk" in changed and "Make the file system on the blank data disk" not in changed, changed
    assert _run("blkid", "-o", "value", "-s", "UUID", device).stdout.strip() == uuid, "the file system was kept"


def test_a_disk_with_another_file_system_is_refused_and_kept(disk, tmp_path):
    device, mount = disk
    _run("mkfs.ext2", "-q", device)
    rc, report = _apply(tmp_path, device)
    assert rc != 0
    fatal = _tasks(report, "fatal:")
    assert [name for name, _ in fatal] == ["Refuse a data disk that holds another file system"], report[-2000:]
    assert f"kafka_data_device {device} holds a ext2 file system" in fatal[0][1]
    assert _fs(device) == "ext2" and _mounted(mount) == ""


def test_without_a_kafka_distribution_the_role_prepares_the_disk_and_starts_no_broker(disk, tmp_path):
    device, mount = disk
    rc, report = _apply(tmp_path, device, tasks_from="main", kafka_distribution="none")
    assert rc == 0, report[-3000:]
    assert _fs(device) == "ext4" and _mounted(mount) == device
    assert (mount / "kafka-logs").is_dir()  # log.dirs on the data disk, as a broker would find them
    assert "STAND-IN (kafka_distribution=none): no Kafka broker runs on localhost" in report
    assert not (tmp_path / "opt" / "kafka-releases").exists(), "nothing downloaded"
    assert not (tmp_path / "etc" / "kafka").exists(), "no server.properties: no broker configured"
    rc, again = _apply(tmp_path, device, tasks_from="main", kafka_distribution="none")
    assert rc == 0 and _changed_tasks(again) == [], _changed_tasks(again)
    rc, wrong = _apply(tmp_path, device, tasks_from="main", kafka_distribution="tansu")
    assert rc != 0 and "kafka_distribution" in wrong

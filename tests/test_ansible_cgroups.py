"""The flink role's cgroups are per host: two TaskManager hosts that see one cgroup file system (the
lab's network-namespace hosts, which share this machine's) and have the same state directory get
groups of their own, so that each host's TaskManagers are held to that host's CPU share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO

VENV_BIN = Path(sys.executable).parent
ROLE = REPO / "ansible" / "roles" / "flink"


def _rendered(tmp_path: Path, hosts: list[str], *extra: str) -> dict[str, str]:
    """Each host's flink_cgroup_parent as the role's defaults render it, every host with the same
    state directory (as the lab's hosts have: /var/lib/streambed, mounted privately on each)."""
    (tmp_path / "hosts.yml").write_text(
        "all:\n  vars:\n    ansible_connection: local\n    ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n"
        "    streambed_state_dir: /var/lib/streambed\n"
        "  children:\n    jobmanager:\n      hosts:\n        lab-tb-jm:\n    taskmanagers:\n      hosts:\n"
        + "".join(f"        {h}:\n" for h in hosts))
    (tmp_path / "play.yml").write_text(f"""
- hosts: taskmanagers
  gather_facts: false
  vars_files: ["{ROLE}/defaults/main.yml", "{ROLE}/vars/main.yml"]
  tasks:
    - ansible.builtin.copy:
        content: "{{{{ flink_cgroup_parent }}}}"
        dest: "{tmp_path}/{{{{ inventory_hostname }}}}"
      delegate_to: localhost
""")
    done = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(tmp_path / "play.yml"), *extra], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    return {h: (tmp_path / h).read_text() for h in hosts}


def test_two_taskmanager_hosts_with_one_state_directory_get_groups_of_their_own(tmp_path):
    parents = _rendered(tmp_path, ["lab-tb-tm-01", "lab-tb-tm-02"])
    assert parents["lab-tb-tm-01"] != parents["lab-tb-tm-02"]
    for host, parent in parents.items():
        assert parent.startswith(f"streambed-{host}-"), parent  # the host's name in the group's path
        assert "/" not in parent and " " not in parent


def test_another_state_directory_on_the_same_host_is_another_group(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _rendered(tmp_path / "a", ["tm"])
    second = _rendered(tmp_path / "b", ["tm"], "-e", "flink_state_dir=/var/lib/streambed-production")
    assert first["tm"] != second["tm"]

"""A host that does not answer over SSH: `streambed infra deploy` says so in one line naming the host
and the address Ansible tried, with exit status 2 and no traceback (SSH's own message names the
address only for some failures, so the line adds it from the inventory).

No sshd is needed: the host's address is this machine with a port nothing listens on.
"""

from __future__ import annotations

import subprocess
import sys

import yaml

from conftest import REPO
from test_nodes import free_port


def _inventory(directory, port: int):
    (directory / "group_vars").mkdir(parents=True)
    host = {"ansible_host": "127.0.0.1", "ansible_port": port, "ansible_user": "admin",
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
            "ansible_python_interpreter": sys.executable}
    (directory / "hosts.yml").write_text(yaml.safe_dump(
        {"all": {"children": {"jobmanager": {"hosts": {"node-a": host}}, "taskmanagers": {"hosts": {}},
                              "monitoring": {"hosts": {}}}}}))
    (directory / "group_vars" / "all.yml").write_text(yaml.safe_dump(
        {"streambed_state_dir": str(directory / "state"), "streambed_playbook": str(REPO / "ansible" / "site.yml")}))
    (directory / "testbed.yml").write_text(yaml.safe_dump({"max_slots": 1, "memory_per_slot_mb": [1024]}))


def test_a_host_unreachable_over_ssh_is_one_line_naming_host_and_address(tmp_path):
    inventory = tmp_path / "lab"
    _inventory(inventory, free_port())
    done = subprocess.run([sys.executable, "-m", "streambed", "infra", "deploy", "--env", "lab",
                           "--inventory", str(inventory)], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if "Deployment failed" in line]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "node-a (127.0.0.1): unreachable" in errors[0], errors[0]

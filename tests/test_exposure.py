"""What the deployment exposes: Flink's Prometheus reporter ports reachable only from loopback, the
host and the monitoring hosts (the flink role's nftables table); Grafana never left at admin/admin;
Terraform state, variables and rendered inventories readable by their owner only.

The reporter test runs a real Flink (JobManager + TaskManager, the flink role of ansible/site.yml)
and a real Prometheus inside a network namespace of its own (the "host", 10.213.77.1) and connects
from a second namespace (10.213.77.2, a non-local address to the host) over a veth pair on a private
/30 that is never routed out. The rule lands in the host namespace only: this machine's own
netfilter is untouched. Needs root (namespaces, nft); skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO

ANSIBLE_DIR = REPO / "ansible"
VENV_BIN = Path(sys.executable).parent
HOST_NS, CLIENT_NS = f"sbexp-h{os.getpid()}", f"sbexp-c{os.getpid()}"
HOST_IP, CLIENT_IP = "10.213.77.1", "10.213.77.2"
REPORTER_PORTS = (19350, 19355)
PROMETHEUS_PORT = 19390


def _ns(ns: str, *argv: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, timeout=timeout,
                          check=check)


def _connect(ns: str, port: int) -> str:
    """'open', 'refused' or 'timeout': a TCP connect from namespace ``ns`` to the host's address."""
    code = (f"import socket\ntry:\n    socket.create_connection(({HOST_IP!r}, {port}), timeout=3).close(); print('open')\n"
            f"except ConnectionRefusedError: print('refused')\nexcept OSError: print('timeout')")
    return _ns(ns, sys.executable, "-c", code).stdout.strip()


@pytest.fixture(scope="module")
def namespaces():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2")
    cmds = [["ip", "netns", "add", HOST_NS], ["ip", "netns", "add", CLIENT_NS],
            ["ip", "link", "add", "sbexp-h0", "type", "veth", "peer", "name", "sbexp-c0"],
            ["ip", "link", "set", "sbexp-h0", "netns", HOST_NS], ["ip", "link", "set", "sbexp-c0", "netns", CLIENT_NS],
            ["ip", "-n", HOST_NS, "addr", "add", f"{HOST_IP}/30", "dev", "sbexp-h0"],
            ["ip", "-n", CLIENT_NS, "addr", "add", f"{CLIENT_IP}/30", "dev", "sbexp-c0"],
            *(["ip", "-n", ns, "link", "set", dev, "up"] for ns, dev in
              ((HOST_NS, "lo"), (HOST_NS, "sbexp-h0"), (CLIENT_NS, "lo"), (CLIENT_NS, "sbexp-c0")))]
    try:
        for cmd in cmds:
            subprocess.run(cmd, check=True, capture_output=True, text=True)
        yield
    finally:
        for ns in (HOST_NS, CLIENT_NS):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _apply(state: Path, **overrides) -> subprocess.CompletedProcess:
    """ansible/site.yml, tags testbed (Flink and Prometheus), on the local inventory, inside the host namespace."""
    variables = {"streambed_state_dir": str(state), "flink_rest_port": 18581, "flink_jobmanager_rpc_port": 16523,
                 "prometheus_port": PROMETHEUS_PORT, "flink_metrics_port_min": REPORTER_PORTS[0],
                 "flink_metrics_port_max": REPORTER_PORTS[1], "flink_taskmanagers": 1, "flink_taskmanager_slots": 1,
                 "flink_memory_per_slot_mb": 512, **overrides}
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg")}
    return subprocess.run(["ip", "netns", "exec", HOST_NS, str(VENV_BIN / "ansible-playbook"), "-i",
                           str(REPO / "inventories" / "local" / "hosts.yml"), str(ANSIBLE_DIR / "site.yml"),
                           "--tags", "testbed", "-e", json.dumps(variables)],
                          capture_output=True, text=True, env=env, timeout=600)


def _flink_up(state: Path) -> list[int]:
    """The reporter ports Prometheus (in the host namespace) scrapes with up == 1."""
    code = (f"import json, urllib.request\nr = json.load(urllib.request.urlopen('http://127.0.0.1:{PROMETHEUS_PORT}"
            f"/api/v1/query?query=up%7Bjob%3D%22flink%22%7D', timeout=5))\n"
            f"print(json.dumps([r['metric']['instance'] for r in r['data']['result'] if r['value'][1] == '1']))")
    done = _ns(HOST_NS, sys.executable, "-c", code, check=False)
    return sorted(int(i.rsplit(":", 1)[1]) for i in json.loads(done.stdout or "[]"))


def test_reporter_ports_refuse_a_non_local_address_while_prometheus_scrapes(namespaces, tmp_path):
    import importlib.util

    if importlib.util.find_spec("pyflink") is None or shutil.which("java") is None:
        pytest.skip("Flink from PyPI and java are needed (make install)")
    state = tmp_path / "state"
    try:
        first = _apply(state, flink_metrics_firewall="required")
        assert first.returncode == 0, first.stdout[-3000:]
        ports = [REPORTER_PORTS[0], REPORTER_PORTS[0] + 1]  # the JobManager's and the TaskManager's
        deadline = time.monotonic() + 60
        while _flink_up(state) != ports and time.monotonic() < deadline:
            time.sleep(2)
        assert _flink_up(state) == ports, "Prometheus in the host namespace does not scrape both reporters"
        assert [_connect(CLIENT_NS, p) for p in ports] == ["refused", "refused"]
        assert [_connect(HOST_NS, p) for p in ports] == ["open", "open"]  # the host's own address
        # Without the rule the same ports answer the other namespace: they listen on every interface.
        off = _apply(state, flink_metrics_firewall="off")
        assert off.returncode == 0, off.stdout[-3000:]
        assert [_connect(CLIENT_NS, p) for p in ports] == ["open", "open"]
    finally:
        _apply(state, flink_state="stopped", prometheus_state="stopped")
        for pattern in (f"streambed-supervise start {state}", str(state)):
            found = subprocess.run(["pgrep", "-f", "--", pattern], capture_output=True, text=True)
            for pid in found.stdout.split():
                if int(pid) != os.getpid():
                    os.kill(int(pid), 9)


# ------------------------------------------------------------------------------ Grafana's administrator

RENDER = """\
- name: Render the Grafana configuration
  hosts: monitoring
  gather_facts: false
  tasks:
    - name: Render grafana.ini and the provisioning files
      ansible.builtin.include_role: {name: grafana, tasks_from: configure}
"""


def _render_grafana(tmp_path: Path, **extra) -> str:
    (tmp_path / "render.yml").write_text(RENDER)
    (tmp_path / "ansible.cfg").write_text(f"[defaults]\nroles_path = {ANSIBLE_DIR / 'roles'}\n")
    state = tmp_path / "state"
    variables = {"ansible_python_interpreter": sys.executable, "streambed_state_dir": str(state),
                 "streambed_software_dir": str(state), "streambed_config_dir": f"{state}/conf",
                 "streambed_log_dir": f"{state}/log", "streambed_run_dir": f"{state}/run",
                 "streambed_service_users": False, "grafana_dashboards_dir": str(REPO / "grafana"), **extra}
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg"), "HOME": str(tmp_path / "home")}
    done = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(REPO / "inventories" / "local" / "hosts.yml"),
                           str(tmp_path / "render.yml"), "-e", json.dumps(variables)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    ini = (state / "conf" / "grafana" / "grafana.ini").read_text()
    section = ini.split("[security]", 1)[1].split("[", 1)[0]
    return dict(line.split(" = ", 1) for line in section.strip().splitlines())["admin_password"]


def test_grafana_gets_a_generated_admin_password_kept_0600_when_none_is_given(tmp_path):
    password = _render_grafana(tmp_path)
    assert password != "admin" and len(password) == 32 and password.isalnum()
    [kept] = (tmp_path / "home" / ".streambed" / "secrets").rglob("grafana-admin-password-*")
    assert kept.read_text().strip() == password
    assert oct(kept.stat().st_mode & 0o777) == "0o600"
    assert oct(kept.parent.stat().st_mode & 0o777) == "0o700"
    assert _render_grafana(tmp_path) == password  # read back, not generated again


def test_a_given_grafana_admin_password_is_used_and_nothing_generated(tmp_path):
    assert _render_grafana(tmp_path, grafana_admin_password="s3cret-given") == "s3cret-given"
    assert not (tmp_path / "home" / ".streambed" / "secrets").exists()


# ------------------------------------------------------------------------------ Terraform state and inventories

def test_terraform_state_variables_and_rendered_inventory_are_private(tmp_path):
    import streambed.infra.terraform as tfw

    if shutil.which("terraform") is None:
        pytest.skip("terraform is not installed")
    example = tmp_path / "example"
    example.mkdir()
    # A root module of built-ins only (no provider can be had offline), with no backend block, as the examples
    # (the local state under state_dir): a resource, so a state is written.
    (example / "main.tf").write_text(
        'variable "password" {\n  type = string\n}\n'
        'resource "terraform_data" "node" {\n  input = var.password\n}\n'
        'output "inventory_files" {\n  value = {"hosts.yml" = yamlencode({all = {hosts = {n = {grafana_admin_password = '
        'terraform_data.node.output}}}})}\n}\n')
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    (state / "terraform.tfstate.backup").write_text("{}")  # written 0644 by an earlier StreamBed
    os.chmod(state / "terraform.tfstate.backup", 0o644)
    inventory_dir = tmp_path / "inventory"
    tf = tfw.Terraform(example, {"password": "p4ss"}, state)  # provision() without loading a testbed inventory
    tf.init()
    tf.apply()
    tfw.write_inventory(tf.output()[tfw.INVENTORY_OUTPUT], inventory_dir)
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in state.iterdir() if p.is_file()}
    assert modes.get("terraform.tfstate") == "0o600", modes
    assert modes["terraform.tfstate.backup"] == "0o600" and modes["variables.tfvars.json"] == "0o600"
    assert oct(state.stat().st_mode & 0o777) == "0o700"
    hosts = inventory_dir / "hosts.yml"
    assert yaml.safe_load(hosts.read_text())["all"]["hosts"]["n"]["grafana_admin_password"] == "p4ss"
    assert oct(hosts.stat().st_mode & 0o777) == "0o600"

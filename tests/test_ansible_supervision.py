"""How the roles keep services running (the streambed role, ansible/README.md "Supervision").

- streambed-supervise, the path for hosts without systemd (this machine, the lab's hosts): a crashed
  command comes back, a stop stops it for good, a bad program file is refused in one line.
- The systemd units the same role writes on cloud images, rendered from the role's own template and
  checked offline by `systemd-analyze verify` (Debian's systemd package: `make test-packages`). No
  unit runs here (no systemd as PID 1): what runs on a cloud image only is said in the README.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO

ROLE = REPO / "ansible" / "roles" / "streambed"
SUPERVISOR = ROLE / "files" / "streambed-supervise"
VENV_BIN = Path(sys.executable).parent


def supervise(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SUPERVISOR), *args], capture_output=True, text=True, timeout=90)


def _pids(pattern: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
    return [int(p) for p in found]


@pytest.fixture
def spec(tmp_path):
    marker = f"streambed-supervise-test-{os.getpid()}-{tmp_path.name}"
    path = tmp_path / "sleeper.supervise.json"
    # the command's argv carries a marker, so that pgrep finds it and nothing else
    path.write_text(json.dumps({"command": [sys.executable, "-c", "import time; time.sleep(1000)", marker],
                                "log": str(tmp_path / "sleeper.log"), "delay": 1, "timeout": 5,
                                "environment": {"STREAMBED_TEST": "1"}}))
    yield path, marker
    supervise("stop", str(path))
    for pid in _pids(marker):
        os.kill(pid, signal.SIGKILL)


def test_a_killed_command_comes_back_and_a_stop_is_final(spec):
    path, marker = spec
    first = supervise("start", str(path))
    assert first.returncode == 0 and first.stdout.startswith("started "), first
    again = supervise("start", str(path))
    assert again.stdout.strip() == first.stdout.strip().replace("started", "running"), "a second start changes nothing"
    deadline = time.monotonic() + 10
    while not (child := _pids(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(child) == 1
    supervisor = int(first.stdout.split()[1])
    assert marker not in Path(f"/proc/{supervisor}/cmdline").read_text(), \
        "the command stays off the supervisor's command line (the roles' pgrep patterns must not match it)"
    assert Path(f"/proc/{child[0]}/environ").read_bytes().split(b"\0").count(b"STREAMBED_TEST=1") == 1

    os.kill(child[0], signal.SIGKILL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        now = _pids(marker)
        if now and now != child:
            break
        time.sleep(0.1)
    assert now and now != child, "the killed command was not started again"
    log = Path(json.loads(path.read_text())["log"]).read_text()
    assert f"{child[0]} exited with status -9" in log

    stopped = supervise("stop", str(path))
    assert stopped.stdout.startswith("stopped "), stopped
    time.sleep(2.5)  # longer than the restart delay: nothing comes back
    assert _pids(marker) == []
    assert not path.exists() and not path.with_suffix(".pid").exists()
    assert supervise("status", str(path)).returncode == 1
    assert supervise("stop", str(path)).stdout.strip() == "not running"


def test_a_bad_program_file_is_one_line_and_starts_nothing(tmp_path):
    bad = tmp_path / "bad.supervise.json"
    bad.write_text(json.dumps({"log": str(tmp_path / "x.log")}))
    run = supervise("start", str(bad))
    assert run.returncode != 0 and run.stderr.count("\n") <= 1
    assert "expected a JSON object with a command" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "bad.supervise.pid").exists()


def test_a_stale_pid_file_naming_another_process_is_not_a_supervisor(tmp_path):
    path = tmp_path / "svc.supervise.json"
    path.write_text(json.dumps({"command": ["true"], "log": str(tmp_path / "l")}))
    (tmp_path / "svc.supervise.pid").write_text(f"{os.getpid()}\n")  # this pytest process, not a supervisor
    assert supervise("status", str(path)).returncode == 1


# --- systemd units ------------------------------------------------------------------------------------

SERVICES = {
    # what the flink role asks for a TaskManager held to 0.5 core, the prometheus role, the kafka role
    "flink-taskmanager-1": {
        "streambed_service_argv": ["{bin}/taskmanager.sh", "start-foreground",
                                   "-D", "metrics.reporter.prom.port=9251"],
        "streambed_service_user": "flink",
        "streambed_service_environment": {"FLINK_CONF_DIR": "/etc/streambed/flink", "FLINK_IDENT_STRING": "streambed",
                                          "STD_REDIRECT_TO_FILE": "true"},
        "streambed_service_unit_extra": {"CPUQuota": "50.0%", "CPUWeight": 800},
        "streambed_service_stop_timeout_s": 30,
    },
    "prometheus": {
        "streambed_service_argv": ["{bin}/prometheus", "--config.file=/etc/streambed/prometheus.yml",
                                   "--storage.tsdb.path=/var/lib/streambed/prometheus",
                                   "--web.listen-address=10.0.0.5:9090"],
        "streambed_service_user": "prometheus",
        "streambed_service_log": "/var/log/streambed/prometheus.log",
    },
    "kafka": {
        "streambed_service_argv": ["{bin}/kafka-server-start.sh", "/etc/streambed/kafka/server.properties"],
        "streambed_service_user": "kafka",
        "streambed_service_environment": {"KAFKA_HEAP_OPTS": "-Xms1024m -Xmx1024m", "LOG_DIR": "/var/log/streambed/kafka"},
        "streambed_service_stop_timeout_s": 120,
    },
}


def _render_units(out: Path, services: dict) -> dict[str, Path]:
    """The role's unit template rendered by Ansible itself for each service."""
    play = [{"hosts": "localhost", "gather_facts": False, "connection": "local",
             "vars": {"ansible_python_interpreter": sys.executable, "streambed_restart_delay_s": 5,
                      "streambed_service_output": "{{ streambed_service_log | default('/var/log/streambed/'"
                                                  " ~ streambed_service_name ~ '.supervise.log') }}"},
             "tasks": [{"name": f"unit {name}", "ansible.builtin.template": {
                 "src": str(ROLE / "templates" / "service.unit.j2"), "dest": str(out / f"streambed-{name}.service"),
                 "mode": "0644"}, "vars": {"streambed_service_name": name, **params}}
                       for name, params in services.items()]}]
    (out / "play.yml").write_text(yaml.safe_dump(play))
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "ANSIBLE_NOCOLOR": "1"}
    run = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", str(out / "play.yml")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:]
    return {name: out / f"streambed-{name}.service" for name in services}


def _verify(units: list[Path]) -> subprocess.CompletedProcess:
    return subprocess.run(["systemd-analyze", "verify", "--man=no", *map(str, units)],
                          capture_output=True, text=True, timeout=120)


def _stand_in_binaries(services: dict, bindir: Path) -> dict:
    """The services with their executables in bindir (verify checks that ExecStart names an executable
    file; the releases are not installed here)."""
    bindir.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, params in services.items():
        argv = [params["streambed_service_argv"][0].replace("{bin}", str(bindir)), *params["streambed_service_argv"][1:]]
        Path(argv[0]).write_text("#!/bin/sh\n")
        Path(argv[0]).chmod(0o755)
        out[name] = {**params, "streambed_service_argv": argv}
    return out


needs_systemd_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                           reason="systemd-analyze missing: make test-packages (Debian's systemd)")


@needs_systemd_analyze
def test_the_role_units_pass_systemd_analyze_verify(tmp_path):
    units = _render_units(tmp_path, _stand_in_binaries(SERVICES, tmp_path / "bin"))
    tm = units["flink-taskmanager-1"].read_text()
    assert "Restart=on-failure\n" in tm and "RestartSec=5\n" in tm and "User=flink\n" in tm
    assert "CPUQuota=50.0%\n" in tm and "CPUWeight=800\n" in tm
    assert 'Environment="FLINK_CONF_DIR=/etc/streambed/flink"' in tm
    assert "StandardOutput=append:/var/log/streambed/flink-taskmanager-1.supervise.log" in tm
    assert "StandardOutput=append:/var/log/streambed/prometheus.log" in units["prometheus"].read_text()
    assert 'Environment="KAFKA_HEAP_OPTS=-Xms1024m -Xmx1024m"' in units["kafka"].read_text()
    verified = _verify(list(units.values()))
    assert verified.returncode == 0 and verified.stdout + verified.stderr == "", verified


@needs_systemd_analyze
def test_systemd_analyze_verify_catches_a_broken_unit(tmp_path):
    """The check can fail: a directive systemd does not know, and an ExecStart that is no executable."""
    services = _stand_in_binaries({"broken": {**SERVICES["prometheus"],
                                              "streambed_service_unit_extra": {"RestartEvery": "5"}}}, tmp_path / "bin")
    units = _render_units(tmp_path, services)
    verified = _verify(list(units.values()))
    assert "Unknown key 'RestartEvery' in section [Service]" in verified.stderr, verified
    (tmp_path / "bin" / "prometheus").unlink()
    verified = _verify(list(units.values()))
    assert verified.returncode != 0 and "prometheus" in verified.stderr, verified

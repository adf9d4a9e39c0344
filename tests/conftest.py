"""Shared test settings."""

import contextlib
import http.server
import json
import os
import socket
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAPER_DATA = Path(os.environ.get("STREAMBED_PAPER_DATA", REPO / "data" / "streambed-paper"))
"""The paper's measurements, vendored under data/ (Apache-2.0; see data/README.md)."""


def port_open(port: int, host: str = "localhost") -> bool:
    """Whether something listens on ``port`` (the deployment tests refuse to run over a leftover one)."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def json_server(answer):
    """A stand-in HTTP server on a free local port: ``answer(path)`` gives (status, JSON body or None) for
    each GET, and for each PATCH with the path as ``"PATCH " + path``. Yields the base URL and port."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_PATCH(self):  # noqa: N802 - http.server's name
            self.do_GET("PATCH ")

        def do_GET(self, method=""):  # noqa: N802 - http.server's name
            status, body = answer(method + self.path)
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        yield f"http://127.0.0.1:{port}", port
    finally:
        server.shutdown()


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test run (a session costs 8-20 s to start)."""
    from streambed_spark.session import SparkSettings, session

    s = session(SparkSettings(master="local[2]", shuffle_partitions=2))
    yield s
    s.stop()


CLUSTER_TESTS = {"test_ansible_ssh.py", "test_ansible_kafka_disk.py", "test_exposure.py", "test_kafka_broker.py",
                 "test_lab.py", "test_lab_e2e.py"}
"""Tests that stand up hosts, brokers or firewalls of their own (sshd, network namespaces, loop devices,
nftables, a Kafka stand-in): `make test-cluster`, CI's second step, so that `make test` stays within its
30 minutes on 2 cores."""


CLUSTER_FAULT_TESTS = {
    "test_ansible.py::test_a_killed_taskmanager_is_restarted_by_its_supervisor",
    "test_flink_integration.py::test_a_lost_taskmanager_is_detected_and_its_window_discarded",
}
"""Faults test_lab_e2e.py repeats on the lab's hosts (a TaskManager killed, restarted by its supervisor, the
estimator's window discarded and the estimate finished): in `make test-cluster` beside it, as the two cost
about 3 minutes of `make test`'s 30."""


CLUSTER_DEPLOYMENTS = {"test_ansible.py": {"testbed", "tarball_install"}, "test_ansible_roles.py": {"real", "standin"}}
"""Per module, the fixtures that apply site.yml to this machine for real (Flink, Prometheus, Spark, the
node exporter, the Kafka and Grafana stand-ins: about 20 applies of up to 130 tasks, 12 of make test's
minutes on 2 cores by their durations): their tests run in `make test-cluster` beside the SSH deployment,
which applies the same roles over SSH. `make test` keeps each module's static checks (syntax, lint,
templates, inventories) and deploys and stops the local testbed with these roles in
tests/test_flink_integration.py and tests/test_dashboards.py."""


SERIAL_TESTS = {"test_flink_integration.py", "test_dashboards.py", "test_flink_job.py", "test_flink_replay.py",
                "test_cpu_share.py", "test_pressure.py", "test_ansible_cgroups.py", "test_ansible_supervision.py"}
"""Tests that measure this machine's time or CPU (real Flink jobs held to a rate, CPU quotas, the host's
CPU pressure, a supervisor's restart delay): `make test` runs them alone, after the others have run two
at a time (pytest-xdist), since the rest of the suite is single-threaded work that keeps one core busy."""


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        if (name in CLUSTER_TESTS or f"{name}::{item.name}" in CLUSTER_FAULT_TESTS
                or set(getattr(item, "fixturenames", ())) & CLUSTER_DEPLOYMENTS.get(name, set())):
            item.add_marker(pytest.mark.cluster)
        if name in SERIAL_TESTS:
            item.add_marker(pytest.mark.serial)

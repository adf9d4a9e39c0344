"""The Ansible roles besides flink and prometheus (java, node_exporter, spark, kafka, grafana) and the
site.yml that applies them all.

Roles whose software runs here are applied for real to localhost through ansible/site.yml, twice, on
test ports and in a state directory under pytest's tmp dir (never the local testbed's 8081/9090/
9250-9279/6123): java (the JDK already installed: a no-op), spark (PyPI's pyspark: master 17077, UI
18080, worker 17078, UI 18082), node_exporter (Debian's package, installed with apt when missing: 19100)
and Prometheus (19190) scraping it.

STAND-INS: Kafka and Grafana cannot be had on these machines (no broker or Grafana server in any
reachable registry). Their roles run for real against artifacts built here with the releases' layout:
a kafka_2.13-<v>.tgz whose bin/kafka-server-start.sh, kafka-storage.sh and kafka-topics.sh are small
scripts that record their arguments, format meta.properties, keep a process listening on the broker's
ports and keep topics in a file; a grafana tarball whose bin/grafana serves /api/health. Both come
through the roles' download path (file:// URLs) with their checksum files, so nothing in the roles
tells them from the real releases. What the stand-ins prove: the role's commands, arguments, ordering
and idempotence; not that a real broker or Grafana accepts the configuration.

Each group of roles is one module-scoped deployment applied twice (the second must change nothing);
the last test of each group stops it and the fixture kills anything left.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
import yaml

from conftest import REPO, port_open
from streambed.infra.ansible import DeploymentError, PlaybookResult, inventory_settings, run_playbook

ANSIBLE_DIR = REPO / "ansible"
PLAYBOOK = ANSIBLE_DIR / "site.yml"
EXAMPLES = REPO / "inventories" / "examples"
VENV_BIN = Path(sys.executable).parent

NODE_EXPORTER_PORT = 19100
PROMETHEUS_PORT = 19190
SPARK_PORTS = {"spark_master_port": 17077, "spark_master_webui_port": 18080,
               "spark_worker_port": 17078, "spark_worker_webui_port": 18082}
KAFKA_PORT, KAFKA_CONTROLLER_PORT = 19092, 19093
GRAFANA_PORT = 13000
KAFKA_VERSION, GRAFANA_VERSION, GRAFANA_BUILD = "4.1.0", "12.3.0", "19497075765"


def _env() -> dict:
    return {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "ANSIBLE_NOCOLOR": "1",
            "NO_COLOR": "1", "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg")}


def _local_inventory(path: Path, groups: list[str]) -> Path:
    """localhost (local connection, this Python) in ``groups``."""
    localhost = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    path.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": localhost},
                                            "children": {g: {"hosts": {"localhost": None}} for g in groups}}}))
    return path


def _roots(state: str) -> dict:
    """The streambed role's five roots inside one state directory, as the local inventory has them, and
    the services as the user running the test (root: the assertions below read modes and PIDs)."""
    return {"streambed_state_dir": state, "streambed_software_dir": state, "streambed_config_dir": f"{state}/conf",
            "streambed_log_dir": f"{state}/log", "streambed_run_dir": f"{state}/run", "streambed_service_users": False}


def _kill_leftovers(state_dir: Path) -> None:
    """Whatever still runs with a command line naming ``state_dir`` (a failed stop): SIGKILL."""
    found = subprocess.run(["pgrep", "-f", "--", str(state_dir)], capture_output=True, text=True)
    for pid in found.stdout.split():
        if int(pid) != os.getpid():
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass


@dataclass
class Deployment:
    """One inventory and its variables; ``apply`` runs site.yml and keeps every result."""

    state_dir: Path
    inventory: Path
    vars: dict
    runs: dict[str, PlaybookResult] = field(default_factory=dict)
    tasks: list[str] = field(default_factory=list)

    def apply(self, label: str, tags: str | None = None, **overrides) -> PlaybookResult:
        started = len(self.tasks)
        result = run_playbook(PLAYBOOK, self.inventory, {**self.vars, **overrides}, on_task=self.tasks.append,
                              private_dir=self.state_dir / "ansible", tags=tags)
        self.runs[label] = result
        print(f"\n[ansible] {label}: {result} ({len(self.tasks) - started} tasks)")
        return result


# ------------------------------------------------------------------------------ lint and syntax


@pytest.mark.parametrize("platform", ["ec2", "grid5000", "cloudlab"])
def test_site_yml_passes_the_syntax_check_with_each_example_inventory(platform):
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "--syntax-check", "-i",
                           str(EXAMPLES / platform / "hosts.yml"), str(PLAYBOOK)],
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


# ------------------------------------------------------------------------------ example inventories

GROUPS = ["jobmanager", "taskmanagers", "kafka", "spark_master", "spark_workers", "monitoring", "controller"]

RENDER_PLAYBOOK = """\
- name: Render the Kafka configuration of every Kafka host
  hosts: kafka
  gather_facts: false
  tasks:
    - name: Render server.properties
      ansible.builtin.include_role: {name: kafka, tasks_from: configure}

- name: Render the Grafana configuration of the monitoring host
  hosts: monitoring
  gather_facts: false
  tasks:
    - name: Render grafana.ini and the provisioning files
      ansible.builtin.include_role: {name: grafana, tasks_from: configure}
"""


def _properties(path: Path) -> dict[str, str]:
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    return dict(ln.split("=", 1) for ln in lines)


@pytest.mark.parametrize("platform", ["ec2", "grid5000", "cloudlab"])
def test_example_inventory_has_the_groups_terraform_renders_and_the_controllers_settings(platform):
    hosts = yaml.safe_load((EXAMPLES / platform / "hosts.yml").read_text())["all"]["children"]
    assert sorted(hosts) == sorted(GROUPS)
    assert all(hosts[g]["hosts"] for g in GROUPS), "every group has a host"
    for name, hv in hosts["kafka"]["hosts"].items():
        assert hv.get("kafka_log_dirs") or hv.get("kafka_data_device"), f"{name}: the SSD data directories or disk"
    settings = inventory_settings(EXAMPLES / platform / "hosts.yml")  # what the controller reads
    assert settings["streambed_playbook"] == str(PLAYBOOK)
    [monitor] = hosts["monitoring"]["hosts"].values()
    assert settings["prometheus_listen_host"] == monitor["ansible_host"]
    testbed = yaml.safe_load((EXAMPLES / platform / "testbed.yml").read_text())
    assert {"max_slots", "memory_per_slot_mb", "source_parallelism", "sample_period_s"} <= set(testbed)


def test_kafka_and_grafana_templates_render_for_each_example_inventory(tmp_path):
    """server.properties names every Kafka host as a quorum voter and its own SSD directories; Grafana's
    datasource is the monitoring host's Prometheus, and a dashboard no longer in grafana/ is removed.
    Rendered with each example inventory as it is (the three at once), each host's files written under
    tmp through a local connection."""
    (tmp_path / "render.yml").write_text(RENDER_PLAYBOOK)
    (tmp_path / "ansible.cfg").write_text(f"[defaults]\nroles_path = {ANSIBLE_DIR / 'roles'}\n")
    runs = {}
    for platform in ("ec2", "grid5000", "cloudlab"):
        out = tmp_path / platform
        children = yaml.safe_load((EXAMPLES / platform / "hosts.yml").read_text())["all"]["children"]
        [monitor] = children["monitoring"]["hosts"]
        stale = out / monitor / "grafana" / "dashboards" / "old" / "stale.json"
        stale.parent.mkdir(parents=True)
        stale.write_text("{}")
        extra = {"ansible_connection": "local", "ansible_become": False, "ansible_python_interpreter": sys.executable,
                 **_roots(f"{out}/{{{{ inventory_hostname }}}}"),
                 "grafana_dashboards_dir": str(REPO / "grafana")}
        runs[platform] = subprocess.Popen(
            [str(VENV_BIN / "ansible-playbook"), "-i", str(EXAMPLES / platform / "hosts.yml"),
             str(tmp_path / "render.yml"), "-e", json.dumps(extra)],
            env={**_env(), "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg")},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for platform, proc in runs.items():
        output = proc.communicate(timeout=180)[0]
        assert proc.returncode == 0, f"{platform}: {output[-3000:]}"
        _check_rendered(EXAMPLES / platform / "hosts.yml", tmp_path / platform)


def _check_rendered(inventory: Path, out: Path) -> None:
    children = yaml.safe_load(inventory.read_text())["all"]["children"]
    kafka = children["kafka"]["hosts"]
    voters = ",".join(f"{i}@{h['ansible_host']}:9093" for i, h in enumerate(kafka.values(), 1))
    for i, (name, hv) in enumerate(kafka.items(), 1):
        props = _properties(out / name / "conf" / "kafka" / "server.properties")
        assert props["controller.quorum.voters"] == voters
        # without kafka_log_dirs: a directory on the data disk, mounted under the state root
        log_dirs = hv.get("kafka_log_dirs") or [f"{out}/{name}/kafka-data/kafka-logs"]
        assert props["log.dirs"] == ",".join(log_dirs)
        assert props["metadata.log.dir"] == log_dirs[0]
        assert (props["node.id"], props["process.roles"]) == (str(i), "broker,controller")
        assert props["listeners"] == f"PLAINTEXT://{hv['ansible_host']}:9092,CONTROLLER://{hv['ansible_host']}:9093"
        assert props["advertised.listeners"] == f"PLAINTEXT://{hv['ansible_host']}:9092"
        assert props["default.replication.factor"] == "3"

    [(monitor, mv)] = children["monitoring"]["hosts"].items()
    provisioning = out / monitor / "conf" / "grafana" / "provisioning"
    [prometheus, *others] = yaml.safe_load((provisioning / "datasources" / "streambed.yaml").read_text())["datasources"]
    assert (prometheus["type"], prometheus["url"], prometheus["isDefault"]) == ("prometheus", f"http://{mv['ansible_host']}:9090", True)
    other = yaml.safe_load((inventory.parent / "group_vars" / "all.yml").read_text()).get("grafana_other_prometheus", [])
    assert [(o["name"], o["uid"], o["url"], o["type"], o["isDefault"]) for o in others] == \
        [(o["name"], o["uid"], o["url"], "prometheus", False) for o in other]
    assert f"http_addr = {mv['ansible_host']}" in (out / monitor / "conf" / "grafana" / "grafana.ini").read_text()
    assert not (out / monitor / "grafana" / "dashboards" / "old" / "stale.json").exists()


# ------------------------------------------------------------------------------ java, spark, node_exporter

def _java_available() -> bool:
    try:
        return subprocess.run(["java", "-version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """java, spark, prometheus and node_exporter applied for real to localhost, twice."""
    import importlib.util

    if not _java_available():
        pytest.skip("no java on PATH: Spark cannot run here")
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed (make install)")
    ports = [NODE_EXPORTER_PORT, PROMETHEUS_PORT, *SPARK_PORTS.values()]
    busy = [p for p in ports if port_open(p) or port_open(p, "127.0.0.1")]
    if busy:
        pytest.fail(f"test ports already in use (a leftover deployment?): {busy}")
    base = tmp_path_factory.mktemp("real")
    inventory = _local_inventory(base / "hosts.yml", ["spark_master", "spark_workers", "monitoring"])
    bed = Deployment(base / "state", inventory, {
        **_roots(str(base / "state")),
        "streambed_services": ["java", "spark", "prometheus", "node_exporter"],
        "node_exporter_listen_host": "127.0.0.1", "node_exporter_port": NODE_EXPORTER_PORT,
        # Prometheus' Flink job reads file_sd files no Flink host of this deployment writes: no target.
        "prometheus_port": PROMETHEUS_PORT,
        "prometheus_scrape_interval": "1s",
        "spark_master_host": "127.0.0.1", "spark_worker_host": "127.0.0.1", **SPARK_PORTS,
        "spark_worker_cores": 1, "spark_worker_memory_mb": 512, "spark_daemon_memory_mb": 256,
    })
    try:
        bed.apply("first")
        bed.apply("second")
        yield bed
    finally:
        if "stop" not in bed.runs:
            try:
                bed.apply("stop", tags="spark,node_exporter", spark_state="stopped", node_exporter_state="stopped")
            except DeploymentError as exc:
                print(f"[ansible] stop failed: {exc}")
        _kill_leftovers(bed.state_dir)


def test_first_apply_starts_spark_prometheus_and_the_node_exporter(real):
    first = real.runs["first"]
    assert first.failed == 0 and first.changed > 0
    assert any(t.startswith("spark : Start the master") for t in real.tasks)
    assert any(t.startswith("node_exporter : Start the node exporter") for t in real.tasks)


def test_second_apply_changes_nothing(real):
    second = real.runs["second"]
    assert second.changed == 0, second
    assert second.failed == 0


def test_java_role_finds_the_installed_java(real):
    said = [m for m in real.runs["second"].messages if m.startswith("java: ")]
    assert len(said) == 1 and re.search(r"is Java \d+[.\d]* \(major release (\d+)\)", said[0]), said
    assert int(re.search(r"major release (\d+)", said[0]).group(1)) >= 17


def test_node_exporter_serves_metrics_and_prometheus_scrapes_it(real):
    metrics = requests.get(f"http://127.0.0.1:{NODE_EXPORTER_PORT}/metrics", timeout=5)
    assert metrics.status_code == 200 and "node_cpu_seconds_total" in metrics.text
    config = yaml.safe_load((real.state_dir / "conf" / "prometheus.yml").read_text())
    [node] = [job for job in config["scrape_configs"] if job["job_name"] == "node"]
    assert node["static_configs"][0]["targets"] == [f"127.0.0.1:{NODE_EXPORTER_PORT}"]
    up: list = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not up:
        reply = requests.get(f"http://127.0.0.1:{PROMETHEUS_PORT}/api/v1/query", params={"query": 'up{job="node"}'},
                             timeout=5).json()
        up = [r for r in reply["data"]["result"] if r["value"][1] == "1"]
        time.sleep(0.5)
    assert up, "Prometheus does not see the node exporter up"


def test_spark_master_lists_its_worker_alive(real):
    master = requests.get(f"http://127.0.0.1:{SPARK_PORTS['spark_master_webui_port']}/json/", timeout=5).json()
    assert master["url"] == f"spark://127.0.0.1:{SPARK_PORTS['spark_master_port']}"
    workers = [(w["host"], w["port"], w["state"], w["cores"], w["memory"]) for w in master["workers"]]
    assert workers == [("127.0.0.1", SPARK_PORTS["spark_worker_port"], "ALIVE", 1, 512)]
    conf = (real.state_dir / "conf" / "spark" / "spark-defaults.conf").read_text()
    assert "spark.master.rest.enabled false" in conf


def test_the_testbed_tag_applies_only_flink_and_prometheus(real):
    """What the controller's per-budget redeploy would run (--tags testbed): here, Prometheus only, and
    none of the java, spark or node_exporter tasks."""
    before = len(real.tasks)
    tagged = real.apply("testbed tag", tags="testbed")
    assert tagged.changed == 0 and tagged.failed == 0
    tasks = real.tasks[before:]
    assert not [t for t in tasks if t.startswith(("java :", "spark :", "node_exporter :"))], tasks
    assert any(t.startswith("prometheus :") for t in tasks)


def test_java_older_than_required_fails_with_one_line(real):
    with pytest.raises(DeploymentError, match=r"older than the 99 the JVM services need"):
        real.apply("java too old", tags="java", java_min_version=99)


def test_stopping_frees_the_spark_and_node_exporter_ports(real):
    """The roles' stopped state (Prometheus' own is tests/test_ansible.py's: the fixture kills it here)."""
    stopped = real.apply("stop", tags="spark,node_exporter", spark_state="stopped", node_exporter_state="stopped")
    assert stopped.failed == 0 and stopped.changed > 0
    ports = [NODE_EXPORTER_PORT, *SPARK_PORTS.values()]
    assert [p for p in ports if port_open(p, "127.0.0.1")] == []
    left = subprocess.run(["pgrep", "-af", "--", str(real.state_dir)], capture_output=True, text=True).stdout
    assert [ln for ln in left.splitlines() if "prometheus" not in ln] == [], left
    print("\n[ansible] timings: " + ", ".join(f"{k} {r.elapsed_s:.1f}s" for k, r in real.runs.items()))


SPARK_INSTALL_PLAYBOOK = """\
- name: Install Spark the way the spark role does on a cluster
  hosts: all
  gather_facts: false
  tasks:
    - name: Install from the release tarball
      ansible.builtin.include_role: {name: spark, tasks_from: install}
"""


def test_spark_tarball_install_checks_the_sha512_file_and_unpacks(tmp_path):
    """The cluster path (spark_install: tarball) with a STAND-IN for the Apache release (the archive is
    out of reach here): a spark-<v>-bin-hadoop3.tgz with the release's bin/spark-class, served with a
    `sha512sum`-layout .sha512 file over file:// (the Kafka stand-in uses gpg's layout)."""
    name = "spark-4.3.0-bin-hadoop3"
    tarball = _tarball(tmp_path / "mirror" / "spark-4.3.0" / f"{name}.tgz", name, {
        "bin/spark-class": "#!/bin/sh\n# STAND-IN (tests/test_ansible_roles.py)\nexit 1\n",
        "jars/spark-core_2.13-4.3.0.jar": os.urandom(2048)})
    digest = hashlib.sha512(tarball.read_bytes()).hexdigest()
    (tarball.parent / f"{name}.tgz.sha512").write_text(f"{digest}  {name}.tgz\n")
    (tmp_path / "install.yml").write_text(SPARK_INSTALL_PLAYBOOK)
    (tmp_path / "ansible.cfg").write_text(f"[defaults]\nroles_path = {ANSIBLE_DIR / 'roles'}\n")
    result = run_playbook(tmp_path / "install.yml", _local_inventory(tmp_path / "hosts.yml", []), {
        "spark_install": "tarball", "spark_install_dir": str(tmp_path / "opt"),
        "spark_mirror_url": (tmp_path / "mirror").as_uri(),
        "spark_tarball_checksum_url": (tarball.parent / f"{name}.tgz.sha512").as_uri()})
    assert result.failed == 0 and result.changed >= 3  # the directory, the checksum file, the tarball, the unpack
    assert (tmp_path / "opt" / name / "bin" / "spark-class").is_file()


# ------------------------------------------------------------------------------ kafka and grafana (stand-ins)

# STAND-IN for Apache Kafka's command-line tools (no Kafka release can be downloaded here). One script
# plays the three tools the kafka role calls, each wrapped by a bin/*.sh of the release's name:
#   kafka-storage.sh format --cluster-id ID --config F [--ignore-formatted]: writes meta.properties into
#     every log.dirs / metadata.log.dir directory of F (as Kafka does) and refuses F without them;
#   kafka-server-start.sh F: execs `python3 standin_kafka.py kafka.Kafka F` (the real script execs
#     `java ... kafka.Kafka F`, which is what the role looks for), refuses unformatted storage, listens on
#     F's listeners until SIGTERM;
#   kafka-topics.sh --bootstrap-server H:P --describe | --create | --alter: keeps topics in a JSON file
#     and prints --describe in Kafka's own layout; fails like Kafka when no broker listens at H:P.
# Every call is appended to standin-calls.jsonl in the release directory.
STANDIN_KAFKA = r'''
import json, os, signal, socket, sys, time, uuid
from pathlib import Path

HOME = Path(__file__).resolve().parents[1]

def record(tool, args):
    with open(HOME / "standin-calls.jsonl", "a") as f:
        f.write(json.dumps({"tool": tool, "args": args, "heap": os.environ.get("KAFKA_HEAP_OPTS")}) + "\n")

def props(path):
    out = {}
    for line in Path(path).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out

def dirs(p):
    return list(dict.fromkeys(p["log.dirs"].split(",") + [p.get("metadata.log.dir", p["log.dirs"].split(",")[0])]))

def opt(args, name):
    return args[args.index(name) + 1] if name in args else None

def storage(args):
    if args[0] == "random-uuid":
        print(uuid.uuid4().hex[:22]); return 0
    p = props(opt(args, "--config"))
    cid, node = opt(args, "--cluster-id"), p["node.id"]
    for d in dirs(p):
        meta = Path(d) / "meta.properties"
        if meta.exists():
            if "--ignore-formatted" in args:
                continue
            print(f"Log directory {d} is already formatted.", file=sys.stderr); return 1
        Path(d).mkdir(parents=True, exist_ok=True)
        meta.write_text(f"#\n#{time.ctime()}\ncluster.id={cid}\ndirectory.id={uuid.uuid4().hex[:22]}\n"
                        f"node.id={node}\nversion=1\n")
        print(f"Formatting {d} with metadata.version 4.1-IV1.")
    return 0

def broker(args):
    p = props(args[0])
    for d in dirs(p):
        if not (Path(d) / "meta.properties").exists():
            print(f"No meta.properties found in {d} (have you run kafka-storage.sh to format the directory?)",
                  file=sys.stderr); return 1
    sockets = []
    for listener in p["listeners"].split(","):
        host, port = listener.split("://", 1)[1].rsplit(":", 1)
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, int(port))); s.listen(16); s.setblocking(False); sockets.append(s)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        for s in sockets:
            try:
                s.accept()[0].close()
            except BlockingIOError:
                pass
        time.sleep(0.05)

def topics(args):
    server = opt(args, "--bootstrap-server")
    host, port = server.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError:
        print(f"Timed out waiting for a node assignment. Call: createTopics ({server})", file=sys.stderr); return 1
    state = HOME / f"standin-topics-{server.replace(':', '_')}.json"
    known = json.loads(state.read_text()) if state.exists() else {}
    name = opt(args, "--topic")
    if "--create" in args:
        if name in known:
            print(f"Topic '{name}' already exists.", file=sys.stderr); return 1
        configs = [args[i + 1] for i, a in enumerate(args) if a == "--config"]
        known[name] = {"partitions": int(opt(args, "--partitions")), "rf": int(opt(args, "--replication-factor")),
                       "configs": configs, "id": uuid.uuid4().hex[:22]}
        print(f"Created topic {name}.")
    elif "--alter" in args:
        new = int(opt(args, "--partitions"))
        if new <= known[name]["partitions"]:
            print("The number of partitions for a topic can only be increased.", file=sys.stderr); return 1
        known[name]["partitions"] = new
    elif "--describe" in args:
        for t in sorted(known) if name is None else [name]:
            k = known[t]
            print(f"Topic: {t}\tTopicId: {k['id']}\tPartitionCount: {k['partitions']}\tReplicationFactor: {k['rf']}\t"
                  f"Configs: {','.join(k['configs'])}")
            for i in range(k["partitions"]):
                print(f"\tTopic: {t}\tPartition: {i}\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: ")
    state.write_text(json.dumps(known))
    return 0

tool, args = sys.argv[1], sys.argv[2:]
record(tool, args)
sys.exit({"storage": storage, "kafka.Kafka": broker, "topics": topics}[tool](args))
'''

# STAND-IN for Grafana's server (no Grafana build can be had here): bin/grafana execs
# `python3 standin_grafana.py <bin/grafana> server --homepath H --config F`, the command line the role
# looks for, reads [server] http_addr/http_port from F and answers GET /api/health as Grafana does.
STANDIN_GRAFANA = r'''
import configparser, http.server, json, sys
from pathlib import Path

args = sys.argv[2:]
with open(Path(__file__).resolve().parents[1] / "standin-calls.jsonl", "a") as f:
    f.write(json.dumps({"tool": "grafana", "args": args}) + "\n")
ini = configparser.ConfigParser()
ini.read(args[args.index("--config") + 1])

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"database": "ok", "version": "STANDIN"}).encode()
        self.send_response(200 if self.path == "/api/health" else 404)
        self.send_header("Content-Type", "application/json"); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a):
        pass

http.server.ThreadingHTTPServer((ini["server"]["http_addr"], int(ini["server"]["http_port"])), Health).serve_forever()
'''


def _tarball(path: Path, top: str, files: dict[str, str | bytes]) -> Path:
    """A .tgz holding ``top/<name>`` for each file (scripts executable)."""
    tree = path.parent / "tree"
    for name, content in files.items():
        f = tree / top / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(content if isinstance(content, bytes) else content.encode())
        f.chmod(0o755 if name.startswith("bin/") else 0o644)
    with tarfile.open(path, "w:gz") as tar:
        tar.add(tree / top, arcname=top)
    return path


def _gpg_sha512(path: Path) -> str:
    """The .sha512 layout of Apache Kafka's releases (gpg --print-md SHA512): "<file>: HEX HEX ..." wrapped."""
    digest = hashlib.sha512(path.read_bytes()).hexdigest().upper()
    groups = [digest[i:i + 8] for i in range(0, 128, 8)]
    lines = [" ".join(groups[i:i + 8]) for i in range(0, 16, 8)]
    pad = " " * (len(path.name) + 2)
    return f"{path.name}: {lines[0]}\n{pad}{lines[1]}\n"


def _standin_releases(mirror: Path) -> dict:
    """The stand-in Kafka and Grafana releases on a file:// mirror, with their checksum files."""
    kafka_dir = mirror / "kafka" / KAFKA_VERSION
    kafka_dir.mkdir(parents=True)
    top = f"kafka_2.13-{KAFKA_VERSION}"
    wrapper = ('#!/bin/sh\n# STAND-IN (tests/test_ansible_roles.py)\n'
               'exec python3 "$(dirname "$0")/standin_kafka.py" {tool} "$@"\n')
    kafka = _tarball(kafka_dir / f"{top}.tgz", top, {
        "bin/kafka-server-start.sh": wrapper.format(tool="kafka.Kafka"),
        "bin/kafka-storage.sh": wrapper.format(tool="storage"),
        "bin/kafka-topics.sh": wrapper.format(tool="topics"),
        "bin/standin_kafka.py": STANDIN_KAFKA,
        "config/server.properties": "# the release's sample configuration (unused by the role)\n",
        f"libs/kafka_2.13-{KAFKA_VERSION}.jar": os.urandom(2048),
    })
    (kafka_dir / f"{top}.tgz.sha512").write_text(_gpg_sha512(kafka))

    grafana_dir = mirror / "grafana" / GRAFANA_VERSION
    grafana_dir.mkdir(parents=True)
    name = f"grafana_{GRAFANA_VERSION}_{GRAFANA_BUILD}_linux_amd64.tar.gz"
    grafana = _tarball(grafana_dir / name, f"grafana-{GRAFANA_VERSION}", {
        "bin/grafana": '#!/bin/sh\n# STAND-IN (tests/test_ansible_roles.py)\n'
                       'exec python3 "$(dirname "$0")/standin_grafana.py" "$0" "$@"\n',
        "bin/standin_grafana.py": STANDIN_GRAFANA,
        "conf/defaults.ini": "[server]\nhttp_port = 3000\n",
        "public/build/index.html": "<html></html>\n",
    })
    (grafana_dir / f"{name}.sha256").write_text(f"{hashlib.sha256(grafana.read_bytes()).hexdigest()}  {name}\n")
    return {"kafka_mirror_url": (mirror / "kafka").as_uri(),
            "kafka_tarball_checksum_url": (kafka_dir / f"{top}.tgz.sha512").as_uri(),
            "grafana_tarball_url": (grafana_dir / name).as_uri()}


TOPICS = [{"name": "nexmark-200000-seed0", "partitions": 8},
          {"name": "mine", "partitions": 3, "config": {"retention.ms": "-1"}}]

DASHBOARD = {"title": "StreamBed test dashboard", "uid": "streambed-test", "panels": [], "schemaVersion": 39}


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    """kafka and grafana applied to localhost with the stand-in releases, twice."""
    busy = [p for p in (KAFKA_PORT, KAFKA_CONTROLLER_PORT, GRAFANA_PORT) if port_open(p, "127.0.0.1")]
    if busy:
        pytest.fail(f"test ports already in use (a leftover deployment?): {busy}")
    base = tmp_path_factory.mktemp("standin")
    dashboards = base / "dashboards"
    (dashboards / "campaigns").mkdir(parents=True)
    (dashboards / "campaigns" / "test.json").write_text(json.dumps(DASHBOARD))
    bed = Deployment(base / "state", _local_inventory(base / "hosts.yml", ["kafka", "monitoring"]), {
        **_roots(str(base / "state")),
        "streambed_services": ["kafka", "grafana"],
        **_standin_releases(base / "mirror"),
        "kafka_install_dir": str(base / "opt" / "kafka-releases"), "kafka_home": str(base / "opt" / "kafka"),
        "kafka_host": "127.0.0.1", "kafka_port": KAFKA_PORT, "kafka_controller_port": KAFKA_CONTROLLER_PORT,
        "kafka_log_dirs": [str(base / "ssd0" / "kafka"), str(base / "ssd1" / "kafka")],
        "kafka_heap_mb": 256, "kafka_topics": TOPICS,
        "grafana_install_dir": str(base / "opt" / "grafana"), "grafana_listen_host": "127.0.0.1",
        "grafana_port": GRAFANA_PORT, "grafana_dashboards_dir": str(dashboards),
        "prometheus_port": PROMETHEUS_PORT,
    })
    bed.kafka_release = base / "opt" / "kafka-releases" / f"kafka_2.13-{KAFKA_VERSION}"
    bed.grafana_release = base / "opt" / "grafana" / f"grafana-{GRAFANA_VERSION}"
    try:
        bed.apply("first")
        bed.apply("second")
        yield bed
    finally:
        if "stop" not in bed.runs:
            try:
                bed.apply("stop", kafka_state="stopped", grafana_state="stopped")
            except DeploymentError as exc:
                print(f"[ansible] stop failed: {exc}")
        _kill_leftovers(bed.state_dir)


def _calls(release: Path, tool: str | None = None) -> list[dict]:
    lines = (release / "standin-calls.jsonl").read_text().splitlines()
    return [c for c in map(json.loads, lines) if tool is None or c["tool"] == tool]


def test_kafka_release_is_downloaded_checked_and_linked(standin):
    assert (standin.kafka_release / "bin" / "kafka-server-start.sh").is_file()
    assert Path(standin.vars["kafka_home"]).resolve() == standin.kafka_release
    first = standin.runs["first"]
    assert first.failed == 0 and first.changed > 0


def test_kafka_storage_is_formatted_once_with_the_cluster_id(standin):
    formats = [c["args"] for c in _calls(standin.kafka_release, "storage")]
    assert len(formats) == 1, formats
    args = formats[0]
    conf = str(standin.state_dir / "conf" / "kafka" / "server.properties")
    assert args[0] == "format" and args[args.index("--config") + 1] == conf and "--ignore-formatted" in args
    cluster_id = args[args.index("--cluster-id") + 1]
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", cluster_id)
    for d in standin.vars["kafka_log_dirs"]:
        meta = _properties(Path(d) / "meta.properties")
        assert (meta["cluster.id"], meta["node.id"]) == (cluster_id, "1")


def test_kafka_broker_started_once_with_its_configuration(standin):
    starts = _calls(standin.kafka_release, "kafka.Kafka")
    conf = str(standin.state_dir / "conf" / "kafka" / "server.properties")
    assert [c["args"] for c in starts] == [[conf]]
    assert starts[0]["heap"] == "-Xms256m -Xmx256m"
    props = _properties(standin.state_dir / "conf" / "kafka" / "server.properties")
    assert props["controller.quorum.voters"] == f"1@127.0.0.1:{KAFKA_CONTROLLER_PORT}"
    assert props["log.dirs"] == ",".join(standin.vars["kafka_log_dirs"])
    assert props["process.roles"] == "broker,controller" and props["default.replication.factor"] == "1"
    [pid] = subprocess.run(["pgrep", "-f", f" kafka[.]Kafka {conf}( |$)"], capture_output=True, text=True).stdout.split()
    assert port_open(KAFKA_PORT, "127.0.0.1")
    os.kill(int(pid), 0)
    spec = json.loads((standin.state_dir / "run" / "kafka.supervise.json").read_text())
    assert spec["command"] == [f"{standin.vars['kafka_home']}/bin/kafka-server-start.sh", conf], "supervised"


def test_kafka_topics_are_created_once_with_their_partitions(standin):
    creates = [c["args"] for c in _calls(standin.kafka_release, "topics") if "--create" in c["args"]]
    made = {a[a.index("--topic") + 1]: (a[a.index("--partitions") + 1], a[a.index("--replication-factor") + 1])
            for a in creates}
    assert len(creates) == 2 and made == {"nexmark-200000-seed0": ("8", "1"), "mine": ("3", "1")}
    [mine] = [a for a in creates if "mine" in a]
    assert mine[mine.index("--config") + 1] == "retention.ms=-1"
    assert all(a[a.index("--bootstrap-server") + 1] == f"127.0.0.1:{KAFKA_PORT}" for a in creates)


def test_grafana_provisions_the_monitoring_hosts_prometheus_and_the_dashboards(standin):
    provisioning = standin.state_dir / "conf" / "grafana" / "provisioning"
    [source] = yaml.safe_load((provisioning / "datasources" / "streambed.yaml").read_text())["datasources"]
    assert source["url"] == f"http://127.0.0.1:{PROMETHEUS_PORT}" and source["isDefault"] is True
    [provider] = yaml.safe_load((provisioning / "dashboards" / "streambed.yaml").read_text())["providers"]
    copied = Path(provider["options"]["path"]) / "campaigns" / "test.json"
    assert json.loads(copied.read_text()) == DASHBOARD
    assert requests.get(f"http://127.0.0.1:{GRAFANA_PORT}/api/health", timeout=5).json()["database"] == "ok"
    starts = _calls(standin.grafana_release, "grafana")
    assert len(starts) == 1 and starts[0]["args"][:1] == ["server"]
    assert oct((standin.state_dir / "conf" / "grafana" / "grafana.ini").stat().st_mode & 0o777) == "0o600"


def test_second_stand_in_apply_changes_nothing(standin):
    second = standin.runs["second"]
    assert second.changed == 0, second
    assert second.failed == 0


def test_more_partitions_alter_the_topic_and_nothing_else(standin):
    grown = [{**TOPICS[0], "partitions": 12}, TOPICS[1]]
    more = standin.apply("more partitions", tags="kafka", kafka_topics=grown)
    assert more.failed == 0 and more.changed > 0
    alters = [c["args"] for c in _calls(standin.kafka_release, "topics") if "--alter" in c["args"]]
    assert alters == [["--bootstrap-server", f"127.0.0.1:{KAFKA_PORT}", "--alter", "--topic", "nexmark-200000-seed0",
                       "--partitions", "12"]]
    assert len(_calls(standin.kafka_release, "kafka.Kafka")) == 1, "a topic change restarts no broker"
    assert [c for c in _calls(standin.kafka_release, "storage")][1:] == [], "nor formats again"
    standin.vars["kafka_topics"] = grown


def test_stopping_the_stand_ins_frees_their_ports(standin):
    stopped = standin.apply("stop", kafka_state="stopped", grafana_state="stopped")
    assert stopped.failed == 0 and stopped.changed > 0
    assert [p for p in (KAFKA_PORT, KAFKA_CONTROLLER_PORT, GRAFANA_PORT) if port_open(p, "127.0.0.1")] == []
    assert subprocess.run(["pgrep", "-f", "--", str(standin.state_dir)], capture_output=True).returncode == 1
    print("\n[ansible] timings: " + ", ".join(f"{k} {r.elapsed_s:.1f}s" for k, r in standin.runs.items()))


def test_a_playbook_run_leaves_the_signal_handlers_as_it_found_them(tmp_path):
    """ansible-runner installs SIGINT and SIGTERM handlers that only set its cancel flag and leaves them
    behind: after a deployment `streambed plan` went on through SIGTERM. run_playbook puts them back."""
    import signal

    (tmp_path / "ping.yml").write_text("- hosts: all\n  gather_facts: false\n  tasks:\n"
                                       "    - ansible.builtin.debug: {msg: pong}\n")
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    result = run_playbook(tmp_path / "ping.yml", _local_inventory(tmp_path / "hosts.yml", []))
    assert result.failed == 0 and result.messages == ("pong",)
    assert {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)} == before

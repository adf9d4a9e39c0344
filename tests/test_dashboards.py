"""The campaign dashboard (grafana/dashboards/streambed-campaign.json, from report/grafana/dashboards.py).

Static checks first: the committed file is what the code generates, valid JSON, unique panel ids,
every datasource the one the grafana role provisions, PromQL that promtool parses. Then every
panel's PromQL, its variables replaced as Grafana would, against a real Prometheus scraping a real
Flink job running a real query (q17: a RocksDB group aggregate) and a node exporter started here.
No Grafana server can be had on these machines (PLATFORM.md): the dashboard itself is never rendered.

One deployment for the module, on ports of its own (REST 28381, RPC 26423, Prometheus 29390,
reporters 29450-29459, node exporter 29400), so that it never meets a local testbed (8081/9090) nor
the other deployment tests (test_flink_integration.py: 28081/29090; test_ansible.py: 18081).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import requests
import yaml

from conftest import REPO, port_open
from streambed.report.grafana import dashboards

PORTS = {"flink_rest_port": 28381, "flink_jobmanager_rpc_port": 26423, "prometheus_port": 29390,
         "flink_metrics_port_min": 29450, "flink_metrics_port_max": 29459}
NODE_EXPORTER_PORT = 29400
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
"""Debian's package, which the node_exporter role installs (PLATFORM.md)."""
PROMETHEUS = f"http://127.0.0.1:{PORTS['prometheus_port']}"
QUERY, RATE, MEMORY_MB = "q17", 2000.0, 512
"""q17: Calc, GroupAggregate (keyed state in RocksDB), Sink; 3 slots and the source's."""
RATE_INTERVAL = "15s"
"""$__rate_interval as Grafana computes it for a 1-s scrape interval on a short time range."""
READY_S = 90.0
"""Longest wait for every panel to have series with a value once the job runs."""
NAN_ALLOWED = {"RocksDB block cache hit rate"}
"""Panels whose series may hold NaN on a short job: hits / (hits + misses) is 0 / 0 until RocksDB reads a
block, and q17's state stays in the memtables for the whole test (no checkpoint flushes them)."""

GRAFANA_ROLE = REPO / "ansible" / "roles" / "grafana"


def committed() -> dict:
    return json.loads((REPO / dashboards.PATH).read_text())


def panel_queries(board: dict) -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in board["panels"] for t in p.get("targets", [])]


# ------------------------------------------------------------------------------------ static


def test_the_committed_dashboard_is_what_the_code_generates():
    assert (REPO / dashboards.PATH).read_text() == dashboards.text(), \
        f"{dashboards.PATH} is stale: run make dashboards"


def test_the_dashboard_is_valid_json_with_unique_panel_ids_and_the_requested_panels():
    board = committed()
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids), ids
    assert board["uid"] == dashboards.UID and board["title"]
    titles = " | ".join(p["title"] for p in board["panels"]).lower()
    for wanted in ("target and achieved", "pending records", "busyness by operator", "back-pressure by operator",
                   "taskmanager cpu", "host cpu", "taskmanager memory", "block cache hit rate"):
        assert wanted in titles, wanted
    assert {v["name"] for v in board["templating"]["list"]} == {"job", "query"}
    for p in board["panels"]:
        assert p["targets"] and p["fieldConfig"]["defaults"]["unit"] and p["type"] in ("timeseries", "status-history")
        ref_ids = [t["refId"] for t in p["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), p["title"]
    # panels do not overlap on the 24-column grid
    cells = [(p["gridPos"]["x"] + dx, p["gridPos"]["y"] + dy) for p in board["panels"]
             for dx in range(p["gridPos"]["w"]) for dy in range(p["gridPos"]["h"])]
    assert len(cells) == len(set(cells)) and max(x for x, _ in cells) < 24


def datasources(node, path=""):
    """(path, datasource) of every datasource reference in a dashboard's JSON."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "datasource":
                yield path, value
            else:
                yield from datasources(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from datasources(value, f"{path}[{i}]")


def test_every_datasource_is_the_one_the_grafana_role_provisions():
    defaults = yaml.safe_load((GRAFANA_ROLE / "defaults" / "main.yml").read_text())
    uid = defaults["grafana_datasource_uid"]
    assert dashboards.DATASOURCE_UID == uid
    refs = list(datasources(committed()))
    assert len(refs) > 2 * len(dashboards.PANELS)
    for path, ref in refs:
        if path.startswith(".annotations"):
            # Annotation queries read Grafana's own annotations (those the controller posts), through
            # Grafana's built-in datasource; nothing else may use it.
            assert ref == dashboards.GRAFANA_ANNOTATIONS, path
        else:
            assert ref == {"type": "prometheus", "uid": uid}, (path, ref)


def test_the_grafana_role_provisions_the_dashboards_directory():
    """The role copies every *.json under grafana/ (recursively) and provisions it: the dashboard
    lies there, and the role's datasource is the Prometheus one the panels name."""
    defaults = (GRAFANA_ROLE / "defaults" / "main.yml").read_text()
    assert 'grafana_dashboards_dir: "{{ playbook_dir | dirname }}/grafana"' in defaults
    assert (REPO / "ansible" / "site.yml").exists() and dashboards.PATH.parts[0] == "grafana"
    tasks = yaml.safe_load((GRAFANA_ROLE / "tasks" / "configure.yml").read_text())
    find = next(t for t in tasks if t["name"] == "Find the dashboards on the machine running Ansible")
    assert find["ansible.builtin.find"]["patterns"] == "*.json" and find["ansible.builtin.find"]["recurse"]
    role_vars = yaml.safe_load((GRAFANA_ROLE / "vars" / "main.yml").read_text())
    datasource = role_vars["grafana_datasources"]["datasources"][0]
    assert datasource["type"] == "prometheus" and datasource["uid"] == "{{ grafana_datasource_uid }}"


def test_the_annotation_query_finds_what_the_controller_posts():
    from streambed.report.grafana import annotations

    phases = [a for a in committed()["annotations"]["list"] if a["target"]["type"] == "tags"]
    [target] = [a["target"] for a in phases]
    tags = annotations.tags("estimate", "q5", "warm-up")
    # Grafana shows an annotation whose tags include all of the query's (matchAny false)
    assert not target["matchAny"]
    assert set(dashboards.render(t, {"query": "q5"}) for t in target["tags"]) <= set(tags)


def test_the_panels_read_the_metrics_the_controller_measures_with():
    from streambed.metrics import prometheus

    exprs = " ".join(q for _, q in dashboards.queries())
    names = prometheus.FLINK_METRICS
    for metric in (names.busy, names.backpressured, names.pending):
        assert metric in exprs, metric


def test_the_readme_shows_each_panels_promql_as_the_code_has_it():
    readme = (REPO / "grafana" / "README.md").read_text()
    missing = [title for title, q in dashboards.queries() if q not in readme]
    assert not missing, f"grafana/README.md does not show the PromQL of {missing}"


def test_variables_are_replaced_as_grafana_does():
    expr = 'x{job_name=~"$job", q="${query}", old="[[query]]"}[$__rate_interval] $1 $unknown'
    assert dashboards.render(expr, {"job": "a", "query": "q5", "__rate_interval": "15s"}) == \
        'x{job_name=~"a", q="q5", old="q5"}[15s] $1 $unknown'


def values(job: str = "streambed_q17_1_1") -> dict:
    return {"job": job, "query": QUERY, "__rate_interval": RATE_INTERVAL}


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool (Debian's prometheus package)")
def test_promtool_parses_every_panel_query(tmp_path):
    """Prometheus' own parser on every query, as recording rules (no server needed)."""
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": dashboards.render(q, values())}
        for i, (_, q) in enumerate(dashboards.queries())]}]}
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    proc = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --------------------------------------------------------------- against real Flink + Prometheus


live_only = pytest.mark.skipif(shutil.which("java") is None or shutil.which("javac") is None,
                               reason="needs a JDK 17 (java, javac)")


def finite(result: list[dict]) -> bool:
    """Whether every series of an instant query's result has a number (not NaN: a task still
    initialising reports NaN busy time, and a rate over its samples is NaN too)."""
    return all(math.isfinite(float(s["value"][1])) for s in result)


def prom(expr: str) -> list[dict]:
    """An instant query's series; AssertionError with Prometheus' message when it refuses the query."""
    r = requests.get(f"{PROMETHEUS}/api/v1/query", params={"query": expr}, timeout=10)
    body = r.json()
    assert r.status_code == 200 and body["status"] == "success", f"{expr}\n-> {body.get('error', r.text)}"
    return body["data"]["result"]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A Flink cluster and Prometheus deployed by the roles, a node exporter they scrape, and q17 running;
    yields Grafana's variable values for the running job once every panel query has series (or
    READY_S has passed: the tests then say which panel has none)."""
    from streambed.infra.local import LocalProvider
    from streambed.infra.services import flink_settings, flink_testbed
    from streambed.model import Budget, Configuration

    ports = [*range(PORTS["flink_metrics_port_min"], PORTS["flink_metrics_port_max"] + 1), NODE_EXPORTER_PORT,
             *(v for k, v in PORTS.items() if "metrics" not in k)]
    busy = [p for p in ports if port_open(p)]
    if busy:
        pytest.fail(f"test ports already in use (a leftover deployment?): {busy}")
    subprocess.run(["make", "-C", str(REPO), "--no-print-directory", "flink-job"], check=True,
                   capture_output=True, text=True)
    state = tmp_path_factory.mktemp("dashboards-testbed")
    exporter = inventory = run = None
    provider = LocalProvider(REPO / "inventories" / "local")
    t0 = time.monotonic()
    try:
        if Path(NODE_EXPORTER).exists():
            exporter = subprocess.Popen([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{NODE_EXPORTER_PORT}",
                                         "--collector.disable-defaults", "--collector.cpu", "--collector.meminfo"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        scrape_node = [{"job_name": "node", "static_configs": [{"targets": [f"127.0.0.1:{NODE_EXPORTER_PORT}"]}]}]
        inventory = provider.provision().with_vars({**PORTS, "streambed_state_dir": str(state),
                                                    "prometheus_extra_scrape_configs": scrape_node if exporter else []})
        # One TaskManager holding q17's 3 slots and the source's, without a CPU share: what 2 cores run.
        settings = dataclasses.replace(flink_settings(inventory), max_slots=3, memory_per_slot=(MEMORY_MB,),
                                       cpu_per_slot=0.0, slots_per_taskmanager=0)
        bed = flink_testbed(inventory, log=lambda m: print(f"[testbed] {m}"), settings=settings)
        configuration = Configuration.single_task(bed.query(QUERY))
        bed.prepare(Budget(configuration.slots, MEMORY_MB))
        run = bed.start(QUERY, configuration, RATE)
        print(f"\n[dashboards] deployed and started {run.id} in {time.monotonic() - t0:.0f} s")
        deadline = time.monotonic() + READY_S
        job = None
        while job is None and time.monotonic() < deadline:
            found = prom(f'{dashboards.SOURCE_METRIC}{{job_id="{run.id}"}}')
            job = found[0]["metric"]["job_name"] if found else None
            time.sleep(1)
        assert job, f"the job's metrics never reached Prometheus in {READY_S:.0f} s"
        # Rates need a rate interval of samples from the running tasks: until then they read NaN.
        waiting = [(t, q) for t, q in dashboards.queries() if exporter or "node_" not in q]
        while waiting and time.monotonic() < deadline:
            time.sleep(2)
            answers = [(t, q, prom(dashboards.render(q, values(job)))) for t, q in waiting]
            waiting = [(t, q) for t, q, r in answers if not r or not (finite(r) or t in NAN_ALLOWED)]
        print(f"[dashboards] every panel answered after {time.monotonic() - t0:.0f} s" if not waiting else
              f"[dashboards] still without values after {READY_S:.0f} s: {sorted(t for t, _ in waiting)}")
        yield values(job) | {"_node_exporter": bool(exporter)}
    finally:
        try:
            if run is not None:
                bed.stop(run)
        finally:
            try:
                if inventory is not None:
                    provider.destroy(inventory)
            finally:
                if exporter is not None:
                    exporter.terminate()
                    exporter.wait(10)


@live_only
@pytest.mark.parametrize("title, expr", dashboards.queries(), ids=[f"{i}-{t}" for i, (t, _) in
                                                                 enumerate(dashboards.queries())])
def test_every_panel_query_returns_series_from_a_real_flink_job(live, title, expr):
    if "node_" in expr and not live["_node_exporter"]:
        pytest.skip(f"{NODE_EXPORTER} is not installed (the node_exporter role installs it)")
    rendered = dashboards.render(expr, live)
    assert "$" not in rendered.replace('"$1"', ""), f"a variable was left in: {rendered}"
    result = prom(rendered)
    assert result, f"{title}: no series for\n{rendered}"
    assert finite(result) or title in NAN_ALLOWED, f"{title}: NaN from\n{rendered}\n{result}"
    # Also as Grafana asks for a panel: a range query over the last minute.
    now = time.time()
    r = requests.get(f"{PROMETHEUS}/api/v1/query_range", timeout=10,
                     params={"query": rendered, "start": now - 60, "end": now, "step": "5"}).json()
    assert r["status"] == "success" and r["data"]["result"], (title, r)
    shown = [(s["metric"].get("operator") or s["metric"].get("tm_id") or s["metric"].get("job_name")
              or s["metric"].get("instance"), s["value"][1]) for s in result]
    print(f"\n[{title}] {len(result)} series: {shown}")


@live_only
def test_the_variables_list_the_running_query_and_job(live):
    """The variables' label_values(...) as Grafana asks Prometheus for them (the label values API),
    each with its regex: the query's list holds q17, the job's (for q17) holds the running job."""
    def label_values(v: dashboards.Variable) -> list[str]:
        metric = dashboards.render(v.metric, live)
        r = requests.get(f"{PROMETHEUS}/api/v1/label/job_name/values", params={"match[]": metric}, timeout=10).json()
        assert r["status"] == "success", r
        if not v.regex:
            return r["data"]
        pattern = re.compile(v.regex.strip("/"))
        return [m.group(1) for m in map(pattern.match, r["data"]) if m]

    by_name = {v.name: v for v in dashboards.VARIABLES}
    assert QUERY in label_values(by_name["query"])
    assert live["job"] in label_values(by_name["job"])

"""The campaign dashboard as code: panels as data (title, PromQL, unit, type) -> Grafana dashboard JSON.

``python -m streambed.report.grafana.dashboards`` (``make dashboards``) writes
``grafana/dashboards/streambed-campaign.json``, which is committed: the grafana role provisions every
``*.json`` under ``grafana/`` (ansible/roles/grafana), and tests/test_dashboards.py checks that the
committed file is what this module generates, and runs every panel's PromQL against a real
Prometheus scraping a real Flink job.

The PromQL reads the metrics of Flink 2.3's Prometheus reporter as they really are (labels
``job_name``, ``task_name``, ``operator_name``, ``subtask_index``, ``tm_id``; the job names its
controller gives, ``streambed-<query>-<epoch>-<n>``, reach Prometheus as
``streambed_<query>_<epoch>_<n>``), those of the StreamBed source (``targetRate``,
``emittedRecords``, ``pendingRecords``) and, for the hosts, node_exporter's. Rates of busy and
back-pressured time are counter rates (``accumulate*Ms``), as the controller measures windows
(metrics/prometheus.py), not the ``*PerSecond`` gauges, which Flink smooths over tens of seconds.

Plain JSON rather than a dashboard library: grafanalib's last release (0.7.1) dates from January
2024, and Grafana's own grafana-foundation-sdk calls itself experimental ("not meant to be used in
production"); a dashboard of ten panels is a page of data (grafana/README.md).
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ...files import write_text

DATASOURCE_UID = "streambed-prometheus"
"""The uid of the Prometheus datasource the grafana role provisions (its grafana_datasource_uid)."""
DATASOURCE = {"type": "prometheus", "uid": DATASOURCE_UID}
GRAFANA_ANNOTATIONS = {"type": "grafana", "uid": "-- Grafana --"}
"""Grafana's built-in datasource of annotations (those the controller posts: report/grafana/annotations.py)."""
ANNOTATION_TAG = "streambed"
"""The tag every annotation of the controller carries (report/grafana/annotations.py)."""

UID = "streambed-campaign"
TITLE = "StreamBed campaign"
PATH = Path("grafana") / "dashboards" / "streambed-campaign.json"
"""Where ``make dashboards`` writes the dashboard, relative to the repository's root."""

JOB = 'job_name=~"$job"'
"""The job selector of every Flink panel: the jobs of the ``job`` variable."""
RATE = "$__rate_interval"
"""Grafana's rate window: at least four scrape intervals (the datasource's timeInterval)."""
OPERATOR_CHARS = 40
"""Operators are named by the first characters of Flink's task (or operator) name, which carries the
whole SQL of the operator (hundreds of characters)."""


def by_operator(expr: str, source: str = "task_name") -> str:
    """``expr`` with an ``operator`` label: the first OPERATOR_CHARS characters of ``source``."""
    return f'label_replace({expr}, "operator", "$1", "{source}", "(.{{1,{OPERATOR_CHARS}}}).*")'


def task_rate(metric: str) -> str:
    """The per-second rate of a task counter of the selected jobs."""
    return f"rate(flink_taskmanager_job_task_{metric}{{{JOB}}}[{RATE}])"


def operator_rate(metric: str) -> str:
    """The per-second rate of an operator counter of the selected jobs."""
    return f"rate(flink_taskmanager_job_task_operator_{metric}{{{JOB}}}[{RATE}])"


def per_operator(aggregation: str, expr: str, source: str = "task_name") -> str:
    """``expr`` aggregated per job and operator."""
    return f"{aggregation} by (job_name, operator) ({by_operator(expr, source)})"


def job_tms(expr: str) -> str:
    """``expr`` (a TaskManager metric, labelled ``tm_id`` only) kept for the TaskManagers that run a
    task of the selected jobs."""
    return f"{expr} and on (tm_id) flink_taskmanager_job_task_busyTimeMsPerSecond{{{JOB}}}"


@dataclass(frozen=True)
class Query:
    expr: str
    """PromQL, with Grafana's variables ($job, $query, $__rate_interval)."""
    legend: str
    """Grafana's legend format ({{label}})."""


@dataclass(frozen=True)
class Panel:
    title: str
    description: str
    type: str
    """timeseries, or status-history: a heat map with a row per series and a cell per time step."""
    unit: str
    """Grafana's unit id (short, percentunit, bytes...)."""
    queries: tuple[Query, ...]
    axis_label: str = ""
    min: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class Variable:
    name: str
    label: str
    metric: str
    """label_values(<metric>, job_name): the variable's values are job names seen on this series."""
    regex: str = ""
    """Grafana's variable regex: its capture group is the value (JavaScript syntax)."""
    multi: bool = False


SOURCE_METRIC = "flink_taskmanager_job_task_operator_targetRate"
"""A series only the StreamBed source has: it names the campaign's jobs."""
CACHE_HITS = per_operator("sum", operator_rate("rocksdb_block_cache_hit"), "operator_name")
CACHE_MISSES = per_operator("sum", operator_rate("rocksdb_block_cache_miss"), "operator_name")
LIVE_DATA = '{__name__=~"flink_taskmanager_job_task_operator_.+_rocksdb_estimate_live_data_size", ' + JOB + "}"

VARIABLES: tuple[Variable, ...] = (
    Variable("query", "Query", SOURCE_METRIC, regex="/^streambed_(.+)_[0-9]+_[0-9]+$/"),
    Variable("job", "Job", f'{SOURCE_METRIC}{{job_name=~"streambed_${{query}}_[0-9]+_[0-9]+"}}', multi=True),
)

PANELS: tuple[Panel, ...] = (
    Panel("Source rate: target and achieved",
          "What the controller asks the sources for (the sum of their targetRate gauges) and what they "
          "emitted (the rate of their emittedRecords count). Achieved below target: the job holds the "
          "sources back, or the sources cannot generate more (source-saturated).",
          "timeseries", "short",
          (Query(f"sum by (job_name) ({SOURCE_METRIC}{{{JOB}}})", "{{job_name}} target"),
           Query(f"sum by (job_name) ({operator_rate('emittedRecords')})", "{{job_name}} achieved")),
          axis_label="events/s", min=0),
    Panel("Pending records (source backlog)",
          "Records the sources should have emitted by now and have not (their pendingRecords gauges, "
          "summed). Flat: the job keeps up; growing: it does not (the validation's under-provisioning sign).",
          "timeseries", "short",
          (Query(f"sum by (job_name) (flink_taskmanager_job_task_operator_pendingRecords{{{JOB}}})",
                 "{{job_name}}"),),
          axis_label="records", min=0),
    Panel("Busyness by operator (heat map)",
          "Share of each second the busiest task of each operator spent processing records "
          "(rate of accumulateBusyTimeMs / 1000). A row near 100 % is the bottleneck.",
          "status-history", "percentunit",
          (Query(per_operator("max", task_rate("accumulateBusyTimeMs")) + " / 1000", "{{operator}}"),),
          min=0, max=1),
    Panel("Back-pressure by operator",
          "Share of each second the most back-pressured task of each operator waited for output buffers "
          "(rate of accumulateBackPressuredTimeMs / 1000): the operators upstream of a bottleneck.",
          "timeseries", "percentunit",
          (Query(per_operator("max", task_rate("accumulateBackPressuredTimeMs")) + " / 1000", "{{operator}}"),),
          min=0, max=1),
    Panel("Records in by operator",
          "Records each operator takes per second, all its tasks together (rate of numRecordsIn).",
          "timeseries", "short",
          (Query(per_operator("sum", task_rate("numRecordsIn")), "{{operator}}"),),
          axis_label="records/s", min=0),
    Panel("TaskManager CPU",
          "Cores each TaskManager running the job uses (rate of the JVM's CPU time, Status.JVM.CPU.Time, "
          "in ns). Against cpu_per_slot on a testbed of CPU shares (0.12 core per slot locally).",
          "timeseries", "short",
          (Query(job_tms(f"rate(flink_taskmanager_Status_JVM_CPU_Time[{RATE}]) / 1e9"), "{{tm_id}}"),),
          axis_label="cores", min=0),
    Panel("Host CPU (node_exporter)",
          "Share of each host's CPU time not idle, all cores together (node_cpu_seconds_total).",
          "timeseries", "percentunit",
          (Query(f'1 - avg by (instance) (rate(node_cpu_seconds_total{{mode="idle"}}[{RATE}]))', "{{instance}}"),),
          min=0, max=1),
    Panel("TaskManager memory: JVM heap and managed memory",
          "Heap each TaskManager running the job uses (Status.JVM.Memory.Heap.Used) and the managed "
          "memory its RocksDB state backend holds (Status.Flink.Memory.Managed.Used).",
          "timeseries", "bytes",
          (Query(job_tms("flink_taskmanager_Status_JVM_Memory_Heap_Used"), "{{tm_id}} heap"),
           Query(job_tms("flink_taskmanager_Status_Flink_Memory_Managed_Used"), "{{tm_id}} managed")),
          min=0),
    Panel("RocksDB block cache hit rate",
          "Share of RocksDB's block reads each stateful operator found in its block cache (the "
          "block-cache-hit and -miss native metrics the flink role enables). Empty while the state fits "
          "in the memtables (no block read yet).",
          "timeseries", "percentunit",
          (Query(f"{CACHE_HITS} / ({CACHE_HITS} + {CACHE_MISSES})", "{{operator}}"),),
          min=0, max=1),
    Panel("RocksDB live state by operator",
          "Live data RocksDB estimates each stateful operator holds, all its states and tasks together "
          "(the estimate-live-data-size native metric; Flink names it after each state).",
          "timeseries", "bytes",
          (Query(per_operator("sum", LIVE_DATA, "operator_name"), "{{operator}}"),),
          min=0),
)

WIDTH, HEIGHT = 12, 8
"""Each panel's size on Grafana's 24-column grid: two panels a row."""


def _panel(panel: Panel, panel_id: int) -> dict:
    defaults: dict = {"unit": panel.unit}
    if panel.min is not None:
        defaults["min"] = panel.min
    if panel.max is not None:
        defaults["max"] = panel.max
    if panel.type == "status-history":
        defaults["color"] = {"mode": "continuous-GrYlRd"}
        options = {"showValue": "never", "rowHeight": 0.9, "colWidth": 0.9,
                   "legend": {"showLegend": False, "displayMode": "list", "placement": "bottom"},
                   "tooltip": {"mode": "single", "sort": "none"}}
    else:
        defaults["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 0, "showPoints": "never",
                              "spanNulls": False, "axisLabel": panel.axis_label}
        options = {"legend": {"showLegend": True, "displayMode": "list", "placement": "bottom"},
                   "tooltip": {"mode": "multi", "sort": "desc"}}
    return {
        "id": panel_id,
        "type": panel.type,
        "title": panel.title,
        "description": panel.description,
        "datasource": DATASOURCE,
        "gridPos": {"h": HEIGHT, "w": WIDTH, "x": WIDTH * ((panel_id - 1) % 2), "y": HEIGHT * ((panel_id - 1) // 2)},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": options,
        "targets": [{"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": q.expr, "legendFormat": q.legend,
                     "range": True, "instant": False, "editorMode": "code"}
                    for i, q in enumerate(panel.queries)],
    }


def _variable(v: Variable) -> dict:
    query = f"label_values({v.metric}, job_name)"
    return {
        "name": v.name,
        "label": v.label,
        "type": "query",
        "datasource": DATASOURCE,
        "definition": query,
        "query": {"query": query, "refId": f"{v.name}-variable"},
        "regex": v.regex,
        # 2: refreshed when the time range changes (a campaign's jobs come and go)
        "refresh": 2,
        # 2: alphabetical, descending: the newest job first (job names end with their start time)
        "sort": 2,
        "multi": v.multi,
        "includeAll": v.multi,
        "current": {},
        "options": [],
        "hide": 0,
    }


def dashboard() -> dict:
    """The campaign dashboard's JSON model."""
    return {
        "uid": UID,
        "title": TITLE,
        "description": "A StreamBed campaign or validation on Flink: source rates, backlog, operators, "
                       "TaskManagers and the RocksDB state backend. Generated by "
                       "controller/streambed/report/grafana/dashboards.py (make dashboards): edit that, not this file.",
        "tags": [ANNOTATION_TAG],
        "editable": False,
        "graphTooltip": 1,
        "timezone": "browser",
        "refresh": "5s",
        "time": {"from": "now-30m", "to": "now"},
        "schemaVersion": 39,
        "version": 1,
        "links": [],
        "annotations": {"list": [
            {"name": "Annotations & Alerts", "builtIn": 1, "type": "dashboard", "datasource": GRAFANA_ANNOTATIONS,
             "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
             "target": {"type": "dashboard", "limit": 100, "matchAny": False, "tags": []}},
            # The phases the controller posts (report/grafana/annotations.py): org-wide annotations found by tag.
            {"name": "Campaign phases", "datasource": GRAFANA_ANNOTATIONS, "enable": True, "hide": False,
             "iconColor": "#8f3bb8",
             "target": {"type": "tags", "tags": [ANNOTATION_TAG, "query:$query"], "matchAny": False, "limit": 500}},
        ]},
        "templating": {"list": [_variable(v) for v in VARIABLES]},
        "panels": [_panel(p, i) for i, p in enumerate(PANELS, start=1)],
    }


def text() -> str:
    """The dashboard as the committed file holds it."""
    return json.dumps(dashboard(), indent=2) + "\n"


def render(expr: str, values: Mapping[str, str]) -> str:
    """``expr`` with Grafana's variables replaced by ``values`` (``$name``, ``${name}``, ``[[name]]``), as
    Grafana sends it to Prometheus for single values (tests run every panel's PromQL this way). A
    variable without a value is left as it is, so that Prometheus refuses it."""
    def value(m: re.Match) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        return values.get(name, m.group(0))

    return re.sub(r"\$\{(\w+)\}|\[\[(\w+)\]\]|\$(\w+)", value, expr)


def queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every panel query, in order."""
    return [(p.title, q.expr) for p in PANELS for q in p.queries]


def write(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, text())
    return path


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m streambed.report.grafana.dashboards",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", type=Path, default=PATH, help=f"the dashboard file (default: {PATH})")
    print(write(ap.parse_args(argv).out))


if __name__ == "__main__":
    main()

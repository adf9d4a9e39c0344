"""The Flink testbed: the Testbed protocol over a real Apache Flink cluster.

* Jobs: the StreamBed job (flink/, Java) runs one SQL query from flink/queries/ with a rate-limited
  Nexmark source whose target rate is re-read from a file every 200 ms (no restart to change it),
  per-operator parallelism, chaining off and one slot per task. It is submitted over Flink's REST
  API (upload once, then run with arguments) after a local ``--explain`` has checked the SQL and the
  operator graph the query declares.
* Measurements: each window is read through :class:`~streambed.metrics.prometheus.PrometheusReader`
  and turned into a Measurement by :func:`~streambed.metrics.prometheus.window_measurement`
  (counter differences inside the window, pending records from the source's gauge); this module
  applies configurations, the metrics package observes them.
* Deployment is a callback (``deploy``): whoever builds the testbed decides how TaskManagers of a
  budget's memory come up (streambed.infra deploys them through Ansible from an inventory).
* CPU: at both ends of every window the TaskManagers' cgroups and the host's CPU pressure are read
  (testbed/pressure.py); a window taken while the host was short of CPU is observed again, kept in
  the measurement, and after ``DisturbanceSettings.repeats`` such windows MachineTooBusy ends it.
* Failures are typed: a restart during a window is JobRestarted, missing series MetricsMissing, a REST
  API or Prometheus that does not answer within ``timeout_s`` TestbedUnreachable, SQL that Flink
  rejects QueryRejected with Flink's own message.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

import requests

from ..errors import (JobFailed, JobRestarted, MetricsMissing, QueryRejected, TaskManagerLost, TestbedUnreachable,
                      UserError)
from ..metrics.prometheus import FLINK_METRICS, JobVertices, PrometheusReader, window_measurement
from ..model import SOURCE, Budget, Configuration, Measurement, Query, TestbedInfo, state_span
from .base import Run
from .pressure import CpuReader, DisturbanceSettings, contention, undisturbed

QUERY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A query name on the Flink testbed: the stem of a .sql file in the queries directory, nothing more."""

SQL_ERROR = "SQL_ERROR:"

JOB_PREFIX = "streambed-"
"""The name of every job the testbed starts begins so (and so the jobs it may cancel as left over)."""

ENDED = ("CANCELED", "FAILED", "FINISHED")
"""Flink job states from which a job runs no more."""


# -- the operator graph of a query ---------------------------------------------------------------

def short_name(description: str) -> str:
    """Flink's operator description -> the planner's short name ("Sink: Sink(table=...)" -> "Sink")."""
    name = description.split("(", 1)[0].strip()
    if name.startswith("Sink:"):
        name = name[len("Sink:"):].strip()
    return name.split(":")[-1].strip() or description.strip()


def plan_operators(nodes: Sequence[dict]) -> tuple[list[tuple[str, str, list[str]]], list[str]]:
    """Name the non-source nodes of a Flink job plan (REST /jobs/{id}/plan "nodes") as the planner sees
    them: ShortName#k, k their 1-based position in topological order. Returns
    ([(name, vertex id, input names)], source vertex ids)."""
    by_id = {n["id"]: n for n in nodes}
    inputs = {n["id"]: [i["id"] for i in n.get("inputs", [])] for n in nodes}
    order: list[str] = []
    seen: set[str] = set()

    def visit(v: str) -> None:
        if v in seen:
            return
        seen.add(v)
        for u in inputs[v]:
            visit(u)
        order.append(v)

    for n in nodes:
        visit(n["id"])
    sources = [v for v in order if not inputs[v]]
    names: dict[str, str] = {}
    out = []
    for v in order:
        if v in sources:
            continue
        names[v] = f"{short_name(by_id[v].get('description') or by_id[v].get('operator', ''))}#{len(names) + 1}"
    for v in order:
        if v in sources:
            continue
        out.append((names[v], v, [SOURCE if u in sources else names[u] for u in inputs[v]]))
    return out, sources


def parse_declared_graph(name: str, sql: str) -> Query:
    """The graph a query file declares in its header (``-- streambed-operators:`` and
    ``-- streambed-edges:`` lines)."""
    ops = re.search(r"^--\s*streambed-operators:\s*(.+)$", sql, re.M)
    edges = re.search(r"^--\s*streambed-edges:\s*(.+)$", sql, re.M)
    if not ops or not edges:
        raise UserError(f"query {name}: its SQL file must declare '-- streambed-operators:' and "
                        f"'-- streambed-edges:' header lines")
    pairs = []
    for e in edges.group(1).split():
        up, sep, down = e.partition(">")
        if not sep:
            raise UserError(f"query {name}: streambed-edges: expected up>down pairs, got {e!r}")
        pairs.append((up, down))
    return Query(name, tuple(ops.group(1).split()), tuple(pairs), state_span_s=state_span(longest_interval_s(sql)))


INTERVAL = re.compile(r"INTERVAL\s+'\s*(\d+(?:\.\d+)?)\s*'\s+(SECOND|MINUTE|HOUR|DAY)S?\b", re.I)
UNIT_S = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0}


def longest_interval_s(sql: str) -> float:
    """The longest INTERVAL literal of a query, in seconds (window sizes, slides, session gaps,
    interval-join bounds); 0 without any. Comments are skipped."""
    code = "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
    return max((float(v) * UNIT_S[u.lower()] for v, u in INTERVAL.findall(code)), default=0.0)


# -- settings ---------------------------------------------------------------------------------------

REST_ATTEMPT_S = 10.0
"""Longest wait for one answer of Flink's REST API (a status call answers in milliseconds)."""
JOB_METRICS_WAIT_S = 15.0
"""Longest wait for a new job's numRestarts in the REST API: its metric store is refreshed every
``metrics.fetcher.update-interval`` (10 s by default), so a job seconds old may not be in it yet."""
EXPLAIN_TIMEOUT_S = 600.0
"""Longest wait for the job to explain a query's graph (a local JVM planning the SQL)."""


@dataclass(frozen=True)
class FlinkSettings:
    rest_url: str
    prometheus_url: str
    flink_home: Path
    jar: Path
    queries_dir: Path
    state_dir: Path
    max_slots: int = 4
    """Slots for the query's operators (the sources take slots of their own)."""
    memory_per_slot: tuple[int, ...] = (512, 1024)
    source_parallelism: int = 1
    source_partitions: int | None = None
    """Partitions of the topic a deployment's source reads (testbed.yml ``source_partitions``): the
    planner keeps the source's readers within them (model/partitions.py). None: unknown, no bound."""
    max_source_rate: float = 4e6
    """What the source tasks can generate at most, events/s (the limiter caps a subtask near 4-5 M)."""
    sample_period: float = 1.0
    """Prometheus scrape interval: windows are measured from samples this far apart."""
    cpu_per_slot: float = 0.0
    """Cores a slot may use (a cgroup CPU quota per TaskManager, set by the flink role); 0: unconfined."""
    slots_per_taskmanager: int = 0
    """Slots per TaskManager process, each TaskManager with its own CPU quota; 0: one TaskManager
    holds every slot."""
    replay_dir: Path | None = None
    """JSON lines files the source replays (a data set's json/, readable where the TaskManagers run);
    None: the generator."""
    timeout_s: float = 30.0
    start_timeout_s: float = 90.0
    metrics_wait_s: float = JOB_METRICS_WAIT_S
    disturbance: DisturbanceSettings = DisturbanceSettings()
    """When a window was taken while the host was short of CPU, and how often to observe again."""


class FlinkTestbed:
    """A Flink cluster (local or remote) as a testbed."""

    name = "flink"

    def __init__(self, settings: FlinkSettings, deploy: Callable[[Budget], None] | None = None,
                 log: Callable[[str], None] | None = None, cpu: CpuReader | None = None):
        self.settings = settings
        self.cpu = cpu or CpuReader(settings.state_dir / settings.disturbance.groups_file, settings.disturbance.proc)
        """Reads the TaskManagers' CPU groups and the host's CPU pressure at both ends of a window."""
        self.deploy = deploy
        self.log = log or (lambda message: None)
        self._session = requests.Session()
        self._jar_id: str | None = None
        self._queries: dict[str, tuple[Query, str]] = {}
        self._budget: Budget | None = None
        self._leftovers_checked = False
        """Whether the cluster was searched for jobs an earlier campaign left (at the first lack of slots)."""
        self._runs: dict[str, dict] = {}
        self._counter = 0
        self.prometheus = PrometheusReader(settings.prometheus_url, timeout_s=settings.timeout_s, names=FLINK_METRICS)

    # -- Testbed protocol ------------------------------------------------------------------------

    def info(self) -> TestbedInfo:
        s = self.settings
        return TestbedInfo(name=f"flink@{s.rest_url}", max_slots=s.max_slots, memory_per_slot=tuple(s.memory_per_slot),
                           sample_period=max(5.0, s.sample_period), source_parallelism=s.source_parallelism,
                           max_source_rate=s.max_source_rate,
                           notes=("Apache Flink 2.3 standalone cluster", f"Prometheus {s.prometheus_url}"))

    def query(self, name: str) -> Query:
        """The query's declared operator graph, checked against what Flink builds from its SQL."""
        if name not in self._queries:
            if not QUERY_NAME.fullmatch(name):
                # The name becomes a file name: "../x" must not reach a .sql outside the queries directory.
                raise UserError(f"query: expected a query name of letters, digits, '_' and '-' such as q5, got {name!r:.60}")
            path = self.settings.queries_dir / f"{name}.sql"
            if not path.is_file():
                known = sorted(p.stem for p in self.settings.queries_dir.glob("*.sql"))
                raise UserError(f"query: no {path.name} in {self.settings.queries_dir} (expected one of {', '.join(known)})")
            sql = path.read_text()
            declared = parse_declared_graph(name, sql)
            actual = self.explain(sql, name)
            if actual.operators != declared.operators or set(actual.edges) != set(declared.edges):
                raise UserError(f"query {name}: its declared graph ({' '.join(declared.operators)}) is not what "
                                f"Flink builds ({' '.join(actual.operators)}); fix the header of {path.name}")
            # Which operators are keyed is Flink's to say (a hash exchange in its stream graph), not the header's.
            self._queries[name] = (replace(declared, keyed=actual.keyed,
                                           source_partitions=self.settings.source_partitions), sql)
        return self._queries[name][0]

    def sql(self, name: str) -> str:
        """The SQL script of a query (checked by :meth:`query`)."""
        self.query(name)
        return self._queries[name][1]

    def explain(self, sql: str, name: str = "query") -> Query:
        """Ask the job (run locally, no cluster) for the operator graph of ``sql``."""
        s = self.settings
        cmd = ["java", "-cp", f"{s.flink_home / 'lib'}/*:{s.jar}", "org.streambed.flink.StreamBedJob", "--explain",
               "--sql-b64", base64.b64encode(sql.encode()).decode()]
        try:
            # A JVM that plans SQL: seconds when idle, minutes on 2 cores shared by a lab of 9 hosts.
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=EXPLAIN_TIMEOUT_S)
        except FileNotFoundError:
            raise UserError("java: not found; the Flink testbed needs a JDK 17 (java and javac)") from None
        except subprocess.TimeoutExpired:
            raise UserError(f"query {name}: the job did not explain its graph within {EXPLAIN_TIMEOUT_S:.0f} s "
                            f"(the machine is overloaded? load average {os.getloadavg()[0]:.0f})") from None
        if p.returncode != 0:
            err = next((l for l in p.stderr.splitlines() if l.startswith(SQL_ERROR)), None)
            if err:
                raise QueryRejected(f"query {name}: Flink rejected the SQL: {err[len(SQL_ERROR):].strip()}")
            tail = p.stderr.strip().splitlines()[-1:] or ["no output"]
            raise UserError(f"query {name}: the job could not build its graph: {tail[0]}")
        graph = json.loads(p.stdout.strip().splitlines()[-1])
        ops = tuple(o["name"] for o in graph["operators"])
        edges = tuple((i, o["name"]) for o in graph["operators"] for i in o["inputs"])
        return Query(name, ops, edges, keyed=frozenset(o["name"] for o in graph["operators"] if o.get("keyed")))

    def prepare(self, budget: Budget) -> None:
        s = self.settings
        self.info().check_budget(budget)
        needed = s.max_slots + s.source_parallelism
        if self.deploy is not None:
            if self._budget is None or self._budget.memory_mb != budget.memory_mb:
                self.log(f"deploying TaskManagers with {budget.memory_mb} MB per slot")
                self.deploy(Budget(s.max_slots, budget.memory_mb))
        self._wait_slots(needed, budget.memory_mb)
        self._budget = budget

    def start(self, query: str, configuration: Configuration, rate: float) -> Run:
        q = self.query(query)
        if self._budget is None:
            raise UserError("prepare a budget before starting a query")
        self._counter += 1
        name = f"{JOB_PREFIX}{query}-{int(time.time())}-{self._counter}"
        rate_file = self.settings.state_dir / "rates" / f"{name}.rate"
        rate_file.parent.mkdir(parents=True, exist_ok=True)
        _write_rate(rate_file, self._offered(rate))
        args = ["--sql-b64", base64.b64encode(self._queries[query][1].encode()).decode(),
                "--rate-file", str(rate_file), "--initial-rate", repr(float(rate)),
                "--source-parallelism", str(self.settings.source_parallelism),
                "--parallelism", ",".join(f"{op}={p}" for op, p in configuration.parallelism),
                "--job-name", name]
        if configuration.max_parallelism is not None:  # the plan sets the job's key groups (pipeline.max-parallelism)
            args += ["--max-parallelism", str(configuration.max_parallelism)]
        if self.settings.replay_dir is not None:
            args += ["--replay-dir", str(self.settings.replay_dir)]
        resp = self._rest("post", f"/jars/{self._jar()}/run", json={"programArgsList": args}, timeout=120)
        if resp.status_code >= 400:
            raise QueryRejected(f"query {query}: Flink refused the job: {_flink_error(resp)}")
        job_id = resp.json()["jobid"]
        run = Run(job_id, q, configuration, self._budget, time.time(), rate)
        self._runs[job_id] = {"rate_file": rate_file, "rate": self._offered(rate), "asked": rate, "vertices": None}
        self._wait_running(run)
        return run

    def set_rate(self, run: Run, rate: float) -> None:
        if not (math.isfinite(rate) and rate >= 0):
            raise UserError(f"rate: expected a non-negative number of events/s, got {rate}")
        state = self._state(run)
        _write_rate(state["rate_file"], self._offered(rate))
        state["rate"], state["asked"] = self._offered(rate), rate
        run.rate = rate

    def wait(self, run: Run, seconds: float) -> None:
        end = time.time() + seconds
        while time.time() < end:
            time.sleep(min(5.0, max(0.0, end - time.time())))
            self._check_running(run)

    def observe(self, run: Run, seconds: float) -> Measurement:
        """One window; a window taken while the host was short of CPU is discarded and observed again
        (``DisturbanceSettings.repeats`` times), the discarded ones kept in the measurement."""
        return undisturbed(lambda: self._observe_window(run, seconds), self.settings.disturbance,
                           lambda why: self.log(f"{run.id}: window discarded, the host was short of CPU ({why}); "
                                                f"observing again"))

    def _observe_window(self, run: Run, seconds: float) -> Measurement:
        try:
            restarts = self._restarts(run)
            before = self.cpu.read()
            t0 = time.time()
            self.wait(run, seconds)
            t1 = time.time()
            after = self.cpu.read()
            time.sleep(1.0)  # the scrape that began before t1 is stored (raw samples carry their scrape time)
            self._check_running(run)
            if self._restarts(run) != restarts:
                raise JobRestarted(f"{run.id}: the job restarted during the observation window")
            vertices = self._vertices(run)
            state = self._state(run)
            m = window_measurement(self.prometheus.window(run.id, t0, t1), vertices, job=run.id, t0=t0, t1=t1,
                                   target_rate=state["rate"], sample_period=self.settings.sample_period)
            if before is not None and after is not None:
                m = replace(m, cpu=contention(before, after, self.settings.disturbance.min_wait))
            # A replay asked for more than its bound offered the bound: the source, not the job, capped it.
            return replace(m, source_saturated=True) if state["asked"] > state["rate"] else m
        except (JobRestarted, MetricsMissing) as e:
            # The most common cause on a testbed: name it, so that the user knows what to look at.
            lost = self._lost_slots()
            if lost:
                raise TaskManagerLost(f"{e}; {lost}") from None
            raise

    def stop(self, run: Run) -> None:
        state = self._runs.pop(run.id, None)
        try:
            self._cancel(run.id)
        finally:
            if state:
                state["rate_file"].unlink(missing_ok=True)

    def now(self) -> float:
        return time.time()

    def _offered(self, rate: float) -> float:
        """What the source is asked for ``rate``: a replay never beyond its bound (the data set would
        run out mid-job), the generator as asked."""
        return min(rate, self.settings.max_source_rate) if self.settings.replay_dir is not None else rate

    # -- REST ------------------------------------------------------------------------------------

    def _rest(self, method: str, path: str, timeout: float | None = None, **kw) -> requests.Response:
        """One REST call, retried until it answers; TestbedUnreachable once ``timeout_s`` has passed.

        Each attempt gets at most the time left (a server that accepts connections but never answers
        must not hold the caller past the deadline). ``timeout`` gives a longer time to *answer* to
        calls that are slow by nature (uploading the jar, submitting a SQL job); a server that
        cannot be reached at all still fails after ``timeout_s``."""
        url = self.settings.rest_url.rstrip("/") + path
        deadline = time.monotonic() + self.settings.timeout_s
        last: Exception | None = None
        while (left := deadline - time.monotonic()) > 0.1:
            try:
                read = max(left, timeout) if timeout else min(left, REST_ATTEMPT_S)
                return self._session.request(method, url, timeout=(min(left, REST_ATTEMPT_S), read), **kw)
            except requests.RequestException as e:
                last = e
                time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
        raise TestbedUnreachable(f"Flink REST API at {self.settings.rest_url} does not answer after "
                                 f"{self.settings.timeout_s:.0f} s ({type(last).__name__}); is the cluster up?")

    def _jar(self) -> str:
        if self._jar_id is None:
            jar = self.settings.jar
            if not jar.is_file():
                raise UserError(f"jar: {jar} not built (run make flink-job)")
            # bytes, not a file object: a retried upload must send the whole jar again
            resp = self._rest("post", "/jars/upload", timeout=120,
                              files={"jarfile": (jar.name, jar.read_bytes(), "application/x-java-archive")})
            if resp.status_code >= 400:
                raise TestbedUnreachable(f"Flink refused the job jar: {_flink_error(resp)}")
            self._jar_id = resp.json()["filename"].rsplit("/", 1)[-1]
        return self._jar_id

    def _cancel(self, job_id: str) -> None:
        """Cancel a job and wait (up to timeout_s) until Flink says it ended."""
        self._rest("patch", f"/jobs/{job_id}", params={"mode": "cancel"})
        deadline = time.time() + self.settings.timeout_s
        while time.time() < deadline:
            if self._rest("get", f"/jobs/{job_id}").json().get("state") in ENDED:
                return
            time.sleep(0.5)

    def _cancel_leftovers(self) -> None:
        """Cancel the StreamBed jobs (JOB_PREFIX) this process did not start: a campaign killed on the
        controller leaves its job running on the cluster, and a resumed campaign would wait for its slots
        in vain. One campaign runs on a testbed at a time; jobs of other names are left alone."""
        for job in self._rest("get", "/jobs/overview").json().get("jobs", []):
            if (str(job.get("name", "")).startswith(JOB_PREFIX) and job.get("state") not in ENDED
                    and job.get("jid") not in self._runs):
                self.log(f"cancelling {job['name']}, left running by an earlier campaign (killed?)")
                self._cancel(job["jid"])

    def _wait_slots(self, slots: int, memory_mb: int | None = None) -> None:
        """Wait until ``slots`` slots are free: those of a cancelled job come back within seconds (on
        TaskManagers held to 0.12 core, after the next estimate had asked). Slots that are gone, not
        busy (a TaskManager killed, out of memory), are deployed again once: the role starts what
        is not running."""
        deadline = time.time() + self.settings.start_timeout_s
        redeployed = self.deploy is None or memory_mb is None
        while time.time() < deadline:
            overview = self._rest("get", "/overview").json()
            if int(overview.get("slots-available", 0)) >= slots:
                return
            if not self._leftovers_checked:
                self._leftovers_checked = True
                self._cancel_leftovers()
                continue
            if int(overview.get("slots-total", 0)) < slots and not redeployed:
                self.log("the cluster has lost slots; deploying again")
                self.deploy(Budget(self.settings.max_slots, memory_mb))
                redeployed = True
            time.sleep(1.0)
        # Flink answers, so this is a failed start (retried by the estimator), not an unreachable engine.
        raise JobFailed(f"Flink at {self.settings.rest_url} has fewer than {slots} free slots after "
                        f"{self.settings.start_timeout_s:.0f} s (another job running, or a TaskManager lost?)")

    def _wait_running(self, run: Run) -> None:
        deadline = time.time() + self.settings.start_timeout_s
        while time.time() < deadline:
            job = self._rest("get", f"/jobs/{run.id}").json()
            if job.get("state") == "RUNNING" and all(v.get("status") == "RUNNING" for v in job.get("vertices", [])):
                return
            if job.get("state") in ENDED:
                # The SQL was checked before submission (query()): what fails now is the run itself.
                raise JobFailed(f"{run.id}: the job ended as {job.get('state')} while starting: {self._root_cause(run)}")
            time.sleep(0.5)
        raise JobFailed(f"{run.id}: not all tasks are running after {self.settings.start_timeout_s:.0f} s "
                        f"(not enough slots?)")

    def _check_running(self, run: Run) -> None:
        job = self._rest("get", f"/jobs/{run.id}").json()
        if job.get("state") != "RUNNING":
            raise JobRestarted(f"{run.id}: the job is {job.get('state')} ({self._root_cause(run)})")

    def _restarts(self, run: Run) -> int:
        """The job's restart count (the numRestarts metric: the exception history is capped).

        Waits up to ``metrics_wait_s`` for a job the REST metric store does not know yet (it is
        refreshed every 10 s): a fresh job is not a failed window."""
        deadline = time.monotonic() + self.settings.metrics_wait_s
        while True:
            resp = self._rest("get", f"/jobs/{run.id}/metrics", params={"get": "numRestarts"})
            values = resp.json() if resp.status_code < 400 else []
            try:
                return int(float(values[0]["value"]))
            except (IndexError, KeyError, TypeError, ValueError):
                if time.monotonic() >= deadline:
                    raise MetricsMissing(f"{run.id}: Flink reports no numRestarts for the job after "
                                         f"{self.settings.metrics_wait_s:.0f} s") from None
                time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))

    def _lost_slots(self) -> str | None:
        """Why the cluster has fewer slots than deployed, if it has (a TaskManager lost)."""
        expected = self.settings.max_slots + self.settings.source_parallelism
        try:
            o = self._rest("get", "/overview").json()
        except TestbedUnreachable:
            return None
        total = int(o.get("slots-total", 0))
        if total < expected:
            return (f"the cluster has {total} of its {expected} slots ({o.get('taskmanagers', 0)} TaskManagers "
                    f"registered): a TaskManager was lost")
        return None

    def _root_cause(self, run: Run) -> str:
        try:
            data = self._rest("get", f"/jobs/{run.id}/exceptions").json()
            entries = data.get("exceptionHistory", {}).get("entries", [])
            text = entries[0].get("exceptionName", "") + ": " + (entries[0].get("stacktrace", "").splitlines() or [""])[0] \
                if entries else data.get("root-exception", "")
            return " ".join(text.split())[:300] or "no exception recorded"
        except Exception:  # noqa: BLE001 - diagnostics only
            return "no exception recorded"

    def _vertices(self, run: Run) -> JobVertices:
        """The job's operators and sources as Flink's plan names them (read once per run)."""
        state = self._state(run)
        if state["vertices"] is None:
            ops, sources = plan_operators(self._rest("get", f"/jobs/{run.id}/plan").json()["plan"]["nodes"])
            state["vertices"] = JobVertices(tuple((name, vertex) for name, vertex, _ in ops), tuple(sources),
                                            tuple(tuple(ups) for _, _, ups in ops))
        return state["vertices"]

    def _state(self, run: Run) -> dict:
        try:
            return self._runs[run.id]
        except KeyError:
            raise UserError(f"run {run.id} is not running") from None


def _write_rate(path: Path, rate: float) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{float(rate):.3f}\n")
    tmp.replace(path)  # atomic: the source never reads half a number


def _flink_error(resp: requests.Response) -> str:
    try:
        errors = resp.json().get("errors", [])
    except ValueError:
        return resp.text[:300]
    text = " ".join(str(e) for e in errors)
    m = re.search(r"SQL_ERROR:\s*([^\n]+)", text)
    if m:
        return m.group(1).strip()
    return " ".join(text.split())[:300] or f"HTTP {resp.status_code}"

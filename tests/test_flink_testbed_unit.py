"""Pure parts of the Flink testbed: operator names from a job plan, declared graphs."""

import dataclasses
from pathlib import Path

import pytest

from conftest import json_server

from streambed.errors import UserError
from streambed.testbed.flink import parse_declared_graph, plan_operators, short_name


def test_short_names_follow_flinks_operator_descriptions():
    assert short_name("Calc(select=[bid.auction AS auction], where=[(event_type = 2)])") == "Calc"
    assert short_name("Sink: Sink(table=[default_catalog.default_database.discard_sink], fields=[a])") == "Sink"
    assert short_name("GroupWindowAggregate(groupBy=[$f0], window=[...])") == "GroupWindowAggregate"
    assert short_name("Join(joinType=[InnerJoin], where=[...])") == "Join"


def test_plan_operators_names_nodes_in_topological_order():
    # a diamond as in q5: source -> calc -> window -> (calc a, calc b) -> join -> sink
    nodes = [
        {"id": "j", "description": "Join(joinType=[InnerJoin])", "inputs": [{"id": "ca"}, {"id": "cb"}]},
        {"id": "s", "description": "Sink: Sink(table=[x])", "inputs": [{"id": "j"}]},
        {"id": "src", "description": "Source: datagen"},
        {"id": "c", "description": "Calc(select=[a])", "inputs": [{"id": "src"}]},
        {"id": "w", "description": "GroupWindowAggregate(groupBy=[a])", "inputs": [{"id": "c"}]},
        {"id": "ca", "description": "Calc(select=[b])", "inputs": [{"id": "w"}]},
        {"id": "cb", "description": "Calc(select=[c])", "inputs": [{"id": "w"}]},
    ]
    ops, sources = plan_operators(nodes)
    assert sources == ["src"]
    names = [n for n, _, _ in ops]
    assert names[0] == "Calc#1" and names[1] == "GroupWindowAggregate#2"
    assert set(names[2:4]) == {"Calc#3", "Calc#4"}
    assert names[4:] == ["Join#5", "Sink#6"]
    inputs = {n: i for n, _, i in ops}
    assert inputs["Calc#1"] == ["source"]
    assert sorted(inputs["Join#5"]) == ["Calc#3", "Calc#4"]
    assert dict((n, v) for n, v, _ in ops)["Join#5"] == "j"


def test_declared_graph_from_a_query_header():
    sql = ("-- Nexmark q1\n-- streambed-operators: Calc#1 Sink#2\n-- streambed-edges: source>Calc#1 Calc#1>Sink#2\n"
           "INSERT INTO x SELECT 1;")
    q = parse_declared_graph("q1", sql)
    assert q.operators == ("Calc#1", "Sink#2")
    assert q.edges == (("source", "Calc#1"), ("Calc#1", "Sink#2"))
    with pytest.raises(UserError, match="streambed-operators"):
        parse_declared_graph("q1", "INSERT INTO x SELECT 1;")
    with pytest.raises(UserError, match="up>down"):
        parse_declared_graph("q1", "-- streambed-operators: A#1\n-- streambed-edges: source-A#1\n")


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the socket is


@pytest.fixture
def silent_port():
    """A port that accepts connections (the kernel's backlog) but never answers: a hung server."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield s.getsockname()[1]


def _unreachable_testbed(tmp_path, timeout_s: float, port: int | None = None):
    from streambed.testbed.flink import FlinkSettings, FlinkTestbed

    settings = FlinkSettings(rest_url=f"http://127.0.0.1:{port or _closed_port()}",
                             prometheus_url=f"http://127.0.0.1:{port or _closed_port()}", flink_home=tmp_path,
                             jar=tmp_path / "job.jar", queries_dir=tmp_path, state_dir=tmp_path, timeout_s=timeout_s)
    return FlinkTestbed(settings)


@pytest.mark.parametrize("server", ["closed", "silent"])
def test_an_unreachable_rest_api_is_a_clear_error_within_the_timeout(tmp_path, server, silent_port):
    import time

    from streambed.errors import TestbedUnreachable
    from streambed.model import Budget

    tb = _unreachable_testbed(tmp_path, timeout_s=3.0, port=silent_port if server == "silent" else None)
    t0 = time.monotonic()
    with pytest.raises(TestbedUnreachable, match=r"Flink REST API at http://127\.0\.0\.1:\d+ does not answer"):
        tb.prepare(Budget(2, 1024))
    assert time.monotonic() - t0 < 3.0 + 2.0  # the timeout, not a request's own (10 s) nor a hang


def test_a_slow_call_to_a_closed_rest_api_fails_within_the_timeout_too(tmp_path):
    """Uploading the jar may take long to answer (120 s), but a server that is not there fails as fast
    as any other call."""
    import time

    from streambed.errors import TestbedUnreachable

    tb = _unreachable_testbed(tmp_path, timeout_s=3.0)
    (tmp_path / "job.jar").write_bytes(b"PK")
    t0 = time.monotonic()
    with pytest.raises(TestbedUnreachable, match=r"does not answer after 3 s"):
        tb._jar()
    assert time.monotonic() - t0 < 3.0 + 2.0


@pytest.mark.parametrize("server", ["closed", "silent"])
def test_an_unreachable_prometheus_is_a_clear_error_within_the_timeout(tmp_path, server, silent_port):
    import time

    from streambed.errors import TestbedUnreachable
    from streambed.model import Budget, Configuration, Query
    from streambed.testbed.base import Run

    tb = _unreachable_testbed(tmp_path, timeout_s=3.0, port=silent_port if server == "silent" else None)
    q = Query("q1", ("Calc#1", "Sink#2"), (("source", "Calc#1"), ("Calc#1", "Sink#2")))
    run = Run("job", q, Configuration.single_task(q), Budget(2, 1024), time.time(), 1000.0)
    t0 = time.monotonic()
    with pytest.raises(TestbedUnreachable, match=r"Prometheus at http://127\.0\.0\.1:\d+ does not answer"):
        tb.prometheus.series("flink_taskmanager_job_task_numRecordsOut", run.id, time.time() - 5, time.time())
    assert time.monotonic() - t0 < 3.0 + 2.0


@pytest.fixture
def metrics_server():
    """A REST API whose metric store knows the job's numRestarts only from the ``known_after``-th call on,
    as Flink's does for a job younger than its metric fetcher's refresh interval."""
    state = {"calls": 0, "known_after": 3}

    def answer(path):
        state["calls"] += 1
        return 200, [] if state["calls"] < state["known_after"] else [{"id": "numRestarts", "value": "2"}]

    with json_server(answer) as (_, port):
        yield port, state


def _run_of_q1():
    import time

    from streambed.model import Budget, Configuration, Query
    from streambed.testbed.base import Run

    q = Query("q1", ("Calc#1", "Sink#2"), (("source", "Calc#1"), ("Calc#1", "Sink#2")))
    return Run("job", q, Configuration.single_task(q), Budget(2, 1024), time.time(), 1000.0)


def test_a_new_jobs_restart_count_is_waited_for_not_taken_as_missing(tmp_path, metrics_server):
    import dataclasses

    port, state = metrics_server
    tb = _unreachable_testbed(tmp_path, timeout_s=3.0, port=port)
    tb.settings = dataclasses.replace(tb.settings, metrics_wait_s=5.0)
    assert tb._restarts(_run_of_q1()) == 2
    assert state["calls"] == 3


def test_a_restart_count_that_never_comes_is_missing_metrics(tmp_path, metrics_server):
    import dataclasses
    import time

    from streambed.errors import MetricsMissing

    port, state = metrics_server
    state["known_after"] = 10**6
    tb = _unreachable_testbed(tmp_path, timeout_s=3.0, port=port)
    tb.settings = dataclasses.replace(tb.settings, metrics_wait_s=1.5)
    t0 = time.monotonic()
    with pytest.raises(MetricsMissing, match="no numRestarts for the job after 2 s"):
        tb._restarts(_run_of_q1())
    assert 1.5 <= time.monotonic() - t0 < 4.0


@pytest.mark.parametrize("budget, message", [
    ((2, 2048), r"^memory: the flink@http://127\.0\.0\.1:\d+ testbed offers 512, 1024 MB per slot, got 2048$"),
    ((5, 1024), r"^slots: uses 5 slots, the flink@http://127\.0\.0\.1:\d+ testbed offers at most 4$"),
])
def test_prepare_refuses_a_budget_the_testbed_does_not_offer_before_deploying(tmp_path, budget, message):
    from streambed.model import Budget

    tb = _unreachable_testbed(tmp_path, timeout_s=3.0)
    deployed = []
    tb.deploy = deployed.append
    with pytest.raises(UserError, match=message):
        tb.prepare(Budget(*budget))
    assert deployed == []


@pytest.mark.parametrize("total, deploys", [(5, 0), (3, 1)])
def test_busy_slots_are_waited_for_and_lost_slots_deployed_again(tmp_path, total, deploys):
    """After an estimate the cancelled job's slots come back within seconds (slots-total stays 5):
    prepare waits, no deployment. A TaskManager lost (slots-total 3 of 5): deployed again, once."""
    from streambed.model import Budget

    answers = iter([{"slots-total": total, "slots-available": 1}] * 2)

    def overview(path):
        if path == "/jobs/overview":  # no job left by an earlier campaign
            return 200, {"jobs": []}
        return 200, next(answers, {"slots-total": 5, "slots-available": 5})

    with json_server(overview) as (url, _):
        tb = _unreachable_testbed(tmp_path, timeout_s=3.0)
        tb.settings = dataclasses.replace(tb.settings, rest_url=url, max_slots=4, source_parallelism=1,
                                          memory_per_slot=(512,))
        deployed = []
        tb.deploy = deployed.append
        tb._budget = Budget(2, 512)  # deployed already, at this memory
        tb.prepare(Budget(2, 512))
    assert deployed == [Budget(4, 512)] * deploys


def test_a_job_a_killed_campaign_left_running_is_cancelled_for_its_slots(tmp_path):
    """A campaign killed on the controller leaves its job on the cluster: at the first lack of slots the
    testbed cancels the StreamBed jobs it did not start, not other jobs nor ended ones, and goes on."""
    from streambed.model import Budget

    jobs = [{"jid": "a1", "name": "streambed-q11-1795693041-3", "state": "RUNNING"},
            {"jid": "b2", "name": "nightly-etl", "state": "RUNNING"},
            {"jid": "c3", "name": "streambed-q1-1795690000-1", "state": "FINISHED"}]
    cancelled = []

    def answer(path):
        if path.startswith("PATCH /jobs/"):
            cancelled.append(path.split("/")[2].split("?")[0])
            return 202, {}
        if path == "/jobs/overview":
            return 200, {"jobs": jobs}
        if path.startswith("/jobs/"):
            return 200, {"state": "CANCELED" if path.split("/")[2] in cancelled else "RUNNING"}
        return 200, {"slots-total": 6, "slots-available": 6 if cancelled else 2}

    logs = []
    with json_server(answer) as (url, _):
        tb = _unreachable_testbed(tmp_path, timeout_s=3.0)
        tb.settings = dataclasses.replace(tb.settings, rest_url=url, max_slots=4, source_parallelism=1,
                                          memory_per_slot=(512,))
        tb.log = logs.append
        deployed = []
        tb.deploy = deployed.append
        tb._budget = Budget(2, 512)
        tb.prepare(Budget(2, 512))
    assert cancelled == ["a1"] and deployed == []
    assert logs == ["cancelling streambed-q11-1795693041-3, left running by an earlier campaign (killed?)"]


def test_a_querys_keyed_operators_are_what_flinks_stream_graph_hashes(tmp_path):
    """The Flink testbed's Query says which operators are keyed (the skew model and the data's key
    statistics apply only to them): read from the explained stream graph, not the file's header."""
    import pyflink

    from streambed.testbed.flink import FlinkSettings, FlinkTestbed

    repo = Path(__file__).resolve().parents[1]
    settings = FlinkSettings(rest_url="http://127.0.0.1:1", prometheus_url="http://127.0.0.1:1",
                             flink_home=Path(pyflink.__file__).parent, jar=repo / "flink" / "build" / "streambed-job.jar",
                             queries_dir=repo / "flink" / "queries", state_dir=tmp_path)
    tb = FlinkTestbed(settings)
    assert tb.query("q11").keyed == {"GroupWindowAggregate#2"}
    assert tb.query("q1").keyed == frozenset()

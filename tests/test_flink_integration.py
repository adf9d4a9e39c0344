"""The planner on real Flink: the local testbed deployed by Ansible, the StreamBed job, Prometheus.

One deployment for the module, on ports of its own (REST 28081, RPC 26123, Prometheus 29090,
reporters 29250-29255) and a state directory under pytest's tmp dir, so that it never touches a
local testbed that may be running (inventories/local: 8081/9090) nor test_ansible.py's (18081).
One estimate (q1_capped's, below) feeds the tests that need an MST; real q1 runs in the kill test.

Timings are short (a few seconds per window) so the module takes minutes on 2 cores; what they
measure is printed (pytest -s) and is not a target of any assert.

Replays at 100 % and 130 % of an MST need an MST that holds still. q1's own does not on 2 cores: its
one source task shares the cores with everything else and generates 0.6-1.1 M events/s from one
5-s window to the next (measured here, the windows flagged source-saturated), so a replay at
exactly 100 % is a coin toss, as the paper's own replays reached 95-100 % (Fig. 9). Those tests run
q1 with a Calc of known capacity instead (tests/flink_queries/q1_capped.sql: the job's
streambed_cap UDF lets 50,000 bids/s through per task): real Flink, a truth to check against. The
cap sits far below what the machine generates and projects even with one core busy elsewhere: at
200,000 bids/s a CI machine under load failed a window at 98 % of the cap because its source, not
the capped Calc (busy 0.86), fell behind.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

from conformance import ConformanceCase, TestbedConformance
from conftest import REPO, port_open
from streambed.errors import QueryRejected
from streambed.planner.estimator import CapacityEstimator, Timing
from streambed.infra.local import LocalProvider
from streambed.infra.services import flink_settings, flink_testbed
from streambed.ledger import Ledger
from streambed.model import Budget, Configuration

PORTS = {"flink_rest_port": 28081, "flink_jobmanager_rpc_port": 26123, "prometheus_port": 29090,
         "flink_metrics_port_min": 29250, "flink_metrics_port_max": 29255}
MEMORY_MB = 512
# Short windows: a window is cooldown + ramp + observation + the 2.5 s for the last samples.
TIMING = Timing("integration", warmup_s=12, cooldown_s=2, cooldown_rate_per_source=200, ramp_s=3,
                       observe_s=6, max_iterations=7, sensibility=0.04, warmup_observe_s=5, max_cooldown_s=30)

pytestmark = pytest.mark.skipif(shutil.which("java") is None or shutil.which("javac") is None,
                                reason="needs a JDK 17 (java, javac)")


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    busy = [p for p in range(PORTS["flink_metrics_port_min"], PORTS["flink_metrics_port_max"] + 1)
            if port_open(p)] + [v for k, v in PORTS.items() if "metrics" not in k and port_open(v)]
    if busy:
        pytest.fail(f"test ports already in use (a leftover deployment?): {busy}")
    subprocess.run(["make", "-C", str(REPO), "--no-print-directory", "flink-job"], check=True,
                   capture_output=True, text=True)
    state = tmp_path_factory.mktemp("flink-testbed")
    provider = LocalProvider(REPO / "inventories" / "local")
    inventory = provider.provision().with_vars({**PORTS, "streambed_state_dir": str(state)})
    # One slot for the query's operators, one profile: what a 2-core machine runs without contention;
    # one TaskManager without a CPU share (the bounds below come from q1_capped's cap, and the shares
    # have their own tests: test_cpu_share.py, test_ansible.py).
    settings = dataclasses.replace(flink_settings(inventory), max_slots=2, memory_per_slot=(MEMORY_MB,),
                                   cpu_per_slot=0.0, slots_per_taskmanager=0)
    tb = flink_testbed(inventory, log=lambda m: print(f"[testbed] {m}"), settings=settings)
    tb.state_dir = state
    try:
        yield tb
    finally:
        provider.destroy(inventory)


CAPPED_QUERIES = REPO / "tests" / "flink_queries"
CAPPED_MST = 50_000 / (46 / 50)
"""q1_capped's single-task MST, events/s: 50,000 bids/s per Calc task, bids being 46 of 50 events."""


@pytest.fixture(scope="module")
def capped(bed):
    """A testbed on the same deployment (the same roles and inventory) that knows q1_capped."""
    tb = type(bed)(dataclasses.replace(bed.settings, queries_dir=CAPPED_QUERIES), deploy=bed.deploy, log=bed.log)
    tb.state_dir = bed.state_dir
    return tb


@pytest.fixture(scope="module")
def capped_estimate(capped, tmp_path_factory):
    ledger = Ledger.open(tmp_path_factory.mktemp("ledger"), "estimate", {}, resume=False)
    est = CapacityEstimator(capped, ledger, TIMING, log=lambda m: print(f"[capped] {m}"))
    query = capped.query("q1_capped")
    estimate = est.estimate("q1_capped", Budget(len(query.operators), MEMORY_MB),
                            Configuration.single_task(query), "q1_capped/single")
    print(f"\n[capped] q1_capped single task: MST {estimate.mst:,.0f} events/s (truth {CAPPED_MST:,.0f}) after "
          f"{len(estimate.windows)} windows")
    return estimate


def test_estimator_brackets_the_single_task_mst_with_every_operator_measured(capped_estimate):
    est = capped_estimate
    assert est.discarded == 0
    sustained = [w for w in est.windows if w.success]
    failed = [w for w in est.windows if not w.success]
    assert sustained and failed, "the search must have bracketed the MST"
    assert max(w.rate for w in sustained) < min(w.rate for w in failed)
    ops = {o.operator: o for o in est.measurement.operators}
    assert set(ops) == {"Calc#1", "Sink#2"}
    # every record the query reads reaches its Calc: input rate = what the source emitted
    assert ops["Calc#1"].input_rate == pytest.approx(est.measurement.achieved_rate, rel=0.05)
    assert all(0.0 <= o.busyness <= 1.0 for o in ops.values())


def test_estimator_finds_a_known_capacity_and_the_busyness_behind_it(capped_estimate):
    est = capped_estimate
    assert est.discarded == 0 and not est.source_limited
    # The search stops within its sensibility (4 %) of the truth, and never above it.
    assert 0.94 * CAPPED_MST <= est.mst <= 1.01 * CAPPED_MST, est.mst
    # Above the MST the metrics name the bottleneck: the capped Calc busy, the source not saturated.
    above = [w.measurement for w in est.windows if not w.success]
    assert above
    for m in above:
        calc = {o.operator: o for o in m.operators}["Calc#1"]
        assert calc.busyness > 0.9 and not m.source_saturated, m.to_dict()
        assert calc.input_rate == pytest.approx(CAPPED_MST, rel=0.03)


def _run_at(bed, query, configuration, rate, ramp_s=8, observe_s=15):
    run = bed.start(query, configuration, rate)
    try:
        bed.wait(run, ramp_s)
        return bed.observe(run, observe_s)
    finally:
        bed.stop(run)


def test_100_percent_of_the_mst_holds_and_130_percent_does_not(capped, capped_estimate):
    mst, configuration = capped_estimate.mst, capped_estimate.configuration
    capped.prepare(capped_estimate.budget)
    at_100 = _run_at(capped, "q1_capped", configuration, mst)
    at_130 = _run_at(capped, "q1_capped", configuration, 1.3 * mst)
    print(f"\n[sustain] 100%: {at_100.achieved_rate / at_100.target_rate:.3f} of {at_100.target_rate:,.0f}, "
          f"pending slope {at_100.pending_slope:,.0f}/s; 130%: {at_130.achieved_rate / at_130.target_rate:.3f}, "
          f"pending slope {at_130.pending_slope:,.0f}/s")
    assert at_100.achieved_rate >= 0.99 * at_100.target_rate
    assert at_100.pending_end < 2 * mst, "pending records must stay bounded (under 2 s of input)"
    assert at_130.achieved_rate < 0.99 * at_130.target_rate
    # what the source could not emit piles up as pending records, at about target - achieved per second
    assert at_130.pending_slope > 0.5 * (at_130.target_rate - at_130.achieved_rate) > 0


def test_a_rate_change_takes_effect_within_seconds_without_a_restart(capped, capped_estimate):
    bed, configuration = capped, capped_estimate.configuration
    # Up to 80 % of a capacity that holds still (q1's own moves by 20 % between windows here).
    low, high = 0.1 * CAPPED_MST, 0.8 * CAPPED_MST
    bed.prepare(capped_estimate.budget)
    run = bed.start("q1_capped", configuration, low)
    try:
        bed.wait(run, 5)
        before = bed.observe(run, 4)
        started = requests.get(f"{bed.settings.rest_url}/jobs/{run.id}", timeout=5).json()["start-time"]
        bed.set_rate(run, high)
        bed.wait(run, 2)
        after = bed.observe(run, 6)
        job = requests.get(f"{bed.settings.rest_url}/jobs/{run.id}", timeout=5).json()
    finally:
        bed.stop(run)
    print(f"\n[rate] {before.achieved_rate:,.0f} -> {after.achieved_rate:,.0f} events/s (pending "
          f"{before.pending_start:,.0f}..{before.pending_end:,.0f} -> {after.pending_start:,.0f}..{after.pending_end:,.0f})")
    assert before.achieved_rate == pytest.approx(low, rel=0.02)
    assert after.achieved_rate == pytest.approx(high, rel=0.02)
    assert (job["jid"], job["start-time"], job["state"]) == (run.id, started, "RUNNING")


def test_the_reporters_leave_out_the_sources_split_watermarks(capped, capped_estimate):
    """The source's 1,021 splits carry five watermark gauges each: 4.8 MB per scrape of its
    TaskManager, which a TaskManager on a small CPU share could not answer within the scrape interval
    (docs/flink-testbed.md). The flink role's flink_metrics_excludes leaves them out."""
    bed = capped
    bed.prepare(capped_estimate.budget)
    run = bed.start("q1_capped", capped_estimate.configuration, 0.1 * CAPPED_MST)
    try:
        bed.wait(run, 5)
        pages = []
        for port in range(PORTS["flink_metrics_port_min"], PORTS["flink_metrics_port_max"] + 1):
            if port_open(port):
                pages.append(requests.get(f"http://localhost:{port}/metrics", timeout=10).text)
    finally:
        bed.stop(run)
    text = "\n".join(pages)
    assert "flink_taskmanager_job_task_operator_numRecordsOut" in text, "the job's metrics are scraped"
    assert "split_watermark" not in text
    print(f"\n[reporters] {len(pages)} reporters, largest page {max(len(p) for p in pages):,} bytes")


def _kill_taskmanager(state_dir: Path) -> int:
    pid = int((state_dir / "run" / "flink-streambed-taskexecutor.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    return pid


# The typed errors FlinkTestbed.observe raises for a TaskManager killed during a window: TaskManagerLost
# when GET /overview already counts fewer slots; before Flink notices the lost heartbeats (tens of
# seconds: heartbeat.interval 10 s, 2 failures), JobRestarted (numRestarts grew, the job left
# RUNNING) or MetricsMissing (the killed TaskManager's task series stopped inside the window).
KILL_ERRORS = {"TaskManagerLost", "JobRestarted", "MetricsMissing"}


def test_a_job_a_killed_campaign_left_running_is_cancelled_when_its_slots_are_needed(bed):
    """A controller killed mid-campaign leaves its job on the cluster; the next campaign's testbed
    (another process: another testbed object) cancels it when it needs the slots, and goes on."""
    query = bed.query("q1")
    budget = Budget(len(query.operators), MEMORY_MB)
    bed.prepare(budget)
    left = bed.start("q1", Configuration.single_task(query), 1000.0)
    bed._runs.pop(left.id)  # its controller is gone: nobody stops it
    fresh = type(bed)(bed.settings, deploy=bed.deploy, log=bed.log)
    fresh._budget = budget  # deployed already: the role would change nothing
    fresh.prepare(budget)
    assert fresh._rest("get", f"/jobs/{left.id}").json()["state"] == "CANCELED"


def test_a_lost_taskmanager_is_detected_and_its_window_discarded(bed, tmp_path):
    """The TaskManager is killed in the middle of the first observation window: the estimator must
    discard that window, get the TaskManager back through Ansible, and finish on a fresh job."""
    ledger = Ledger.open(tmp_path, "estimate", {}, resume=False)
    est = CapacityEstimator(bed, ledger, dataclasses.replace(TIMING, max_iterations=2),
                            log=lambda m: print(f"[kill] {m}"))
    killed: list[int] = []
    observe = bed.observe

    def observe_and_kill(run, seconds):
        if not killed and seconds == TIMING.observe_s:
            timer = threading.Timer(seconds / 3, lambda: killed.append(_kill_taskmanager(bed.state_dir)))
            timer.start()
        return observe(run, seconds)

    query = bed.query("q1")
    bed.observe = observe_and_kill
    try:
        estimate = est.estimate("q1", Budget(len(query.operators), MEMORY_MB), Configuration.single_task(query),
                                "q1/kill")
    finally:
        del bed.observe
    discarded = ledger.events("window-discarded")
    errors = [(d["data"]["error"], d["data"]["reason"]) for d in discarded]
    print(f"\n[kill] killed TaskManager {killed}; discarded: {errors}")
    assert len(killed) == 1
    assert estimate.discarded == len(discarded) >= 1
    assert discarded[0]["data"]["key"] == "q1/kill/w0"
    # The window failed because of the kill, not for an unrelated reason (a failed start, a timeout):
    # one of the typed errors FlinkTestbed.observe raises for a lost TaskManager.
    assert errors[0][0] in KILL_ERRORS, errors[0]
    # The estimate finishes on a fresh job: both windows after the kill were measured on a job that
    # processes events. Whether the second one is sustained is the capacity of a restarted JVM on a
    # shared machine, not what this test is about (once 521,680 events/s, half the warm-up rate, failed).
    assert len(estimate.windows) == 2, "the estimate finishes on a fresh job"
    assert all(w.measurement.achieved_rate > 0 for w in estimate.windows), [w.to_dict() for w in estimate.windows]
    assert len(ledger.events("run-started")) >= 2


def test_sql_that_flink_rejects_shows_flinks_error(bed, tmp_path):
    queries = tmp_path / "queries"
    queries.mkdir()
    (queries / "broken.sql").write_text(
        "-- streambed-operators: Calc#1 Sink#2\n-- streambed-edges: source>Calc#1 Calc#1>Sink#2\n"
        "CREATE TABLE out_sink (auction BIGINT, x BIGINT) WITH ('connector' = 'blackhole');\n"
        "INSERT INTO out_sink SELECT auction, no_such_column FROM bid;\n")
    broken = type(bed)(dataclasses.replace(bed.settings, queries_dir=queries))
    with pytest.raises(QueryRejected, match=r"query broken: Flink rejected the SQL: .*no_such_column"):
        broken.query("broken")


class TestFlinkConformance(TestbedConformance):
    """The conformance suite every testbed passes (tests/conformance.py), on this module's deployment.

    It runs q1_capped, whose capacity holds still on 2 cores (54,348 events/s at the source): 10,000
    events/s is under a quarter of it, 10 times it is far above. Windows of 6 s, 5 s of warm-up."""

    __test__ = True

    @pytest.fixture
    def conformance_case(self, capped):
        return ConformanceCase(capped, "q1_capped", MEMORY_MB, low_rate=10_000, high_rate=10 * CAPPED_MST,
                               window_s=6.0, warmup_s=5.0)

"""Disturbed windows: the CPU groups' and the host's readings (testbed/pressure.py), the repeat of a
disturbed window, and the reading kept in the measurement (model/measurement.py)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from streambed.errors import MachineTooBusy, TestbedUnreachable
from streambed.model.measurement import CpuContention, Measurement
from streambed.testbed.pressure import (CpuReader, CpuStat, DisturbanceSettings, GroupReading, HostReading,
                                        contention, disturbed, group_contention, parse_cpu_stat, parse_pressure,
                                        parse_schedstat, quota_cores, undisturbed)

PRESSURE = """some avg10=8.77 avg60=17.16 avg300=12.35 total=5206661742
full avg10=0.00 avg60=0.00 avg300=0.00 total=0
"""
V1_STAT = "nr_periods 501\nnr_throttled 497\nthrottled_time 3590000000\nnr_bursts 0\nburst_time 0\n"
V2_STAT = ("usage_usec 812000\nuser_usec 700000\nsystem_usec 112000\nnr_periods 400\nnr_throttled 40\n"
           "throttled_usec 250000\nnr_bursts 0\nburst_usec 0\n")


# -- parsing ----------------------------------------------------------------------------------------

def test_pressure_reads_the_some_lines_total_in_seconds():
    assert parse_pressure(PRESSURE) == pytest.approx(5206.661742)


def test_a_pressure_file_without_a_some_line_is_refused():
    with pytest.raises(ValueError):
        parse_pressure("full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")


def test_cpu_stat_of_both_cgroup_versions_in_seconds():
    assert parse_cpu_stat(V1_STAT) == CpuStat(501, 497, 3.59, None)
    assert parse_cpu_stat(V2_STAT) == CpuStat(400, 40, 0.25, 0.812)
    with pytest.raises(ValueError):
        parse_cpu_stat("nr_periods 1\n")


def test_schedstat_is_run_and_wait_in_seconds():
    assert parse_schedstat("1500000000 250000000 42\n") == (1.5, 0.25)


@pytest.mark.parametrize("quota, period, cores", [
    ("1200\n", "10000\n", 0.12), ("-1\n", "100000\n", None), ("25000 100000\n", None, 0.25), ("max 100000\n", None, None)])
def test_quota_in_cores_for_both_versions(quota, period, cores):
    assert quota_cores(quota, period) == (pytest.approx(cores) if cores else None)


# -- two readings -> contention ---------------------------------------------------------------------

def _group(name, periods, throttled_periods, throttled_s, threads, quota=0.12, usage=None):
    return GroupReading(name, CpuStat(periods, throttled_periods, throttled_s, usage), quota, threads)


def test_a_group_held_to_its_quota_has_no_shortfall_however_long_it_waited():
    # one busy thread, 10 s: ran 1.2 s (its whole 0.12 core), waited 8.8 s, 8.4 of them throttled
    a = _group("tm-1", 0, 0, 0.0, {7: (0.0, 0.0)})
    b = _group("tm-1", 1000, 990, 8.4, {7: (1.2, 8.8)})
    g = group_contention(a, b, 10.0)
    assert g.usage == pytest.approx(0.12)
    assert g.throttled == pytest.approx(0.99)
    assert g.waited == pytest.approx(0.04)
    assert g.shortfall == pytest.approx(0.0)  # no room left under its quota


def test_a_starved_group_falls_short_by_what_its_quota_left_unused():
    # the same thread beside a busy neighbour: ran 0.2 s in 10, waited 9.8 s, throttled only 0.5 s
    a = _group("tm-1", 0, 0, 0.0, {7: (0.0, 0.0)})
    b = _group("tm-1", 500, 100, 0.5, {7: (0.2, 9.8)})
    g = group_contention(a, b, 10.0)
    assert g.usage == pytest.approx(0.02)
    assert g.waited == pytest.approx(0.93)
    assert g.shortfall == pytest.approx(0.10)  # bounded by 0.12 - 0.02


def test_many_threads_that_each_waited_a_little_are_not_a_shortfall():
    # an idle TaskManager on a loaded host: 40 housekeeping threads, each waited 0.02 s/s for its wake-ups
    a = _group("tm-1", 0, 0, 0.0, {t: (0.0, 0.0) for t in range(40)})
    b = _group("tm-1", 100, 10, 0.05, {t: (0.003, 0.2) for t in range(40)} | {99: (5.0, 5.0)})  # 99 started late
    g = group_contention(a, b, 10.0, min_wait=0.05)
    assert g.usage == pytest.approx(0.012)  # 40 x 0.003 s over 10 s
    assert g.waited == pytest.approx(0.015)  # the most delayed thread, beyond the 0.05 s throttled
    assert g.shortfall == 0.0  # below min_wait: not held back
    assert group_contention(a, b, 10.0, min_wait=0.0).shortfall == pytest.approx(0.015)


def test_the_most_delayed_thread_not_the_sum_is_the_groups_wait():
    a = _group("tm-1", 0, 0, 0.0, {1: (0.0, 0.0), 2: (0.0, 0.0), 3: (0.0, 0.0)})
    b = _group("tm-1", 500, 50, 0.5, {1: (0.3, 6.5), 2: (0.1, 1.0), 3: (0.1, 1.0)})
    g = group_contention(a, b, 10.0, min_wait=0.05)
    assert g.waited == pytest.approx(0.6)  # thread 1: 6.5 - 0.5 throttled
    assert g.usage == pytest.approx(0.05)
    assert g.shortfall == pytest.approx(0.07)  # bounded by what the 0.12-core quota left unused


def test_a_thread_whose_counters_moved_more_than_the_window_allows_is_left_out():
    a = _group("tm-1", 0, 0, 0.0, {1: (0.0, 0.0), 2: (3.0, 1.0)})
    b = _group("tm-1", 100, 0, 0.0, {1: (0.05, 0.2), 2: (3.1, 10.8)})  # 2: 9.8 s of wait in a 6-s window
    g = group_contention(a, b, 6.0, min_wait=0.0)
    assert g.waited == pytest.approx(0.2 / 6)
    assert g.usage == pytest.approx(0.05 / 6)


def test_v2_usage_comes_from_cpu_stat_not_from_the_threads():
    a = _group("tm-1", 0, 0, 0.0, {7: (0.0, 0.0)}, usage=10.0)
    b = _group("tm-1", 100, 0, 0.0, {}, usage=10.5)  # every thread replaced: the counter still knows
    assert group_contention(a, b, 5.0).usage == pytest.approx(0.1)


def test_contention_sums_the_groups_read_at_both_ends_and_reads_the_hosts_pressure():
    busy = ({7: (0.0, 0.0)}, {7: (0.2, 9.8)})
    a = HostReading(100.0, (_group("tm-1", 0, 0, 0.0, busy[0]), _group("tm-2", 0, 0, 0.0, busy[0])), 50.0)
    b = HostReading(110.0, (_group("tm-1", 500, 100, 0.5, busy[1]), _group("tm-3", 0, 0, 0.0, {})), 58.0)
    c = contention(a, b)
    assert (c.groups, c.seconds) == (1, 10.0)  # tm-2 gone, tm-3 new: only tm-1 counts
    assert c.quota == pytest.approx(0.12)
    assert c.shortfall_share == pytest.approx(0.10 / 0.12)
    assert c.pressure == pytest.approx(0.8)
    assert c.throttled == pytest.approx(0.2)


def test_the_disturbed_decision_follows_the_shortfall_share():
    s = DisturbanceSettings(max_shortfall=0.10)
    assert disturbed(CpuContention(10, shortfall=0.13, quota=1.32, groups=11), s) is None
    why = disturbed(CpuContention(10, shortfall=0.14, quota=1.32, groups=11, pressure=0.97), s)
    assert why == "the TaskManagers waited for 0.14 of their 1.32 cores (11%, host CPU pressure 97%)"
    # no groups (TaskManagers unconfined) or no reading: nothing to decide on, whatever the pressure
    assert disturbed(CpuContention(10, 0.0, 0.0, 0, pressure=1.0), s) is None
    assert disturbed(None, s) is None


# -- discard and repeat -----------------------------------------------------------------------------

def _window(start: float, shortfall: float | None) -> Measurement:
    cpu = None if shortfall is None else CpuContention(6.0, shortfall, 1.32, 11, 0.9)
    return Measurement(target_rate=5000, achieved_rate=5000 * (1 - shortfall if shortfall else 1), pending_start=0,
                       pending_end=0, pending_slope=0, achieved_cv=0, start=start, end=start + 6, cpu=cpu)


def test_a_disturbed_window_is_observed_again_and_kept_in_the_measurement():
    windows = iter([_window(0, 0.8), _window(7, 0.5), _window(14, 0.01)])
    said = []
    m = undisturbed(lambda: next(windows), DisturbanceSettings(repeats=2), said.append)
    assert m.start == 14 and m.cpu.shortfall == 0.01
    assert [d.start for d in m.discarded] == [0, 7]
    assert len(said) == 2 and "0.80 of their 1.32 cores" in said[0]
    # the ledger keeps them, and reads them back
    back = Measurement.from_dict(m.to_dict())
    assert back == m and back.discarded[0].cpu.shortfall == 0.8


def test_a_window_that_stays_disturbed_stops_with_one_line_saying_the_machine_is_too_busy():
    calls = []

    def observe():
        calls.append(1)
        return _window(len(calls), 0.6)

    with pytest.raises(MachineTooBusy) as e:
        undisturbed(observe, DisturbanceSettings(repeats=2))
    assert len(calls) == 3
    assert str(e.value).startswith("the machine is too busy to measure: 3 windows in a row")
    assert "\n" not in str(e.value)
    # the estimator ends an estimate at once on it, as on an unreachable engine (no futile retries)
    assert isinstance(e.value, TestbedUnreachable)


def test_an_undisturbed_or_unread_window_is_returned_as_observed():
    for w in (_window(0, 0.05), _window(0, None)):
        assert undisturbed(lambda: w, DisturbanceSettings()) is w


def test_a_window_without_a_cpu_reading_is_recorded_as_before():
    d = _window(0, None).to_dict()
    assert "cpu" not in d and "discarded" not in d
    assert Measurement.from_dict(d) == _window(0, None)


def test_joined_windows_keep_the_worse_reading_and_every_discarded_window():
    a = undisturbed(iter([_window(0, 0.5), _window(7, 0.02)]).__next__, DisturbanceSettings())
    joined = a.then(_window(13, 0.09))
    assert joined.cpu.shortfall == 0.09 and len(joined.discarded) == 1


def test_the_flink_testbed_repeats_a_disturbed_window(tmp_path):
    from streambed.testbed.flink import FlinkSettings, FlinkTestbed

    settings = FlinkSettings(rest_url="http://127.0.0.1:1", prometheus_url="http://127.0.0.1:1", flink_home=tmp_path,
                             jar=tmp_path / "j.jar", queries_dir=tmp_path, state_dir=tmp_path,
                             disturbance=DisturbanceSettings(repeats=1))
    logged = []
    tb = FlinkTestbed(settings, log=logged.append)
    windows = iter([_window(0, 0.4), _window(7, 0.0)])
    tb._observe_window = lambda run, seconds: next(windows)  # the Flink part of a window, read elsewhere
    m = tb.observe(SimpleNamespace(id="job-1"), 6.0)
    assert len(m.discarded) == 1 and "short of CPU" in logged[0]
    # the reader looks where the role lists the groups: nothing listed, nothing read
    assert tb.cpu.groups_file == tmp_path / "cpu-groups" and tb.cpu.read() is None


# -- the reader on fake and real cgroup trees -------------------------------------------------------

def test_the_reader_reads_a_v1_tree_and_the_threads_schedstat(tmp_path):
    proc, group = tmp_path / "proc", tmp_path / "cpu" / "sb" / "tm-1"
    group.mkdir(parents=True)
    (group / "cpu.stat").write_text(V1_STAT)
    (group / "cpu.cfs_quota_us").write_text("1200\n")
    (group / "cpu.cfs_period_us").write_text("10000\n")
    (group / "tasks").write_text("11\n12\n13\n")  # 13 ended before it was read
    for tid, stat in ((11, "2000000000 100000000 5"), (12, "1000000000 0 3")):
        (proc / str(tid)).mkdir(parents=True)
        (proc / str(tid) / "schedstat").write_text(stat)
    (proc / "pressure").mkdir()
    (proc / "pressure" / "cpu").write_text(PRESSURE)
    listing = tmp_path / "cpu-groups"
    listing.write_text(f"{group}\n{tmp_path / 'gone'}\n")
    r = CpuReader(listing, proc, clock=lambda: 42.0).read()
    assert r.at == 42.0 and r.pressure_s == pytest.approx(5206.661742)
    assert len(r.groups) == 1  # a listed group that is gone is left out
    g = r.groups[0]
    assert g.quota == pytest.approx(0.12) and g.threads == {11: (2.0, 0.1), 12: (1.0, 0.0)}


CPU_V1 = Path("/sys/fs/cgroup/cpu")


@pytest.mark.skipif(not (CPU_V1 / "cpu.cfs_quota_us").exists() or os.geteuid() != 0,
                    reason="needs root and the cgroup v1 cpu controller at /sys/fs/cgroup/cpu")
def test_a_busy_process_held_to_its_quota_on_this_machine_reads_as_throttled_not_starved(tmp_path):
    """On this machine's real cgroup files: a busy loop in a 0.2-core group with the role's weights.
    Whatever else runs here, the group used about its quota and was throttled in most periods, so
    it is not short of CPU (a starved group would be throttled in few periods and use less)."""
    parent = CPU_V1 / f"streambed-test-pressure-{os.getpid()}"
    group = parent / "tm-1"
    group.mkdir(parents=True)
    busy = None
    try:
        (parent / "cpu.shares").write_text("102400")
        (group / "cpu.cfs_period_us").write_text("10000")
        (group / "cpu.cfs_quota_us").write_text("2000")
        (group / "cpu.shares").write_text("8192")
        busy = subprocess.Popen(["sh", "-c", f"echo $$ > {group}/cgroup.procs; exec sh -c 'while :; do :; done'"])
        listing = tmp_path / "cpu-groups"
        listing.write_text(f"{group}\n")
        reader = CpuReader(listing)
        time.sleep(0.5)
        a = reader.read()
        time.sleep(3.0)
        c = contention(a, reader.read())
        print(f"\n[cgroup] shortfall {c.shortfall:.3f} of {c.quota:.2f} cores, throttled {c.throttled:.2f}, "
              f"host pressure {c.pressure}")
        assert c.groups == 1 and c.quota == pytest.approx(0.2)
        assert c.throttled > 0.5
        assert c.shortfall_share < 0.5
        assert c.pressure is None or 0.0 <= c.pressure <= 1.0
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
        time.sleep(0.2)
        group.rmdir()
        parent.rmdir()


# -- the floor: the role's cpu-share weigh ---------------------------------------------------------

SCRIPT = Path(__file__).resolve().parents[1] / "ansible" / "roles" / "flink" / "files" / "cpu-share"


def _cpu_share(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_weigh_creates_the_parent_and_gives_it_the_kernels_largest_claim_at_most(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    p = _cpu_share("weigh", str(tmp_path), "sb", "262144")
    assert p.returncode == 0, p.stderr
    assert "changed" in p.stdout
    assert (tmp_path / "cpu" / "sb" / "cpu.shares").read_text().split() == ["262144"]
    assert "changed" not in _cpu_share("weigh", str(tmp_path), "sb", "262144").stdout  # idempotent
    _cpu_share("weigh", str(tmp_path), "sb", "999999")
    assert (tmp_path / "cpu" / "sb" / "cpu.shares").read_text().split() == ["262144"]


def test_weigh_on_cgroup_v2_writes_cpu_weight_within_its_range(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    assert _cpu_share("weigh", str(tmp_path), "sb", "262144").returncode == 0
    assert (tmp_path / "sb" / "cpu.weight").read_text().split() == ["10000"]
    assert "+cpu" in (tmp_path / "cgroup.subtree_control").read_text()
    assert _cpu_share("weigh", str(tmp_path), "sb/jobmanager", "8192").returncode == 0
    assert (tmp_path / "sb" / "jobmanager" / "cpu.weight").read_text().split() == ["800"]

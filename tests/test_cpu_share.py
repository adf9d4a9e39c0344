"""The flink role's cpu-share script: a cgroup with a CPU quota per TaskManager (issue 12).

What it writes is checked on fake cgroup trees of both layouts (v1: a cpu controller directory with
cpu.cfs_quota_us; v2: one root with cgroup.controllers); that the quota binds is checked on this
machine's own cgroup file system where it can be written (as root), else skipped."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import REPO

SCRIPT = REPO / "ansible" / "roles" / "flink" / "files" / "cpu-share"
CGROUP = Path("/sys/fs/cgroup")


def cpu_share(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_probe_says_which_layout_or_why_none(tmp_path):
    assert cpu_share("probe", str(tmp_path)).stdout.strip() == f"none: no cgroup cpu controller under {tmp_path}"
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cpu_share("probe", str(tmp_path)).stdout.strip() == f"v1 {tmp_path}/cpu"


def test_v1_layout_gets_a_quota_a_weight_and_the_process(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    p = cpu_share("run", str(tmp_path), "sb/tm-1", "sh", "-c", "echo $$")
    assert p.returncode == 0, p.stderr
    group = tmp_path / "cpu" / "sb" / "tm-1"
    # the command ran as the process that joined the group (exec, not a child), with no quota yet
    assert (group / "cgroup.procs").read_text().split() == [p.stdout.strip()]
    assert not (group / "cpu.cfs_quota_us").exists()
    limit = cpu_share("limit", str(tmp_path), "sb/tm-1", "0.25", "8192")
    assert limit.returncode == 0, limit.stderr
    assert (group / "cpu.cfs_quota_us").read_text().split() == ["2500"]
    assert (group / "cpu.cfs_period_us").read_text().split() == ["10000"]
    assert (group / "cpu.shares").read_text().split() == ["8192"]
    assert cpu_share("unlimit", str(tmp_path), "sb").returncode == 0
    assert (group / "cpu.cfs_quota_us").read_text().split() == ["-1"]


def test_v2_layout_enables_the_controller_down_the_path_and_writes_cpu_max(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    p = cpu_share("run", str(tmp_path), "sb/tm-2", "true")
    assert p.returncode == 0, p.stderr
    p = cpu_share("limit", str(tmp_path), "sb/tm-2", "1.5", "8192")
    assert p.returncode == 0, p.stderr
    assert "+cpu" in (tmp_path / "cgroup.subtree_control").read_text()
    assert "+cpu" in (tmp_path / "sb" / "cgroup.subtree_control").read_text()
    assert (tmp_path / "sb" / "tm-2" / "cpu.max").read_text().split() == ["15000", "10000"]
    assert (tmp_path / "sb" / "tm-2" / "cpu.weight").read_text().split() == ["800"]


def test_a_small_share_gets_a_longer_period_so_its_quota_stays_at_the_kernels_minimum(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cpu" / "sb" / "tm-1").mkdir(parents=True)
    assert cpu_share("limit", str(tmp_path), "sb/tm-1", "0.04", "1024").returncode == 0
    group = tmp_path / "cpu" / "sb" / "tm-1"
    assert (group / "cpu.cfs_period_us").read_text().split() == ["25000"]
    assert (group / "cpu.cfs_quota_us").read_text().split() == ["1000"]


def test_a_share_below_the_kernels_minimum_quota_is_refused(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cpu" / "sb" / "tm-1").mkdir(parents=True)
    p = cpu_share("limit", str(tmp_path), "sb/tm-1", "0.0005", "1024")
    assert p.returncode == 1 and "below the kernel's 1 ms quota" in p.stderr


# A process whose second thread is named as a JVM's C2 compiler thread (comm is cut to 15 bytes),
# busy for 3 s; it prints the thread's id, then its CPU seconds.
COMPILER = """import ctypes, threading, time
def compile():
    ctypes.CDLL(None).prctl(15, b"C2 CompilerThread0", 0, 0, 0)
    print(threading.get_native_id(), flush=True)
    t = time.time()
    while time.time() - t < 3: pass
    print(time.clock_gettime(time.CLOCK_THREAD_CPUTIME_ID), flush=True)
th = threading.Thread(target=compile); th.start(); th.join()
"""


def test_limit_moves_the_jit_compiler_threads_to_the_parent_group(tmp_path):
    """On a fake v1 tree: the threads of the group named as the JVM's compiler threads are written
    to the parent's tasks (outside the quota), the others stay; a second limit changes nothing."""
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    group = tmp_path / "cpu" / "sb" / "tm-1"
    group.mkdir(parents=True)
    p = subprocess.Popen([sys.executable, "-c", COMPILER], stdout=subprocess.PIPE, text=True)
    try:
        compiler = p.stdout.readline().strip()
        (group / "tasks").write_text(f"{p.pid}\n{compiler}\n")
        limit = cpu_share("limit", str(tmp_path), "sb/tm-1", "0.25", "1024")
        assert limit.returncode == 0, limit.stderr
        assert f"changed: compiler thread {compiler} out of the quota" in limit.stdout
        assert (tmp_path / "cpu" / "sb" / "tasks").read_text().split() == [compiler]
    finally:
        p.wait(timeout=30)
    (group / "tasks").write_text(f"{p.pid}\n")  # as the kernel would show it after the move
    assert cpu_share("limit", str(tmp_path), "sb/tm-1", "0.25", "1024").stdout == ""


BUSY = "import os, time\nt = time.time()\nwhile time.time() - t < 3: pass\nc = os.times()\nprint(c.user + c.system)"


def test_the_quota_holds_a_busy_process_to_its_share():
    """Bounded by what the quota controls: however busy the machine, a process in a 0.25-core group
    gets at most about 0.25 s of CPU per second (plus the first period's and the kernel's slack)."""
    if not cpu_share("probe", str(CGROUP)).stdout.startswith(("v1 ", "v2 ")):
        pytest.skip("no writable cgroup cpu controller here (not root?)")
    group = f"streambed-test-{uuid.uuid4().hex[:8]}"
    try:
        assert cpu_share("run", str(CGROUP), f"{group}/busy", "true").returncode == 0
        limit = cpu_share("limit", str(CGROUP), f"{group}/busy", "0.25", "1024")
        assert limit.returncode == 0, limit.stderr
        p = cpu_share("run", str(CGROUP), f"{group}/busy", sys.executable, "-c", BUSY)
        assert p.returncode == 0, p.stderr
        assert float(p.stdout) <= 0.25 * 3 + 0.2, p.stdout
    finally:
        removed = cpu_share("remove", str(CGROUP), group)
    assert removed.returncode == 0, removed.stderr
    assert not any(CGROUP.glob(f"*/{group}")), "remove leaves no group behind"


def test_a_compiler_thread_runs_outside_its_groups_quota():
    """On this machine's cgroups: the process joins a 0.1-core group; limit moves its compiler-named
    thread to the parent, so that thread gets well over 0.1 s of CPU per second while the quota
    holds the rest of the group."""
    if not cpu_share("probe", str(CGROUP)).stdout.startswith("v1 "):
        pytest.skip("no writable cgroup v1 cpu controller here (threads move one by one only in v1)")
    group = f"streambed-test-{uuid.uuid4().hex[:8]}"
    try:
        assert cpu_share("run", str(CGROUP), f"{group}/tm", "true").returncode == 0
        p = subprocess.Popen([str(SCRIPT), "run", str(CGROUP), f"{group}/tm", sys.executable, "-c", COMPILER],
                             stdout=subprocess.PIPE, text=True)
        try:
            compiler = p.stdout.readline().strip()
            limit = cpu_share("limit", str(CGROUP), f"{group}/tm", "0.1", "1024")
            assert limit.returncode == 0, limit.stderr
            assert f"compiler thread {compiler}" in limit.stdout
            # /proc/<pid>/task/<tid>/cgroup: "<id>:<controllers>:<path>", the cpu controller's path
            cpu_path = next(line.split(":", 2)[2] for line in
                            Path(f"/proc/{p.pid}/task/{compiler}/cgroup").read_text().splitlines()
                            if "cpu" in line.split(":", 2)[1].split(","))
            assert cpu_path == f"/{group}", cpu_path
            seconds = float(p.stdout.readline())
        finally:
            p.wait(timeout=30)
        # 3 s busy: held to 0.1 core it would get ~0.3 s; free, about a core (or half on a busy machine)
        assert seconds > 0.1 * 3 + 0.5, seconds
    finally:
        removed = cpu_share("remove", str(CGROUP), group)
    assert removed.returncode == 0, removed.stderr

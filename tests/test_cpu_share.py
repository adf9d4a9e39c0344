"""The flink role's cpu-share script: a cgroup with a CPU quota per TaskManager (issue 12).

What it writes is checked on fake cgroup trees of both layouts (v1: a cpu controller directory with
cpu.cfs_quota_us; v2: one root with cgroup.controllers); that the quota binds is checked on this
machine's own cgroup file system where it can be written (as root, PLATFORM.md), else skipped."""

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

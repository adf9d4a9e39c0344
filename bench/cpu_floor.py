"""What CPU eleven quota-held groups get beside other load, for a given weight of their parent.

Builds the local testbed's cgroup layout by hand (cgroup v1 cpu controller, as root): a parent with
``--parent-shares``, ``--groups`` children each held to ``--cores`` with a 10-ms period and
cpu.shares 8192, a busy loop in each, and ``--beside`` busy loops at ``--nice`` outside. Prints
what the groups got over ``--seconds`` and the shortfall testbed/pressure.py reads from them.

    .venv/bin/python bench/cpu_floor.py --parent-shares 1024 --beside 1 --nice 0

docs/flink-testbed.md, "Measurements that know they were disturbed", has the numbers.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from streambed.testbed.pressure import CpuReader, DisturbanceSettings, contention

PERIOD_US = 10000
BUSY = "while :; do :; done"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=Path("/sys/fs/cgroup/cpu"), help="the cgroup v1 cpu hierarchy")
    p.add_argument("--parent-shares", type=int, default=262144)
    p.add_argument("--groups", type=int, default=11)
    p.add_argument("--cores", type=float, default=0.12)
    p.add_argument("--beside", type=int, default=0, help="busy loops outside the groups")
    p.add_argument("--nice", type=int, default=0, help="their nice level")
    p.add_argument("--seconds", type=float, default=6.0)
    a = p.parse_args()
    if not (a.root / "cpu.cfs_quota_us").exists():
        print(f"cpu_floor: --root {a.root}: no cgroup v1 cpu controller there", file=sys.stderr)
        return 2
    parent = a.root / f"streambed-bench-floor-{os.getpid()}"
    groups = [parent / f"tm-{i + 1}" for i in range(a.groups)]
    procs: list[subprocess.Popen] = []
    try:
        parent.mkdir()
        (parent / "cpu.shares").write_text(str(a.parent_shares))
        for g in groups:
            g.mkdir()
            (g / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (g / "cpu.cfs_quota_us").write_text(str(int(a.cores * PERIOD_US)))
            (g / "cpu.shares").write_text("8192")
            procs.append(subprocess.Popen(["sh", "-c", f"echo $$ > {g}/cgroup.procs; exec sh -c '{BUSY}'"]))
        procs += [subprocess.Popen(["nice", "-n", str(a.nice), "sh", "-c", BUSY]) for _ in range(a.beside)]
        with tempfile.NamedTemporaryFile("w", suffix=".cpu-groups") as listing:
            listing.write("".join(f"{g}\n" for g in groups))
            listing.flush()
            reader = CpuReader(Path(listing.name))
            time.sleep(1.0)
            before = reader.read()
            time.sleep(a.seconds)
            after = reader.read()
        c = contention(before, after, DisturbanceSettings().min_wait)
        used = {g.group: sum(r for r, _ in g.threads.values()) for g in after.groups}
        start = {g.group: sum(r for r, _ in g.threads.values()) for g in before.groups}
        per = [(used[k] - start[k]) / c.seconds for k in used]
        print(f"parent cpu.shares {a.parent_shares}, {a.beside} busy loop(s) at nice {a.nice} beside, "
              f"load {os.getloadavg()[0]:.1f}: groups got {sum(per):.2f} of {c.quota:.2f} cores "
              f"(least {min(per):.3f}), throttled in {c.throttled:.0%} of their periods, shortfall "
              f"{c.shortfall:.2f} cores ({c.shortfall_share:.0%}), host CPU pressure {c.pressure}")
        return 0
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        time.sleep(0.2)
        for g in groups:
            if g.exists():
                g.rmdir()
        if parent.exists():
            parent.rmdir()


if __name__ == "__main__":
    sys.exit(main())

"""Was the host short of CPU during a window? The testbed's CPU groups and the host's CPU pressure.

On the local testbed every TaskManager runs in a cgroup of its own held to a CPU quota (the flink
role's ``cpu-share``). A quota is a ceiling: on a shared host a group can also get less than it, and
then a window measures the host's load instead of the job. This module reads, at both ends of a
window, each group's ``cpu.stat`` (periods, throttled periods and time; v2 also its usage), the
scheduler statistics of its threads (``/proc/<tid>/schedstat``: time run and time waited for a
CPU) and the host's ``/proc/pressure/cpu``, and turns two readings into a
:class:`~streambed.model.measurement.CpuContention`:

* a group's *shortfall* is the time its most delayed thread waited for a CPU beyond the time the
  group was throttled (a throttled group waits for its next period, not for the host), bounded by
  what its quota left unused: a group that used its whole quota got its share, however long its
  threads waited;
* the window is *disturbed* when the groups' shortfall exceeds a share of their quota.

Parsing and arithmetic are pure functions; :class:`CpuReader` is the only part that reads files.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..errors import MachineTooBusy
from ..model.measurement import CpuContention, Measurement


@dataclass(frozen=True)
class DisturbanceSettings:
    """When a window counts as disturbed, how often the testbed observes again, and where it reads."""

    max_shortfall: float = 0.10
    """A window is disturbed when its groups waited for more than this share of their quota: 0.10 of
    11 slots of 0.12 core is 0.13 core, far above what an idle host left them (0.00-0.02, measured in
    docs/flink-testbed.md) and far below what a busy neighbour took from them (0.8 of their quota)."""
    min_wait: float = 0.05
    """A group whose most delayed thread waited less than this share of the window beyond its throttled
    time counts as not held back: on a host with a load of 30, an idle TaskManager's threads each
    waited up to 0.04 of the window for their wake-ups, which takes nothing from the job."""
    repeats: int = 2
    """Disturbed windows observed again in their place before the testbed gives up (MachineTooBusy)."""
    groups_file: str = "cpu-groups"
    """The file, relative to the testbed's state directory, in which the flink role lists the
    TaskManagers' cgroup directories (absent: the TaskManagers run unconfined, nothing is read)."""
    proc: Path = Path("/proc")
    """Where the kernel's process and pressure files are."""


# -- parsing (pure) ---------------------------------------------------------------------------------

def parse_pressure(text: str) -> float:
    """Seconds some task waited for a CPU since boot: the "some" line's total (microseconds) of
    ``/proc/pressure/cpu``."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "some":
            fields = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
            return int(fields["total"]) / 1e6
    raise ValueError("no 'some' line in the CPU pressure file")


@dataclass(frozen=True)
class CpuStat:
    """A group's ``cpu.stat``, in one unit whatever the cgroup version."""

    periods: int
    throttled_periods: int
    throttled_s: float
    usage_s: float | None = None
    """CPU time used by the group (v2 usage_usec); None on v1, whose cpu controller does not count it."""


def parse_cpu_stat(text: str) -> CpuStat:
    """cgroup v1 (nr_periods, nr_throttled, throttled_time in ns) or v2 (..., throttled_usec,
    usage_usec) ``cpu.stat``."""
    f = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            f[parts[0]] = int(parts[1])
    if "throttled_usec" in f:
        throttled = f["throttled_usec"] / 1e6
    elif "throttled_time" in f:
        throttled = f["throttled_time"] / 1e9
    else:
        raise ValueError("cpu.stat has neither throttled_time (v1) nor throttled_usec (v2)")
    usage = f["usage_usec"] / 1e6 if "usage_usec" in f else None
    return CpuStat(f.get("nr_periods", 0), f.get("nr_throttled", 0), throttled, usage)


def parse_schedstat(text: str) -> tuple[float, float]:
    """(seconds run, seconds waited on a run queue) of ``/proc/<tid>/schedstat``."""
    run, wait = text.split()[:2]
    return int(run) / 1e9, int(wait) / 1e9


def quota_cores(quota: str, period: str | None = None) -> float | None:
    """A group's CPU quota in cores: v1 ``cpu.cfs_quota_us`` with ``cpu.cfs_period_us``, or v2
    ``cpu.max`` ("QUOTA PERIOD") alone; None when unlimited."""
    parts = quota.split()
    if period is None:
        if len(parts) != 2:
            raise ValueError(f"cpu.max: expected 'QUOTA PERIOD', got {quota.strip()!r}")
        parts, period = parts[:1], parts[1]
    if parts[0] in ("max", "-1"):
        return None
    return int(parts[0]) / int(period)


# -- two readings -> contention (pure) ------------------------------------------------------------

SLACK = 1.05
"""A thread's run and wait over a window may exceed the window by this factor (the readings of one
group are not taken at one instant) before they are taken for a bad reading."""

@dataclass(frozen=True)
class GroupReading:
    """One cgroup at one instant."""

    group: str
    stat: CpuStat
    quota: float | None
    threads: Mapping[int, tuple[float, float]] = field(default_factory=dict)
    """Thread id -> (seconds run, seconds waited) of each thread in the group."""


@dataclass(frozen=True)
class HostReading:
    """The testbed's groups and the host's CPU pressure at one instant."""

    at: float
    """Monotonic clock, seconds."""
    groups: tuple[GroupReading, ...]
    pressure_s: float | None
    """Seconds some task of the host waited for a CPU since boot; None where not reported."""


@dataclass(frozen=True)
class GroupContention:
    group: str
    usage: float
    """Cores used over the window."""
    waited: float
    """Seconds per second its most delayed thread waited for a CPU beyond the group's throttled time."""
    throttled: float
    """Share of its CFS periods in which it used up its quota."""
    shortfall: float
    """Cores it waited for and did not get: ``waited``, at most the quota it left unused."""


def group_contention(a: GroupReading, b: GroupReading, seconds: float, min_wait: float = 0.0) -> GroupContention:
    """One group over a window of ``seconds`` between readings ``a`` and ``b``; a most delayed thread
    that waited less than ``min_wait`` of the window leaves no shortfall. Threads present in only
    one reading (started or ended inside the window), or whose counters moved more than the window
    allows, are left out."""
    if seconds <= 0:
        raise ValueError("a window must have a positive length")
    # A thread cannot run and wait longer than the window: one that seems to (its id reused by a new
    # thread, or counters that jumped: up to 1.6 s of wait per second were read here) is left out.
    common = [t for t in a.threads.keys() & b.threads.keys()
              if 0.0 <= b.threads[t][0] - a.threads[t][0] + b.threads[t][1] - a.threads[t][1] <= seconds * SLACK]
    throttled_s = max(0.0, b.stat.throttled_s - a.stat.throttled_s)
    ran = sum(max(0.0, b.threads[t][0] - a.threads[t][0]) for t in common)
    if a.stat.usage_s is not None and b.stat.usage_s is not None:
        ran = max(0.0, b.stat.usage_s - a.stat.usage_s)
    # Per thread, not summed: a JVM's many housekeeping threads each wait a little for every wake-up on
    # a loaded host (an idle 11-TaskManager cluster summed 0.76 core of such waits), which takes
    # nothing from the job; the thread that waited longest is the one the host held back.
    waited = max((max(0.0, (b.threads[t][1] - a.threads[t][1]) - throttled_s) for t in common), default=0.0)
    periods = b.stat.periods - a.stat.periods
    throttled = (b.stat.throttled_periods - a.stat.throttled_periods) / periods if periods > 0 else 0.0
    usage = ran / seconds
    unthrottled = waited / seconds
    room = max(0.0, b.quota - usage) if b.quota is not None else 1.0
    shortfall = min(unthrottled, room) if unthrottled >= min_wait else 0.0
    return GroupContention(b.group, usage, unthrottled, max(0.0, min(1.0, throttled)), shortfall)


def contention(a: HostReading, b: HostReading, min_wait: float = 0.0) -> CpuContention:
    """The testbed's CPU contention between two readings: the groups' shortfall summed over the
    groups read at both ends (``min_wait``: group_contention), and the host's CPU pressure."""
    seconds = b.at - a.at
    before = {g.group: g for g in a.groups}
    per = [group_contention(before[g.group], g, seconds, min_wait) for g in b.groups if g.group in before]
    quota = sum(g.quota for g in b.groups if g.group in before and g.quota is not None)
    pressure = None
    if a.pressure_s is not None and b.pressure_s is not None and seconds > 0:
        pressure = min(1.0, max(0.0, (b.pressure_s - a.pressure_s) / seconds))
    return CpuContention(seconds=seconds, shortfall=sum(g.shortfall for g in per), quota=quota, groups=len(per),
                         pressure=pressure, throttled=sum(g.throttled for g in per) / len(per) if per else 0.0)


def disturbed(c: CpuContention | None, settings: DisturbanceSettings) -> str | None:
    """Why a window was taken while the host was short of CPU, or None when it was not (or when no
    group was read: unconfined TaskManagers have no quota to fall short of)."""
    if c is None or c.groups == 0 or c.shortfall_share <= settings.max_shortfall:
        return None
    pressure = f", host CPU pressure {c.pressure:.0%}" if c.pressure is not None else ""
    return (f"the TaskManagers waited for {c.shortfall:.2f} of their {c.quota:.2f} cores "
            f"({c.shortfall_share:.0%}{pressure})")


def undisturbed(observe: Callable[[], Measurement], settings: DisturbanceSettings,
                log: Callable[[str], None] = lambda why: None) -> Measurement:
    """A window from ``observe`` taken while the host had CPU to spare: a disturbed one is discarded and
    observed again, up to ``settings.repeats`` times, the discarded ones kept in the measurement
    returned (so that the ledger keeps them); MachineTooBusy, one line, when every try was disturbed."""
    discarded: list[Measurement] = []
    while True:
        m = observe()
        why = disturbed(m.cpu, settings)
        if why is None:
            return replace(m, discarded=m.discarded + tuple(discarded)) if discarded else m
        discarded.append(m)
        if len(discarded) > settings.repeats:
            raise MachineTooBusy(f"the machine is too busy to measure: {len(discarded)} windows in a row were short "
                                 f"of CPU (last: {why}); free its CPU and run again")
        log(why)


# -- reading the files ------------------------------------------------------------------------------

class CpuReader:
    """Reads the groups the flink role lists in ``groups_file`` and the host's CPU pressure."""

    def __init__(self, groups_file: Path, proc: Path = Path("/proc"), clock: Callable[[], float] = time.monotonic):
        self.groups_file = groups_file
        self.proc = proc
        self.clock = clock

    def groups(self) -> list[Path]:
        """The group directories listed (none when the file is absent: TaskManagers unconfined)."""
        try:
            lines = self.groups_file.read_text().splitlines()
        except FileNotFoundError:
            return []
        return [Path(line.strip()) for line in lines if line.strip()]

    def read(self) -> HostReading | None:
        """The groups and the host's pressure now; None when no group is listed."""
        dirs = self.groups()
        if not dirs:
            return None
        groups = tuple(g for g in (self._group(d) for d in dirs) if g is not None)
        try:
            pressure = parse_pressure((self.proc / "pressure" / "cpu").read_text())
        except (OSError, ValueError):
            pressure = None
        return HostReading(self.clock(), groups, pressure)

    def _group(self, d: Path) -> GroupReading | None:
        """One group, or None when it is gone (its TaskManager stopped: the window fails on that anyway)."""
        try:
            stat = parse_cpu_stat((d / "cpu.stat").read_text())
            if (d / "cpu.max").exists():
                quota = quota_cores((d / "cpu.max").read_text())
                tids = (d / "cgroup.threads").read_text().split()
            else:
                quota = quota_cores((d / "cpu.cfs_quota_us").read_text(), (d / "cpu.cfs_period_us").read_text())
                tids = (d / "tasks").read_text().split()
        except (OSError, ValueError):
            return None
        return GroupReading(str(d), stat, quota, self._threads(tids))

    def _threads(self, tids: Sequence[str]) -> dict[int, tuple[float, float]]:
        out = {}
        for tid in tids:
            try:
                out[int(tid)] = parse_schedstat((self.proc / tid / "schedstat").read_text())
            except (OSError, ValueError):
                continue  # the thread ended between the listing and its read
        return out

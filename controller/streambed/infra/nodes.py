"""The node operations the controller needs on an inventory's hosts: collect Flink's logs, check the
data disks, stop a TaskManager, read a Kafka topic's end offsets.

Deploying is Ansible's job (:mod:`.ansible`); what the controller does *between* deployments - read
the logs after a failed run, check that the data disks have room before a campaign, kill a
TaskManager for a fault test, read a topic's end offsets - is a handful of shell commands on a few
hosts. The hosts and their variables come from :mod:`.hosts`; the commands run through a
:class:`~.transport.Transport` (:mod:`.transport`), by default the one the inventory names for each host.

Every failure (no such inventory or host, a host that does not answer, a command that fails) is a
:class:`~.hosts.NodeError`: one line naming the host, never a traceback.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from .ansible import one_line
from .hosts import DEFAULT_STATE_DIR, Host, NodeError, _last_line, find_host, hosts_in, load_hosts
from .provider import Inventory
from .transport import Completed, HostTransport, Transport

TASKMANAGER_CLASS = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
"""The entry class on a TaskManager's command line (Flink's taskmanager.sh starts it)."""
TASKMANAGER_GROUP, JOBMANAGER_GROUP, KAFKA_GROUP = "taskmanagers", "jobmanager", "kafka"
DEFAULT_KAFKA_HOME = "/opt/kafka"
DEFAULT_KAFKA_PORT = 9092
GB = 1e9
"""Disk sizes are reported in GB of 10^9 bytes."""


@contextmanager
def _using(transport: Transport | None) -> Iterator[Transport]:
    """The given transport, or a :class:`HostTransport` closed afterwards."""
    if transport is not None:
        yield transport
        return
    with HostTransport() as own:
        yield own


def _check(host: Host, what: str, done: Completed) -> Completed:
    if done.code != 0:
        raise NodeError(f"host {host.label}: {what} failed (exit {done.code}): "
                        f"{_last_line(done.stderr, done.stdout) or 'no output'}")
    return done


# --- Collect logs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostLogs:
    host: str
    log_dir: str
    files: tuple[str, ...]
    """Paths relative to ``log_dir``, as copied under ``<dest>/<host>/``."""
    bytes: int
    missing: bool
    """The host has no log directory (Flink never ran there)."""


def collect_logs(inventory: Inventory, dest: Path, transport: Transport | None = None,
                 hosts: Mapping[str, Host] | None = None) -> list[HostLogs]:
    """Copy Flink's log directory of every JobManager and TaskManager host into ``dest/<host>/``.

    Why: when a measurement fails (a TaskManager lost, a job restarting, an out-of-memory error), the
    reason is in the logs of the node where it happened, not in the metrics; on a cluster they are
    scattered over the hosts and gone with the machines at ``destroy``. The directory is the flink
    role's ``env.log.dir``: ``flink_log_dir``, else ``<streambed_state_dir>/log``."""
    hosts = load_hosts(inventory) if hosts is None else hosts
    targets = hosts_in(hosts, JOBMANAGER_GROUP, TASKMANAGER_GROUP)
    if not targets:
        raise NodeError(f"inventory {inventory.path}: no host in the {JOBMANAGER_GROUP} or {TASKMANAGER_GROUP} group")
    dest = Path(dest)
    collected = []
    with _using(transport) as t:
        for host in targets:
            log_dir = host.flink_log_dir()
            q = shlex.quote(log_dir)
            sudo = "sudo -n " if host.become else ""
            done = t.run(host, f"{sudo}[ -d {q} ] || exit 3; {sudo}find {q} -type f -print0")
            if done.code == 3:
                collected.append(HostLogs(host.name, log_dir, (), 0, True))
                continue
            _check(host, f"listing {log_dir}", done)
            names = sorted(p for p in done.stdout.split("\0") if p)
            relative = []
            size = 0
            for remote in names:
                rel = posixpath.relpath(remote, log_dir)
                local = dest / _safe(host.name) / Path(*rel.split("/"))
                if host.become:  # the services' own users own their logs: read them through sudo
                    read = _check(host, f"reading {remote}", t.run(host, f"sudo -n cat {shlex.quote(remote)}"))
                    local.parent.mkdir(parents=True, exist_ok=True)
                    local.write_text(read.stdout, encoding="utf-8")
                else:
                    t.get(host, remote, local)
                relative.append(rel)
                size += local.stat().st_size
            collected.append(HostLogs(host.name, log_dir, tuple(relative), size, False))
    return collected


def _safe(name: str) -> str:
    """A host name as a directory name."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "_"


# --- Check disks ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiskSpace:
    host: str
    path: str
    """The data directory asked about."""
    checked: str
    """The directory whose file system was measured: ``path``, or its nearest existing parent."""
    mount: str
    free_gb: float
    total_gb: float
    ok: bool


@dataclass(frozen=True)
class DiskReport:
    min_free_gb: float
    disks: tuple[DiskSpace, ...]

    @property
    def below(self) -> tuple[DiskSpace, ...]:
        return tuple(d for d in self.disks if not d.ok)

    @property
    def ok(self) -> bool:
        return not self.below

    def verdicts(self) -> list[str]:
        """One line per directory below the minimum, naming the host, the directory and the numbers."""
        return [f"{d.host}: {d.path} has {d.free_gb:.1f} GB free (file system {d.mount}), below the minimum "
                f"of {self.min_free_gb:g} GB" for d in self.below]

    def as_dict(self) -> dict[str, Any]:
        return {"min_free_gb": self.min_free_gb, "ok": self.ok, "disks": [asdict(d) for d in self.disks],
                "below": self.verdicts()}


def data_dirs(host: Host) -> list[str]:
    """The directories that fill up on ``host``: the state directory (Flink's logs, RocksDB, checkpoints)
    and, on Kafka hosts, the brokers' data directories (``log.dirs``): ``kafka_log_dirs`` (a list or
    comma-separated), else the kafka role's default: ``<kafka_data_mount>/kafka-logs`` on a host with a
    data disk (``kafka_data_device``; the mount defaults to ``<kafka_state_dir>/kafka-data``), else
    ``<kafka_state_dir>/kafka-logs``. (The role's ``kafka_log_dir``, singular, is Kafka's own application
    logs, not data.)"""
    dirs = [host.state_dir()]
    if KAFKA_GROUP in host.groups:
        kafka_state = str(host.setting("kafka_state_dir") or host.setting("streambed_state_dir") or DEFAULT_STATE_DIR)
        parent = (str(host.setting("kafka_data_mount") or posixpath.join(kafka_state, "kafka-data"))
                  if host.setting("kafka_data_device") else kafka_state)
        value = host.setting("kafka_log_dirs") or [posixpath.join(parent, "kafka-logs")]
        dirs += [str(v) for v in (value.split(",") if isinstance(value, str) else value) if str(v).strip()]
    return list(dict.fromkeys(d.strip() for d in dirs))


_DF_LINE = re.compile(r"^(.*?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)%\s+(.+)$")


def check_disks(inventory: Inventory, min_free_gb: float = 10.0, paths: Sequence[str] | None = None,
                transport: Transport | None = None, hosts: Mapping[str, Host] | None = None) -> DiskReport:
    """Free space of each host's data directories (``paths`` on every host, else :func:`data_dirs`).

    Why: a Kafka broker or a RocksDB state backend that runs out of disk in the middle of a campaign
    fails the job and wastes the run; checked before deploying or before a campaign, it is a one-line
    verdict instead. A directory that does not exist yet is measured on its nearest existing parent
    (where it will be created)."""
    hosts = load_hosts(inventory) if hosts is None else hosts
    if not hosts:
        raise NodeError(f"inventory {inventory.path}: no hosts")
    disks = []
    with _using(transport) as t:
        for host in hosts.values():
            wanted = list(dict.fromkeys(paths)) if paths else data_dirs(host)
            script = "; ".join(
                f"p={shlex.quote(p)}; q=$p; while [ ! -e \"$q\" ]; do q=$(dirname \"$q\"); done; "
                f"printf '%s\\t' \"$q\"; df -P -k \"$q\" | tail -n 1" for p in wanted)
            done = _check(host, "df", t.run(host, script))
            lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
            if len(lines) != len(wanted):
                raise NodeError(f"host {host.label}: df failed: "
                                f"{_last_line(done.stderr) or one_line(done.stdout) or 'no output'}")
            for path, line in zip(wanted, lines):
                checked, _, df = line.partition("\t")
                m = _DF_LINE.match(df.strip())
                if not m:
                    raise NodeError(f"host {host.label}: unexpected df output for {path}: {one_line(df)}")
                total, free = int(m.group(2)) * 1024 / GB, int(m.group(4)) * 1024 / GB
                disks.append(DiskSpace(host.name, path, checked, m.group(6), round(free, 3), round(total, 3),
                                       free >= min_free_gb))
    return DiskReport(min_free_gb, tuple(disks))


# --- Stop a TaskManager -----------------------------------------------------------------------------


def _ere_escape(text: str) -> str:
    """``text`` as a literal in a POSIX extended regular expression (what ``pgrep -f`` takes)."""
    return re.sub(r"([.\[\]\\*^$+?(){}|])", r"\\\1", text)


def taskmanager_pattern(conf_dir: str) -> str:
    """The ``pgrep -f`` pattern of the TaskManagers started with ``conf_dir``, the flink role's
    (``flink_taskmanager_pattern``) with the full entry class. Its own text never matches it (the dots
    are escaped), so the shell that runs ``pgrep`` is never taken for a TaskManager."""
    return f"{_ere_escape(TASKMANAGER_CLASS)} .*--configDir {_ere_escape(conf_dir)}( |$)"


@dataclass(frozen=True)
class StoppedTaskManager:
    host: str
    pid: int
    signal: str
    before: tuple[int, ...]
    """PIDs of the host's TaskManagers before, in PID order."""
    remaining: tuple[int, ...]
    seconds: float


SIGNALS = ("KILL", "TERM")


def stop_taskmanager(inventory: Inventory, host: str, which: int = 1, signal: str = "KILL",
                     wait_s: float = 15.0, transport: Transport | None = None,
                     hosts: Mapping[str, Host] | None = None) -> StoppedTaskManager:
    """Kill the ``which``-th TaskManager (in PID order, from 1) of this inventory's Flink on ``host``.

    Why: fault-injection tests - what the estimator does when a TaskManager is lost in the middle of
    a window (``TaskManagerLost``: discard, re-warm, retry) is checked by losing one for real. The
    process is found as the flink role finds it: ``pgrep -f`` on the entry class and the inventory's
    Flink configuration directory, so another cluster's TaskManagers on the same host are never
    touched. ``KILL`` (default) is a crash; ``TERM`` a clean shutdown. Waits up to ``wait_s`` for the
    process to be gone."""
    if signal not in SIGNALS:
        raise NodeError(f"signal {signal!r}: expected one of {', '.join(SIGNALS)}")
    hosts = load_hosts(inventory) if hosts is None else hosts
    target = find_host(hosts, host, TASKMANAGER_GROUP)
    conf_dir = target.flink_conf_dir()
    pattern = shlex.quote(taskmanager_pattern(conf_dir))
    with _using(transport) as t:
        found = t.run(target, f"pgrep -f {pattern}")
        if found.code == 1:
            raise NodeError(f"host {target.label}: no TaskManager of {conf_dir} is running")
        _check(target, "pgrep", found)
        pids = tuple(sorted(int(p) for p in found.stdout.split() if p.isdigit()))
        if not 1 <= which <= len(pids):
            raise NodeError(f"host {target.label}: TaskManager {which} asked, but {len(pids)} run(s) there "
                            f"(PIDs {', '.join(map(str, pids))})")
        pid = pids[which - 1]
        tries = max(1, int(wait_s / 0.2))
        started = time.monotonic()
        sudo = "sudo -n " if target.become else ""  # the TaskManager runs as the flink role's user
        done = t.run(target, f"{sudo}kill -s {signal} {pid} || exit 3; i=0; while pgrep -f {pattern} | grep -qx {pid}; "
                             f"do i=$((i+1)); [ $i -ge {tries} ] && exit 4; sleep 0.2; done; pgrep -f {pattern}; "
                             f"exit 0", timeout=wait_s + 30)
        if done.code == 4:
            raise NodeError(f"host {target.label}: TaskManager {pid} still runs {wait_s:g} s after SIG{signal}")
        _check(target, f"kill -s {signal} {pid}", done)
        remaining = tuple(sorted(int(p) for p in done.stdout.split() if p.isdigit()))
    return StoppedTaskManager(target.name, pid, signal, pids, remaining, round(time.monotonic() - started, 2))


# --- Kafka end offsets ------------------------------------------------------------------------------


@dataclass(frozen=True)
class EndOffsets:
    topic: str
    host: str
    bootstrap: str
    partitions: Mapping[int, int]
    """Partition -> end offset (the offset the next record will get)."""

    @property
    def total(self) -> int:
        return sum(self.partitions.values())

    def as_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "host": self.host, "bootstrap": self.bootstrap,
                "partitions": {str(p): o for p, o in self.partitions.items()}, "total": self.total}


_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def end_offsets_command(kafka_home: str, bootstrap: str, topic: str) -> str:
    """The shell command that prints ``topic:partition:offset`` per partition: ``kafka-get-offsets.sh``
    (Kafka 3.0 and later), else ``kafka-run-class.sh kafka.tools.GetOffsetShell`` (older releases)."""
    b = shlex.quote(posixpath.join(kafka_home, "bin"))
    server, t = shlex.quote(bootstrap), shlex.quote(topic)
    return (f"b={b}; if [ -x \"$b/kafka-get-offsets.sh\" ]; then "
            f"\"$b/kafka-get-offsets.sh\" --bootstrap-server {server} --topic {t} --time -1; "
            f"else \"$b/kafka-run-class.sh\" kafka.tools.GetOffsetShell --broker-list {server} --topic {t} "
            f"--time -1; fi")


def parse_end_offsets(topic: str, output: str) -> dict[int, int]:
    """``topic:partition:offset`` lines -> {partition: offset}, sorted; other lines (log noise) skipped."""
    offsets = {}
    for line in output.splitlines():
        name, partition, offset = (line.strip().rsplit(":", 2) + ["", ""])[:3]
        if name == topic and partition.isdigit() and offset.lstrip("-").isdigit():
            offsets[int(partition)] = int(offset)
    return dict(sorted(offsets.items()))


def kafka_end_offsets(inventory: Inventory, topic: str, host: str | None = None, bootstrap: str | None = None,
                      transport: Transport | None = None, hosts: Mapping[str, Host] | None = None) -> EndOffsets:
    """End offsets of ``topic``, per partition, read with Kafka's own tool on a Kafka host (the first of
    the ``kafka`` group unless ``host`` is given).

    Why: how many records a topic of the data lake holds, and whether a replay or a load finished
    (the sum of end offsets is what was written), read where the brokers are rather than through a
    client on the controller that may not reach the brokers' private addresses. The broker list is
    ``kafka_bootstrap_servers`` (a list or a comma-separated string), else the kafka role's listener
    ``<kafka_host, else ansible_host>:<kafka_port, else 9092>``; the tool is under ``kafka_home``
    (default /opt/kafka)."""
    if not _TOPIC.match(topic):
        raise NodeError(f"topic {topic!r}: expected a Kafka topic name (letters, digits, '.', '_', '-')")
    hosts = load_hosts(inventory) if hosts is None else hosts
    if host is not None:
        target = find_host(hosts, host, KAFKA_GROUP)
    else:
        candidates = hosts_in(hosts, KAFKA_GROUP)
        if not candidates:
            raise NodeError(f"inventory {inventory.path}: no host in the {KAFKA_GROUP} group")
        target = candidates[0]
    if str(target.setting("kafka_distribution", "apache")) == "none":
        raise NodeError(f"host {target.label}: no Kafka broker runs there (kafka_distribution=none in the "
                        f"inventory): topic {topic} has no end offsets to read")
    servers = bootstrap or target.setting("kafka_bootstrap_servers")
    if not servers:  # the kafka role's listener: kafka_host (default: ansible_host) and kafka_port
        servers = f"{target.setting('kafka_host', target.address)}:{target.setting('kafka_port', DEFAULT_KAFKA_PORT)}"
    elif not isinstance(servers, str):
        servers = ",".join(str(s) for s in servers)
    command = end_offsets_command(str(target.setting("kafka_home", DEFAULT_KAFKA_HOME)), servers, topic)
    with _using(transport) as t:
        done = t.run(target, command)
    offsets = parse_end_offsets(topic, done.stdout)
    if done.code != 0 or not offsets:
        reason = _last_line(done.stderr, done.stdout) or "no partition listed (does the topic exist?)"
        raise NodeError(f"host {target.label}: end offsets of topic {topic} (exit {done.code}): {reason}")
    return EndOffsets(topic, target.name, servers, offsets)

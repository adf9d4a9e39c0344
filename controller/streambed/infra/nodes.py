"""Commands on an inventory's hosts: the node-level operations the controller needs on clusters.

Deploying is Ansible's job (:mod:`.ansible`); what the controller does *between* deployments - read
the logs after a failed run, check that the data disks have room before a campaign, kill a
TaskManager for a fault test, read a topic's end offsets - is a handful of shell commands on a few
hosts. They go through one small seam, :class:`Transport` (``run`` a command, ``get`` a file), with
two implementations chosen per host from the inventory, as Ansible chooses its connection plugin:

* :class:`LocalTransport`: a subprocess on this machine, for hosts with ``ansible_connection: local``
  (``inventories/local``: no SSH at all);
* :class:`FabricTransport`: one fabric ``Connection`` per host, from ``ansible_host``, ``ansible_user``,
  ``ansible_port``, ``ansible_ssh_private_key_file``, the connect timeout ``ansible_ssh_timeout``
  (else ``ansible_timeout``, else :data:`CONNECT_TIMEOUT_S`) and a ``ProxyJump`` / ``ProxyCommand``
  in ``ansible_ssh_common_args`` (Grid'5000's access machine, a bastion).

The hosts, their groups and variables are read with ``ansible-inventory --list``, so any inventory
Ansible reads (YAML, INI, host ranges, ``group_vars/``, ``host_vars/``) is read the same way here;
templates in the values this module uses are rendered with the inventory's rendered settings.

Every failure (no such inventory or host, a host that does not answer, a command that fails) is a
:class:`NodeError`: one line naming the host, never a traceback.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, NamedTuple, Protocol, Sequence, runtime_checkable

import yaml

from ..errors import UserError
from .provider import Inventory

CONNECT_TIMEOUT_S = 10.0
"""SSH connect timeout when the inventory sets neither ``ansible_ssh_timeout`` nor ``ansible_timeout``
(Ansible's own default is 10 s too)."""
COMMAND_TIMEOUT_S = 120.0
"""The longest one node command may run (each is a pgrep, df, find or a Kafka tool: seconds)."""
TASKMANAGER_CLASS = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
"""The entry class on a TaskManager's command line (Flink's taskmanager.sh starts it)."""
TASKMANAGER_GROUP, JOBMANAGER_GROUP, KAFKA_GROUP = "taskmanagers", "jobmanager", "kafka"
DEFAULT_STATE_DIR = "/var/lib/streambed"
"""The flink role's state directory when the inventory sets no ``streambed_state_dir``."""
DEFAULT_KAFKA_HOME = "/opt/kafka"
DEFAULT_KAFKA_PORT = 9092
GB = 1e9
"""Disk sizes are reported in GB of 10^9 bytes."""


class NodeError(UserError):
    """A node operation failed; the message is one line naming the host."""


def _one_line(text: Any, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _last_line(*texts: str) -> str:
    """The last non-empty line of the first text that has one (a tool's error message)."""
    for text in texts:
        lines = [ln for ln in (text or "").splitlines() if ln.strip()]
        if lines:
            return _one_line(lines[-1])
    return ""


# --- Hosts ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Host:
    """One host of an inventory, with what it takes to reach it and the variables Ansible sees."""

    name: str
    """The inventory hostname."""
    groups: tuple[str, ...]
    connection: str
    """``local`` or ``ssh`` (Ansible's ``ansible_connection``)."""
    address: str
    """``ansible_host``, else the name."""
    user: str | None = None
    port: int | None = None
    key_file: str | None = None
    connect_timeout: float = CONNECT_TIMEOUT_S
    gateway: str | None = None
    """``ProxyJump`` target (``user@host:port``; several hops comma-separated) from ``ansible_ssh_common_args``."""
    proxy_command: str | None = None
    """``ProxyCommand`` from ``ansible_ssh_common_args`` (``%h``/``%p``/``%r`` already substituted)."""
    variables: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The host's variables, templates not yet rendered (see :meth:`setting`)."""

    @property
    def label(self) -> str:
        """How messages name the host: its name and where it is reached."""
        if self.connection == "local":
            return f"{self.name} (local)"
        where = f"{self.user + '@' if self.user else ''}{self.address}{f':{self.port}' if self.port else ''}"
        return f"{self.name} ({where})"

    def setting(self, key: str, default: Any = None) -> Any:
        """The host's value of ``key`` as a playbook would see it (templates rendered), else ``default``."""
        if key not in self.variables or self.variables[key] is None or self.variables[key] == "":
            return default
        return _render(self, key, self.variables[key])

    def state_dir(self) -> str:
        """The flink role's state directory on this host (``flink_state_dir``, else ``streambed_state_dir``)."""
        return str(self.setting("flink_state_dir") or self.setting("streambed_state_dir") or DEFAULT_STATE_DIR)

    def flink_log_dir(self) -> str:
        """Flink's log directory (``env.log.dir``): ``flink_log_dir``, else ``<state dir>/log``."""
        return str(self.setting("flink_log_dir") or posixpath.join(self.state_dir(), "log"))

    def flink_conf_dir(self) -> str:
        """Flink's configuration directory (``FLINK_CONF_DIR``), as the flink role sets it."""
        return str(self.setting("flink_conf_dir") or posixpath.join(self.state_dir(), "conf", "flink"))


def _render(host: Host, key: str, value: Any) -> Any:
    """``value`` with its Jinja templates rendered in the host's variables (a few passes, for templates
    that name templated variables)."""
    if isinstance(value, list):
        return [_render(host, key, v) for v in value]
    if not isinstance(value, str) or ("{{" not in value and "{%" not in value):
        return value
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters.update(dirname=posixpath.dirname, basename=posixpath.basename, realpath=os.path.realpath)
    context = {**host.variables, "inventory_hostname": host.name, "group_names": list(host.groups)}
    for _ in range(5):
        try:
            value = env.from_string(value).render(context)
        except jinja2.TemplateError as exc:
            raise NodeError(f"host {host.name}: cannot resolve {key}: {_one_line(exc)}") from None
        if "{{" not in value and "{%" not in value:
            break
    return value


def _ansible_inventory() -> str:
    """The ansible-inventory beside this interpreter (the venv's), else the one on PATH."""
    candidate = Path(sys.executable).parent / "ansible-inventory"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("ansible-inventory")
    if found is None:
        raise NodeError("ansible-inventory not found: install ansible-core in this Python environment")
    return found


def _list_inventory(path: Path) -> dict[str, Any]:
    """``ansible-inventory --list`` of the inventory directory: groups and every host's variables."""
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False"}
    try:
        proc = subprocess.run([_ansible_inventory(), "-i", str(path), "--list"], capture_output=True, text=True,
                              env=env, timeout=120, cwd=path)
    except subprocess.TimeoutExpired:
        raise NodeError(f"inventory {path}: ansible-inventory did not answer within 120 s") from None
    if proc.returncode != 0:
        raise NodeError(f"inventory {path}: ansible-inventory failed: {_last_line(proc.stderr, proc.stdout)}")
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise NodeError(f"inventory {path}: ansible-inventory printed no JSON") from None


def _members(listing: Mapping[str, Any]) -> dict[str, list[str]]:
    """Group -> its hosts, its children's included, in inventory order."""
    memo: dict[str, list[str]] = {}

    def members(group: str, seen: frozenset[str]) -> list[str]:
        if group in memo:
            return memo[group]
        entry = listing.get(group) or {}
        hosts = list(entry.get("hosts") or [])
        for child in entry.get("children") or []:
            if child not in seen:
                hosts += members(child, seen | {child})
        memo[group] = list(dict.fromkeys(hosts))
        return memo[group]

    return {g: members(g, frozenset({g})) for g in listing if g != "_meta"}


def _proxy(args: str, user: str | None, address: str, port: int | None) -> tuple[str | None, str | None]:
    """(ProxyJump, ProxyCommand) of ssh options such as ``-o ProxyJump=me@access.grid5000.fr``."""
    try:
        words = shlex.split(args)
    except ValueError:
        return None, None
    options: dict[str, str] = {}
    for i, word in enumerate(words):
        text = None
        if word in ("-o", "-J") and i + 1 < len(words):
            text = words[i + 1] if word == "-o" else f"ProxyJump={words[i + 1]}"
        elif word.startswith("-o") and len(word) > 2:
            text = word[2:]
        if text:
            key, sep, value = text.partition("=")
            if not sep:
                key, _, value = text.partition(" ")
            options[key.strip().lower()] = value.strip()
    jump = options.get("proxyjump")
    command = options.get("proxycommand")
    if command:
        tokens = {"%h": address, "%p": str(port or 22), "%r": user or "", "%%": "%"}
        command = re.sub(r"%[hpr%]", lambda m: tokens[m.group(0)], command)
    return (jump if jump and jump.lower() != "none" else None), (command if command and command.lower() != "none"
                                                                  else None)


def load_hosts(inventory: Inventory) -> dict[str, Host]:
    """Every host of ``inventory``, by name, in inventory order, with its connection and variables.

    Values of ``group_vars/all.yml`` a host does not override are the inventory's rendered settings;
    variables passed on top of the inventory (``Inventory.with_vars``) win, as ``-e`` does in Ansible."""
    listing = _list_inventory(inventory.path)
    hostvars = (listing.get("_meta") or {}).get("hostvars") or {}
    members = _members(listing)
    names = list(dict.fromkeys(members.get("all") or [])) or list(hostvars)
    raw_all = _raw_all(inventory.path)
    hosts = {}
    for name in names:
        variables = dict(hostvars.get(name) or {})
        for key, raw in raw_all.items():  # not overridden by the host: the settings already rendered
            if key in inventory.settings and variables.get(key, raw) == raw:
                variables[key] = inventory.settings[key]
        variables.update(inventory.extra_vars)
        variables.setdefault("inventory_dir", str(inventory.path))
        groups = tuple(g for g, hs in members.items() if name in hs and g not in ("all", "ungrouped"))
        hosts[name] = _host(name, groups, variables)
    return hosts


def _raw_all(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load((path / "group_vars" / "all.yml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _host(name: str, groups: tuple[str, ...], variables: dict[str, Any]) -> Host:
    probe = Host(name, groups, "ssh", name, variables=variables)
    connection = str(probe.setting("ansible_connection", "ssh"))
    if connection in ("ssh", "paramiko", "smart"):
        connection = "ssh"
    elif connection != "local":
        raise NodeError(f"host {name}: ansible_connection {connection!r} is not supported here (local or ssh)")
    address = str(probe.setting("ansible_host", name))
    user = probe.setting("ansible_user") or probe.setting("ansible_ssh_user")
    port = probe.setting("ansible_port") or probe.setting("ansible_ssh_port")
    timeout = probe.setting("ansible_ssh_timeout") or probe.setting("ansible_timeout") or CONNECT_TIMEOUT_S
    try:
        port = int(port) if port not in (None, "") else None
        if port is not None and not 0 < port < 65536:
            raise ValueError
    except (TypeError, ValueError):
        raise NodeError(f"host {name}: ansible_port {port!r}: expected a port from 1 to 65535") from None
    try:
        timeout = float(timeout)
        if not 0 < timeout <= 3600:
            raise ValueError
    except (TypeError, ValueError):
        raise NodeError(f"host {name}: ansible_ssh_timeout {timeout!r}: expected seconds from 1 to 3600") from None
    key = probe.setting("ansible_ssh_private_key_file") or probe.setting("ansible_private_key_file")
    user = str(user) if user else None
    args = " ".join(str(probe.setting(k, "")) for k in ("ansible_ssh_common_args", "ansible_ssh_extra_args"))
    jump, command = _proxy(args, user, address, port)
    return Host(name, groups, connection, address, user, port, os.path.expanduser(str(key)) if key else None,
                timeout, jump, command, variables)


def hosts_in(hosts: Mapping[str, Host], *groups: str) -> list[Host]:
    """The hosts of any of ``groups``, each once, in inventory order."""
    return [h for h in hosts.values() if any(g in h.groups for g in groups)]


def find_host(hosts: Mapping[str, Host], name: str, group: str | None = None) -> Host:
    """The host called ``name`` (in ``group`` when given); one line listing the names when there is none."""
    candidates = hosts_in(hosts, group) if group else list(hosts.values())
    for h in candidates:
        if h.name == name:
            return h
    where = f"the {group} group" if group else "the inventory"
    known = ", ".join(h.name for h in candidates) or "none"
    raise NodeError(f"unknown host {name!r}: hosts of {where}: {known}")


# --- Transports -------------------------------------------------------------------------------------


class Completed(NamedTuple):
    """What a command left: its exit code, standard output and standard error."""

    code: int
    stdout: str
    stderr: str


@runtime_checkable
class Transport(Protocol):
    """Runs shell commands on a host and copies files from it."""

    def run(self, host: Host, command: str, timeout: float = COMMAND_TIMEOUT_S) -> Completed:
        """Run ``command`` with the host's POSIX shell; a non-zero exit is returned, not raised."""

    def get(self, host: Host, remote_path: str, local_path: Path) -> None:
        """Copy the host's file ``remote_path`` to ``local_path`` on this machine (parents created)."""


class _Closes:
    """``with transport:`` closes its connections at the end."""

    def close(self) -> None:
        """Nothing to close."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalTransport(_Closes):
    """This machine: ``/bin/sh -c`` in a subprocess, files copied with shutil (``ansible_connection: local``)."""

    def run(self, host: Host, command: str, timeout: float = COMMAND_TIMEOUT_S) -> Completed:
        try:
            proc = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, errors="replace",
                                  timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise NodeError(f"host {host.label}: a command did not finish within {timeout:g} s") from None
        return Completed(proc.returncode, proc.stdout, proc.stderr)

    def get(self, host: Host, remote_path: str, local_path: Path) -> None:
        local_path = Path(local_path)
        local_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(remote_path, local_path)
        except OSError as exc:
            raise NodeError(f"host {host.label}: cannot copy {remote_path}: {exc.strerror or exc}") from None


class FabricTransport(_Closes):
    """SSH through fabric: one ``Connection`` per host, opened on first use and kept until :meth:`close`."""

    def __init__(self) -> None:
        self._connections: dict[str, Any] = {}
        # paramiko's transport thread logs a traceback when a handshake fails; the failure reaches the
        # caller as a NodeError, so without a handler of the application's these records go nowhere.
        logging.getLogger("paramiko").addHandler(logging.NullHandler())

    def _connection(self, host: Host):
        if host.name in self._connections:
            return self._connections[host.name]
        import paramiko
        from fabric import Connection

        if host.key_file and not os.path.isfile(host.key_file):
            raise NodeError(f"host {host.label}: ansible_ssh_private_key_file {host.key_file} does not exist")
        timeout = max(1, round(host.connect_timeout))
        # A host that accepts TCP but never speaks SSH (a hung sshd) fails within the timeout too.
        keys = {"banner_timeout": timeout, "auth_timeout": timeout,
                **({"key_filename": host.key_file} if host.key_file else {})}
        gateway: Any = host.proxy_command
        for hop in (host.gateway or "").split(","):  # ProxyJump a,b: a first, then b, then the host
            if hop.strip():
                gateway = Connection(hop.strip(), connect_timeout=timeout, connect_kwargs=dict(keys), gateway=gateway)
        conn = Connection(host.address, user=host.user, port=host.port, connect_timeout=timeout,
                          connect_kwargs=dict(keys), gateway=gateway)
        try:
            conn.open()
        except paramiko.BadHostKeyException:
            raise NodeError(f"host {host.label}: its SSH host key is not the one known for it (reinstalled? "
                            f"remove its line from known_hosts)") from None
        except paramiko.AuthenticationException as exc:
            raise NodeError(f"host {host.label}: SSH authentication failed ({_one_line(exc)}); check ansible_user "
                            f"and ansible_ssh_private_key_file") from None
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise NodeError(f"host {host.label} is unreachable: {_unreachable(exc, timeout)}") from None
        self._connections[host.name] = conn
        return conn

    def run(self, host: Host, command: str, timeout: float = COMMAND_TIMEOUT_S) -> Completed:
        from invoke.exceptions import CommandTimedOut

        conn = self._connection(host)
        try:
            result = conn.run(command, hide=True, warn=True, in_stream=False, timeout=timeout)
        except CommandTimedOut:
            raise NodeError(f"host {host.label}: a command did not finish within {timeout:g} s") from None
        except (OSError, EOFError) as exc:
            raise NodeError(f"host {host.label}: the connection failed: {_one_line(exc)}") from None
        return Completed(result.exited, result.stdout, result.stderr)

    def get(self, host: Host, remote_path: str, local_path: Path) -> None:
        conn = self._connection(host)
        local_path = Path(local_path)
        local_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn.get(remote_path, local=str(local_path))
        except (OSError, EOFError) as exc:
            raise NodeError(f"host {host.label}: cannot copy {remote_path}: "
                            f"{getattr(exc, 'strerror', None) or _one_line(exc)}") from None

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
            gateway = conn.gateway
            while gateway is not None and not isinstance(gateway, str):
                gateway.close()
                gateway = gateway.gateway
        self._connections.clear()


def _unreachable(exc: BaseException, timeout: int) -> str:
    """Why a connection failed, in words (paramiko's own messages are cryptic)."""
    from paramiko.ssh_exception import NoValidConnectionsError

    if isinstance(exc, NoValidConnectionsError):  # every address refused the TCP connection
        causes = {e.strerror or str(e) for e in exc.errors.values()}
        return f"{', '.join(sorted(causes)) or 'connection refused'} on port {exc.errors and next(iter(exc.errors))[1]}"
    text = (exc.strerror if isinstance(exc, OSError) and exc.strerror else _one_line(exc)) or type(exc).__name__
    if isinstance(exc, TimeoutError) or "timed out" in text:
        return f"no answer within {timeout} s"
    if "banner" in text or "No existing session" in text:  # TCP accepted, no SSH server answered
        return f"no SSH server answered ({text})"
    return text


class HostTransport(_Closes):
    """The transport the inventory names for each host: local for ``ansible_connection: local``, else SSH."""

    def __init__(self) -> None:
        self.local = LocalTransport()
        self.ssh = FabricTransport()

    def _for(self, host: Host) -> LocalTransport | FabricTransport:
        return self.local if host.connection == "local" else self.ssh

    def run(self, host: Host, command: str, timeout: float = COMMAND_TIMEOUT_S) -> Completed:
        return self._for(host).run(host, command, timeout)

    def get(self, host: Host, remote_path: str, local_path: Path) -> None:
        self._for(host).get(host, remote_path, local_path)

    def close(self) -> None:
        self.ssh.close()


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
            done = t.run(host, f"[ -d {q} ] || exit 3; find {q} -type f -print0")
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
    comma-separated), else the kafka role's default ``<kafka_state_dir>/kafka-logs``. (The role's
    ``kafka_log_dir``, singular, is Kafka's own application logs, not data.)"""
    dirs = [host.state_dir()]
    if KAFKA_GROUP in host.groups:
        kafka_state = host.setting("kafka_state_dir") or host.setting("streambed_state_dir") or DEFAULT_STATE_DIR
        value = host.setting("kafka_log_dirs") or [posixpath.join(str(kafka_state), "kafka-logs")]
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
                                f"{_last_line(done.stderr) or _one_line(done.stdout) or 'no output'}")
            for path, line in zip(wanted, lines):
                checked, _, df = line.partition("\t")
                m = _DF_LINE.match(df.strip())
                if not m:
                    raise NodeError(f"host {host.label}: unexpected df output for {path}: {_one_line(df)}")
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
        done = t.run(target, f"kill -s {signal} {pid} || exit 3; i=0; while pgrep -f {pattern} | grep -qx {pid}; "
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

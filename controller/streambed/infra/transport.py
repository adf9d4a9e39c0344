"""Running commands and copying files on a host: one small seam, :class:`Transport` (``run`` a
command, ``get`` a file), with two implementations chosen per host from the inventory, as Ansible
chooses its connection plugin:

* :class:`LocalTransport`: a subprocess on this machine, for hosts with ``ansible_connection: local``
  (``inventories/local``: no SSH at all);
* :class:`FabricTransport`: one fabric ``Connection`` per host, from what :class:`~.hosts.Host` read in
  the inventory (address, user, port, key, connect timeout, ``ProxyJump`` / ``ProxyCommand``:
  Grid'5000's access machine, a bastion).

:class:`HostTransport` picks one of the two for each host. A host that does not answer, a failed
login or a command that overruns its timeout is a :class:`~.hosts.NodeError`: one line naming the
host, never a traceback; a command's non-zero exit is returned, not raised.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

from .ansible import one_line
from .hosts import Host, NodeError

COMMAND_TIMEOUT_S = 120.0
"""The longest one node command may run (each is a pgrep, df, find or a Kafka tool: seconds)."""


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
            raise NodeError(f"host {host.label}: SSH authentication failed ({one_line(exc)}); check ansible_user "
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
            raise NodeError(f"host {host.label}: the connection failed: {one_line(exc)}") from None
        return Completed(result.exited, result.stdout, result.stderr)

    def get(self, host: Host, remote_path: str, local_path: Path) -> None:
        conn = self._connection(host)
        local_path = Path(local_path)
        local_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn.get(remote_path, local=str(local_path))
        except (OSError, EOFError) as exc:
            raise NodeError(f"host {host.label}: cannot copy {remote_path}: "
                            f"{getattr(exc, 'strerror', None) or one_line(exc)}") from None

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
    text = (exc.strerror if isinstance(exc, OSError) and exc.strerror else one_line(exc)) or type(exc).__name__
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

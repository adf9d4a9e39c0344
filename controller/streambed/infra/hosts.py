"""An inventory's hosts: who they are, their groups, how each is reached and the variables Ansible sees.

The hosts, their groups and variables are read with ``ansible-inventory --list``, so any inventory
Ansible reads (YAML, INI, host ranges, ``group_vars/``, ``host_vars/``) is read the same way here;
templates in the values used are rendered with the inventory's rendered settings. Each :class:`Host`
carries what a transport needs to reach it (:mod:`.transport`): its connection (``local`` or
``ssh``), ``ansible_host``, ``ansible_user``, ``ansible_port``, ``ansible_ssh_private_key_file``, the
connect timeout ``ansible_ssh_timeout`` (else ``ansible_timeout``, else :data:`CONNECT_TIMEOUT_S`) and
a ``ProxyJump`` / ``ProxyCommand`` from ``ansible_ssh_common_args``.

Every failure (no such inventory or host, a variable that cannot be read) is a :class:`NodeError`:
one line, never a traceback.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import UserError
from ..files import load_yaml, read_input_text
from .ansible import ansible_tool, one_line
from .provider import Inventory

CONNECT_TIMEOUT_S = 10.0
"""SSH connect timeout when the inventory sets neither ``ansible_ssh_timeout`` nor ``ansible_timeout``
(Ansible's own default is 10 s too)."""
DEFAULT_STATE_DIR = "/var/lib/streambed"
"""The flink role's state directory when the inventory sets no ``streambed_state_dir``."""


class NodeError(UserError):
    """A node operation failed; the message is one line naming the host."""


def _last_line(*texts: str) -> str:
    """The last non-empty line of the first text that has one (a tool's error message)."""
    for text in texts:
        lines = [ln for ln in (text or "").splitlines() if ln.strip()]
        if lines:
            return one_line(lines[-1])
    return ""


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

    @property
    def become(self) -> bool:
        """Whether Ansible becomes root on this host (``ansible_become``): the services then run as
        users of their own, so reading their logs or signalling them takes sudo too."""
        value = self.setting("ansible_become", False)
        return self.connection != "local" and str(value).strip().lower() in ("true", "yes", "1", "on")

    def state_dir(self) -> str:
        """The flink role's state directory on this host (``flink_state_dir``, else ``streambed_state_dir``)."""
        return str(self.setting("flink_state_dir") or self.setting("streambed_state_dir") or DEFAULT_STATE_DIR)

    def flink_log_dir(self) -> str:
        """Flink's log directory (``env.log.dir``): ``flink_log_dir``, else ``streambed_log_dir``, else
        ``<state dir>/log``."""
        return str(self.setting("flink_log_dir") or self.setting("streambed_log_dir")
                   or posixpath.join(self.state_dir(), "log"))

    def flink_conf_dir(self) -> str:
        """Flink's configuration directory (``FLINK_CONF_DIR``), as the flink role sets it:
        ``flink_conf_dir``, else ``<streambed_config_dir>/flink``, else ``<state dir>/conf/flink``."""
        config = self.setting("streambed_config_dir") or posixpath.join(self.state_dir(), "conf")
        return str(self.setting("flink_conf_dir") or posixpath.join(config, "flink"))


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
            raise NodeError(f"host {host.name}: cannot resolve {key}: {one_line(exc)}") from None
        if "{{" not in value and "{%" not in value:
            break
    return value


def _list_inventory(path: Path) -> dict[str, Any]:
    """``ansible-inventory --list`` of the inventory directory: groups and every host's variables."""
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False"}
    try:
        proc = subprocess.run([ansible_tool("ansible-inventory", NodeError), "-i", str(path), "--list"], capture_output=True, text=True,
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
    """``group_vars/all.yml`` as written, through the bounded reader (the inventory was already read
    with it, so a file that fails here changed since: then no raw values)."""
    try:
        data = load_yaml(read_input_text(path / "group_vars" / "all.yml"), "group_vars/all.yml") or {}
    except UserError:
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

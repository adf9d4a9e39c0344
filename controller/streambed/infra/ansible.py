"""Run an Ansible playbook (``ansible/site.yml``) through ansible-runner.

``run_playbook`` applies a playbook to an inventory, streams the name of every task as it starts (for
progress displays), and sums Ansible's per-host statistics into a :class:`PlaybookResult`. A failed
run raises :class:`DeploymentError` with one line naming the host, the task and Ansible's message.

ansible-runner keeps its inputs and artifacts in a *private data directory*: pass one under the
testbed's state directory to keep the artifacts (the last few runs are kept), otherwise a temporary
directory is used and removed afterwards. It is never placed among the repository's tracked files.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from streambed.errors import UserError


class DeploymentError(UserError):
    """Ansible could not deploy (or stop) the testbed; the message is one line."""


@dataclass(frozen=True)
class PlaybookResult:
    """Task counts of a playbook run, summed over hosts (as in Ansible's PLAY RECAP)."""

    ok: int
    changed: int
    failed: int
    skipped: int
    rc: int
    elapsed_s: float
    messages: tuple[str, ...] = ()
    """What the roles' debug tasks said (for example that the TaskManagers run unconfined)."""


def ansible_tool(name: str, error: type[UserError] = DeploymentError) -> str:
    """Ansible's ``name`` command (ansible-playbook, ansible-inventory) next to this interpreter (the
    venv's), else the one on PATH; ``error`` with one line when there is none."""
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise error(f"{name} not found: install ansible-core in this Python environment")
    return found


def one_line(text: Any, limit: int = 400) -> str:
    """``text`` on one line (whitespace runs folded), cut at ``limit`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _failure_message(res: dict[str, Any]) -> str:
    """Ansible's message for a failed task result, with the command's error output when useful."""
    msg = res.get("msg") or ""
    stderr = (res.get("stderr") or "").strip()
    if stderr and (not msg or msg == "non-zero return code"):
        msg = f"{msg}: {stderr.splitlines()[-1]}" if msg else stderr.splitlines()[-1]
    if not msg:
        # A loop: the failing item's message.
        for item in res.get("results") or []:
            if isinstance(item, dict) and item.get("failed"):
                return _failure_message(item)
        msg = res.get("reason") or f"failed (rc={res.get('rc')})"
    return one_line(msg)


def host_address(inventory: Path, host: str) -> str | None:
    """The address Ansible connects to for ``host`` (its ``ansible_host``), to name it in a message;
    None when the inventory cannot say."""
    try:
        proc = subprocess.run([ansible_tool("ansible-inventory"), "-i", str(inventory), "--host", host],
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "ANSIBLE_NOCOLOR": "1"})
        variables = json.loads(proc.stdout) if proc.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, ValueError, UserError):
        return None
    address = variables.get("ansible_host") if isinstance(variables, dict) else None
    return str(address) if address else None


@contextlib.contextmanager
def signal_handlers_kept() -> Iterator[None]:
    """Put SIGINT's and SIGTERM's handlers back after ansible-runner's run(), which installs its own
    (they only set a flag for its cancel callback) and leaves them: after a deployment, `streambed plan`
    went on measuring through SIGTERM until SIGKILL (2026-11-27), and Ctrl-C would have done nothing.
    Only the main thread may set handlers; elsewhere ansible-runner installs none."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)


def run_playbook(
    playbook: Path,
    inventory: Path,
    extra_vars: dict[str, Any] | None = None,
    *,
    on_task: Callable[[str], None] | None = None,
    private_dir: Path | None = None,
    quiet: bool = True,
    tags: str | None = None,
) -> PlaybookResult:
    """Apply ``playbook`` to ``inventory`` (a file or directory) with ``extra_vars``.

    ``on_task`` receives ``"<role> : <task>"`` (or the bare task name) as each task starts.
    ``quiet=False`` prints Ansible's usual output. ``tags`` (comma-separated) applies only the plays and
    tasks carrying them, as ``ansible-playbook --tags``. Raises :class:`DeploymentError` when a task fails,
    a host is unreachable or ansible-playbook itself fails.
    """
    import ansible_runner  # imported here: it is slow to import and only needed to deploy
    from ansible_runner.exceptions import AnsibleRunnerException

    playbook = Path(playbook).resolve()
    inventory = Path(inventory).resolve()
    if not playbook.is_file():
        raise DeploymentError(f"playbook not found: {playbook}")
    if not inventory.exists():
        raise DeploymentError(f"inventory not found: {inventory}")

    failures: list[tuple[str, str]] = []  # (host, what failed), in order
    unreachable: set[str] = set()
    messages: list[str] = []

    def handle(event: dict[str, Any]) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        if kind in ("playbook_on_task_start", "playbook_on_handler_task_start") and on_task is not None:
            task = data.get("task") or data.get("name") or ""
            role = data.get("role")
            on_task(f"{role} : {task}" if role else task)
        elif kind == "runner_on_ok" and data.get("task_action") in ("debug", "ansible.builtin.debug"):
            msg = (data.get("res") or {}).get("msg")
            if msg:
                messages.append(one_line(msg))
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            what = f"task '{data.get('task', '?')}' failed: {_failure_message(data.get('res') or {})}"
            failures.append((data.get("host", "?"), what))
        elif kind == "runner_on_unreachable":
            what = f"unreachable in task '{data.get('task', '?')}': {_failure_message(data.get('res') or {})}"
            failures.append((data.get("host", "?"), what))
            unreachable.add(data.get("host", "?"))
        return True

    own_dir = private_dir is None
    pdd = Path(tempfile.mkdtemp(prefix="streambed-ansible-")) if own_dir else Path(private_dir)
    pdd.mkdir(parents=True, exist_ok=True)
    envvars = {
        # ansible-runner starts the ansible-playbook found on PATH: the one beside this interpreter.
        "PATH": f"{Path(ansible_tool('ansible-playbook')).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
    }
    config = playbook.parent / "ansible.cfg"
    if config.is_file():
        envvars["ANSIBLE_CONFIG"] = str(config)

    started = time.monotonic()
    try:
        try:
            with signal_handlers_kept():
                runner = ansible_runner.run(
                    private_data_dir=str(pdd),
                    playbook=str(playbook),
                    inventory=str(inventory),
                    extravars=dict(extra_vars or {}),
                    envvars=envvars,
                    event_handler=handle,
                    quiet=quiet,
                    rotate_artifacts=5,
                    **({"tags": tags} if tags else {}),
                )
        except AnsibleRunnerException as exc:
            raise DeploymentError(f"ansible-runner could not run {playbook.name}: {one_line(exc)}") from None
        if runner.status == "canceled":  # its handlers caught SIGINT or SIGTERM during the run
            raise KeyboardInterrupt
        elapsed = time.monotonic() - started
        stats = runner.stats or {}
        tail = ""
        if runner.rc != 0 and not failures:  # e.g. a syntax error: no task ran
            out = runner.stdout.read() if runner.stdout else ""
            errors = [ln for ln in out.splitlines() if "ERROR" in ln or "error" in ln.lower()]
            tail = one_line(errors[-1] if errors else (out.strip().splitlines() or [""])[-1])
    finally:
        if own_dir:
            shutil.rmtree(pdd, ignore_errors=True)

    def total(key: str) -> int:
        return sum((stats.get(key) or {}).values())

    result = PlaybookResult(
        ok=total("ok"),
        changed=total("changed"),
        failed=total("failures") + total("dark"),
        skipped=total("skipped"),
        rc=int(runner.rc if runner.rc is not None else -1),
        elapsed_s=round(elapsed, 2),
        messages=tuple(messages),
    )
    succeeded = result.failed == 0 and result.rc == 0 and runner.status == "successful"
    if failures and not succeeded:  # failures inside a block whose rescue succeeded do not count
        # The last failure: inside a block, the rescue's own message comes last and is the clearest.
        host, what = failures[-1]
        others = sorted({h for h, _ in failures} - {host})
        more = f" (also failed on: {', '.join(others)})" if others else ""
        # SSH's own message names the address only for some failures (not for a timeout, a refused key).
        address = host_address(inventory, host) if host in unreachable else None
        where = f"{host} ({address})" if address and address != host else host
        raise DeploymentError(f"Deployment failed on {where}: {what}{more}")
    if not succeeded:
        raise DeploymentError(
            f"ansible-playbook {playbook.name} ended with status {runner.status} (rc={result.rc}): "
            f"{tail or 'no output'}"
        )
    return result


def inventory_settings(inventory: Path) -> dict[str, Any]:
    """The variables of ``<inventory dir>/group_vars/all.yml``, as the playbook sees them.

    String values are rendered as Jinja templates with ``inventory_dir`` (and the other values of the
    file) in scope, e.g. ``{{ inventory_dir | dirname | dirname }}/.streambed/local``; other values are
    returned as they are. ``inventory`` is the inventory file or its directory.
    """
    import jinja2

    inventory = Path(inventory).resolve()
    inv_dir = inventory if inventory.is_dir() else inventory.parent
    path = inv_dir / "group_vars" / "all.yml"
    if not path.is_file():
        raise UserError(f"inventory settings not found: {path} (expected group_vars/all.yml beside the inventory)")
    from streambed.files import load_yaml, read_input_text  # the size cap, the refusal of FIFOs and devices

    try:
        raw = load_yaml(read_input_text(path), str(path)) or {}  # bounded: size, nesting, aliases
    except RecursionError:
        raise UserError(f"{path}: YAML nested too deeply") from None
    except yaml.YAMLError as e:  # one line: the problem, not the multi-line mark of where
        raise UserError(f"{path} is not valid YAML ({getattr(e, 'problem', None) or type(e).__name__})") from None
    if not isinstance(raw, dict):
        raise UserError(f"{path}: expected a mapping of variable names to values")

    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters.update(dirname=os.path.dirname, basename=os.path.basename, realpath=os.path.realpath)
    context: dict[str, Any] = {"inventory_dir": str(inv_dir), **raw}
    settings: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, str) and "{{" in value:
            try:
                value = env.from_string(value).render(context)
            except jinja2.TemplateError as exc:
                raise UserError(f"{path}: cannot resolve {key}: {exc}") from None
        settings[key] = value
    return settings

"""Terraform from Python: init, apply, output and destroy on a root module of ``terraform/examples``,
and the inventory its outputs render written into an inventory directory.

Every example outputs ``inventory_files`` (inventory path -> text: ``hosts.yml``,
``group_vars/all.yml``, ``testbed.yml``...), rendered by ``terraform/modules/inventory`` from the
addresses the platform returned. :func:`provision` applies an example and writes those files, then
loads them as the :class:`~streambed.infra.provider.Inventory` every service deploys from;
:class:`TerraformProvider` is the same as a :class:`~streambed.infra.provider.Provider`.

Terraform runs as a plain subprocess, not through python-terraform 0.10.1: measured against
Terraform 1.11, its ``destroy`` passes ``-force`` (removed in Terraform 0.15) and fails, its
``output()`` returns None on an error and drops Terraform's message, and its method lookup calls
``logging.debug`` on the root logger, which installs a stderr handler in the caller's process
(terraform/README.md). What it adds over ``subprocess`` is not worth those.

Nothing is written into the example's directory but what ``init`` always writes there (the
dependency lock file, ignored by git): the working directory (``.terraform/``), the state and the
variables live under ``state_dir`` (``.streambed/terraform/<example>`` by default, ignored by git).
A failure is one line naming the example, Terraform's error and, for a bad value, the variable.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Mapping

import yaml

from ..errors import UserError
from ..files import replacing
from .provider import Inventory

EXAMPLES = Path("terraform") / "examples"
"""The examples, relative to the repository's root (where make runs)."""
STATE_ROOT = Path(".streambed") / "terraform"
"""Default parent of each example's state directory, relative to the working directory."""
INVENTORY_OUTPUT = "inventory_files"
"""The output every example renders its inventory into: inventory path -> content."""
PRODUCTION_OUTPUT = "production_inventory_files"
"""The production cluster's inventory (empty without one), written beside the testbed's."""


def production_dir(inventory_dir: Path | str) -> Path:
    """Where the production cluster's inventory goes: ``<inventory>-production``, a sibling (Ansible
    reads an inventory directory recursively: inside, its hosts would join the testbed's groups)."""
    path = Path(inventory_dir)
    return path.with_name(f"{path.name}-production")


class TerraformError(UserError):
    """Terraform failed or is missing; the message is one line."""


def terraform_binary() -> str:
    """The ``terraform`` on PATH; one line saying what to install when there is none."""
    found = shutil.which("terraform")
    if found is None:
        raise TerraformError("terraform not found on PATH: install Terraform >= 1.9 (terraform/README.md)")
    return found


_SNIPPET = re.compile(r"^\s*(on .+ line \d+.*:|\d+:.*|[├│╵╷].*|\(and \d+ more.*)$")
_VARIABLE = re.compile(r"^\s*│\s*(var\.[A-Za-z0-9_]+)\b")


def error_line(output: str) -> str:
    """The first error of Terraform's (uncoloured) output as one line: its summary, the variable when
    the snippet names one, and the first paragraph of its detail (a validation's error_message)."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip("│ ").startswith("Error: ")), None)
    if start is None:
        tail = [line.strip() for line in lines if line.strip()]
        return tail[-1] if tail else "failed without a message"
    summary = lines[start].lstrip("│ ")[len("Error: "):].strip()
    variable, paragraphs, current = None, [], []
    for line in lines[start + 1:]:
        if line.lstrip("│ ").startswith("Error: "):
            break
        match = _VARIABLE.match(line)
        if match and variable is None:
            variable = match.group(1)
        if _SNIPPET.match(line):
            continue
        text = line.strip()
        if text:
            current.append(text)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    detail = next((p for p in paragraphs if not p.startswith("This was checked by")), "")
    # The variable's name once: many error_messages start with it already.
    named = f"{variable}: " if variable and not re.search(rf"\b{re.escape(variable[4:])}\b", detail) else ""
    return " ".join(f"{summary}: {named}{detail}".rstrip(": ").split())


_TRAVERSAL = re.compile(r"\bvar\.[A-Za-z0-9_]+")
_OUTPUT = re.compile(r"\bOutput:\s*", re.MULTILINE)


def diagnostic_line(diagnostic: Mapping[str, Any]) -> str:
    """One of Terraform's ``-json`` diagnostics as one line: its summary, the variable its snippet
    names (unless the detail names it already), the first paragraph of its detail (a validation's
    error_message), and for a failed command (a local-exec provisioner) the command's own last line of
    error rather than Terraform's account of it."""
    summary = str(diagnostic.get("summary") or "failed").strip()
    detail = str(diagnostic.get("detail") or "")
    found = _OUTPUT.search(detail)
    if found:  # "Error running command '...': exit status 1. Output: <what the command printed>"
        printed = [line.strip() for line in detail[found.end():].splitlines() if line.strip()]
        marked = [line for line in printed if line.startswith("lab:")]
        if marked or printed:
            return " ".join(f"{summary}: {(marked or printed)[-1]}".split())
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", detail) if p.strip()]
    text = next((p for p in paragraphs if not p.startswith("This was checked by")), "")
    snippet = diagnostic.get("snippet") or {}
    code = " ".join([str(snippet.get("code") or "")] + [str(v.get("traversal") or "") for v in snippet.get("values") or []
                                                        if isinstance(v, Mapping)])
    variable = next(iter(_TRAVERSAL.findall(code)), None)
    named = f"{variable}: " if variable and not re.search(rf"\b{re.escape(variable[4:])}\b", text) else ""
    return " ".join(f"{summary}: {named}{text}".rstrip(": ").split())


def read_json_lines(lines, log: Callable[[str], None] | None = None) -> tuple[list[dict], list[str]]:
    """Terraform's ``-json`` stream: each message's text to ``log`` (progress displays), and the
    error diagnostics (as parsed) with any line that was not JSON (Terraform's own complaints before
    its UI starts, e.g. a bad flag)."""
    errors: list[dict] = []
    plain: list[str] = []
    for raw in lines:
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            plain.append(line)
            if log:
                log(line)
            continue
        if not isinstance(message, dict):
            continue
        diagnostic = message.get("diagnostic")
        if isinstance(diagnostic, dict) and diagnostic.get("severity") == "error":
            errors.append(diagnostic)
        elif log and message.get("@message"):
            log(str(message["@message"]))
    return errors, plain


BACKEND_CONFIG_ENV = "STREAMBED_TF_BACKEND_CONFIG"
"""A backend configuration file (``-backend-config``) for every example: remote state with locking
(docs/infrastructure.md, "State"); unset, each example keeps a local state file under its state dir."""
PLAN_FILE = "tfplan"
"""The saved plan, in the state directory: what apply applies."""


@dataclass(frozen=True)
class Terraform:
    """One root module (an example) with its variables, its working files kept under ``state_dir``."""

    directory: Path
    variables: Mapping[str, Any] = field(default_factory=dict)
    state_dir: Path | None = None
    """Working directory, saved plan, variables file and (local backend) the state; default:
    .streambed/terraform/<example name>."""
    log: Callable[[str], None] | None = None
    """Called with each line Terraform prints (progress displays)."""
    backend_config: Path | None = None
    """A ``-backend-config`` file for the backend the root module declares (an S3 bucket, key and
    lock table, say); None: the local backend, its state file in ``state_dir``."""

    @property
    def state_path(self) -> Path:
        return (self.state_dir or STATE_ROOT / Path(self.directory).name).resolve()

    @property
    def plan_path(self) -> Path:
        return self.state_path / PLAN_FILE

    def init(self) -> None:
        """Initialise the working directory: without ``backend_config`` the local state file under
        ``state_dir`` (``-state``); with it, the backend the root module declares (a gitignored
        ``backend_override.tf``), configured from that file."""
        if self.backend_config is None:
            self._run("init", "-backend=false", "-input=false")
            return
        if not Path(self.backend_config).is_file():
            raise TerraformError(f"backend config {self.backend_config}: no such file")
        self._run("init", "-input=false", "-reconfigure", f"-backend-config={Path(self.backend_config).resolve()}")

    def _state_args(self) -> list[str]:
        return [] if self.backend_config else [f"-state={self.state_path / 'terraform.tfstate'}"]

    def plan(self, destroy: bool = False) -> bool:
        """Save a plan (``plan -out``) of what apply would change; returns whether it changes anything."""
        self.plan_path.unlink(missing_ok=True)
        code = self._run("plan", "-input=false", "-detailed-exitcode", f"-out={self.plan_path}", *self._state_args(),
                         *(["-destroy"] if destroy else []), *self._var_args(), changes_code=2)
        return code == 2

    def apply_plan(self) -> None:
        """Apply the plan :meth:`plan` saved, exactly (nothing is re-planned in between)."""
        if not self.plan_path.is_file():
            raise TerraformError(f"terraform apply ({self._name}): no saved plan at {self.plan_path}")
        try:
            self._run("apply", "-input=false", *self._state_args(), str(self.plan_path))
        finally:
            self.plan_path.unlink(missing_ok=True)

    def apply(self) -> bool:
        """Plan, then apply that saved plan when it changes something; returns whether it did."""
        changes = self.plan()
        if changes:
            self.apply_plan()
        return changes

    def destroy(self) -> bool:
        """A destroy plan, then that plan applied; returns whether anything was destroyed."""
        changes = self.plan(destroy=True)
        if changes:
            self.apply_plan()
        return changes

    def output(self) -> dict[str, Any]:
        """Output name -> value (``terraform output -json``, values only)."""
        text = self._run_quiet("output", "-json", *self._state_args())
        try:
            return {name: entry["value"] for name, entry in json.loads(text or "{}").items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            raise TerraformError(f"terraform output ({self._name}): not the JSON of outputs") from None

    @property
    def _name(self) -> str:
        return str(self.directory)

    def declared(self) -> set[str]:
        """The variables the configuration declares (its top-level .tf files)."""
        names: set[str] = set()
        for path in Path(self.directory).glob("*.tf"):
            names.update(re.findall(r'^variable\s+"([^"]+)"', path.read_text(encoding="utf-8"), re.MULTILINE))
        return names

    def _var_args(self) -> list[str]:
        if not self.variables:
            return []
        # Terraform only warns of a value for an undeclared variable: a misspelt name would be ignored.
        unknown = sorted(set(self.variables) - self.declared())
        if unknown:
            raise TerraformError(f"{self._name}: no variable {', '.join(unknown)} (it declares "
                                 f"{', '.join(sorted(self.declared())) or 'none'})")
        # A file rather than -var flags: lists and maps pass as JSON, and nothing lands in `ps`.
        path = self.state_path / "variables.tfvars.json"
        _write_private(path, json.dumps(dict(self.variables), indent=2, sort_keys=True))
        return [f"-var-file={path}"]

    def _env(self) -> dict[str, str]:
        directory = Path(self.directory)
        if not (directory.is_dir() and any(directory.glob("*.tf"))):
            raise TerraformError(f"terraform: {directory} is not a Terraform configuration (no .tf file)")
        self.state_path.mkdir(mode=0o700, parents=True, exist_ok=True)
        _make_private(self.state_path)
        return {**os.environ, "TF_DATA_DIR": str(self.state_path / ".terraform"), "TF_IN_AUTOMATION": "1",
                "TF_INPUT": "0", "CHECKPOINT_DISABLE": "1"}

    def _run_quiet(self, command: str, *args: str) -> str:
        """A command whose stdout is read by the machine (``output -json``); warnings (a missing CLI
        config) go to stderr and are ignored."""
        env = self._env()
        cmd = [terraform_binary(), f"-chdir={self.directory}", command, "-no-color", *args]
        done = subprocess.run(cmd, capture_output=True, env=env, text=True, stdin=subprocess.DEVNULL, umask=PRIVATE_UMASK)
        if done.returncode != 0:
            raise TerraformError(f"terraform {command} ({self._name}): {error_line(done.stderr + done.stdout)}")
        return done.stdout

    def _run(self, command: str, *args: str, changes_code: int | None = None) -> int:
        """``terraform <command> -json``: its messages to the log, its first error diagnostic as the
        one-line error. Returns the exit code (0, or ``changes_code`` when that one means success)."""
        env = self._env()
        cmd = [terraform_binary(), f"-chdir={self.directory}", command, "-no-color", "-json", *args]
        # stderr apart: the CLI config warnings Terraform prints there are not JSON and not errors.
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
                              stdin=subprocess.DEVNULL, umask=PRIVATE_UMASK) as process:
            errors, plain = read_json_lines(process.stdout, self.log)
            stderr = process.stderr.read()
            rc = process.wait()
        if rc == 0 or (changes_code is not None and rc == changes_code):
            return rc
        if errors:
            raise TerraformError(f"terraform {command} ({self._name}): {diagnostic_line(errors[0])}")
        raise TerraformError(f"terraform {command} ({self._name}): {error_line(chr(10).join(plain) + chr(10) + stderr)}")


PRIVATE_UMASK = 0o077
"""Terraform runs with this umask: the state files it writes (addresses, and the secrets a provider
returns) are 0600, its working files 0700."""


def _make_private(state_dir: Path) -> None:
    """The state directory 0700 and the state files already in it 0600 (Terraform keeps the mode of a
    state file it rewrites, so one written 0644 before stays 0644 otherwise)."""
    state_dir.chmod(0o700)
    for state in state_dir.glob("*.tfstate*"):
        if state.is_file() and not state.is_symlink():
            state.chmod(0o600)


def _write_private(path: Path, text: str) -> None:
    """``path`` holds ``text``, replaced whole, readable by its owner only (0600): rendered inventories and
    variable files may hold passwords."""
    with replacing(path) as tmp:
        os.chmod(tmp, 0o600)  # replacing() created it; private before any byte is in it
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)


def write_inventory(files: Mapping[str, str], directory: Path | str) -> list[Path]:
    """Write ``files`` (inventory path -> content) under ``directory``; returns the files written.

    A file whose YAML already says the same is left as it is, with its comments (inventories/local
    is both committed and what examples/local renders)."""
    directory = Path(directory)
    written = []
    for name, text in sorted(files.items()):
        relative = PurePosixPath(name)
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise TerraformError(f"{INVENTORY_OUTPUT}: {name!r} is not a path inside the inventory directory")
        target = directory.joinpath(*relative.parts)
        if target.is_file():
            try:
                if yaml.safe_load(target.read_text(encoding="utf-8")) == yaml.safe_load(text):
                    target.chmod(0o600)  # kept as it is, but no longer readable by others
                    continue
            except yaml.YAMLError:
                pass  # not YAML (or broken): replaced below
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_private(target, text)  # whole or not at all: a killed provision leaves no half inventory
        written.append(target)
    return written


def provision(example: Path | str, inventory_dir: Path | str, variables: Mapping[str, Any] | None = None,
              state_dir: Path | None = None, log: Callable[[str], None] | None = None,
              backend_config: Path | None = None) -> Inventory:
    """Plan ``example``, apply that saved plan (when it changes anything) and write the inventory it
    renders into ``inventory_dir``; returns it loaded."""
    tf = Terraform(Path(example), variables or {}, state_dir, log, backend_config)
    tf.init()
    tf.apply()
    outputs = tf.output()
    files = outputs.get(INVENTORY_OUTPUT)
    if not isinstance(files, dict) or not files:
        hint = outputs.get("next_step")
        # CloudLab's first step: the parameters to start its profile with, here rather than in a state file.
        bindings = outputs.get("profile_bindings")
        raise TerraformError(f"{example}: no inventory rendered yet (output {INVENTORY_OUTPUT} is empty)"
                             + (f"; {hint}" if isinstance(hint, str) else "")
                             + (f"; profile_bindings: {json.dumps(bindings, sort_keys=True)}" if bindings else ""))
    write_inventory(files, inventory_dir)
    production = outputs.get(PRODUCTION_OUTPUT) or {}
    if production:
        write_inventory(production, production_dir(inventory_dir))
    return Inventory.load(inventory_dir)


def destroy(example: Path | str, variables: Mapping[str, Any] | None = None, state_dir: Path | None = None,
            log: Callable[[str], None] | None = None, backend_config: Path | None = None) -> None:
    """Give back what applying ``example`` took, through a saved destroy plan (the inventory directory
    stays: it may be committed)."""
    tf = Terraform(Path(example), variables or {}, state_dir, log, backend_config)
    tf.init()
    tf.destroy()


@dataclass(frozen=True)
class TerraformProvider:
    """A platform provisioned by one of terraform/examples (local, ec2, grid5000, cloudlab)."""

    example: Path
    inventory_dir: Path
    variables: Mapping[str, Any] = field(default_factory=dict)
    state_dir: Path | None = None
    name: str = "terraform"
    log: Callable[[str], None] | None = None
    """Called with each line Terraform prints."""
    backend_config: Path | None = None
    """``-backend-config`` file of a remote backend (:attr:`Terraform.backend_config`)."""

    @classmethod
    def of(cls, platform: str, inventory_dir: Path, variables: Mapping[str, Any] | None = None,
           examples: Path = EXAMPLES, state_dir: Path | None = None,
           log: Callable[[str], None] | None = None, backend_config: Path | None = None) -> TerraformProvider:
        """The provider of ``terraform/examples/<platform>``; one line listing them for an unknown one."""
        known = sorted(p.name for p in Path(examples).iterdir() if p.is_dir()) if Path(examples).is_dir() else []
        if platform not in known:
            raise TerraformError(f"platform {platform!r}: expected one of {', '.join(known) or '(none found)'} "
                                 f"(directories of {examples})")
        return cls(Path(examples) / platform, Path(inventory_dir), dict(variables or {}), state_dir, name=platform,
                   log=log, backend_config=backend_config)

    def provision(self) -> Inventory:
        return provision(self.example, self.inventory_dir, self.variables, self.state_dir, self.log,
                         self.backend_config)

    def destroy(self, inventory: Inventory | None) -> None:
        destroy(self.example, self.variables, self.state_dir, self.log, self.backend_config)

"""Providers: one per platform, the same small surface (provision -> an inventory; destroy).

A provider brings machines up and says where they are; it knows nothing of Flink. What it hands
back is an :class:`Inventory`: the Ansible inventory directory every service deploys from (hosts,
``group_vars/all.yml``) and what the testbed built on it offers the planner (``testbed.yml``).
This machine is the first provider (:mod:`streambed.infra.local`); a cloud or bare-metal one
provisions nodes, writes their inventory and returns it in the same shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Protocol, runtime_checkable

import yaml

from ..errors import UserError
from ..files import load_yaml, read_input_text
from .ansible import inventory_settings

TESTBED_FILE = "testbed.yml"
"""Beside the Ansible inventory: what the testbed offers the planner (read by the controller only)."""


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class Inventory:
    """An Ansible inventory directory with its settings, as a deployment and a testbed read them."""

    path: Path
    """The inventory directory (hosts, group_vars/, testbed.yml): what ansible-playbook gets."""
    settings: Mapping[str, Any]
    """``group_vars/all.yml`` rendered (``{{ inventory_dir }}`` resolved), extra variables over it:
    the values the playbook sees."""
    testbed: Mapping[str, Any]
    """``testbed.yml``: slots, memory per slot, source tasks, scrape interval on offer."""
    extra_vars: Mapping[str, Any] = field(default_factory=lambda: _frozen({}))
    """Variables given on top of the inventory's, as ``ansible-playbook -e`` does (ports and a state
    directory of a deployment of its own, say); every deployment from this inventory passes them."""

    @classmethod
    def load(cls, path: Path | str, option: str = "--inventory") -> Inventory:
        """The inventory at ``path`` (its directory, or a file in it). A missing directory or file is
        one line naming ``option`` and the path."""
        path = Path(path).expanduser()
        directory = path.parent if path.is_file() else path
        if not directory.is_dir():
            raise UserError(f"{option}: no inventory at {path} (expected a directory with hosts, "
                            f"group_vars/all.yml and {TESTBED_FILE})")
        directory = directory.resolve()
        for needed in ("group_vars/all.yml", TESTBED_FILE):
            if not (directory / needed).is_file():
                raise UserError(f"{option}: {directory} is not a testbed inventory: {needed} is missing")
        return cls(directory, _frozen(inventory_settings(directory)), _frozen(_read_mapping(directory / TESTBED_FILE)))

    def with_vars(self, extra_vars: Mapping[str, Any] | None) -> Inventory:
        """The same inventory with ``extra_vars`` over its variables (and over earlier extra variables)."""
        if not extra_vars:
            return self
        return replace(self, settings=_frozen({**self.settings, **extra_vars}),
                       extra_vars=_frozen({**self.extra_vars, **extra_vars}))

    def path_setting(self, key: str) -> Path:
        """A path the inventory sets (``group_vars/all.yml``); one line naming the key when it does not."""
        value = self.settings.get(key)
        if not isinstance(value, str) or not value:
            raise UserError(f"inventory {self.path}: group_vars/all.yml must set {key} (a path)")
        return Path(value)

    @property
    def playbook(self) -> Path:
        """The playbook that deploys (and stops) the testbed's services; one line when it is missing,
        so that a command can check it before it says what it is about to do."""
        playbook = self.path_setting("streambed_playbook")
        if not playbook.is_file():
            raise UserError(f"inventory {self.path}: streambed_playbook {playbook}: no such file")
        return playbook


@runtime_checkable
class Provider(Protocol):
    """A platform: bring its machines up as an inventory, take them down again."""

    name: str

    def provision(self) -> Inventory:
        """Machines up (or found) and their inventory written; returns it."""

    def destroy(self, inventory: Inventory) -> None:
        """Stop what runs on the inventory's machines and give back what provision took."""


def _read_mapping(path: Path) -> dict[str, Any]:
    try:
        data = load_yaml(read_input_text(path), str(path)) or {}  # bounded: size, nesting, aliases
    except UserError as e:
        raise UserError(f"testbed: {e}") from None
    except RecursionError:
        raise UserError(f"testbed: {path}: YAML nested too deeply") from None
    except yaml.YAMLError as e:
        raise UserError(f"testbed: {path} is not valid YAML ({getattr(e, 'problem', e)})") from None
    if not isinstance(data, dict):
        raise UserError(f"testbed: {path} must be a mapping")
    return data

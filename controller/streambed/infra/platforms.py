"""Platforms by name (``--env``, ``make provision ENV=...``): each is a root module of
terraform/examples and the inventory ``inventories/<name>`` it renders. ``local`` provisions nothing:
its example renders the committed inventories/local as it is."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping

from ..errors import UserError
from ..files import read_input_text
from .provider import Inventory
from .terraform import BACKEND_CONFIG_ENV, TerraformProvider, production_dir

INVENTORIES = Path("inventories")
"""Where each platform's inventory is written, relative to the repository's root (where make runs)."""


def inventory_dir(env: str, inventory: Path | None = None) -> Path:
    """``inventory`` if given, else inventories/<env>."""
    return Path(inventory) if inventory else INVENTORIES / env


def variables_of(var_file: Path | None) -> dict[str, Any]:
    """Terraform variables from a JSON file (``--var-file``); one line when it is not a JSON object."""
    if var_file is None:
        return {}
    try:
        data = json.loads(read_input_text(Path(var_file)))
    except ValueError as e:
        raise UserError(f"--var-file: {var_file} is not JSON ({e})") from None
    if not isinstance(data, dict):
        raise UserError(f"--var-file: {var_file} must hold a JSON object of variable -> value")
    return data


def terraform_provider(env: str, inventory: Path | None = None, var_file: Path | None = None,
                       log: Callable[[str], None] | None = None,
                       environ: Mapping[str, str] = os.environ) -> TerraformProvider:
    """The provider of ``env`` (one line listing the platforms for an unknown one); its state in the
    backend ``STREAMBED_TF_BACKEND_CONFIG`` configures (``make ... BACKEND_CONFIG=<file>``), else local."""
    backend = environ.get(BACKEND_CONFIG_ENV) or None
    return TerraformProvider.of(env, inventory_dir(env, inventory), variables_of(var_file), log=log,
                                backend_config=Path(backend) if backend else None)


def inventory_of(env: str, inventory: Path | None = None, must_exist: bool = True) -> Inventory | None:
    """The inventory ``env`` provisioned; one line saying to provision first when there is none (or
    None when ``must_exist`` is false)."""
    path = inventory_dir(env, inventory)
    if not path.is_dir():
        if not must_exist:
            return None
        raise UserError(f"--env {env}: no inventory at {path}; provision first (make provision ENV={env})")
    return Inventory.load(path, option="--env")


def inventories_of(env: str, inventory: Path | None = None, must_exist: bool = True) -> list[Inventory]:
    """The testbed's inventory of ``env`` and, when provision rendered one, the production cluster's
    beside it (``<inventory>-production``): what ``make deploy`` and ``make destroy`` act on."""
    testbed = inventory_of(env, inventory, must_exist)
    if testbed is None:
        return []
    production = production_dir(testbed.path)
    return [testbed, Inventory.load(production, option="--env")] if production.is_dir() else [testbed]

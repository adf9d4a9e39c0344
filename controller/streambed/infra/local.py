"""This machine as a platform: the local provider and the "flink" testbed factory.

The inventory (``inventories/local`` by default) is the single source of the local testbed's
settings: its ``group_vars/all.yml`` says what Ansible deploys (ports, state directory, playbook,
job jar, queries) and its ``testbed.yml`` what the testbed offers the planner. Which inventory is
configuration: ``--inventory``, else the STREAMBED_INVENTORY environment variable, else
``inventories/local`` under the current directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping

from ..errors import UserError
from ..extras import missing_extra
from ..testbed.base import TestbedRequest
from ..testbed.flink import FlinkTestbed
from .provider import Inventory
from ..dataset import check_fits
from .services import FlinkService, flink_settings, flink_testbed

INVENTORY_VARIABLE = "STREAMBED_INVENTORY"
"""The environment variable naming the inventory when --inventory is not given."""
DEFAULT_INVENTORY = Path("inventories") / "local"
"""The inventory when neither --inventory nor STREAMBED_INVENTORY is given, relative to the current
directory (the repository's root, where make runs)."""


def default_inventory(environ: Mapping[str, str] = os.environ) -> Path:
    """STREAMBED_INVENTORY if set, else inventories/local relative to the current directory."""
    return Path(environ.get(INVENTORY_VARIABLE) or DEFAULT_INVENTORY)


@dataclass(frozen=True)
class LocalProvider:
    """This machine: nothing to create; its inventory must exist (connection local)."""

    inventory: Path
    name: str = "local"

    def provision(self) -> Inventory:
        """The local inventory, checked; nothing is created (the machine is already here)."""
        return Inventory.load(self.inventory)

    def destroy(self, inventory: Inventory) -> None:
        """Stop Flink and Prometheus; the machine itself stays."""
        FlinkService(inventory).destroy()


def create_testbed(request: TestbedRequest, log: Callable[[str], None] | None = None) -> FlinkTestbed:
    """The registry's "flink": the Flink testbed of ``request.inventory`` (default: :func:`default_inventory`),
    with ``request.query`` checked against what Flink builds before any campaign starts."""
    if request.profile:
        raise UserError("--profile: only the simulated testbed takes a profile (--testbed sim)")
    inventory = LocalProvider(request.inventory or default_inventory()).provision()
    try:
        settings = flink_settings(inventory)
        if request.replay is not None:
            # The replay's bound caps what the estimator may ask (its warm-up asks max_source_rate):
            # a job never replays more than the data set holds (campaigns.base.replay_of).
            settings = replace(settings, replay_dir=request.replay.dataset.replay_dir.resolve(),
                               max_source_rate=min(settings.max_source_rate, request.replay.max_rate))
        testbed = flink_testbed(inventory, log, settings)
    except ModuleNotFoundError as e:
        raise missing_extra("--testbed flink", e) or UserError(
            f"--testbed flink: the Flink testbed needs PyFlink (the apache-flink package), but "
            f"module {e.name or 'pyflink'} is not installed; run make install") from None
    testbed.query(request.query)  # checks the query file and its graph before any campaign starts
    if request.replay is not None:
        check_fits(request.replay.dataset, request.query, testbed.sql(request.query))
    return testbed


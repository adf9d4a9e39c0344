"""Services deployed from an inventory: Flink and the Prometheus that watches it.

Whatever the provider, the testbed is built the same way from its inventory:

* :class:`FlinkService` applies the inventory's playbook (``streambed_playbook``: the ``flink`` and
  ``prometheus`` roles) with a budget's slots and memory per slot, or stops both;
* :func:`flink_settings` reads the testbed's settings from the inventory (REST and Prometheus
  addresses from ``group_vars/all.yml``, what it offers from ``testbed.yml``, the job's jar and
  queries from ``streambed_job_jar`` / ``streambed_queries_dir``);
* :func:`flink_testbed` puts the two together: a FlinkTestbed whose ``deploy`` is the service.

Flink and Prometheus come as one service because the testbed cannot measure without both.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from ..errors import UserError
from ..model import Budget
from ..testbed.flink import FlinkSettings, FlinkTestbed
from .ansible import PlaybookResult, run_playbook
from .provider import Inventory


class FlinkService:
    """Flink and Prometheus on an inventory's hosts, through its playbook.

    An instance is the FlinkTestbed's ``deploy`` callback: called with a budget, it (re)applies the
    roles with that memory per slot; only the TaskManagers restart (the paper: a redeploy takes
    under a minute)."""

    def __init__(self, inventory: Inventory, log: Callable[[str], None] | None = None):
        self.inventory = inventory
        self.log = log

    def deploy(self, budget: Budget, source_parallelism: int, cpu_per_slot: float = 0.0,
               slots_per_taskmanager: int = 0) -> PlaybookResult:
        """Flink with ``budget.slots`` slots for operators plus ``source_parallelism`` for the
        sources, each of ``budget.memory_mb`` and ``cpu_per_slot`` cores, in TaskManagers of
        ``slots_per_taskmanager`` slots (0: one TaskManager); Prometheus scraping it. Starts what is
        not running."""
        return self._apply({"flink_memory_per_slot_mb": budget.memory_mb, "flink_cpu_per_slot": cpu_per_slot,
                            **taskmanagers(budget.slots + source_parallelism, slots_per_taskmanager)})

    def destroy(self) -> PlaybookResult:
        """Stop Flink and Prometheus (their state directory stays, for the logs)."""
        return self._apply({"flink_state": "stopped", "prometheus_state": "stopped"})

    def _apply(self, variables: dict) -> PlaybookResult:
        # Only the testbed's plays (flink, prometheus): a cluster's Kafka, Spark and Grafana stay as
        # they are when a budget changes (site.yml's `testbed` tag).
        return _apply(self.inventory, variables, self.log, tags="testbed")


SERVICES = ("flink", "prometheus", "kafka", "spark", "node_exporter", "grafana")
"""The roles of ansible/site.yml that run processes, each stopped by ``<service>_state: stopped``."""


class SiteService:
    """Every service of an inventory (``make deploy ENV=...``): site.yml applied whole, each play on
    the hosts of its groups (ansible/site.yml says which services an inventory runs)."""

    def __init__(self, inventory: Inventory, log: Callable[[str], None] | None = None):
        self.inventory = inventory
        self.log = log

    def deploy(self) -> PlaybookResult:
        """Install, configure and start every service of the inventory; idempotent."""
        return _apply(self.inventory, {}, self.log)

    def destroy(self) -> PlaybookResult:
        """Stop every service (state directories, logs and data stay)."""
        return _apply(self.inventory, {f"{s}_state": "stopped" for s in SERVICES}, self.log)


def _apply(inventory: Inventory, variables: dict, log: Callable[[str], None] | None,
           tags: str | None = None) -> PlaybookResult:
    """The inventory's playbook (its plays of ``tags`` only, when given) with its extra variables and
    ``variables`` over them; each task and what the roles said go to ``log``."""
    on_task = (lambda task: log(f"ansible: {task}")) if log else None
    result = run_playbook(inventory.playbook, inventory.path, {**inventory.extra_vars, **variables}, on_task=on_task,
                          **({"tags": tags} if tags else {}))
    if log:
        for message in result.messages:
            log(message)
    return result


def taskmanagers(slots: int, slots_per_taskmanager: int) -> dict:
    """The flink role's TaskManager count for the whole cluster and slots per TaskManager for
    ``slots`` slots in all (rounded up to whole TaskManagers). The role shares the count out over
    the ``taskmanagers`` hosts: a budget is the cluster's, however many hosts it has."""
    per = slots_per_taskmanager if slots_per_taskmanager > 0 else slots
    return {"flink_cluster_taskmanagers": -(-slots // per), "flink_taskmanager_slots": per}


def flink_home() -> Path:
    """The Flink distribution the controller runs the job's ``--explain`` with: PyPI's (make install)."""
    import pyflink

    return Path(os.path.dirname(pyflink.__file__))


def flink_settings(inventory: Inventory) -> FlinkSettings:
    """The Flink testbed's settings, all from the inventory; one line naming the file when one is
    missing or malformed."""
    v, t = inventory.settings, inventory.testbed
    try:
        settings = FlinkSettings(
            rest_url=f"http://{v['flink_rest_address']}:{int(v['flink_rest_port'])}",
            prometheus_url=f"http://{v['prometheus_listen_host']}:{int(v['prometheus_port'])}",
            flink_home=flink_home(),
            jar=inventory.path_setting("streambed_job_jar"),
            queries_dir=inventory.path_setting("streambed_queries_dir"),
            state_dir=inventory.path_setting("streambed_state_dir"),
            max_slots=int(t["max_slots"]),
            memory_per_slot=tuple(int(m) for m in t["memory_per_slot_mb"]),
            source_parallelism=int(t.get("source_parallelism", 1)),
            source_partitions=int(t["source_partitions"]) if t.get("source_partitions") is not None else None,
            max_source_rate=float(t.get("max_source_rate", 4e6)),
            sample_period=float(t.get("sample_period_s", 1)),
            cpu_per_slot=float(t.get("cpu_per_slot", 0)),
            slots_per_taskmanager=int(t.get("slots_per_taskmanager", 0)),
        )
        if settings.cpu_per_slot != 0 and not 0.01 <= settings.cpu_per_slot <= 64:
            raise UserError(f"testbed: {inventory.path}: cpu_per_slot {settings.cpu_per_slot:g}: expected 0 "
                            f"(unconfined) or cores per slot from 0.01 to 64")
        if settings.source_partitions is not None and settings.source_partitions < 1:
            raise UserError(f"testbed: {inventory.path}: source_partitions {settings.source_partitions}: expected "
                            f"the source topic's partitions (a positive count), or no setting when unknown")
        if settings.slots_per_taskmanager < 0:
            raise UserError(f"testbed: {inventory.path}: slots_per_taskmanager {settings.slots_per_taskmanager}: "
                            f"expected 0 (one TaskManager) or a positive count")
        return settings
    except KeyError as e:
        raise UserError(f"testbed: {inventory.path}: missing setting {e.args[0]} (group_vars/all.yml or "
                        f"testbed.yml)") from None
    except (TypeError, ValueError) as e:
        raise UserError(f"testbed: {inventory.path}: bad setting ({e})") from None


def flink_testbed(inventory: Inventory, log: Callable[[str], None] | None = None,
                  settings: FlinkSettings | None = None) -> FlinkTestbed:
    """The Flink testbed of an inventory, deploying through its playbook when a budget needs it
    (``settings``: instead of the inventory's own, for tests)."""
    settings = settings or flink_settings(inventory)
    service = FlinkService(inventory, log)
    return FlinkTestbed(settings, deploy=lambda budget: service.deploy(
        budget, settings.source_parallelism, settings.cpu_per_slot, settings.slots_per_taskmanager), log=log)

"""The local Flink testbed: settings from inventories/local, deployment through Ansible.

The inventory's ``group_vars/all.yml`` (what Ansible deploys: ports, state directory) and its
``testbed.yml`` (what the testbed offers the planner: slots, memory profiles) are the single source of
the local testbed's settings; nothing here hard-codes a port or a path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import yaml

from ..errors import UserError
from ..model import Budget
from ..testbed.flink import FlinkSettings, FlinkTestbed
from .ansible import inventory_settings, run_playbook

REPO = Path(__file__).resolve().parents[3]
"""The repository (controller/streambed/infra/local.py -> ../../../)."""


def _load(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise UserError(f"testbed: {path} not found") from None
    except yaml.YAMLError as e:
        raise UserError(f"testbed: {path} is not valid YAML ({getattr(e, 'problem', e)})") from None
    if not isinstance(data, dict):
        raise UserError(f"testbed: {path} must be a mapping")
    return data


def flink_home() -> Path:
    import pyflink

    return Path(os.path.dirname(pyflink.__file__))


def settings(inventory: Path | None = None, repo: Path = REPO, overrides: dict | None = None) -> FlinkSettings:
    """The testbed's settings; ``overrides`` are Ansible variables that replace the inventory's
    (ports, state directory: how the integration tests deploy a testbed of their own)."""
    inventory = inventory or repo / "inventories" / "local"
    v = {**inventory_settings(inventory), **(overrides or {})}
    t = _load(inventory / "testbed.yml")
    try:
        return FlinkSettings(
            rest_url=f"http://{v.get('flink_rest_address', 'localhost')}:{int(v['flink_rest_port'])}",
            prometheus_url=f"http://{v.get('prometheus_listen_host', '127.0.0.1')}:{int(v['prometheus_port'])}",
            flink_home=flink_home(),
            jar=repo / "flink" / "build" / "streambed-job.jar",
            queries_dir=repo / "flink" / "queries",
            state_dir=Path(v["streambed_state_dir"]),
            max_slots=int(t["max_slots"]),
            memory_per_slot=tuple(int(m) for m in t["memory_per_slot_mb"]),
            source_parallelism=int(t.get("source_parallelism", 1)),
            max_source_rate=float(t.get("max_source_rate", 4e6)),
            sample_period=float(t.get("sample_period_s", 1)),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise UserError(f"testbed: {inventory}: missing or bad setting ({e})") from None


def local_testbed(inventory: Path | None = None, log: Callable[[str], None] | None = None,
                  repo: Path = REPO, overrides: dict | None = None) -> FlinkTestbed:
    """The Flink testbed of this machine; a budget with another memory per slot redeploys the
    TaskManager through the Ansible roles (the paper: a redeploy takes under a minute)."""
    inventory = inventory or repo / "inventories" / "local"
    s = settings(inventory, repo, overrides)

    def deploy(budget: Budget) -> None:
        run_playbook(repo / "ansible" / "site.yml", inventory,
                     {**(overrides or {}), "flink_memory_per_slot_mb": budget.memory_mb,
                      "flink_taskmanager_slots": budget.slots + s.source_parallelism},
                     on_task=(lambda task: log(f"ansible: {task}")) if log else None)

    return FlinkTestbed(s, deploy=deploy, log=log)

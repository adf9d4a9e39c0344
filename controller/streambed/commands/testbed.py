"""``streambed testbed stop``: stop what a Flink campaign left running (the testbed stays up
between campaigns, so that the next one does not wait for a deployment)."""

from __future__ import annotations

from pathlib import Path

from ..report.console import Output
from .args import Parser
from .common import output_options


def register(sub) -> None:
    sp = sub.add_parser("testbed", help="the Flink testbed of an inventory: stop what runs")
    tsub = sp.add_subparsers(dest="testbed_command", required=True, parser_class=Parser)
    stop = tsub.add_parser("stop", help="stop the inventory's Flink cluster and Prometheus (the state directory "
                                        "with its logs stays)")
    stop.add_argument("--inventory", type=Path, help="the testbed's Ansible inventory (default: "
                                                     "$STREAMBED_INVENTORY, else inventories/local)")
    output_options(stop)
    stop.set_defaults(func=cmd_stop)


def cmd_stop(args, out: Output) -> None:
    from ..infra.local import LocalProvider, default_inventory

    path = args.inventory or default_inventory()
    provider = LocalProvider(path)
    inventory = provider.provision()
    inventory.playbook  # checked before anything is said: a missing playbook is one line
    out.info(f"stopping Flink and Prometheus of {path}")
    provider.destroy(inventory)
    out.info("stopped")
    out.result({"inventory": str(path), "stopped": ["flink", "prometheus"]})

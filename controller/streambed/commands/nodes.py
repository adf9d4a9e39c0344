"""``streambed nodes``: node-level operations on an inventory's hosts (infra/nodes.py does the work;
this parses and displays): collect Flink's logs, check the data disks, stop a TaskManager for a
fault test, read a Kafka topic's end offsets."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..report.console import Output
from .args import Parser, count
from .common import output_options


def _gb(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1e6:
        raise argparse.ArgumentTypeError(f"expected GB from 0 to 1000000 such as 20, got {text!r:.60}")
    return value


def register(sub) -> None:
    sp = sub.add_parser("nodes", help="commands on the inventory's hosts: logs, disks, stop a TaskManager, "
                                      "Kafka offsets")
    nsub = sp.add_subparsers(dest="nodes_command", required=True, parser_class=Parser)

    def command(name: str, help: str, func) -> argparse.ArgumentParser:
        p = nsub.add_parser(name, help=help)
        p.add_argument("--inventory", type=Path, help="the testbed's Ansible inventory (default: "
                                                      "$STREAMBED_INVENTORY, else inventories/local)")
        p.set_defaults(func=func)
        return p

    logs = command("logs", "copy Flink's log directory of every JobManager and TaskManager host into "
                           "DEST/<host>/", cmd_logs)
    logs.add_argument("--dest", type=Path, required=True, help="directory to copy the logs into")
    disks = command("disks", "free space of each host's data directories (state directory, Kafka log "
                             "directories)", cmd_disks)
    disks.add_argument("--min-free-gb", type=_gb, default=10.0, help="GB (10^9 bytes) a directory needs free")
    disks.add_argument("--path", action="append", dest="paths", metavar="PATH",
                       help="check this directory on every host instead (repeatable)")
    stop = command("stop-taskmanager", "kill one TaskManager of the inventory's Flink on HOST (fault tests)",
                   cmd_stop_taskmanager)
    stop.add_argument("host", help="a host of the taskmanagers group")
    stop.add_argument("--which", type=count, default=1, help="which of the host's TaskManagers, in PID order")
    stop.add_argument("--signal", choices=("KILL", "TERM"), default="KILL",
                      help="KILL: a crash; TERM: a clean shutdown")
    offsets = command("offsets", "end offsets of a Kafka topic per partition, read on a kafka host", cmd_offsets)
    offsets.add_argument("topic", help="the topic")
    offsets.add_argument("--host", help="the kafka host to run Kafka's tool on (default: the group's first)")
    offsets.add_argument("--bootstrap-server", help="brokers, host:port[,...] (default: the inventory's "
                                                    "kafka_bootstrap_servers)")
    for p in (logs, disks, stop, offsets):
        output_options(p)


def _inventory(args):
    from ..infra.local import default_inventory
    from ..infra.provider import Inventory

    return Inventory.load(args.inventory or default_inventory())


def cmd_logs(args, out: Output) -> None:
    from ..infra.nodes import collect_logs

    inventory = _inventory(args)
    out.status(f"collecting Flink's logs of {inventory.path}")
    collected = collect_logs(inventory, args.dest)
    out.table(f"Logs in {args.dest}", ["Host", "Log directory", "Files", "MB"],
              [[c.host, c.log_dir + (" (missing)" if c.missing else ""), len(c.files), c.bytes / 1e6]
               for c in collected])
    out.result({"inventory": str(inventory.path), "dest": str(args.dest),
                "hosts": [{**vars(c), "files": list(c.files)} for c in collected]})


def cmd_disks(args, out: Output) -> None:
    from ..infra.nodes import check_disks

    report = check_disks(_inventory(args), args.min_free_gb, args.paths)
    out.table(f"Free disk space (minimum {args.min_free_gb:g} GB)", ["Host", "Directory", "File system", "Free GB",
                                                                     "Total GB", "OK"],
              [[d.host, d.path, d.mount, d.free_gb, d.total_gb, "yes" if d.ok else "NO"] for d in report.disks])
    for line in report.verdicts():
        out.warn(line)
    if report.ok:
        out.info(f"every directory has at least {args.min_free_gb:g} GB free")
    out.result(report.as_dict())


def cmd_stop_taskmanager(args, out: Output) -> None:
    from ..infra.nodes import stop_taskmanager

    stopped = stop_taskmanager(_inventory(args), args.host, args.which, args.signal)
    out.info(f"{stopped.host}: TaskManager {stopped.pid} stopped with SIG{stopped.signal} in {stopped.seconds:g} s; "
             f"{len(stopped.remaining)} TaskManager(s) left there")
    out.result({**vars(stopped), "before": list(stopped.before), "remaining": list(stopped.remaining)})


def cmd_offsets(args, out: Output) -> None:
    from ..infra.nodes import kafka_end_offsets

    offsets = kafka_end_offsets(_inventory(args), args.topic, args.host, args.bootstrap_server)
    out.table(f"End offsets of {offsets.topic} (read on {offsets.host})", ["Partition", "End offset"],
              list(offsets.partitions.items()))
    out.info(f"{len(offsets.partitions)} partitions, {offsets.total:,} records in all")
    out.result(offsets.as_dict())

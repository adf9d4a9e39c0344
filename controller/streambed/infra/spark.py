"""An inventory's Spark cluster as a driver on the controller sees it: the master to submit to, the
shared lake the spark role made (``spark_lake_dir``), the service user the executors run as, and this
machine's address toward the master (where the executors call the driver back).

The executors write the lake as the Spark service user; the driver makes the data set's staging
directories and commits (renames) what the executors wrote. The spark role makes the lake the service
user's and group's, setgid and group-writable (2775), and both sides create with a group-writable umask
(:data:`UMASK`), so that whatever one makes the other can write: the driver runs as root (``make
datagen ENV=<env>``), as that user, or as a member of its group. :func:`driver_problem` says in one
line when it cannot.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from .hosts import hosts_in, load_hosts
from .provider import Inventory

DEFAULT_MASTER_PORT = 7077
"""The spark role's ``spark_master_port`` default."""
DEFAULT_SPARK_USER = "spark"
"""The spark role's ``spark_user`` default."""


@dataclass(frozen=True)
class SparkCluster:
    """Where a driver on the controller submits, and where the data set goes."""

    master_host: str
    master_port: int
    lake: Path
    """``spark_lake_dir``: the lake on the file system the controller and every Spark host share."""
    user: str
    """The user the executors run as (``spark_user``), whom the driver must run as."""

    @property
    def master_url(self) -> str:
        return master_url(self.master_host, self.master_port)


def master_url(host: str, port: int) -> str:
    """``spark://host:port``; an IPv6 address in brackets."""
    return f"spark://[{host}]:{port}" if ":" in host else f"spark://{host}:{port}"


def spark_cluster(inventory: Inventory, option: str = "--inventory") -> SparkCluster:
    """The Spark cluster of ``inventory``; one line naming ``option`` when it has none or no lake."""
    hosts = load_hosts(inventory)
    masters = hosts_in(hosts, "spark_master")
    if not masters:
        raise UserError(f"{option} {inventory.path}: no host in the spark_master group (no Spark cluster)")
    master = masters[0]
    lake = master.setting("spark_lake_dir")
    if not lake:
        raise UserError(f"{option} {inventory.path}: spark_lake_dir is not set: the cluster has no shared lake "
                        f"(set it in group_vars, then make deploy)")
    port = master.setting("spark_master_port", DEFAULT_MASTER_PORT)
    try:
        port = int(port)
        if not 0 < port < 65536:
            raise ValueError
    except (TypeError, ValueError):
        raise UserError(f"{option} {inventory.path}: spark_master_port {port!r}: expected a port from 1 to 65535") \
            from None
    user = str(master.setting("spark_user", DEFAULT_SPARK_USER))
    return SparkCluster(master.address, port, Path(str(lake)), user)


UMASK = "002"
"""Hadoop's umask for what the driver and the executors create in the lake: group-writable, so that each
can write into and rename what the other made (the lake is setgid: everything in it is the group's)."""


def driver_problem(cluster: SparkCluster, user: str, lake_exists: bool, lake_writable: bool) -> str | None:
    """Why a driver run by ``user`` cannot share ``cluster``'s lake with its executors (one line), or None."""
    if not lake_exists:
        return (f"the lake {cluster.lake} does not exist: the spark role makes it (spark_lake_dir); "
                f"run make deploy first")
    if not lake_writable:
        return (f"the lake {cluster.lake} is not writable by {user}: the executors write it as {cluster.user}; run "
                f"the driver as root, as {cluster.user} or as a member of its group (the role makes it 2775)")
    return None


def check_driver(cluster: SparkCluster) -> None:
    """One line (UserError) when this process cannot share ``cluster``'s lake with its executors."""
    import pwd

    user = pwd.getpwuid(os.geteuid()).pw_name
    exists = cluster.lake.is_dir()
    problem = driver_problem(cluster, user, exists, exists and os.access(cluster.lake, os.W_OK | os.X_OK))
    if problem:
        raise UserError(problem)


def driver_conf(address: str) -> dict[str, str]:
    """Spark settings of a driver on the controller: the address the executors call it back at, and the
    lake's group-writable umask (the executors get the driver's Hadoop settings with each write job)."""
    return {"spark.driver.host": address, "spark.driver.bindAddress": address,
            "spark.hadoop.fs.permissions.umask-mode": UMASK}


def driver_address(cluster: SparkCluster, timeout_s: float = 5.0) -> str:
    """This machine's address on the route to the master: what the executors reach the driver at (on
    the lab, the bridge's address; no packet is sent)."""
    family = socket.AF_INET6 if ":" in cluster.master_host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.settimeout(timeout_s)
            s.connect((cluster.master_host, cluster.master_port))
            return s.getsockname()[0]
    except OSError as e:
        raise UserError(f"Spark master {cluster.master_url}: no route from this machine ({e.strerror or e})") from None

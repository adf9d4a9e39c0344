"""An inventory's Spark cluster as a driver on the controller sees it: the master to submit to, the
shared lake the spark role made (``spark_lake_dir``), the service user the executors run as, and this
machine's address toward the master (where the executors call the driver back).

The executors write the lake as the Spark service user, and the driver makes the data set's staging
directories and renames what the executors wrote; so the driver runs as that user too (as on a real
cluster's shared lake: one owner). Started as root (``make datagen ENV=<env>``, which also reads the
inventory's private files), it becomes that user before the JVM starts; :func:`driver_problem` says in
one line when neither is possible.
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


def driver_problem(cluster: SparkCluster, user: str, is_root: bool, lake_exists: bool, lake_writable: bool) -> str | None:
    """Why a driver started by ``user`` cannot write ``cluster``'s lake as its executors do (one line), or
    None when it can (as that user, or as root, which becomes that user: :func:`become_lake_owner`)."""
    if not lake_exists:
        return (f"the lake {cluster.lake} does not exist: the spark role makes it (spark_lake_dir); "
                f"run make deploy first")
    if user != cluster.user and not is_root:
        return (f"the executors write {cluster.lake} as user {cluster.user} and the driver would run as {user}: "
                f"run it as {cluster.user} or as root (which becomes {cluster.user})")
    if user == cluster.user and not lake_writable:
        return f"the lake {cluster.lake} is not writable by {user}: the spark role makes it {user}'s, mode 2775"
    return None


def become_lake_owner(cluster: SparkCluster) -> None:
    """Make this process (and the driver JVM it starts) run as the user the executors run as, so that
    both write the lake as one owner; one line (UserError) when it cannot."""
    import pwd

    user = pwd.getpwuid(os.geteuid()).pw_name
    exists = cluster.lake.is_dir()
    problem = driver_problem(cluster, user, os.geteuid() == 0, exists,
                             exists and os.access(cluster.lake, os.W_OK | os.X_OK))
    if problem:
        raise UserError(problem)
    if user == cluster.user:
        return
    try:
        owner = pwd.getpwnam(cluster.user)
    except KeyError:
        raise UserError(f"no user {cluster.user} on this machine: the driver cannot run as the executors' user "
                        f"(spark_user); create it as the spark role does") from None
    os.initgroups(owner.pw_name, owner.pw_gid)
    os.setgid(owner.pw_gid)
    os.setuid(owner.pw_uid)
    os.environ["HOME"], os.environ["USER"] = owner.pw_dir, owner.pw_name
    if not os.access(cluster.lake, os.W_OK | os.X_OK):
        raise UserError(driver_problem(cluster, owner.pw_name, False, True, False))


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

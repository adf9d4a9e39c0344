"""Data generation on a cluster's Spark (``streambed data generate --inventory``, ``make datagen
ENV=<env>``): the shared lake the spark role makes, the driver run as the executors' user, and every
failure (no lake, the wrong user, a Spark job that fails) as one line, never a traceback."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import REPO
from streambed.errors import UserError
from streambed.infra.provider import Inventory
from streambed.infra.spark import SparkCluster, driver_conf, driver_problem, master_url, spark_cluster

VENV_BIN = Path(sys.executable).parent
ROOT = os.geteuid() == 0

JAVA_TRACE = """An error occurred while calling o118.json.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 1.0 failed 4 times
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2898)
Caused by: org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed while writing rows to file:/lake/x.
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.taskFailedWhileWritingRowsError(QueryExecutionErrors.scala:774)
Caused by: java.io.IOException: Mkdirs failed to create file:/lake/.x.staging-1/.spark-json/_temporary/0/_temporary/attempt_1 (exists=false, cwd=file:/var/lib/streambed/spark/work/app-1/0)
\tat org.apache.hadoop.fs.ChecksumFileSystem.create(ChecksumFileSystem.java:515)
"""


def test_a_failed_job_is_its_innermost_cause_in_one_line():
    from streambed_spark.session import failure_line

    assert failure_line(JAVA_TRACE) == ("Mkdirs failed to create file:/lake/.x.staging-1/.spark-json/_temporary/0/"
                                        "_temporary/attempt_1 (exists=false, cwd=file:/var/lib/streambed/spark/work/app-1/0)")
    assert failure_line("[PATH_NOT_FOUND] Path does not exist: file:/nowhere.\n\nJVM stacktrace:\n...") == \
        "[PATH_NOT_FOUND] Path does not exist: file:/nowhere."
    assert failure_line("") == "no message"


CLUSTER = SparkCluster("10.0.0.5", 7077, Path("/shared/lake"), "spark")


@pytest.mark.parametrize("exists, writable, said", [
    (True, True, None),
    (False, False, "the lake /shared/lake does not exist: the spark role makes it"),
    (True, False, "the lake /shared/lake is not writable by admin: the executors write it as spark"),
])
def test_the_driver_must_share_the_lake_with_the_executors(exists, writable, said):
    problem = driver_problem(CLUSTER, "admin", exists, writable)
    if said is None:
        assert problem is None
    else:
        assert problem.startswith(said) and "\n" not in problem


def test_the_driver_creates_group_writable_and_is_reached_at_its_address():
    assert driver_conf("10.213.0.1") == {"spark.driver.host": "10.213.0.1", "spark.driver.bindAddress": "10.213.0.1",
                                         "spark.hadoop.fs.permissions.umask-mode": "002"}


def test_master_url():
    assert master_url("10.213.0.11", 7077) == "spark://10.213.0.11:7077"
    assert master_url("fd00::1", 7077) == "spark://[fd00::1]:7077"


def _inventory(root: Path, lake: str | None, master: str = "127.0.0.1") -> Path:
    inv = root / "inv"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "hosts.yml").write_text(
        "all:\n  hosts:\n    mon:\n      ansible_host: \"%s\"\n    worker:\n      ansible_host: \"127.0.0.2\"\n"
        "  children:\n    spark_master:\n      hosts:\n        mon:\n    spark_workers:\n      hosts:\n        worker:\n"
        % master)
    settings = "spark_master_port: 17077\n" + (f"spark_lake_dir: \"{lake}\"\n" if lake else "")
    (inv / "group_vars" / "all.yml").write_text(settings)
    (inv / "testbed.yml").write_text("slots: 2\n")
    return inv


def test_the_cluster_comes_from_the_inventory(tmp_path):
    cluster = spark_cluster(Inventory.load(_inventory(tmp_path, "/srv/lake")))
    assert cluster == SparkCluster("127.0.0.1", 17077, Path("/srv/lake"), "spark")
    assert cluster.master_url == "spark://127.0.0.1:17077"


def test_an_inventory_without_a_lake_is_one_line(tmp_path):
    with pytest.raises(UserError, match=r"spark_lake_dir is not set"):
        spark_cluster(Inventory.load(_inventory(tmp_path, None)))


def _generate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "streambed"), "data", "generate", "--events", "1000", *args],
                          capture_output=True, text=True, timeout=300, cwd=REPO)


def test_generate_on_an_inventory_whose_lake_was_never_made_is_one_line(tmp_path):
    done = _generate("--inventory", str(_inventory(tmp_path, str(tmp_path / "no-lake"))))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"the lake {tmp_path / 'no-lake'} does not exist" in done.stderr


def test_a_spark_job_that_fails_is_one_line_and_leaves_no_staging(spark, tmp_path, monkeypatch):
    from streambed_spark import lake, nexmark

    # a job whose tasks fail on the executors, as a write into a directory they cannot make does
    monkeypatch.setattr(nexmark, "events", lambda spark_, spec, start, end, partitions:
                        spark_.range(10).selectExpr("raise_error('the executor cannot write here') AS x"))
    with pytest.raises(UserError) as failed:
        lake.generate(spark, nexmark.StreamSpec(events=10, seed=0, rate=10.0), tmp_path, "broken", formats=("json",))
    message = str(failed.value)
    assert message.startswith(f"data generate: the Spark job writing {tmp_path / 'broken'} failed: ")
    assert "the executor cannot write here" in message and "\n" not in message
    assert list(tmp_path.iterdir()) == []  # the staging directory went with the failure


@pytest.fixture
def service_user():
    """A system user (and its group) of the test's own, as the spark role's service user is."""
    name = f"sbtest{os.getpid() % 100000}"
    subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                   check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)
        subprocess.run(["groupdel", name], capture_output=True)


def _apply_configure(tmp_path: Path, lake_dir: Path | None, user: str) -> Path:
    """The spark role's configure tasks applied to this machine; the spark-defaults.conf it rendered."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    play = tmp_path / "play.yml"
    play.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n    - ansible.builtin.include_role:\n"
                    "        name: spark\n        tasks_from: configure\n")
    state = tmp_path / "state"
    done = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(play),
         "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"streambed_state_dir={state}",
         "-e", f"streambed_config_dir={state}/etc", "-e", f"streambed_log_dir={state}/log",
         "-e", f"streambed_run_dir={state}/run", "-e", f"spark_lake_dir={lake_dir or ''}", "-e", f"spark_run_as={user}"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "ansible" / "roles")})
    assert done.returncode == 0, done.stdout[-3000:]
    return state / "etc" / "spark" / "spark-defaults.conf"


def _conf(path: Path) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))


@pytest.mark.skipif(not ROOT, reason="the role's chown and the test's user need root")
def test_the_role_makes_a_shared_lake_that_driver_and_executors_both_write(tmp_path, service_user):
    """The lake as the spark role makes it; then, as on the lab, a driver run by root makes a data set's
    staging tree there, into which a process of the service user (an executor) writes."""
    shared = Path(tempfile.mkdtemp(prefix="streambed-lake-test-", dir="/var/tmp"))  # reachable by other users
    try:
        shared.chmod(0o755)
        lake_dir = shared / "lake"
        conf = _apply_configure(tmp_path / "with", lake_dir, service_user.pw_name)
        st = lake_dir.stat()
        assert (st.st_uid, st.st_gid) == (service_user.pw_uid, service_user.pw_gid)
        assert st.st_mode & 0o7777 == 0o2775
        assert _conf(conf)["spark.hadoop.fs.permissions.umask-mode"] == "002"
        # no lake asked: none made, no umask rendered
        assert "spark.hadoop.fs.permissions.umask-mode" not in _conf(_apply_configure(tmp_path / "without", None,
                                                                                      service_user.pw_name))

        from streambed_spark import lake
        staging = lake._Staging(lake_dir, "d", ("json",))  # as the root driver makes it
        assert staging.dir.stat().st_gid == service_user.pw_gid and staging.dir.stat().st_mode & 0o7777 == 0o2775
        executor = subprocess.run(["setpriv", f"--reuid={service_user.pw_uid}", f"--regid={service_user.pw_gid}",
                                   "--init-groups", "sh", "-c", f"umask 002 && mkdir {staging.dir}/json/.spark-json "
                                   f"&& echo x > {staging.dir}/json/.spark-json/part-0"], capture_output=True, text=True)
        assert executor.returncode == 0, executor.stderr
        staging.abort()
        assert not staging.dir.exists()

    finally:
        subprocess.run(["rm", "-rf", str(shared)])

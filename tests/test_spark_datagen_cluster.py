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
from streambed.infra.spark import SparkCluster, driver_problem, master_url, spark_cluster

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


@pytest.mark.parametrize("user, root, exists, writable, said", [
    ("spark", False, True, True, None),
    ("root", True, True, False, None),  # root becomes spark
    ("spark", False, False, False, "the lake /shared/lake does not exist: the spark role makes it"),
    ("admin", False, True, True, "the executors write /shared/lake as user spark and the driver would run as admin"),
    ("spark", False, True, False, "the lake /shared/lake is not writable by spark"),
])
def test_the_driver_writes_the_lake_as_the_executors_user(user, root, exists, writable, said):
    problem = driver_problem(CLUSTER, user, root, exists, writable)
    if said is None:
        assert problem is None
    else:
        assert problem.startswith(said) and "\n" not in problem


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


@pytest.mark.skipif(not ROOT, reason="the role and the driver's change of user need root")
def test_the_role_makes_the_lake_and_a_root_driver_writes_it_as_the_service_user(tmp_path, service_user):
    shared = Path(tempfile.mkdtemp(prefix="streambed-lake-test-", dir="/var/tmp"))  # reachable by other users
    try:
        shared.chmod(0o755)
        lake_dir = shared / "lake"
        play = tmp_path / "play.yml"
        play.write_text(f"""
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: spark
        tasks_from: configure
""")
        state = tmp_path / "state"
        done = subprocess.run(
            [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(play),
             "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"streambed_state_dir={state}",
             "-e", f"streambed_config_dir={state}/etc", "-e", f"streambed_log_dir={state}/log",
             "-e", f"streambed_run_dir={state}/run", "-e", f"spark_lake_dir={lake_dir}",
             "-e", f"spark_run_as={service_user.pw_name}"],
            capture_output=True, text=True, timeout=300, env={**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "ansible" / "roles")})
        assert done.returncode == 0, done.stdout[-3000:]
        st = lake_dir.stat()
        assert (st.st_uid, st.st_gid) == (service_user.pw_uid, service_user.pw_gid)
        assert st.st_mode & 0o7777 == 0o2775

        # root, as make datagen runs it: becomes the service user, whose files then fill the lake
        probe = (f"import os; from pathlib import Path; from streambed.infra.spark import SparkCluster, become_lake_owner\n"
                 f"become_lake_owner(SparkCluster('127.0.0.1', 7077, Path({str(lake_dir)!r}), {service_user.pw_name!r}))\n"
                 f"(Path({str(lake_dir)!r}) / 'written').write_text('x'); print(os.geteuid())")
        ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0, ran.stderr
        assert int(ran.stdout) == service_user.pw_uid
        assert (lake_dir / "written").stat().st_uid == service_user.pw_uid

        # a lake the service user cannot write: one line
        os.chown(lake_dir, 0, 0)
        lake_dir.chmod(0o755)
        cli = [str(VENV_BIN / "python"), "-m", "streambed", "data", "generate", "--events", "10"]
        inv = _inventory(tmp_path / "x", str(lake_dir))
        (inv / "group_vars" / "all.yml").write_text((inv / "group_vars" / "all.yml").read_text()
                                                    + f"spark_user: {service_user.pw_name}\n")
        refused = subprocess.run([*cli, "--inventory", str(inv)], capture_output=True, text=True, timeout=120, cwd=REPO)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
        assert refused.stderr.strip() == (f"streambed: error: the lake {lake_dir} is not writable by {service_user.pw_name}: "
                                          f"the spark role makes it {service_user.pw_name}'s, mode 2775"), refused.stderr
    finally:
        subprocess.run(["rm", "-rf", str(shared)])

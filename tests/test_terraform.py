"""terraform/, offline: fmt, init, validate and `terraform test` of every module and example (the aws
and grid5000 ones against the schema stubs of terraform/stubs), the local example against
inventories/local, the CloudLab profile and manifest, and the Python wrapper
(streambed.infra.terraform) applying examples for real.

Everything Terraform writes (.terraform/, lock files, state) goes to a copy of terraform/ or to
temporary directories, never into the repository. One stub mirror serves the whole session.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO

from streambed import dataset
from streambed.errors import UserError
from streambed.infra import terraform as tfw
from streambed.infra.provider import Inventory

TERRAFORM = REPO / "terraform"
CONFIGS = sorted(str(p.parent.relative_to(TERRAFORM)) for p in TERRAFORM.glob("*/*/versions.tf"))
LOCAL_INVENTORY = REPO / "inventories" / "local"
INVENTORY_FILES = ("hosts.yml", "group_vars/all.yml", "testbed.yml")


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def terraform_bin() -> str:
    found = shutil.which("terraform")
    if found is None:
        pytest.fail("terraform not found on PATH: these checks need Terraform >= 1.9 (1.11.4 is preinstalled on "
                    "the project's machines; see terraform/README.md)", pytrace=False)
    return found


@pytest.fixture(scope="session")
def tf_env(tmp_path_factory, terraform_bin) -> dict:
    """Environment whose CLI config installs providers from the stub mirror only (built once)."""
    if importlib.util.find_spec("tf") is None:
        pytest.fail("the Terraform schema stubs need PyPI's tf==1.2.0 (pip install -e '.[test]')", pytrace=False)
    mirror = _load("streambed_tf_mirror", TERRAFORM / "stubs" / "mirror.py")
    config = mirror.build(tmp_path_factory.mktemp("tf-mirror"), python=sys.executable)
    return {**os.environ, "TF_CLI_CONFIG_FILE": str(config), "CHECKPOINT_DISABLE": "1", "TF_IN_AUTOMATION": "1",
            "TF_INPUT": "0"}


@pytest.fixture(scope="session")
def tree(tmp_path_factory) -> Path:
    """A copy of terraform/ to init and test in (relative module sources keep working)."""
    target = tmp_path_factory.mktemp("tf-tree") / "terraform"
    shutil.copytree(TERRAFORM, target, ignore=shutil.ignore_patterns(
        ".terraform", ".terraform.lock.hcl", "*.tfstate*", "*.tfvars.json", "__pycache__"))
    return target


def tf(env: dict, cwd: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["terraform", *args, "-no-color"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    if ok and done.returncode != 0:
        pytest.fail(f"terraform {' '.join(args)} in {cwd.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}",
                    pytrace=False)
    return done


def test_formatting(terraform_bin):
    done = subprocess.run([terraform_bin, "fmt", "-check", "-recursive", "-diff", "-no-color", str(TERRAFORM)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"terraform fmt would change:\n{done.stdout}{done.stderr}"


def test_every_module_and_example_is_checked():
    assert {"modules/topology", "modules/inventory", "modules/ec2", "modules/grid5000", "modules/cloudlab",
            "examples/local", "examples/ec2", "examples/grid5000", "examples/cloudlab"} <= set(CONFIGS)


@pytest.mark.parametrize("config", CONFIGS)
def test_validate_and_terraform_test(config, tree, tf_env):
    """init -backend=false, validate, and the configuration's own `terraform test` files."""
    cwd = tree / config
    tf(tf_env, cwd, "init", "-backend=false", "-input=false")
    tf(tf_env, cwd, "validate")
    if (cwd / "tests").is_dir():
        done = tf(tf_env, cwd, "test")
        summary = re.search(r"Success! (\d+) passed, 0 failed", done.stdout)
        assert summary and int(summary.group(1)) > 0, done.stdout[-2000:]


def test_the_stub_schema_catches_a_misspelled_argument(tmp_path, tf_env):
    """validate against the stubs is worth something: a wrong argument name fails as with the real provider."""
    shutil.copytree(TERRAFORM / "modules", tmp_path / "modules",
                    ignore=shutil.ignore_patterns(".terraform", ".terraform.lock.hcl"))
    main = tmp_path / "modules" / "ec2" / "main.tf"
    main.write_text(main.read_text().replace("associate_public_ip_address =", "associate_public_ip ="))
    tf(tf_env, main.parent, "init", "-backend=false", "-input=false")
    done = tf(tf_env, main.parent, "validate", ok=False)
    assert done.returncode != 0 and "associate_public_ip" in done.stderr and "Unsupported argument" in done.stderr


def test_kafka_node_rate_is_the_dataset_modules():
    """The topology's default rate per Kafka node is streambed.dataset's (the paper's 1.2 M events/s)."""
    text = (TERRAFORM / "modules" / "topology" / "variables.tf").read_text()
    block = re.search(r'variable "kafka_node_rate" \{.*?default\s*=\s*([0-9.e]+)', text, re.S)
    assert block and float(block.group(1)) == dataset.KAFKA_NODE_RATE
    # The module's formula, as the topology tests check it, agrees with dataset.kafka_nodes.
    assert [dataset.kafka_nodes(r) for r in (1.2e6, 1.2e6 + 1, 2.5e6)] == [1, 2, 3]


# --- The wrapper on examples/local: provisions nothing, renders inventories/local -----------------

def test_local_example_renders_inventories_local(tmp_path, terraform_bin):
    inventory_dir = tmp_path / "inventories" / "local"
    inventory = tfw.provision(REPO / "terraform" / "examples" / "local", inventory_dir, state_dir=tmp_path / "state")

    assert isinstance(inventory, Inventory) and inventory.path == inventory_dir.resolve()
    rendered = sorted(str(p.relative_to(inventory_dir)) for p in inventory_dir.rglob("*") if p.is_file())
    assert rendered == sorted(INVENTORY_FILES)
    for name in INVENTORY_FILES:
        assert yaml.safe_load((inventory_dir / name).read_text()) == yaml.safe_load((LOCAL_INVENTORY / name).read_text()), name
    # What the controller reads: the state directory resolved from the inventory's own path.
    assert inventory.settings["streambed_state_dir"] == str(tmp_path / ".streambed" / "local")
    assert inventory.testbed["max_slots"] == 10 and inventory.testbed["memory_per_slot_mb"] == [1024]
    assert not any((REPO / "terraform" / "examples" / "local").glob("*.tfstate*"))


def test_provisioning_an_equal_inventory_keeps_its_comments(tmp_path, terraform_bin):
    """inventories/local is both committed and rendered: writing it again changes no byte."""
    inventory_dir = tmp_path / "inventories" / "local"
    shutil.copytree(LOCAL_INVENTORY, inventory_dir)
    before = {name: (inventory_dir / name).read_bytes() for name in INVENTORY_FILES}
    provider = tfw.TerraformProvider.of("local", inventory_dir, examples=REPO / "terraform" / "examples",
                                        state_dir=tmp_path / "state")
    inventory = provider.provision()
    assert {name: (inventory_dir / name).read_bytes() for name in INVENTORY_FILES} == before
    provider.destroy(inventory)
    assert json.loads((tmp_path / "state" / "terraform.tfstate").read_text())["resources"] == []


def test_a_bad_value_is_one_line_naming_the_variable(tmp_path, terraform_bin):
    example = REPO / "terraform" / "examples" / "local"
    with pytest.raises(UserError) as bad:
        tfw.provision(example, tmp_path / "inv", {"slots": 2.5}, state_dir=tmp_path / "state")
    message = str(bad.value)
    assert "\n" not in message and "slots must be a whole number" in message and "examples/local" in message
    with pytest.raises(UserError, match=r"no variable slot \(it declares .*slots"):
        tfw.provision(example, tmp_path / "inv", {"slot": 4}, state_dir=tmp_path / "state")
    with pytest.raises(UserError, match=r"var\.memory_per_slot_mb .*list of number required"):
        tfw.provision(example, tmp_path / "inv", {"memory_per_slot_mb": "x"}, state_dir=tmp_path / "state")
    assert not (tmp_path / "inv").exists()


def test_missing_terraform_and_unknown_platform(tmp_path, monkeypatch):
    with pytest.raises(UserError, match="platform 'aws': expected one of cloudlab, ec2, grid5000, lab, local"):
        tfw.TerraformProvider.of("aws", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UserError, match="terraform not found on PATH"):
        tfw.Terraform(REPO / "terraform" / "examples" / "local", state_dir=tmp_path / "s").init()


def test_inventory_files_must_stay_inside_the_directory(tmp_path):
    with pytest.raises(UserError, match="not a path inside"):
        tfw.write_inventory({"../hosts.yml": "all: {}"}, tmp_path)


def test_error_line_reads_terraforms_diagnostics():
    output = """
Error: Invalid value for variable

  on main.tf line 1:
   1: variable "k" {
    ├────────────────
    │ var.k is 1.5

must be a whole number.

This was checked by the validation rule at main.tf:4,3-13.
"""
    assert tfw.error_line(output) == "Invalid value for variable: var.k: must be a whole number."
    assert tfw.error_line(output.replace("must be", "k must be")) == "Invalid value for variable: k must be a whole number."


# --- CloudLab: profile.py (geni-lib) -> manifest -> manifest.py -> the inventory ------------------

CLOUDLAB = TERRAFORM / "modules" / "cloudlab"


def _manifest_of(request_xml: bytes) -> str:
    """A manifest as CloudLab returns it for ``request_xml``: each node with its control host and a
    LAN address (made up here, in CloudLab's shape)."""
    import xml.etree.ElementTree as ET

    ns = "http://www.geni.net/resources/rspec/3"
    root = ET.fromstring(request_xml)
    root.set("type", "manifest")
    for i, node in enumerate(root.iter(f"{{{ns}}}node")):
        iface = node.find(f"{{{ns}}}interface")
        ET.SubElement(iface, f"{{{ns}}}ip", address=f"10.10.1.{i + 1}", type="ipv4", netmask="255.255.255.0")
        ET.SubElement(node, f"{{{ns}}}host", name=f"{node.get('client_id')}.exp.streambed.utah.cloudlab.us",
                      ipv4=f"198.51.100.{i + 1}")
    return ET.tostring(root, encoding="unicode")


@pytest.fixture(scope="module")
def cloudlab(tmp_path_factory, terraform_bin) -> dict:
    """examples/cloudlab through the wrapper, both steps, with a manifest made from profile.py's real
    request: the inventory written as ``make provision ENV=cloudlab`` writes it, under
    <root>/inventories/cloudlab (<root> standing for the repository its paths resolve to)."""
    import geni.rspec.emulab  # noqa: F401 - adds Blockstore to nodes, as on CloudLab
    import geni.rspec.pg as pg

    root = tmp_path_factory.mktemp("cloudlab")
    profile = _load("streambed_cloudlab_profile", CLOUDLAB / "profile.py")
    manifest = _load("streambed_cloudlab_manifest", CLOUDLAB / "manifest.py")
    example = REPO / "terraform" / "examples" / "cloudlab"
    sizes = {"cloudlab_user": "jdoe", "testbed_taskmanagers": 2, "production_taskmanagers": 2,
             "replay_rate": 1.5e6, "replay_events": 1e9}
    inventory_dir, state = root / "inventories" / "cloudlab", root / "state"
    (root / "ansible").mkdir()
    (root / "ansible" / "site.yml").write_text((REPO / "ansible" / "site.yml").read_text())  # what the paths resolve to

    # 1. Terraform gives the profile's parameters; no inventory before the experiment exists.
    with pytest.raises(UserError, match="no inventory rendered yet.*start profile.py.*profile_bindings: {.*testbed_taskmanagers"):
        tfw.provision(example, inventory_dir, sizes, state_dir=state)
    bindings = tfw.Terraform(example, state_dir=state).output()["profile_bindings"]
    assert bindings["kafka_nodes"] == "2" and bindings["kafka_disk_gb"] == "125"

    # 2. profile.py asks CloudLab for exactly the topology's nodes.
    assert profile.problems(bindings) == []
    request = profile.build(pg.Request(), pg, bindings).toXMLString(pretty_print=True)
    assert b'client_id="streambed-kafka-02"' in request and b'size="125GB"' in request
    assert request.count(b"<node ") == 1 + 2 + 1 + 2 + 2 + 1 + 1

    # 3. Its manifest's addresses render the inventory (Terraform refuses a manifest missing a node).
    (root / "manifest.xml").write_text(_manifest_of(request))
    addresses = manifest.addresses((root / "manifest.xml").read_text())
    inventory = tfw.provision(example, inventory_dir, {**sizes, "manifest_addresses": addresses}, state_dir=state)
    return {"root": root, "inventory": inventory, "addresses": addresses}


def _ansible_inventory(source: Path) -> dict:
    """What Ansible reads from an inventory source (``ansible-inventory --list``), with the project's
    ansible.cfg as the controller's runs have it."""
    listed = subprocess.run([str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(source), "--list"],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible" / "ansible.cfg")})
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def _private(addresses: dict, *names: str) -> list[str]:
    return [addresses[name]["private"] for name in names]


def test_cloudlab_profile_and_manifest_render_an_ansible_inventory(cloudlab):
    inventory, addresses = cloudlab["inventory"], cloudlab["addresses"]
    assert inventory.settings["flink_jobmanager_host"] == addresses["streambed-tb-jm"]["private"]
    assert sorted(p.name for p in (inventory.path / "group_vars").iterdir()) == ["all.yml"]
    assert inventory.testbed["max_slots"] == 2 * 4 - 1

    # 4. Ansible reads it as meant: groups, private addresses, the controller as jump host, and nothing
    # of the production cluster (an inventory of its own, below).
    seen = _ansible_inventory(inventory.path / "hosts.yml")
    assert seen["taskmanagers"]["hosts"] == ["streambed-tb-tm-01", "streambed-tb-tm-02"]
    assert seen["kafka"]["hosts"] == ["streambed-kafka-01", "streambed-kafka-02"]
    assert not [g for g in seen if g.startswith("production")]
    assert not [h for h in seen["_meta"]["hostvars"] if h.startswith("streambed-prod-")]
    kafka = seen["_meta"]["hostvars"]["streambed-kafka-02"]
    assert kafka["ansible_host"] == addresses["streambed-kafka-02"]["private"]
    assert kafka["ansible_ssh_common_args"] == "-o ProxyJump=jdoe@streambed-controller.exp.streambed.utah.cloudlab.us"
    assert kafka["kafka_log_dirs"] == ["/data/kafka"]


def test_the_production_cluster_is_an_inventory_of_its_own(cloudlab):
    """<inventory>-production: what `streambed validate --testbed flink --inventory` deploys and measures
    on (groups jobmanager, taskmanagers, monitoring), written by provision, loaded by Inventory.load."""
    root, testbed, addresses = cloudlab["root"], cloudlab["inventory"], cloudlab["addresses"]
    where = tfw.production_dir(testbed.path)
    assert where == testbed.path.with_name(testbed.path.name + "-production")
    written = sorted(str(p.relative_to(where)) for p in where.rglob("*") if p.is_file())
    assert written == ["group_vars/all.yml", "hosts.yml", "testbed.yml"]
    assert not (testbed.path / "production").exists()
    production = Inventory.load(where)
    v = production.settings

    # Its Flink: the production JobManager; its Prometheus: the testbed's monitoring node, another port
    # and state directory (both clusters watched at once).
    assert v["flink_jobmanager_host"] == v["flink_rest_address"] == addresses["streambed-prod-jm"]["private"]
    assert v["prometheus_listen_host"] == testbed.settings["prometheus_listen_host"] == addresses["streambed-monitoring"]["private"]
    assert (v["prometheus_port"], testbed.settings["prometheus_port"]) == (9091, 9090)
    # On nodes the roles' state is the node's own (never the controller's repository path), the
    # production Prometheus's in roots of its own on the shared monitoring node.
    assert (v["streambed_state_dir"], v["streambed_config_dir"]) == ("/var/lib/streambed/production", "/etc/streambed/production")
    assert testbed.settings["streambed_state_dir"] == "/var/lib/streambed"
    # Paths resolve to the same repository (a sibling directory, the same depth).
    assert production.playbook == testbed.playbook == root / "ansible" / "site.yml"
    assert production.path_setting("streambed_job_jar") == root / "flink" / "build" / "streambed-job.jar"
    assert production.path_setting("streambed_queries_dir") == testbed.path_setting("streambed_queries_dir")
    # What it offers a validated plan: 2 TaskManagers x 4 slots, less the source's, at its own profile.
    assert production.testbed["max_slots"] == 2 * 4 - 1 and production.testbed["memory_per_slot_mb"] == [2048]
    assert production.testbed["slots_per_taskmanager"] == 4 and v["flink_memory_per_slot_mb"] == 2048

    # As Ansible reads it (the directory, as the controller passes it): the production nodes at their
    # private addresses, the monitoring node, nothing of the testbed's.
    seen = _ansible_inventory(production.path)
    hostvars = seen["_meta"]["hostvars"]
    groups = {g: seen[g]["hosts"] for g in ("jobmanager", "taskmanagers", "monitoring")}
    assert groups == {"jobmanager": ["streambed-prod-jm"], "taskmanagers": ["streambed-prod-tm-01", "streambed-prod-tm-02"],
                      "monitoring": ["streambed-monitoring"]}
    assert sorted(hostvars) == sorted(h for hs in groups.values() for h in hs)
    assert [hostvars[h]["ansible_host"] for h in groups["taskmanagers"]] == _private(
        addresses, "streambed-prod-tm-01", "streambed-prod-tm-02")
    assert hostvars["streambed-prod-jm"]["ansible_host"] == addresses["streambed-prod-jm"]["private"]
    testbed_only = set(_private(addresses, *(n for n in addresses if not n.startswith("streambed-prod-")
                                            and n != "streambed-monitoring")))
    text = "\n".join((production.path / f).read_text() for f in ("hosts.yml", "group_vars/all.yml"))
    assert not [a for a in testbed_only if re.search(rf"\b{re.escape(a)}\b", text)], testbed_only
    assert hostvars["streambed-prod-tm-01"]["prometheus_port"] == 9091
    assert hostvars["streambed-prod-tm-01"]["streambed_services"] == ["java", "flink", "prometheus"]


def test_the_testbeds_inventory_directory_holds_no_production_node(cloudlab):
    """Ansible reads an inventory directory recursively: the production inventory is a sibling, so the
    testbed's (as run_playbook passes it, a directory) lists none of the production nodes."""
    seen = _ansible_inventory(cloudlab["inventory"].path)
    assert seen["jobmanager"]["hosts"] == ["streambed-tb-jm"]
    assert not [h for h in seen["_meta"]["hostvars"] if h.startswith("streambed-prod-")]


def test_cloudlab_profile_refuses_bad_parameters():
    profile = _load("streambed_cloudlab_profile", CLOUDLAB / "profile.py")
    assert [key for key, _ in profile.problems({"testbed_taskmanagers": 0, "kafka_nodes": 1.5})] == [
        "testbed_taskmanagers", "kafka_nodes"]
    assert [n for n, _, _ in profile.node_plan({"name": "sb", "testbed_taskmanagers": 1, "production_taskmanagers": 0,
                                                "controller": "false"})] == ["sb-tb-jm", "sb-tb-tm-01", "sb-monitoring"]


def test_manifest_script_fails_in_one_line(tmp_path):
    (tmp_path / "empty.xml").write_text('<rspec xmlns="http://www.geni.net/resources/rspec/3" type="manifest"/>')
    done = subprocess.run([sys.executable, str(CLOUDLAB / "manifest.py"), str(tmp_path / "empty.xml")],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and done.stderr.strip().count("\n") == 0 and "no node found" in done.stderr

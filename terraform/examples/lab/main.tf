# Both clusters, Kafka and monitoring as network namespaces on this machine, each with its own sshd and
# an admin user with sudo, and the two Ansible inventories (inventories/lab, inventories/lab-production):
#
#   make provision ENV=lab && make deploy ENV=lab ... make destroy ENV=lab
#
# The same topology -> platform -> inventory wiring as terraform/examples/ec2; the platform module is
# terraform/modules/lab (no provider). The controller is this machine, reaching the hosts over the bridge.

locals {
  repository = abspath("${path.root}/../../..")
  lab_dir    = coalesce(var.lab_dir, "${local.repository}/.streambed/lab/${var.name}")
  # Not under lab_dir: that is 0700 (it holds the admin's key), and the Spark user must reach the lake.
  lake_dir = coalesce(var.lake_dir, "/var/tmp/streambed-${var.name}-lake")
  # Flink and Spark as the controller's venv has them (PyPI): the hosts share this machine's file
  # system, and nothing can be downloaded here (a cloud's inventory says flink_install: tarball).
  venv_lib = "${local.repository}/.venv/lib"
  pyflink  = [for f in fileset(local.venv_lib, "python3*/site-packages/pyflink/bin/flink") : "${local.venv_lib}/${dirname(dirname(f))}"]
  pyspark  = [for f in fileset(local.venv_lib, "python3*/site-packages/pyspark/bin/spark-submit") : "${local.venv_lib}/${dirname(dirname(f))}"]
  software = merge(
    length(local.pyflink) == 0 ? {} : { flink_install = "pypi", flink_home = local.pyflink[0] },
    length(local.pyspark) == 0 ? {} : { spark_install = "pypi", spark_home = local.pyspark[0] },
    # No Kafka distribution can be had here, and no Kafka-compatible broker that installs passes the
    # conformance test (docs/data.md): the Kafka node gets its data disk and no broker.
    # Nor can Grafana: its configuration and both datasources are rendered, no server runs.
    { kafka_distribution = "none", grafana_distribution = "none", spark_lake_dir = local.lake_dir },
  )
}

module "topology" {
  source = "../../modules/topology"

  name                             = var.name
  testbed_taskmanagers             = var.testbed_taskmanagers
  testbed_slots_per_taskmanager    = var.testbed_slots_per_taskmanager
  testbed_memory_per_slot_mb       = var.testbed_memory_per_slot_mb
  testbed_cpu_per_slot             = var.testbed_cpu_per_slot
  production_taskmanagers          = var.production_taskmanagers
  production_slots_per_taskmanager = var.production_slots_per_taskmanager
  production_memory_per_slot_mb    = var.production_memory_per_slot_mb
  kafka_nodes                      = var.kafka_nodes
  controller                       = false
  # Two shared cores: the generator's ceiling is what one lab source task can give, not a cluster's.
  max_source_rate = 1000000
}

module "lab" {
  source = "../../modules/lab"

  nodes        = module.topology.nodes
  lab_dir      = local.lab_dir
  subnet       = var.subnet
  bridge       = var.bridge
  data_disk_gb = var.data_disk_gb
}

module "inventory" {
  source = "../../modules/inventory"

  nodes                = module.topology.nodes
  settings             = module.topology.settings
  addresses            = module.lab.addresses
  ssh_user             = module.lab.ssh_user
  ssh_private_key_file = module.lab.ssh_private_key_file
  # The lab's own known_hosts: host keys checked, nothing written to the user's ~/.ssh.
  ssh_common_args = "-o UserKnownHostsFile=${module.lab.known_hosts_file} -o StrictHostKeyChecking=yes"
  data_devices    = module.lab.kafka_data_devices
  group_vars      = merge(local.software, var.group_vars)
}

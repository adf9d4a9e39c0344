# This machine as the platform: nothing is provisioned. Every role the local testbed has runs on
# localhost with connection local, and the rendered inventory is inventories/local's
# (tests/test_terraform.py compares them).

module "topology" {
  source = "../../modules/topology"

  # inventories/local/testbed.yml: 10 slots for the query's operators plus the source's, each slot a
  # TaskManager of its own held to 0.12 core by a cgroup (docs/flink-testbed.md).
  testbed_taskmanagers          = var.slots + var.source_parallelism
  testbed_slots_per_taskmanager = 1
  testbed_memory_per_slot_mb    = var.memory_per_slot_mb
  testbed_cpu_per_slot          = var.cpu_per_slot
  source_parallelism            = var.source_parallelism

  # No second Flink cluster, no Kafka broker (none can be had here: ../shared/PLATFORM.md) and the
  # controller is this machine.
  production_taskmanagers = 0
  kafka_nodes             = 0
  controller              = false
}

module "inventory" {
  source = "../../modules/inventory"

  nodes      = module.topology.nodes
  settings   = module.topology.settings
  connection = "local"
  # Loopback: Flink on "localhost", Prometheus on the loopback address, as inventories/local.
  addresses = { for name, n in module.topology.nodes : name => { private = n.role == "monitoring" ? "127.0.0.1" : "localhost" } }

  # What a plain `ansible-playbook site.yml` deploys here (one TaskManager of 4 slots); the controller
  # passes each budget's own slots.
  group_vars = { flink_taskmanager_slots = 4 }
}

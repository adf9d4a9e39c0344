locals {
  count = { for role in ["testbed_taskmanager", "production_taskmanager", "kafka", "controller"] : role => length([for n in values(var.nodes) : n if n.role == role]) }

  # profile.py's parameters for this topology (the portal takes them as strings): the experiment's
  # node names are then the topology's.
  profile_bindings = {
    name                    = var.name
    testbed_taskmanagers    = tostring(local.count.testbed_taskmanager)
    production_taskmanagers = tostring(local.count.production_taskmanager)
    kafka_nodes             = tostring(local.count.kafka)
    controller              = local.count.controller > 0 ? "true" : "false"
    kafka_disk_gb           = tostring(max(1, max(0, [for n in values(var.nodes) : n.data_disk_gb if n.role == "kafka"]...)))
    kafka_data_dir          = var.kafka_data_dir
    tm_hardware             = var.hardware_types.taskmanager
    kafka_hardware          = var.hardware_types.kafka
    other_hardware          = var.hardware_types.other
    image                   = var.image
  }

  ready = length(var.manifest_addresses) > 0
}

# Nodes the manifest has but the topology does not: an experiment of another topology, or an older one.
check "manifest_matches_the_topology" {
  assert {
    condition     = !local.ready || length(setsubtract(keys(var.manifest_addresses), keys(var.nodes))) == 0
    error_message = "The manifest has nodes the topology does not: ${join(", ", setsubtract(keys(var.manifest_addresses), keys(var.nodes)))}."
  }
}

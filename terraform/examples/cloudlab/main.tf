# Both clusters, Kafka, monitoring and the controller on CloudLab. Two steps, since no Terraform
# provider drives CloudLab (terraform/README.md says why profile.py):
#   1. terraform apply                      -> output profile_bindings: start profile.py with them
#   2. python ../../modules/cloudlab/manifest.py manifest.xml > manifest.auto.tfvars.json
#      terraform apply                      -> output inventory_files

module "topology" {
  source = "../../modules/topology"

  name                          = var.name
  testbed_taskmanagers          = var.testbed_taskmanagers
  testbed_slots_per_taskmanager = var.testbed_slots_per_taskmanager
  testbed_memory_per_slot_mb    = var.testbed_memory_per_slot_mb
  production_taskmanagers       = var.production_taskmanagers
  production_memory_per_slot_mb = var.production_memory_per_slot_mb
  replay_rate                   = var.replay_rate
  replay_events                 = var.replay_events
  event_bytes                   = var.event_bytes
}

module "cloudlab" {
  source = "../../modules/cloudlab"

  name               = var.name
  nodes              = module.topology.nodes
  manifest_addresses = var.manifest_addresses
  hardware_types     = var.hardware_types
}

module "inventory" {
  source = "../../modules/inventory"
  count  = module.cloudlab.ready ? 1 : 0

  nodes     = module.topology.nodes
  settings  = module.topology.settings
  addresses = module.cloudlab.addresses
  ssh_user  = var.cloudlab_user
  # Only the controller has a routable control address: Ansible jumps through it.
  jump_host = module.cloudlab.jump_host == null ? null : "${var.cloudlab_user}@${module.cloudlab.jump_host}"
}

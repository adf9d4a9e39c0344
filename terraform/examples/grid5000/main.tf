# Both clusters, Kafka, monitoring and the controller on Grid'5000 bare metal (OAR deploy jobs,
# kadeploy), and their Ansible inventory. Run from a site's frontend, where the API needs no
# credentials; from elsewhere, give restfully_file (your own ~/.restfully/api.grid5000.fr.yml).
#
#   terraform init && terraform apply -var site=rennes -var "ssh_public_key=$(cat ~/.ssh/id_ed25519.pub)"

provider "grid5000" {
  restfully_file = var.restfully_file
}

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

module "grid5000" {
  source = "../../modules/grid5000"

  name           = var.name
  nodes          = module.topology.nodes
  site           = var.site
  walltime       = var.walltime
  properties     = var.properties
  environment    = var.environment
  ssh_public_key = var.ssh_public_key
}

module "inventory" {
  source = "../../modules/inventory"

  nodes     = module.topology.nodes
  settings  = module.topology.settings
  addresses = module.grid5000.addresses
  # kadeploy installs the key for root; from outside Grid'5000, jump through access.grid5000.fr.
  ssh_user  = "root"
  jump_host = var.jump_host
}

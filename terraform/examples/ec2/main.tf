# Both clusters, Kafka, monitoring and the controller on EC2, and their Ansible inventory.
#
#   export AWS_PROFILE=...            # or any other source of the provider's default credential chain
#   terraform init && terraform apply -var admin_cidr=203.0.113.7/32 -var key_name=... -var subnet_id=...
#
# No credentials in any file: the aws provider reads the environment, the shared config and SSO
# profiles, or the instance role.

provider "aws" {
  region = var.region

  # On every resource the provider creates (instances, volumes, security group and its rules): who
  # made it and for which cluster, for a team's cost reports and clean-up.
  default_tags {
    tags = merge({ "streambed:cluster" = var.name, "streambed:managed-by" = "terraform" }, var.default_tags)
  }
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

module "ec2" {
  source = "../../modules/ec2"

  name           = var.name
  nodes          = module.topology.nodes
  subnet_id      = var.subnet_id
  admin_cidr     = var.admin_cidr
  key_name       = var.key_name
  instance_types = var.instance_types
  kafka_storage  = var.kafka_storage
}

locals {
  controller = one([for name, n in module.topology.nodes : name if n.role == "controller"])
}

module "inventory" {
  source = "../../modules/inventory"

  nodes     = module.topology.nodes
  settings  = module.topology.settings
  addresses = module.ec2.addresses
  ssh_user  = var.ssh_user
  # Ansible reaches the private addresses through the controller's public one.
  jump_host = local.controller == null ? null : "${var.ssh_user}@${module.ec2.addresses[local.controller].public}"
  # The kafka role formats and mounts each Kafka node's NVMe or gp3 disk for log.dirs.
  data_devices = module.ec2.kafka_data_devices
}

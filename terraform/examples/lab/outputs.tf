output "inventory_files" {
  description = "Inventory path -> content (streambed.infra.terraform writes them into inventories/lab)."
  value       = module.inventory.files
}

output "production_inventory_files" {
  description = "The production cluster's inventory, path -> content (written into inventories/lab-production)."
  value       = module.inventory.production_files
}

output "addresses" {
  description = "Node name -> {private}."
  value       = module.lab.addresses
}

output "hosts" {
  description = "Node name -> {address, netns, veth}."
  value       = module.lab.hosts
}

output "kafka_data_devices" {
  description = "Kafka node -> its loop-device data disk."
  value       = module.lab.kafka_data_devices
}

output "lab" {
  description = "The lab's bridge, state directory, admin login and SSH key."
  value = {
    bridge               = module.lab.bridge
    lab_dir              = local.lab_dir
    ssh_user             = module.lab.ssh_user
    ssh_private_key_file = module.lab.ssh_private_key_file
    known_hosts_file     = module.lab.known_hosts_file
  }
}

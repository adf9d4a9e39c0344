output "inventory_files" {
  description = "Inventory path -> content (streambed.infra.terraform writes them into the inventory directory)."
  value       = module.inventory.files
}

output "production_inventory_files" {
  description = "The production cluster's inventory, path -> content (written into <inventory>-production)."
  value       = module.inventory.production_files
}

output "addresses" {
  description = "Node name -> {private, public}."
  value       = module.ec2.addresses
}

output "kafka_data_devices" {
  description = "Kafka node -> block device of its data directory."
  value       = module.ec2.kafka_data_devices
}

output "inventory_files" {
  description = "Inventory path -> content (streambed.infra.terraform writes them into the inventory directory)."
  value       = module.inventory.files
}

output "production_inventory_files" {
  description = "The production cluster's inventory, path -> content (written into <inventory>-production)."
  value       = module.inventory.production_files
}

output "addresses" {
  description = "Node name -> {private = Grid'5000 host name}."
  value       = module.grid5000.addresses
}

output "jobs" {
  description = "Role -> OAR job ID."
  value       = module.grid5000.jobs
}

output "inventory_files" {
  description = "Inventory path -> content (streambed.infra.terraform writes them into the inventory directory)."
  value       = module.inventory.files
}

output "addresses" {
  description = "Node name -> {private = Grid'5000 host name}."
  value       = module.grid5000.addresses
}

output "jobs" {
  description = "Role -> OAR job ID."
  value       = module.grid5000.jobs
}

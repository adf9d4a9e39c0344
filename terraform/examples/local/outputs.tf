output "inventory_files" {
  description = "Inventory path -> content (streambed.infra.terraform writes them into the inventory directory)."
  value       = module.inventory.files
}

output "production_inventory_files" {
  description = "The production cluster's inventory, path -> content (written into <inventory>-production)."
  value       = module.inventory.production_files
}

output "nodes" {
  description = "Node name -> role and size (all of them this machine)."
  value       = module.topology.nodes
}

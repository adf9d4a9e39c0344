output "profile_bindings" {
  description = "Parameters to start terraform/modules/cloudlab/profile.py with."
  value       = module.cloudlab.profile_bindings
}

output "inventory_files" {
  description = "Inventory path -> content; {} until the manifest's addresses are given."
  value       = module.cloudlab.ready ? module.inventory[0].files : {}
}

output "production_inventory_files" {
  description = "The production cluster's inventory, path -> content (written into <inventory>-production)."
  value       = module.cloudlab.ready ? module.inventory[0].production_files : {}
}

output "next_step" {
  description = "What to do next."
  value       = module.cloudlab.ready ? "inventory rendered" : "start profile.py on CloudLab with profile_bindings, then: python terraform/modules/cloudlab/manifest.py MANIFEST.xml > terraform/examples/cloudlab/manifest.auto.tfvars.json and apply again"
}

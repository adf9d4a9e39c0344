output "files" {
  description = "Path in the inventory directory -> content: hosts.yml, group_vars/all.yml, testbed.yml. Written by streambed.infra.terraform."
  value       = local.files
}

output "production_files" {
  description = "The production cluster's inventory, path -> content (empty without a production cluster); streambed.infra.terraform writes it into <inventory>-production."
  value       = local.production_files
}

output "groups" {
  description = "Ansible group -> host names (localhost for connection = \"local\")."
  value       = { for g, names in local.groups : g => local.local ? ["localhost"] : names }
}

output "hosts" {
  description = "Host name -> its variables in hosts.yml (ssh only; empty for connection = \"local\")."
  value       = local.hosts
}

output "group_vars" {
  description = "The variables of group_vars/all.yml."
  value       = local.all_vars
}

output "testbed" {
  description = "The content of testbed.yml."
  value       = local.testbed
}

output "production" {
  description = "The production cluster's inventory (<inventory>-production): groups, the variables of its group_vars/all.yml, its testbed.yml; null without a production cluster."
  value = local.production ? {
    groups     = local.production_groups
    hosts      = local.production_hosts
    group_vars = local.production_vars
    testbed    = local.production_testbed
  } : null
}

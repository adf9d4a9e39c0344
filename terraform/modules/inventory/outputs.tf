output "files" {
  description = "Path in the inventory directory -> content: hosts.yml, group_vars/all.yml, testbed.yml (and group_vars/production.yml with a production cluster). Written by streambed.infra.terraform."
  value       = local.files
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

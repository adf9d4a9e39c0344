output "addresses" {
  description = "Node name -> {private = the node's Grid'5000 host name}: what the inventory module takes (reach them from a frontend or through access.grid5000.fr)."
  value       = local.addresses
  depends_on  = [grid5000_deployment.role]
}

output "jobs" {
  description = "Role -> OAR job ID (oarstat -j ID; oardel ID ends it early)."
  value       = { for role, job in grid5000_job.role : role => job.id }
}

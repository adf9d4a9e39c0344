output "profile_bindings" {
  description = "Parameter values to start profile.py with (portal form or API bindings)."
  value       = local.profile_bindings
}

output "ready" {
  description = "Whether the experiment's manifest addresses are given (then `addresses` covers every node)."
  value       = local.ready
}

output "addresses" {
  description = "Node name -> {private, public}, for the inventory module ({} until the manifest is given)."
  value       = { for name in keys(var.nodes) : name => var.manifest_addresses[name] if local.ready }
}

output "jump_host" {
  description = "The controller's public host name (the one node with a routable control address), null without one."
  value       = one([for name, n in var.nodes : try(var.manifest_addresses[name].public, null) if n.role == "controller" && local.ready])
}

locals {
  by_role = {
    for role in distinct([for n in values(var.nodes) : n.role]) :
    role => sort([for name, n in var.nodes : name if n.role == role])
  }
}

resource "grid5000_job" "role" {
  for_each = local.by_role

  name               = "${var.name}-${replace(each.key, "_", "-")}"
  site               = var.site
  types              = ["deploy"]
  resources          = "/nodes=${length(each.value)},walltime=${var.walltime}"
  properties         = lookup(var.properties, each.key, null)
  command            = "sleep infinity"
  scheduled_at_limit = var.scheduled_at_limit

  lifecycle {
    postcondition {
      condition     = length(self.assigned_nodes) == length(each.value)
      error_message = "OAR gave the ${each.key} job ${length(self.assigned_nodes)} nodes, the topology needs ${length(each.value)}."
    }
  }
}

resource "grid5000_deployment" "role" {
  for_each = grid5000_job.role

  site        = var.site
  environment = var.environment
  nodes       = each.value.assigned_nodes
  key         = var.ssh_public_key
}

locals {
  # OAR assigns hosts, the topology names nodes: the i-th name of a role (sorted) is its i-th host
  # (sorted), so that a re-read of the same job maps the same way.
  assigned = { for role, job in grid5000_job.role : role => sort(tolist(job.assigned_nodes)) }
  addresses = merge([
    for role, names in local.by_role : {
      for i, name in names : name => { private = local.assigned[role][i], public = null }
    }
  ]...)
}

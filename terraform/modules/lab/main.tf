# Hosts as network namespaces on this machine, made and unmade by the scripts beside this file through
# terraform_data's local-exec provisioners (create and destroy): no provider, nothing downloaded.

locals {
  # The controller is this machine: it reaches the hosts over the bridge.
  hosts   = { for name, n in var.nodes : name => n if n.role != "controller" }
  names   = sort(keys(local.hosts))
  number  = { for i, name in local.names : name => var.first_host + i }
  address = { for name in local.names : name => cidrhost(var.subnet, local.number[name]) }
  prefix  = split("/", var.subnet)[1]

  # Each host's /etc/hosts: itself and the other lab hosts by name, as a cluster's DNS would give.
  etc_hosts = join("\n", concat(
    ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"],
    [for name in local.names : "${local.address[name]} ${name}"],
  ))

  lab = {
    script      = "${path.module}/scripts/lab.sh"
    lab_dir     = var.lab_dir
    bridge      = var.bridge
    bridge_cidr = "${cidrhost(var.subnet, 1)}/${local.prefix}"
    admin_user  = var.admin_user
  }
}

check "hosts_fit_the_subnet" {
  assert {
    condition     = length(local.names) == 0 || can(cidrhost(var.subnet, var.first_host + length(local.names)))
    error_message = "subnet ${var.subnet} has no room for ${length(local.names)} hosts from host number ${var.first_host}."
  }
}

resource "terraform_data" "lab" {
  triggers_replace = merge(local.lab, { script_sha = filesha256("${path.module}/scripts/lab.sh") })
  input            = local.lab

  provisioner "local-exec" {
    command = "sh '${self.input.script}' up"
    environment = {
      LAB_DIR    = self.input.lab_dir, BRIDGE = self.input.bridge, BRIDGE_CIDR = self.input.bridge_cidr
      ADMIN_USER = self.input.admin_user
    }
  }

  provisioner "local-exec" {
    when    = destroy
    command = "sh '${self.input.script}' down"
    environment = {
      LAB_DIR    = self.input.lab_dir, BRIDGE = self.input.bridge, BRIDGE_CIDR = self.input.bridge_cidr
      ADMIN_USER = self.input.admin_user
    }
  }
}

resource "terraform_data" "host" {
  for_each = local.hosts

  triggers_replace = {
    script_sha   = filesha256("${path.module}/scripts/host.sh")
    address      = local.address[each.key]
    private_dirs = join(" ", var.private_dirs)
    disk_gb      = each.value.role == "kafka" ? var.data_disk_gb : 0
  }
  input = {
    script         = "${path.module}/scripts/host.sh"
    LAB_DIR        = var.lab_dir
    HOST           = each.key
    NETNS          = each.key
    ADDRESS        = local.address[each.key]
    PREFIX         = local.prefix
    BRIDGE         = var.bridge
    VETH           = "${var.bridge}-${local.number[each.key]}"
    DISK_GB        = each.value.role == "kafka" ? var.data_disk_gb : 0
    PRIVATE_DIRS   = join(" ", var.private_dirs)
    ETC_HOSTS      = local.etc_hosts
    ADMIN_USER     = var.admin_user
    BOOT_TIMEOUT_S = var.boot_timeout_s
  }

  lifecycle {
    # A new bridge or admin user (a lab made again) needs its hosts made again.
    replace_triggered_by = [terraform_data.lab]
  }

  provisioner "local-exec" {
    command     = "sh '${self.input.script}' up"
    environment = { for k, v in self.input : k => tostring(v) if k != "script" }
  }

  provisioner "local-exec" {
    when        = destroy
    command     = "sh '${self.input.script}' down"
    environment = { for k, v in self.input : k => tostring(v) if k != "script" }
  }
}

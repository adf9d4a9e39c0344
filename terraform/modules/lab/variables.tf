# Nodes -> hosts as network namespaces on this machine (docs/infrastructure.md, "ENV=lab"). Every value
# is checked here, so that a bad one stops `plan` with one line naming the variable.

variable "nodes" {
  description = "The topology module's `nodes` output: node name -> {role, data_disk_gb, ...}. The controller role is this machine and gets no host."
  type        = map(object({ role = string }))

  validation {
    condition     = alltrue([for name in keys(var.nodes) : can(regex("^[a-z][a-z0-9-]{0,30}$", name))])
    error_message = "nodes: every node name must be at most 31 lowercase letters, digits or hyphens (it names a network namespace)."
  }
}

variable "lab_dir" {
  description = "Absolute directory of the lab's own state: its SSH key and known_hosts, each host's sshd configuration, host key, logs, private directories and data disk."
  type        = string

  validation {
    condition     = startswith(var.lab_dir, "/") && !can(regex("^/(tmp|run|opt/streambed|etc/streambed|var/lib/streambed|var/log/streambed)(/|$)", var.lab_dir))
    error_message = "lab_dir must be an absolute path outside the directories each host mounts privately (/tmp, /run, /opt/streambed, /etc/streambed, /var/lib/streambed, /var/log/streambed)."
  }
}

variable "subnet" {
  description = "The lab's private IPv4 subnet (CIDR): the bridge takes its first address, the hosts follow from first_host. Never routed off this machine."
  type        = string
  default     = "10.213.0.0/24"

  validation {
    condition     = can(cidrhost(var.subnet, 1)) && !strcontains(var.subnet, ":") && can(regex("^(10\\.|192\\.168\\.|172\\.(1[6-9]|2[0-9]|3[01])\\.)", var.subnet))
    error_message = "subnet must be a private IPv4 CIDR (10/8, 172.16/12 or 192.168/16) such as 10.213.0.0/24."
  }
}

variable "first_host" {
  description = "Host number (in subnet) of the first lab host; the others follow in node-name order."
  type        = number
  default     = 10

  validation {
    condition     = var.first_host >= 2 && var.first_host <= 200 && floor(var.first_host) == var.first_host
    error_message = "first_host must be a whole number from 2 to 200 (1 is the bridge's address)."
  }
}

variable "bridge" {
  description = "Name of the lab's bridge; each host's veth on this side is <bridge>-<host number>."
  type        = string
  default     = "sb-lab"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,9}$", var.bridge))
    error_message = "bridge must be at most 10 lowercase letters, digits or hyphens (interface names stop at 15 characters)."
  }
}

variable "admin_user" {
  description = "The non-root login with passwordless sudo on every host (admin, as on EC2's Debian image)."
  type        = string
  default     = "admin"

  validation {
    condition     = can(regex("^[a-z_][a-z0-9_-]{0,31}$", var.admin_user)) && var.admin_user != "root"
    error_message = "admin_user must be a login name other than root."
  }
}

variable "data_disk_gb" {
  description = "Size of each Kafka node's sparse data disk (a loop device), GB; the topology's data_disk_gb sizes real disks, not this machine's."
  type        = number
  default     = 4

  validation {
    condition     = var.data_disk_gb >= 1 && var.data_disk_gb <= 1024 && floor(var.data_disk_gb) == var.data_disk_gb
    error_message = "data_disk_gb must be a whole number of GB from 1 to 1024."
  }
}

variable "private_dirs" {
  description = "Directories each host gets a private copy of (bind mounts inside its mount namespace): where the roles write, and /tmp."
  type        = list(string)
  default     = ["/opt/streambed", "/etc/streambed", "/var/lib/streambed", "/var/log/streambed", "/run/streambed", "/tmp"]

  validation {
    condition     = alltrue([for d in var.private_dirs : can(regex("^/[A-Za-z0-9._/-]+$", d)) && !contains(["/", "/etc", "/usr", "/var", "/home", "/proc", "/sys", "/dev", "/run"], trimsuffix(d, "/"))])
    error_message = "private_dirs must be absolute paths (letters, digits, . _ - /), none of /, /etc, /usr, /var, /home, /proc, /sys, /dev or /run itself."
  }
}

variable "boot_timeout_s" {
  description = "How long a host's sshd may take to log the admin in with sudo, seconds."
  type        = number
  default     = 30

  validation {
    condition     = var.boot_timeout_s >= 1 && var.boot_timeout_s <= 600
    error_message = "boot_timeout_s must be from 1 to 600 seconds."
  }
}

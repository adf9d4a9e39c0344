# Nodes + their addresses -> the inventory directory the controller and Ansible read
# (inventories/README.md: hosts.yml, group_vars/all.yml, testbed.yml).

variable "nodes" {
  description = "The topology module's `nodes` output: node name -> {role, ...}."
  type        = map(object({ role = string }))

  validation {
    condition = alltrue([for n in values(var.nodes) : contains([
      "testbed_jobmanager", "testbed_taskmanager", "production_jobmanager", "production_taskmanager",
      "kafka", "monitoring", "controller",
    ], n.role)])
    error_message = "nodes must come from the topology module: every role one of testbed_jobmanager, testbed_taskmanager, production_jobmanager, production_taskmanager, kafka, monitoring, controller."
  }
  validation {
    condition     = length([for n in values(var.nodes) : n if n.role == "testbed_jobmanager"]) == 1 && length([for n in values(var.nodes) : n if n.role == "monitoring"]) == 1
    error_message = "nodes must hold exactly one testbed_jobmanager and one monitoring node."
  }
}

variable "settings" {
  description = "The topology module's `settings` output."
  type = object({
    testbed = object({
      taskmanagers          = number
      slots_per_taskmanager = number
      memory_per_slot_mb    = list(number)
      cpu_per_slot          = number
      max_slots             = number
      source_parallelism    = number
      max_source_rate       = number
      sample_period_s       = number
    })
    production = object({
      taskmanagers          = number
      slots_per_taskmanager = number
      memory_per_slot_mb    = number
      max_slots             = number
    })
    jobmanager_memory_mb     = number
    taskmanager_overhead_mb  = number
    kafka_replication_factor = number
  })
}

variable "addresses" {
  description = "Node name -> {private, public}: the address the cluster reaches a node at, and the one from outside (if any). From the platform module."
  type        = map(object({ private = string, public = optional(string) }))

  validation {
    condition     = length(setsubtract(keys(var.nodes), keys(var.addresses))) == 0
    error_message = "addresses must hold an address for every node; missing: ${join(", ", setsubtract(keys(var.nodes), keys(var.addresses)))}."
  }
  validation {
    condition     = alltrue([for a in values(var.addresses) : can(regex("^[A-Za-z0-9][A-Za-z0-9.:-]*$", a.private))])
    error_message = "addresses: every private address must be a host name or an IP address."
  }
}

variable "connection" {
  description = "local: every node is this machine (ansible_connection local, as inventories/local); ssh: remote nodes."
  type        = string
  default     = "ssh"

  validation {
    condition     = contains(["local", "ssh"], var.connection)
    error_message = "connection must be \"local\" or \"ssh\"."
  }
  validation {
    # One host cannot run two Flink clusters on the same ports.
    condition     = var.connection == "ssh" || length([for n in values(var.nodes) : n if startswith(n.role, "production_")]) == 0
    error_message = "connection = \"local\" takes no production cluster: set production_taskmanagers = 0."
  }
}

variable "ssh_user" {
  description = "Remote user Ansible logs in as (ssh); null: Ansible's default."
  type        = string
  default     = null

  validation {
    condition     = var.ssh_user == null ? true : can(regex("^[a-z_][a-z0-9_.-]{0,31}$", var.ssh_user))
    error_message = "ssh_user must be a login name (lowercase letters, digits, '_', '.', '-')."
  }
}

variable "jump_host" {
  description = "user@host Ansible jumps through to reach the private addresses (ssh ProxyJump); null: Ansible runs inside the cluster."
  type        = string
  default     = null

  validation {
    condition     = var.jump_host == null ? true : can(regex("^([a-z_][a-z0-9_.-]*@)?[A-Za-z0-9][A-Za-z0-9.:-]*$", var.jump_host))
    error_message = "jump_host must be host or user@host."
  }
}

variable "python_interpreter" {
  description = "ansible_python_interpreter on remote nodes (interpreter discovery picks broken ones on some machines)."
  type        = string
  default     = "/usr/bin/python3"
}

variable "ssh_private_key_file" {
  description = "ansible_ssh_private_key_file (ssh); null: the SSH agent's or ~/.ssh's keys."
  type        = string
  default     = null
}

variable "ssh_common_args" {
  description = "More ssh options for every host (ansible_ssh_common_args, before jump_host's ProxyJump), e.g. a UserKnownHostsFile of the platform's own."
  type        = string
  default     = null
}

variable "become" {
  description = "ansible_become (ssh): the admin login is not root (admin on Debian's cloud images) and the roles install packages and services; null: true for ssh, unset for local (the controller's own user)."
  type        = bool
  default     = null
}

variable "data_devices" {
  description = "Node name -> block device of its data disk (the platform's kafka_data_devices), rendered as the host's kafka_data_device: the kafka role formats and mounts it at kafka_data_dir."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for d in values(var.data_devices) : startswith(d, "/")])
    error_message = "data_devices must map node names to absolute device paths."
  }
}

variable "state_dir" {
  description = "streambed_state_dir; null: on nodes (ssh) the node's own /var/lib/streambed, on this machine (local) inventories/local's <repository>/.streambed/<inventory name>, from the inventory's own path."
  type        = string
  default     = null
}

variable "flink_rest_port" {
  description = "Flink REST port (flink_rest_port)."
  type        = number
  default     = 8081

  validation {
    condition     = var.flink_rest_port >= 1 && var.flink_rest_port <= 65535
    error_message = "flink_rest_port must be a TCP port (1-65535)."
  }
}

variable "flink_rpc_port" {
  description = "JobManager RPC port (flink_jobmanager_rpc_port)."
  type        = number
  default     = 6123

  validation {
    condition     = var.flink_rpc_port >= 1 && var.flink_rpc_port <= 65535
    error_message = "flink_rpc_port must be a TCP port (1-65535)."
  }
}

variable "metrics_ports" {
  description = "Port range of Flink's Prometheus reporter: one port per Flink process of a host."
  type        = object({ min = number, max = number })
  default     = { min = 9250, max = 9279 }

  validation {
    condition     = var.metrics_ports.min >= 1024 && var.metrics_ports.min <= var.metrics_ports.max && var.metrics_ports.max <= 65535
    error_message = "metrics_ports must be a range {min, max} of ports from 1024 to 65535 with min <= max."
  }
}

variable "prometheus_port" {
  description = "Prometheus port (prometheus_port)."
  type        = number
  default     = 9090

  validation {
    condition     = var.prometheus_port >= 1 && var.prometheus_port <= 65535
    error_message = "prometheus_port must be a TCP port (1-65535)."
  }
}

variable "production_prometheus_port" {
  description = "Port of the production cluster's Prometheus (production/group_vars/all.yml prometheus_port): on the same monitoring node as the testbed's, so that both clusters are watched at once."
  type        = number
  default     = 9091

  validation {
    condition     = var.production_prometheus_port >= 1 && var.production_prometheus_port <= 65535 && var.production_prometheus_port != var.prometheus_port
    error_message = "production_prometheus_port must be a TCP port (1-65535) other than prometheus_port: both Prometheus servers run on the monitoring node."
  }
}

variable "production_state_dir" {
  description = "streambed_state_dir of the production inventory (inventories/<env>-production); null: on nodes /var/lib/streambed/production (the monitoring node runs both clusters' Prometheus), on this machine the testbed's setting, which there resolves to <repository>/.streambed/<env>-production."
  type        = string
  default     = null

  validation {
    # The monitoring node runs both Prometheus servers: each keeps its TSDB and PID file in its own.
    condition     = var.production_state_dir == null || var.production_state_dir != coalesce(var.state_dir, "/var/lib/streambed")
    error_message = "production_state_dir must differ from state_dir: the two Prometheus servers on the monitoring node each need a state directory of their own."
  }
}

variable "prometheus_retention" {
  description = "How long Prometheus keeps samples (prometheus_retention)."
  type        = string
  default     = "15d"

  validation {
    condition     = can(regex("^[0-9]+(h|d|w|y)$", var.prometheus_retention))
    error_message = "prometheus_retention must be a Prometheus duration such as 15d or 48h."
  }
}

variable "kafka_data_dir" {
  description = "Mount point of each Kafka node's SSD data directory."
  type        = string
  default     = "/data/kafka"

  validation {
    condition     = startswith(var.kafka_data_dir, "/")
    error_message = "kafka_data_dir must be an absolute path."
  }
}

variable "group_vars" {
  description = "More variables for group_vars/all.yml, over the rendered ones (e.g. flink_install, a flink_version)."
  type        = map(any)
  default     = {}
}

variable "production_group_vars" {
  description = "More variables for production/group_vars/all.yml, over the rendered ones (which take group_vars, except what is the production cluster's own: JobManager, slots, Prometheus port, state directory, streambed_services)."
  type        = map(any)
  default     = {}
}

variable "extra_groups" {
  description = "More Ansible groups -> node names, e.g. { spark_master = [\"<name>-controller\"], spark_workers = [...] } to place the data pipeline's Spark cluster."
  type        = map(list(string))
  default     = {}

  validation {
    condition     = alltrue([for g, names in var.extra_groups : can(regex("^[a-z][a-z0-9_]*$", g)) && length(setsubtract(names, keys(var.nodes))) == 0 && length(names) > 0])
    error_message = "extra_groups must map group names (lowercase letters, digits, _) to non-empty lists of the topology's node names."
  }
}

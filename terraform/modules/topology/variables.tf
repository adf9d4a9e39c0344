# The paper's two clusters and what serves them. Every value is checked here, so that a bad one
# stops `plan` with one line naming the variable before any platform is asked for machines.

variable "name" {
  description = "Prefix of every node name (and of the platform's resources): lowercase letters, digits, hyphens."
  type        = string
  default     = "streambed"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,23}$", var.name))
    error_message = "name must start with a lowercase letter and hold at most 24 lowercase letters, digits or hyphens."
  }
}

# --- Testbed cluster: where StreamBed measures small budgets -------------------------------------

variable "testbed_taskmanagers" {
  description = "TaskManagers of the testbed cluster (on clusters: one node each)."
  type        = number
  default     = 4

  validation {
    condition     = var.testbed_taskmanagers >= 1 && var.testbed_taskmanagers <= 1000 && floor(var.testbed_taskmanagers) == var.testbed_taskmanagers
    error_message = "testbed_taskmanagers must be a whole number from 1 to 1000."
  }
}

variable "testbed_slots_per_taskmanager" {
  description = "Task slots per testbed TaskManager."
  type        = number
  default     = 4

  validation {
    condition     = var.testbed_slots_per_taskmanager >= 1 && var.testbed_slots_per_taskmanager <= 256 && floor(var.testbed_slots_per_taskmanager) == var.testbed_slots_per_taskmanager
    error_message = "testbed_slots_per_taskmanager must be a whole number from 1 to 256."
  }
}

variable "testbed_memory_per_slot_mb" {
  description = "Memory profiles the testbed offers the planner, MB per slot (testbed.yml memory_per_slot_mb); nodes are sized for the largest."
  type        = list(number)
  default     = [1024, 2048, 4096]

  validation {
    condition = length(var.testbed_memory_per_slot_mb) >= 1 && alltrue([
      for m in var.testbed_memory_per_slot_mb : m >= 256 && m <= 262144 && floor(m) == m
    ]) && length(distinct(var.testbed_memory_per_slot_mb)) == length(var.testbed_memory_per_slot_mb)
    error_message = "testbed_memory_per_slot_mb must be a non-empty list of distinct whole numbers of MB from 256 to 262144."
  }
}

variable "testbed_cores_per_slot" {
  description = "Cores a testbed node provides per slot (node size)."
  type        = number
  default     = 1

  validation {
    condition     = var.testbed_cores_per_slot > 0 && var.testbed_cores_per_slot <= 64
    error_message = "testbed_cores_per_slot must be above 0 and at most 64."
  }
}

variable "testbed_cpu_per_slot" {
  description = "CPU quota per slot the flink role enforces with cgroups (testbed.yml cpu_per_slot); 0: unconfined, the node's own cores."
  type        = number
  default     = 0

  validation {
    condition     = var.testbed_cpu_per_slot == 0 || (var.testbed_cpu_per_slot >= 0.01 && var.testbed_cpu_per_slot <= 64)
    error_message = "testbed_cpu_per_slot must be 0 (unconfined) or cores per slot from 0.01 to 64."
  }
}

variable "source_parallelism" {
  description = "Source tasks of a testbed run, outside the budget (testbed.yml source_parallelism)."
  type        = number
  default     = 1

  validation {
    condition     = var.source_parallelism >= 1 && floor(var.source_parallelism) == var.source_parallelism && var.source_parallelism < var.testbed_taskmanagers * var.testbed_slots_per_taskmanager
    error_message = "source_parallelism must be a whole number from 1 to below the testbed's slots (testbed_taskmanagers x testbed_slots_per_taskmanager)."
  }
}

variable "max_source_rate" {
  description = "Events/s one source task can generate at most (testbed.yml max_source_rate)."
  type        = number
  default     = 4000000

  validation {
    condition     = var.max_source_rate > 0
    error_message = "max_source_rate must be a positive number of events/s."
  }
}

variable "sample_period_s" {
  description = "Prometheus scrape interval in seconds (testbed.yml sample_period_s, group_vars prometheus_scrape_interval)."
  type        = number
  default     = 1

  validation {
    condition     = var.sample_period_s >= 1 && var.sample_period_s <= 60 && floor(var.sample_period_s) == var.sample_period_s
    error_message = "sample_period_s must be a whole number of seconds from 1 to 60."
  }
}

# --- Production cluster: where a plan is validated at full scale ---------------------------------

variable "production_taskmanagers" {
  description = "TaskManagers of the production cluster; 0: no production cluster (and no production JobManager)."
  type        = number
  default     = 8

  validation {
    condition     = var.production_taskmanagers >= 0 && var.production_taskmanagers <= 1000 && floor(var.production_taskmanagers) == var.production_taskmanagers
    error_message = "production_taskmanagers must be a whole number from 0 to 1000."
  }
  validation {
    # A plan is validated on the production cluster with the testbed's sources: they need slots too.
    condition     = var.production_taskmanagers == 0 || var.production_taskmanagers * var.production_slots_per_taskmanager > var.source_parallelism
    error_message = "production_taskmanagers x production_slots_per_taskmanager must exceed source_parallelism (the sources take slots of the production cluster too), or production_taskmanagers be 0."
  }
}

variable "production_slots_per_taskmanager" {
  description = "Task slots per production TaskManager."
  type        = number
  default     = 4

  validation {
    condition     = var.production_slots_per_taskmanager >= 1 && var.production_slots_per_taskmanager <= 256 && floor(var.production_slots_per_taskmanager) == var.production_slots_per_taskmanager
    error_message = "production_slots_per_taskmanager must be a whole number from 1 to 256."
  }
}

variable "production_memory_per_slot_mb" {
  description = "Memory per production slot, MB (the plan's profile)."
  type        = number
  default     = 2048

  validation {
    condition     = var.production_memory_per_slot_mb >= 256 && var.production_memory_per_slot_mb <= 262144 && floor(var.production_memory_per_slot_mb) == var.production_memory_per_slot_mb
    error_message = "production_memory_per_slot_mb must be a whole number of MB from 256 to 262144."
  }
}

variable "production_cores_per_slot" {
  description = "Cores a production node provides per slot."
  type        = number
  default     = 1

  validation {
    condition     = var.production_cores_per_slot > 0 && var.production_cores_per_slot <= 64
    error_message = "production_cores_per_slot must be above 0 and at most 64."
  }
}

# --- Flink processes (both clusters) -------------------------------------------------------------

variable "jobmanager_memory_mb" {
  description = "JobManager process memory, MB (flink_jobmanager_memory_mb); one JobManager per cluster."
  type        = number
  default     = 1024

  validation {
    condition     = var.jobmanager_memory_mb >= 512 && var.jobmanager_memory_mb <= 262144 && floor(var.jobmanager_memory_mb) == var.jobmanager_memory_mb
    error_message = "jobmanager_memory_mb must be a whole number of MB from 512 to 262144."
  }
}

variable "taskmanager_overhead_mb" {
  description = "Fixed part of a TaskManager's process memory, MB (flink_taskmanager_overhead_mb)."
  type        = number
  default     = 512

  validation {
    condition     = var.taskmanager_overhead_mb >= 128 && var.taskmanager_overhead_mb <= 65536 && floor(var.taskmanager_overhead_mb) == var.taskmanager_overhead_mb
    error_message = "taskmanager_overhead_mb must be a whole number of MB from 128 to 65536."
  }
}

variable "node_os_memory_mb" {
  description = "Memory left to the operating system on every node, MB (added to each node's size)."
  type        = number
  default     = 1024

  validation {
    condition     = var.node_os_memory_mb >= 0 && var.node_os_memory_mb <= 65536 && floor(var.node_os_memory_mb) == var.node_os_memory_mb
    error_message = "node_os_memory_mb must be a whole number of MB from 0 to 65536."
  }
}

# --- Kafka: the replay of a data set at rest -----------------------------------------------------

variable "kafka_nodes" {
  description = "Kafka nodes; null: derived from replay_rate at kafka_node_rate events/s per node (0 when nothing is replayed)."
  type        = number
  default     = null

  validation {
    condition     = var.kafka_nodes == null ? true : var.kafka_nodes >= 0 && var.kafka_nodes <= 100 && floor(var.kafka_nodes) == var.kafka_nodes
    error_message = "kafka_nodes must be null (derived from replay_rate) or a whole number from 0 to 100."
  }
}

variable "replay_rate" {
  description = "Largest rate the replay serves, events/s (streambed data: the campaign's sizing); 0: no replay."
  type        = number
  default     = 0

  validation {
    condition     = var.replay_rate >= 0 && var.replay_rate <= 1e9
    error_message = "replay_rate must be a number of events/s from 0 to 1e9."
  }
}

variable "kafka_node_rate" {
  description = "Events/s one SSD-bound Kafka node serves (paper, section VIII: about 1.2 M; streambed.dataset.KAFKA_NODE_RATE)."
  type        = number
  default     = 1200000

  validation {
    condition     = var.kafka_node_rate >= 1000
    error_message = "kafka_node_rate must be at least 1000 events/s per node."
  }
}

variable "replay_events" {
  description = "Events the Kafka topics hold (the data set loaded for the replay)."
  type        = number
  default     = 0

  validation {
    condition     = var.replay_events >= 0 && floor(var.replay_events) == var.replay_events
    error_message = "replay_events must be a whole number of events, 0 or more."
  }
}

variable "event_bytes" {
  description = "Bytes one event takes in Kafka (record and overhead; a data set's JSON bytes / events is a good estimate)."
  type        = number
  default     = 200

  validation {
    condition     = var.event_bytes >= 1 && var.event_bytes <= 1048576
    error_message = "event_bytes must be from 1 to 1048576 bytes."
  }
}

variable "kafka_replication_factor" {
  description = "Copies of each partition (a replay can be reloaded, so 1 is the default)."
  type        = number
  default     = 1

  validation {
    condition     = var.kafka_replication_factor >= 1 && var.kafka_replication_factor <= 5 && floor(var.kafka_replication_factor) == var.kafka_replication_factor
    error_message = "kafka_replication_factor must be a whole number from 1 to 5."
  }
}

variable "kafka_disk_headroom" {
  description = "Factor over the replay's bytes for each Kafka data directory (segments, indexes, a second load)."
  type        = number
  default     = 1.25

  validation {
    condition     = var.kafka_disk_headroom >= 1 && var.kafka_disk_headroom <= 10
    error_message = "kafka_disk_headroom must be from 1 to 10."
  }
}

variable "kafka_min_disk_gb" {
  description = "Smallest SSD data directory per Kafka node, GB."
  type        = number
  default     = 20

  validation {
    condition     = var.kafka_min_disk_gb >= 1 && floor(var.kafka_min_disk_gb) == var.kafka_min_disk_gb
    error_message = "kafka_min_disk_gb must be a whole number of GB, at least 1."
  }
}

variable "kafka_cores" {
  description = "Cores of a Kafka node."
  type        = number
  default     = 8

  validation {
    condition     = var.kafka_cores >= 1 && var.kafka_cores <= 512 && floor(var.kafka_cores) == var.kafka_cores
    error_message = "kafka_cores must be a whole number from 1 to 512."
  }
}

variable "kafka_memory_mb" {
  description = "Memory of a Kafka node, MB (the broker's heap is small; the rest is page cache)."
  type        = number
  default     = 16384

  validation {
    condition     = var.kafka_memory_mb >= 2048 && floor(var.kafka_memory_mb) == var.kafka_memory_mb
    error_message = "kafka_memory_mb must be a whole number of MB, at least 2048."
  }
}

# --- Monitoring and controller -------------------------------------------------------------------

variable "monitoring_disk_gb" {
  description = "Disk of the monitoring node (Prometheus TSDB, Grafana), GB."
  type        = number
  default     = 50

  validation {
    condition     = var.monitoring_disk_gb >= 10 && floor(var.monitoring_disk_gb) == var.monitoring_disk_gb
    error_message = "monitoring_disk_gb must be a whole number of GB, at least 10."
  }
}

variable "controller" {
  description = "Whether the StreamBed controller gets a node of its own (false: it runs where Terraform runs)."
  type        = bool
  default     = true
}

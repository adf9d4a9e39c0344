# The lab's sizes: EC2's topology scaled down to this machine (docs/infrastructure.md, "ENV=lab").

variable "name" {
  description = "Node name prefix (each node's network namespace is its name)."
  type        = string
  default     = "lab"
}

variable "lab_dir" {
  description = "The lab's state (SSH key, known_hosts, each host's sshd, private directories, data disk); null: <repository>/.streambed/lab/<name>."
  type        = string
  default     = null
}

variable "subnet" {
  description = "The lab's private subnet on its bridge (never routed off this machine)."
  type        = string
  default     = "10.213.0.0/24"
}

variable "bridge" {
  description = "The lab's bridge."
  type        = string
  default     = "sb-lab"
}

variable "testbed_taskmanagers" {
  description = "Testbed TaskManager hosts."
  type        = number
  default     = 2
}

variable "testbed_slots_per_taskmanager" {
  description = "Slots per testbed TaskManager (3: one for the source, 5 for operators, so that the explorer has two slot counts above q11's 4 operators)."
  type        = number
  default     = 3
}

variable "testbed_memory_per_slot_mb" {
  description = "Memory per slot on offer, MB."
  type        = list(number)
  default     = [1024]
}

variable "testbed_cpu_per_slot" {
  description = "CPU quota per testbed slot (cgroup, applied by the flink role on each host); 0: unconfined."
  type        = number
  default     = 0.25
}

variable "production_taskmanagers" {
  description = "Production TaskManager hosts."
  type        = number
  default     = 3
}

variable "production_slots_per_taskmanager" {
  description = "Slots per production TaskManager."
  type        = number
  default     = 2
}

variable "production_memory_per_slot_mb" {
  description = "Memory per production slot, MB."
  type        = number
  default     = 1024
}

variable "kafka_nodes" {
  description = "Kafka hosts (each with a loop-device data disk)."
  type        = number
  default     = 1
}

variable "data_disk_gb" {
  description = "Each Kafka host's sparse data disk, GB."
  type        = number
  default     = 4
}

variable "group_vars" {
  description = "More variables for both inventories' group_vars/all.yml."
  type        = map(any)
  default     = {}
}

variable "lake_dir" {
  description = "The data lake the lab's Spark cluster writes (spark_lake_dir): shared by every host and this machine, owned by the Spark service user. Empty: /var/tmp/streambed-<name>-lake. Data at rest: destroy leaves it."
  type        = string
  default     = ""
}

# Shared by the cluster examples (ec2, grid5000, cloudlab link to it): one declaration of the sizes.
# The topology's main sizes (terraform/modules/topology/variables.tf documents them all; add the
# ones you need here and pass them below).

variable "name" {
  description = "Node name prefix."
  type        = string
  default     = "streambed"
}

variable "testbed_taskmanagers" {
  description = "Testbed TaskManagers (one node each)."
  type        = number
  default     = 4
}

variable "testbed_slots_per_taskmanager" {
  description = "Slots per testbed TaskManager."
  type        = number
  default     = 4
}

variable "testbed_memory_per_slot_mb" {
  description = "Memory profiles the testbed offers, MB per slot."
  type        = list(number)
  default     = [1024, 2048, 4096]
}

variable "production_taskmanagers" {
  description = "Production TaskManagers; 0: no production cluster."
  type        = number
  default     = 8
}

variable "production_memory_per_slot_mb" {
  description = "Memory per production slot, MB."
  type        = number
  default     = 2048
}

variable "replay_rate" {
  description = "Largest replay rate, events/s (Kafka nodes: one per 1.2 M events/s); 0: no Kafka."
  type        = number
  default     = 0
}

variable "replay_events" {
  description = "Events the replay's topics hold (sizes the Kafka data directories)."
  type        = number
  default     = 0
}

variable "event_bytes" {
  description = "Bytes per event in Kafka."
  type        = number
  default     = 200
}

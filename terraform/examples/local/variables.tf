# inventories/local/testbed.yml's offer; tests/test_terraform.py checks that the defaults render it.

variable "slots" {
  description = "Slots for the query's operators (testbed.yml max_slots)."
  type        = number
  default     = 10

  validation {
    condition     = var.slots >= 1 && var.slots <= 256 && floor(var.slots) == var.slots
    error_message = "slots must be a whole number from 1 to 256."
  }
}

variable "source_parallelism" {
  description = "Source tasks, each in a slot of its own outside the budget."
  type        = number
  default     = 1

  validation {
    condition     = var.source_parallelism >= 1 && var.source_parallelism <= 64 && floor(var.source_parallelism) == var.source_parallelism
    error_message = "source_parallelism must be a whole number from 1 to 64."
  }
}

variable "memory_per_slot_mb" {
  description = "Memory profiles on offer, MB per slot."
  type        = list(number)
  default     = [1024]
}

variable "cpu_per_slot" {
  description = "Cores per slot (cgroup quota); 0: unconfined."
  type        = number
  default     = 0.12
}

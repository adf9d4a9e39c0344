variable "name" {
  description = "The topology's name (profile.py's `name` parameter: node name prefix)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,23}$", var.name))
    error_message = "name must start with a lowercase letter and hold at most 24 lowercase letters, digits or hyphens."
  }
}

variable "nodes" {
  description = "The topology module's `nodes` output: node name -> {role, data_disk_gb}."
  type        = map(object({ role = string, data_disk_gb = number }))
}

variable "manifest_addresses" {
  description = "Node name -> {private, public} from the started experiment's manifest (manifest.py); {} before the experiment exists."
  type        = map(object({ private = string, public = optional(string) }))
  default     = {}

  validation {
    condition     = length(var.manifest_addresses) == 0 || length(setsubtract(keys(var.nodes), keys(var.manifest_addresses))) == 0
    error_message = "manifest_addresses lacks nodes of the topology (${join(", ", setsubtract(keys(var.nodes), keys(var.manifest_addresses)))}): start the experiment with this topology's profile_bindings."
  }
}

variable "hardware_types" {
  description = "CloudLab hardware types: taskmanager (both clusters), kafka (pick one with SSDs as large as the data directory), other."
  type        = object({ taskmanager = string, kafka = string, other = string })
  default     = { taskmanager = "c6525-25g", kafka = "m510", other = "m510" }

  validation {
    condition     = alltrue([for t in values(var.hardware_types) : can(regex("^[a-z0-9][a-z0-9-]*$", t))])
    error_message = "hardware_types must name CloudLab hardware types such as c6525-25g or m510."
  }
}

variable "image" {
  description = "Disk image URN of every node."
  type        = string
  default     = "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD"

  validation {
    condition     = startswith(var.image, "urn:publicid:IDN+")
    error_message = "image must be a disk image URN (urn:publicid:IDN+...)."
  }
}

variable "kafka_data_dir" {
  description = "Mount point of each Kafka node's blockstore."
  type        = string
  default     = "/data/kafka"
}

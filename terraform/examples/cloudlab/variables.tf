variable "cloudlab_user" {
  description = "Your CloudLab login (the nodes' SSH user)."
  type        = string
}

variable "manifest_addresses" {
  description = "Node name -> {private, public} from the experiment's manifest (manifest.py writes manifest.auto.tfvars.json); {} before it exists."
  type        = map(object({ private = string, public = optional(string) }))
  default     = {}
}

variable "hardware_types" {
  description = "CloudLab hardware types of TaskManagers, Kafka nodes (SSDs) and the others."
  type        = object({ taskmanager = string, kafka = string, other = string })
  default     = { taskmanager = "c6525-25g", kafka = "m510", other = "m510" }
}

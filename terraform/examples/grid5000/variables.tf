variable "site" {
  description = "Grid'5000 site."
  type        = string
  default     = "rennes"
}

variable "walltime" {
  description = "Reservation length, H:MM."
  type        = string
  default     = "4:00"
}

variable "properties" {
  description = "Role -> OAR properties, e.g. { kafka = \"cluster='paravance'\", testbed_taskmanager = \"cluster='parasilo'\" }."
  type        = map(string)
  default     = {}
}

variable "environment" {
  description = "kadeploy environment."
  type        = string
  default     = "debian12-min"
}

variable "ssh_public_key" {
  description = "Public key for root on the deployed nodes (its content)."
  type        = string
}

variable "restfully_file" {
  description = "Path of your Grid'5000 API credentials file when running outside Grid'5000; null on a frontend."
  type        = string
  default     = null
}

variable "jump_host" {
  description = "user@access.grid5000.fr when Ansible runs outside Grid'5000; null on a frontend."
  type        = string
  default     = null
}

# The topology's nodes as Grid'5000 bare-metal nodes: one OAR job of type deploy per role (so that
# each role can ask for hardware of its own, e.g. Kafka on a cluster with SSDs), each deployed
# with a kadeploy environment. Credentials stay out of files: from a Grid'5000 frontend the API
# needs none; from outside, the provider reads the user's own ~/.restfully file or the
# environment (see the example's provider block).

variable "name" {
  description = "OAR job name prefix (the topology's name)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,23}$", var.name))
    error_message = "name must start with a lowercase letter and hold at most 24 lowercase letters, digits or hyphens."
  }
}

variable "nodes" {
  description = "The topology module's `nodes` output: node name -> {role, ...}."
  type        = map(object({ role = string }))
}

variable "site" {
  description = "Grid'5000 site of every job."
  type        = string
  default     = "rennes"

  validation {
    condition     = contains(["grenoble", "lille", "luxembourg", "lyon", "nancy", "nantes", "rennes", "sophia", "strasbourg", "toulouse", "louvain"], var.site)
    error_message = "site must be a Grid'5000 site: grenoble, lille, luxembourg, lyon, nancy, nantes, rennes, sophia, strasbourg, toulouse or louvain."
  }
}

variable "walltime" {
  description = "How long the reservation lasts, OAR's H:MM (or H:MM:SS)."
  type        = string
  default     = "4:00"

  validation {
    condition     = can(regex("^[0-9]{1,3}:[0-5][0-9](:[0-5][0-9])?$", var.walltime))
    error_message = "walltime must be OAR's H:MM or H:MM:SS, such as 4:00."
  }
}

variable "properties" {
  description = "Role -> OAR properties selecting its hardware, e.g. { kafka = \"cluster='paravance'\" }; a role without one takes any node of the site."
  type        = map(string)
  default     = {}

  validation {
    condition = alltrue([for r in keys(var.properties) : contains([
      "testbed_jobmanager", "testbed_taskmanager", "production_jobmanager", "production_taskmanager",
      "kafka", "monitoring", "controller",
    ], r)])
    error_message = "properties keys must be roles: testbed_jobmanager, testbed_taskmanager, production_jobmanager, production_taskmanager, kafka, monitoring, controller."
  }
}

variable "environment" {
  description = "kadeploy environment deployed on every node (kaenv3 -l lists them)."
  type        = string
  default     = "debian12-min"

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9._-]*$", var.environment))
    error_message = "environment must name a kadeploy environment such as debian12-min."
  }
}

variable "ssh_public_key" {
  description = "Public key installed for root on the deployed nodes (the content, e.g. file(\"~/.ssh/id_ed25519.pub\"))."
  type        = string

  validation {
    condition     = can(regex("^(ssh-(ed25519|rsa)|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+", var.ssh_public_key))
    error_message = "ssh_public_key must be an OpenSSH public key (ssh-ed25519, ssh-rsa or ecdsa-sha2-...), not a private key or a path."
  }
}

variable "scheduled_at_limit" {
  description = "How long the provider waits for each job to start (s, m or h suffix)."
  type        = string
  default     = "15m"

  validation {
    condition     = can(regex("^[0-9]+[smh]$", var.scheduled_at_limit))
    error_message = "scheduled_at_limit must be a duration such as 15m (s, m or h)."
  }
}

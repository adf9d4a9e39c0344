# The topology's nodes as EC2 instances in one subnet. No credentials here or anywhere in the
# configuration: the aws provider takes them from its default chain (environment, shared config
# and SSO profiles, instance or task role).

variable "name" {
  description = "Prefix of the security group and of the instances' Name tags (the topology's name)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,23}$", var.name))
    error_message = "name must start with a lowercase letter and hold at most 24 lowercase letters, digits or hyphens."
  }
}

variable "nodes" {
  description = "The topology module's `nodes` output: node name -> {role, cores, memory_mb, data_disk_gb}."
  type = map(object({
    role         = string
    cores        = number
    memory_mb    = number
    data_disk_gb = number
  }))
}

variable "instance_types" {
  description = "Role -> EC2 instance type, over the defaults (main.tf). Each must hold its role's cores and memory (checked against the type's description)."
  type        = map(string)
  default     = {}

  validation {
    condition = alltrue([for r, t in var.instance_types : contains([
      "testbed_jobmanager", "testbed_taskmanager", "production_jobmanager", "production_taskmanager",
      "kafka", "monitoring", "controller",
    ], r) && can(regex("^[a-z][a-z0-9-]*\\.[a-z0-9]+$", t))])
    error_message = "instance_types must map roles (testbed_jobmanager, testbed_taskmanager, production_jobmanager, production_taskmanager, kafka, monitoring, controller) to EC2 instance types such as c6i.2xlarge."
  }
}

variable "kafka_storage" {
  description = "Kafka's data directory: nvme (the instance type's local NVMe SSD) or gp3 (an EBS volume per Kafka node)."
  type        = string
  default     = "nvme"

  validation {
    condition     = contains(["nvme", "gp3"], var.kafka_storage)
    error_message = "kafka_storage must be \"nvme\" (instance store) or \"gp3\" (EBS)."
  }
}

variable "kafka_gp3" {
  description = "IOPS and throughput (MB/s) of each Kafka gp3 volume (kafka_storage = gp3)."
  type        = object({ iops = number, throughput = number })
  default     = { iops = 16000, throughput = 1000 }

  validation {
    condition     = var.kafka_gp3.iops >= 3000 && var.kafka_gp3.iops <= 16000 && var.kafka_gp3.throughput >= 125 && var.kafka_gp3.throughput <= 1000
    error_message = "kafka_gp3 must have iops from 3000 to 16000 and throughput from 125 to 1000 MB/s (gp3's limits)."
  }
}

variable "subnet_id" {
  description = "Subnet of every instance (its VPC holds the security group)."
  type        = string

  validation {
    condition     = can(regex("^subnet-[0-9a-f]{8,17}$", var.subnet_id))
    error_message = "subnet_id must be a subnet ID such as subnet-0123456789abcdef0."
  }
}

variable "admin_cidr" {
  description = "The administrator's network (IPv4 CIDR): the only source outside the cluster its admin_ports are open to."
  type        = string

  validation {
    condition     = can(regex("^[0-9.]+/[0-9]+$", var.admin_cidr)) && can(cidrhost(var.admin_cidr, 0))
    error_message = "admin_cidr must be an IPv4 CIDR such as 203.0.113.7/32."
  }
  validation {
    condition     = !endswith(var.admin_cidr, "/0")
    error_message = "admin_cidr must be the administrator's network, not the whole Internet (/0)."
  }
}

variable "admin_ports" {
  description = "TCP ports open to admin_cidr: SSH, Flink's REST API and web UI, the testbed's and the production cluster's Prometheus, Grafana."
  type        = list(number)
  default     = [22, 8081, 9090, 9091, 3000]

  validation {
    condition     = alltrue([for p in var.admin_ports : p >= 1 && p <= 65535 && floor(p) == p])
    error_message = "admin_ports must be TCP ports (whole numbers from 1 to 65535)."
  }
}

variable "key_name" {
  description = "Name of an EC2 key pair already imported in the region (its public key goes to the instances)."
  type        = string

  validation {
    condition     = length(var.key_name) >= 1 && length(var.key_name) <= 255
    error_message = "key_name must name an EC2 key pair (1 to 255 characters)."
  }
}

variable "ami_id" {
  description = "AMI of every instance; null: the newest official Debian 12 (amd64) image."
  type        = string
  default     = null

  validation {
    condition     = var.ami_id == null ? true : can(regex("^ami-[0-9a-f]{8,17}$", var.ami_id))
    error_message = "ami_id must be null or an AMI ID such as ami-0123456789abcdef0."
  }
}

variable "root_volume_gb" {
  description = "Root volume of every instance (gp3), GB; the monitoring node gets its data_disk_gb on top."
  type        = number
  default     = 30

  validation {
    condition     = var.root_volume_gb >= 8 && var.root_volume_gb <= 16384 && floor(var.root_volume_gb) == var.root_volume_gb
    error_message = "root_volume_gb must be a whole number of GB from 8 to 16384."
  }
}

variable "public_ip" {
  description = "Whether instances get a public address (reachable from admin_cidr only)."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags on every resource, besides Name, Role and Cluster."
  type        = map(string)
  default     = {}
}

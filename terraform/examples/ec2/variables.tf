variable "region" {
  description = "AWS region."
  type        = string
  default     = "eu-west-1"
}

variable "subnet_id" {
  description = "Subnet of every instance (a public subnet of the account's VPC)."
  type        = string
}

variable "admin_cidr" {
  description = "The administrator's network, e.g. your address/32: the only outside source of SSH, Flink's UI, Prometheus and Grafana."
  type        = string
}

variable "key_name" {
  description = "EC2 key pair for SSH."
  type        = string
}

variable "ssh_user" {
  description = "Login of the AMI (Debian's images: admin)."
  type        = string
  default     = "admin"
}

variable "instance_types" {
  description = "Role -> instance type, over the module's defaults."
  type        = map(string)
  default     = {}
}

variable "kafka_storage" {
  description = "nvme (instance store) or gp3 (EBS)."
  type        = string
  default     = "nvme"
}

variable "default_tags" {
  description = "More tags on every resource (the provider's default_tags), e.g. { team = \"...\", cost-center = \"...\" }."
  type        = map(string)
  default     = {}
}

# Built-ins only (templatefile, yamlencode-free rendering): runs offline like the topology module.
terraform {
  required_version = ">= 1.9"
}

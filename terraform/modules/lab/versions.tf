# Built-ins only (terraform_data, local-exec): no provider from a registry, runs offline.
terraform {
  required_version = ">= 1.9"
}

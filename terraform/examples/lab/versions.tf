# Built-ins only: the lab needs no provider, so `terraform init` writes no dependency lock file here.
terraform {
  required_version = ">= 1.9"

}

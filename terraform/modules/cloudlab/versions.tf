# No Terraform provider drives CloudLab: the experiment is started from profile.py (geni-lib) and
# this module only checks its manifest's addresses against the topology. Built-ins only.
terraform {
  required_version = ">= 1.9"
}

# No provider: the experiment is started from terraform/modules/cloudlab/profile.py.
terraform {
  required_version = ">= 1.9"
}

# Built-ins only: no provider, so this module inits, validates, plans and tests offline.
# 1.9: validation conditions that refer to other variables.
terraform {
  required_version = ">= 1.9"
}

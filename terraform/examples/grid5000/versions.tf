terraform {
  required_version = ">= 1.9"

  required_providers {
    grid5000 = {
      source  = "pmorillon/grid5000"
      version = "~> 0.0.10"
    }
  }
}

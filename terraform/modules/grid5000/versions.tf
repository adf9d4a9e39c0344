terraform {
  required_version = ">= 1.9"

  required_providers {
    # The community provider (github.com/pmorillon/terraform-provider-grid5000): OAR jobs and
    # kadeploy deployments through the Grid'5000 REST API.
    grid5000 = {
      source  = "pmorillon/grid5000"
      version = "~> 0.0.10"
    }
  }
}

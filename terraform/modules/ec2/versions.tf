terraform {
  required_version = ">= 1.9"

  required_providers {
    # 5.x: the per-rule aws_vpc_security_group_{ingress,egress}_rule resources.
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 7.0"
    }
  }
}

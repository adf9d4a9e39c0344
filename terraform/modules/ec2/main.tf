locals {
  # Kafka on local NVMe (i4i: 1 x 1875 GB at 2xlarge); TaskManagers compute-optimised, 8 vCPUs for
  # the default 4 slots of 4 GB (16 GB): c6i.2xlarge has 16 GiB, so the default topology asks m6i.
  instance_types = merge({
    testbed_jobmanager     = "m6i.large"
    testbed_taskmanager    = "m6i.2xlarge"
    production_jobmanager  = "m6i.large"
    production_taskmanager = "m6i.2xlarge"
    kafka                  = "i4i.2xlarge"
    monitoring             = "m6i.large"
    controller             = "m6i.large"
  }, var.instance_types)

  roles = toset([for n in values(var.nodes) : n.role])
  kafka = { for name, n in var.nodes : name => n if n.role == "kafka" }
  tags  = merge(var.tags, { "streambed:cluster" = var.name })
}

data "aws_subnet" "this" {
  id = var.subnet_id
}

# Debian 12 from Debian's own AWS account (136693071363), when no AMI is given.
data "aws_ami" "debian" {
  count       = var.ami_id == null ? 1 : 0
  most_recent = true
  owners      = ["136693071363"]

  filter {
    name   = "name"
    values = ["debian-12-amd64-*"]
  }
}

# What each role's instance type offers, to refuse one too small for the topology's sizes before
# anything is created.
data "aws_ec2_instance_type" "role" {
  for_each      = local.roles
  instance_type = local.instance_types[each.key]

  lifecycle {
    postcondition {
      condition = alltrue([
        for n in values(var.nodes) : self.default_vcpus >= n.cores && self.memory_size >= n.memory_mb if n.role == each.key
      ])
      error_message = "instance_types[\"${each.key}\"] = ${self.instance_type} has ${self.default_vcpus} vCPUs and ${self.memory_size} MiB, less than the topology's ${each.key} node needs."
    }
    postcondition {
      condition     = each.key != "kafka" || var.kafka_storage != "nvme" || (self.instance_storage_supported && alltrue([for n in values(local.kafka) : coalesce(self.total_instance_storage, 0) >= n.data_disk_gb]))
      error_message = "kafka_storage = \"nvme\" needs an instance type with local NVMe of at least the Kafka data directory's size; ${self.instance_type} has ${coalesce(self.total_instance_storage, 0)} GB. Pick one (i4i, i3en, m6id...) or kafka_storage = \"gp3\"."
    }
  }
}

resource "aws_security_group" "cluster" {
  name        = "${var.name}-cluster"
  description = "StreamBed ${var.name}: open within the cluster, admin ports from the administrator's network only"
  vpc_id      = data.aws_subnet.this.vpc_id
  tags        = merge(local.tags, { Name = "${var.name}-cluster" })
}

# Every port between members: Flink RPC and data, the reporters' metrics range, Kafka, Prometheus.
resource "aws_vpc_security_group_ingress_rule" "cluster" {
  security_group_id            = aws_security_group.cluster.id
  referenced_security_group_id = aws_security_group.cluster.id
  ip_protocol                  = "-1"
  description                  = "within the cluster"
  tags                         = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "admin" {
  for_each          = toset([for p in var.admin_ports : tostring(p)])
  security_group_id = aws_security_group.cluster.id
  cidr_ipv4         = var.admin_cidr
  ip_protocol       = "tcp"
  from_port         = tonumber(each.key)
  to_port           = tonumber(each.key)
  description       = "administrator, port ${each.key}"
  tags              = local.tags
}

# Outbound: packages, the Flink release, Debian mirrors.
resource "aws_vpc_security_group_egress_rule" "all" {
  security_group_id = aws_security_group.cluster.id
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "-1"
  description       = "outbound"
  tags              = local.tags
}

resource "aws_instance" "node" {
  for_each = var.nodes

  ami                         = coalesce(var.ami_id, one(data.aws_ami.debian[*].id))
  instance_type               = local.instance_types[each.value.role]
  subnet_id                   = var.subnet_id
  vpc_security_group_ids      = [aws_security_group.cluster.id]
  key_name                    = var.key_name
  associate_public_ip_address = var.public_ip

  root_block_device {
    volume_type = "gp3"
    volume_size = var.root_volume_gb + (each.value.role == "monitoring" ? each.value.data_disk_gb : 0)
    encrypted   = true
  }

  # IMDSv2 only: instance credentials are never readable by a plain GET from a process on the node.
  metadata_options {
    http_tokens   = "required"
    http_endpoint = "enabled"
  }

  tags = merge(local.tags, { Name = each.key, Role = each.value.role, Cluster = var.name })
}

resource "aws_ebs_volume" "kafka" {
  for_each = var.kafka_storage == "gp3" ? local.kafka : {}

  availability_zone = aws_instance.node[each.key].availability_zone
  size              = each.value.data_disk_gb
  type              = "gp3"
  iops              = var.kafka_gp3.iops
  throughput        = var.kafka_gp3.throughput
  encrypted         = true
  tags              = merge(local.tags, { Name = "${each.key}-data", Role = "kafka" })
}

resource "aws_volume_attachment" "kafka" {
  for_each = aws_ebs_volume.kafka

  device_name = "/dev/sdf"
  volume_id   = each.value.id
  instance_id = aws_instance.node[each.key].id
}

# The EC2 module against a mocked aws provider (the schema stub serves the schema offline): rules,
# instance types, Kafka storage and the addresses handed to the inventory.

mock_provider "aws" {
  # Mocked values already at plan, so that plan-only runs can compare IDs.
  override_during = plan

  mock_data "aws_subnet" {
    defaults = { vpc_id = "vpc-0123456789abcdef0", availability_zone = "eu-west-1a" }
  }
  mock_data "aws_ami" {
    defaults = { id = "ami-0123456789abcdef0" }
  }
  mock_data "aws_ec2_instance_type" {
    defaults = { default_vcpus = 8, memory_size = 65536, instance_storage_supported = true, total_instance_storage = 1875 }
  }
  mock_resource "aws_security_group" {
    defaults = { id = "sg-0123456789abcdef0" }
  }
}

variables {
  name       = "sb"
  subnet_id  = "subnet-0123456789abcdef0"
  admin_cidr = "203.0.113.7/32"
  key_name   = "streambed"
  nodes = {
    "sb-tb-jm"      = { role = "testbed_jobmanager", cores = 2, memory_mb = 2048, data_disk_gb = 0 }
    "sb-tb-tm-01"   = { role = "testbed_taskmanager", cores = 4, memory_mb = 17920, data_disk_gb = 0 }
    "sb-kafka-01"   = { role = "kafka", cores = 8, memory_mb = 16384, data_disk_gb = 600 }
    "sb-kafka-02"   = { role = "kafka", cores = 8, memory_mb = 16384, data_disk_gb = 600 }
    "sb-monitoring" = { role = "monitoring", cores = 2, memory_mb = 4096, data_disk_gb = 50 }
  }
}

run "opens_admin_ports_to_the_admin_cidr_only" {
  command = plan

  assert {
    condition     = length(aws_vpc_security_group_ingress_rule.admin) == 5 && alltrue([for r in values(aws_vpc_security_group_ingress_rule.admin) : r.cidr_ipv4 == "203.0.113.7/32" && r.ip_protocol == "tcp" && r.from_port == r.to_port])
    error_message = "every admin rule opens one TCP port to admin_cidr only"
  }
  assert {
    condition     = aws_vpc_security_group_ingress_rule.cluster.cidr_ipv4 == null && aws_vpc_security_group_ingress_rule.cluster.referenced_security_group_id == aws_security_group.cluster.id
    error_message = "all ports are open only to members of the cluster's own security group"
  }
  assert {
    condition     = sort(keys(aws_vpc_security_group_ingress_rule.admin)) == tolist(["22", "3000", "8081", "9090", "9091"])
    error_message = "the default admin ports are SSH, Grafana, Flink REST and both clusters' Prometheus"
  }
}

run "one_instance_per_node_with_its_role_type" {
  command = plan

  assert {
    condition     = length(aws_instance.node) == 5 && aws_instance.node["sb-tb-tm-01"].instance_type == "m6i.2xlarge" && aws_instance.node["sb-kafka-01"].instance_type == "i4i.2xlarge"
    error_message = "each node is an instance of its role's type"
  }
  assert {
    condition     = aws_instance.node["sb-monitoring"].root_block_device[0].volume_size == 30 + 50 && aws_instance.node["sb-tb-jm"].root_block_device[0].encrypted
    error_message = "the monitoring node's root volume holds its data disk; volumes are encrypted"
  }
  assert {
    condition     = aws_instance.node["sb-tb-jm"].metadata_options[0].http_tokens == "required" && aws_instance.node["sb-tb-jm"].ami == "ami-0123456789abcdef0"
    error_message = "IMDSv2 only, and the Debian AMI when none is given"
  }
  assert {
    condition     = length(aws_ebs_volume.kafka) == 0
    error_message = "Kafka on local NVMe needs no EBS volume"
  }
}

run "kafka_on_gp3_gets_a_sized_volume_per_node" {
  command = plan
  variables {
    kafka_storage = "gp3"
  }

  assert {
    condition     = length(aws_ebs_volume.kafka) == 2 && aws_ebs_volume.kafka["sb-kafka-02"].size == 600 && aws_ebs_volume.kafka["sb-kafka-02"].type == "gp3"
    error_message = "one gp3 volume of the topology's data directory size per Kafka node"
  }
  assert {
    condition     = aws_volume_attachment.kafka["sb-kafka-01"].device_name == "/dev/sdf"
    error_message = "each volume is attached to its Kafka node"
  }
}

run "addresses_for_the_inventory" {
  command = plan

  override_resource {
    target          = aws_instance.node
    override_during = plan
    values          = { private_ip = "10.0.1.5", public_ip = "" }
  }

  assert {
    condition     = output.addresses["sb-tb-jm"].private == "10.0.1.5" && output.addresses["sb-tb-jm"].public == null && length(output.addresses) == 5
    error_message = "every node's private address, and no public one when the instance has none"
  }
}

run "refuses_an_instance_type_too_small" {
  command = plan
  override_data {
    target = data.aws_ec2_instance_type.role["testbed_taskmanager"]
    values = { default_vcpus = 2, memory_size = 4096, instance_storage_supported = false, total_instance_storage = 0 }
  }
  expect_failures = [data.aws_ec2_instance_type.role["testbed_taskmanager"]]
}

run "refuses_nvme_kafka_without_instance_storage" {
  command = plan
  override_data {
    target = data.aws_ec2_instance_type.role["kafka"]
    values = { default_vcpus = 8, memory_size = 65536, instance_storage_supported = false, total_instance_storage = 0 }
  }
  expect_failures = [data.aws_ec2_instance_type.role["kafka"]]
}

run "refuses_the_whole_internet_as_admin_cidr" {
  command = plan
  variables {
    admin_cidr = "0.0.0.0/0"
  }
  expect_failures = [var.admin_cidr]
}

run "refuses_a_malformed_admin_cidr" {
  command = plan
  variables {
    admin_cidr = "203.0.113.7"
  }
  expect_failures = [var.admin_cidr]
}

run "refuses_an_unknown_kafka_storage" {
  command = plan
  variables {
    kafka_storage = "hdd"
  }
  expect_failures = [var.kafka_storage]
}

run "instance_types_override_one_role" {
  command = plan
  variables {
    instance_types = { testbed_taskmanager = "c6i.4xlarge" }
  }

  assert {
    condition     = aws_instance.node["sb-tb-tm-01"].instance_type == "c6i.4xlarge" && aws_instance.node["sb-tb-jm"].instance_type == "m6i.large"
    error_message = "an override changes its role only"
  }
}

run "refuses_an_instance_type_for_an_unknown_role" {
  command = plan
  variables {
    instance_types = { taskmanager = "c6i.4xlarge" }
  }
  expect_failures = [var.instance_types]
}

# The whole chain on a mocked aws provider: topology -> ec2 -> inventory.

mock_provider "aws" {
  override_during = plan

  mock_data "aws_ec2_instance_type" {
    defaults = { default_vcpus = 16, memory_size = 65536, instance_storage_supported = true, total_instance_storage = 3750 }
  }
  mock_resource "aws_instance" {
    defaults = { private_ip = "10.0.1.7", public_ip = "198.51.100.7" }
  }
}

variables {
  subnet_id   = "subnet-0123456789abcdef0"
  admin_cidr  = "203.0.113.7/32"
  key_name    = "streambed"
  replay_rate = 3000000
}

run "renders_the_inventory_of_the_instances" {
  command = plan

  assert {
    condition     = length(output.addresses) == 1 + 4 + 1 + 8 + 3 + 1 + 1
    error_message = "an instance per node: both clusters, 3 Kafka nodes for 3 M events/s, monitoring, controller"
  }
  assert {
    condition     = strcontains(output.inventory_files["hosts.yml"], "ProxyJump=admin@198.51.100.7") && strcontains(output.inventory_files["hosts.yml"], "    kafka:\n      hosts:\n        streambed-kafka-01:")
    error_message = "hosts.yml jumps through the controller and lists the Kafka nodes"
  }
  assert {
    condition     = strcontains(output.inventory_files["group_vars/all.yml"], "flink_rest_address: \"10.0.1.7\"") && strcontains(output.production_inventory_files["group_vars/all.yml"], "prometheus_port: 9091")
    error_message = "the controller reaches Flink at the JobManager's private address; the production cluster has an inventory of its own"
  }
  assert {
    condition     = strcontains(output.production_inventory_files["hosts.yml"], "    taskmanagers:\n      hosts:\n        streambed-prod-tm-01:\n") && !strcontains(output.inventory_files["hosts.yml"], "streambed-prod-") && strcontains(output.production_inventory_files["testbed.yml"], "max_slots: 31\n")
    error_message = "the production nodes are the taskmanagers of the production hosts.yml and none of the testbed's inventory; 8 x 4 slots less the source's"
  }
}

# docs/infrastructure.md's walk-through tfvars, with AWS's figures for the Kafka instance types:
# 38.85 G events need 4,857 GB per Kafka node, more than an i4i.2xlarge's 1,875 GB (the module's own test
# refuses that: terraform/modules/ec2/tests).
run "the_walkthrough_tfvars_plan_on_i4i_8xlarge" {
  command = plan
  variables {
    replay_rate    = 2400000
    replay_events  = 38850000000
    instance_types = { kafka = "i4i.8xlarge" }
    default_tags   = { team = "streaming" }
  }
  override_data {
    target = module.ec2.data.aws_ec2_instance_type.role["kafka"]
    values = { default_vcpus = 32, memory_size = 262144, instance_storage_supported = true, total_instance_storage = 7500 }
  }
  assert {
    condition     = module.topology.kafka_data_disk_gb == 4857 && length(module.topology.roles.kafka.nodes) == 2
    error_message = "2 Kafka nodes of 4,857 GB each"
  }
  assert {
    condition     = strcontains(output.inventory_files["hosts.yml"], "kafka_data_device: \"/dev/nvme1n1\"") && !strcontains(output.inventory_files["group_vars/all.yml"], "kafka_log_dirs")
    error_message = "each Kafka node's NVMe disk is its kafka_data_device, which the kafka role mounts for log.dirs"
  }
}

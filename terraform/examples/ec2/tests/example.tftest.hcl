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

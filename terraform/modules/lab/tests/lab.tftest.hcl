# Plan only: applying would create namespaces on the machine running the tests (tests/test_lab.py does
# that, marked `lab`).

variables {
  lab_dir = "/var/tmp/streambed-lab-plan"
  nodes = {
    "lab-tb-jm"      = { role = "testbed_jobmanager" }
    "lab-tb-tm-01"   = { role = "testbed_taskmanager" }
    "lab-kafka-01"   = { role = "kafka" }
    "lab-monitoring" = { role = "monitoring" }
    "lab-controller" = { role = "controller" }
  }
}

run "hosts_get_addresses_in_name_order_and_the_controller_none" {
  command = plan

  assert {
    condition = output.addresses == {
      "lab-kafka-01"   = { private = "10.213.0.10" }
      "lab-monitoring" = { private = "10.213.0.11" }
      "lab-tb-jm"      = { private = "10.213.0.12" }
      "lab-tb-tm-01"   = { private = "10.213.0.13" }
    }
    error_message = "addresses: ${jsonencode(output.addresses)}"
  }
  assert {
    condition     = output.hosts["lab-tb-jm"].veth == "sb-lab-12" && output.bridge.address == "10.213.0.1"
    error_message = "veth or bridge address wrong"
  }
  assert {
    condition     = output.kafka_data_devices == { "lab-kafka-01" = "/var/tmp/streambed-lab-plan/hosts/lab-kafka-01/disk" }
    error_message = "kafka_data_devices: ${jsonencode(output.kafka_data_devices)}"
  }
  assert {
    condition     = terraform_data.host["lab-kafka-01"].input.DISK_GB == 4 && terraform_data.host["lab-tb-jm"].input.DISK_GB == 0
    error_message = "only the Kafka node gets a data disk"
  }
}

run "a_public_subnet_is_refused" {
  command = plan
  variables { subnet = "8.8.8.0/24" }
  expect_failures = [var.subnet]
}

run "a_lab_dir_under_a_private_directory_is_refused" {
  command = plan
  variables { lab_dir = "/tmp/lab" }
  expect_failures = [var.lab_dir]
}

run "a_long_bridge_name_is_refused" {
  command = plan
  variables { bridge = "streambed-lab" }
  expect_failures = [var.bridge]
}

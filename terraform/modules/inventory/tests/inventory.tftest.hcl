# Nodes + addresses -> inventory files: groups, addresses, group_vars, and what is refused.

# The topology of a small two-cluster deployment, as the platform examples wire it.
run "topology" {
  command = plan
  module {
    source = "../topology"
  }
  variables {
    name                    = "sb"
    testbed_taskmanagers    = 2
    production_taskmanagers = 3
    replay_rate             = 2000000
  }
}

run "renders_every_group_with_private_addresses" {
  command = plan
  variables {
    nodes     = run.topology.nodes
    settings  = run.topology.settings
    addresses = { for i, name in sort(keys(run.topology.nodes)) : name => { private = "10.0.1.${i + 10}", public = "203.0.113.${i + 10}" } }
    ssh_user  = "admin"
    jump_host = "admin@203.0.113.99"
  }

  assert {
    condition     = output.groups.jobmanager == tolist(["sb-tb-jm"]) && output.groups.taskmanagers == tolist(["sb-tb-tm-01", "sb-tb-tm-02"]) && output.groups.monitoring == tolist(["sb-monitoring"])
    error_message = "the groups site.yml deploys must hold the testbed's nodes: ${jsonencode(output.groups)}"
  }
  assert {
    condition     = output.groups.kafka == tolist(["sb-kafka-01", "sb-kafka-02"]) && output.groups.controller == tolist(["sb-controller"]) && output.groups.production_jobmanager == tolist(["sb-prod-jm"]) && length(output.groups.production_taskmanagers) == 3
    error_message = "kafka, controller and the production cluster get groups of their own: ${jsonencode(output.groups)}"
  }
  assert {
    # Ansible, the JobManager address and Prometheus's targets all read ansible_host: the private one.
    condition     = output.hosts["sb-tb-jm"].ansible_host == var.addresses["sb-tb-jm"].private && output.hosts["sb-tb-jm"].public_address == var.addresses["sb-tb-jm"].public
    error_message = "ansible_host must be the private address and public_address the public one"
  }
  assert {
    condition     = output.group_vars.flink_jobmanager_host == var.addresses["sb-tb-jm"].private && output.group_vars.flink_rest_address == var.addresses["sb-tb-jm"].private && output.group_vars.prometheus_listen_host == var.addresses["sb-monitoring"].private
    error_message = "the controller reaches Flink and Prometheus at their nodes' private addresses"
  }
  assert {
    condition     = !contains(keys(output.group_vars), "flink_taskmanager_host") && output.group_vars.flink_install == "tarball"
    error_message = "on clusters each TaskManager advertises its own address (the role's default), and Flink comes from the release tarball"
  }
  assert {
    condition     = output.testbed.max_slots == 2 * 4 - 1 && output.testbed.memory_per_slot_mb == tolist([1024, 2048, 4096])
    error_message = "testbed.yml offers the testbed's slots less the source's"
  }
  assert {
    condition     = strcontains(output.files["hosts.yml"], "ansible_ssh_common_args: \"-o ProxyJump=admin@203.0.113.99\"") && strcontains(output.files["hosts.yml"], "ansible_user: \"admin\"")
    error_message = "hosts.yml must say how Ansible reaches the private addresses"
  }
  assert {
    condition     = strcontains(output.files["group_vars/production.yml"], "flink_jobmanager_host: \"${var.addresses["sb-prod-jm"].private}\"") && strcontains(output.files["group_vars/production.yml"], "flink_memory_per_slot_mb: 2048")
    error_message = "the production cluster's hosts get their own JobManager and slot profile"
  }
  assert {
    condition     = output.group_vars.kafka_default_replication_factor == 1 && output.group_vars.kafka_log_dirs == ["/data/kafka"] && strcontains(output.files["group_vars/all.yml"], "kafka_log_dirs: [\"/data/kafka\"]")
    error_message = "Kafka's settings appear once there are Kafka nodes"
  }
}

run "extra_group_vars_override" {
  command = plan
  variables {
    nodes      = run.topology.nodes
    settings   = run.topology.settings
    addresses  = { for name in keys(run.topology.nodes) : name => { private = "${name}.example" } }
    group_vars = { flink_install = "pypi", flink_version = "2.3.0" }
  }

  assert {
    condition     = output.group_vars.flink_install == "pypi" && output.group_vars.flink_version == "2.3.0" && length(regexall("(?m)^flink_install:", output.files["group_vars/all.yml"])) == 1
    error_message = "group_vars overrides a rendered value without a duplicate key"
  }
  assert {
    condition     = !contains(keys(output.hosts["sb-tb-jm"]), "public_address")
    error_message = "a node without a public address has no public_address"
  }
}

run "refuses_a_node_without_an_address" {
  command = plan
  variables {
    nodes     = run.topology.nodes
    settings  = run.topology.settings
    addresses = { for name in keys(run.topology.nodes) : name => { private = "10.0.0.1" } if name != "sb-kafka-02" }
  }
  expect_failures = [var.addresses]
}

run "refuses_production_on_one_machine" {
  command = plan
  variables {
    nodes      = run.topology.nodes
    settings   = run.topology.settings
    addresses  = { for name in keys(run.topology.nodes) : name => { private = "localhost" } }
    connection = "local"
  }
  expect_failures = [var.connection]
}

run "refuses_an_unknown_connection" {
  command = plan
  variables {
    nodes      = run.topology.nodes
    settings   = run.topology.settings
    addresses  = { for name in keys(run.topology.nodes) : name => { private = "10.0.0.1" } }
    connection = "winrm"
  }
  expect_failures = [var.connection]
}

run "extra_groups_place_spark" {
  command = plan
  variables {
    nodes        = run.topology.nodes
    settings     = run.topology.settings
    addresses    = { for name in keys(run.topology.nodes) : name => { private = "${name}.example" } }
    extra_groups = { spark_master = ["sb-controller"], spark_workers = ["sb-prod-tm-02", "sb-prod-tm-01"] }
  }

  assert {
    condition     = output.groups.spark_workers == tolist(["sb-prod-tm-01", "sb-prod-tm-02"]) && strcontains(output.files["hosts.yml"], "    spark_master:\n      hosts:\n        sb-controller:\n")
    error_message = "extra groups are rendered after the role groups"
  }
}

run "refuses_an_extra_group_of_unknown_nodes" {
  command = plan
  variables {
    nodes        = run.topology.nodes
    settings     = run.topology.settings
    addresses    = { for name in keys(run.topology.nodes) : name => { private = "10.0.0.1" } }
    extra_groups = { spark_master = ["sb-spark"] }
  }
  expect_failures = [var.extra_groups]
}

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

# The same without a production cluster.
run "topology_without_production" {
  command = plan
  module {
    source = "../topology"
  }
  variables {
    name                    = "sb"
    testbed_taskmanagers    = 2
    production_taskmanagers = 0
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
    condition     = output.groups.kafka == tolist(["sb-kafka-01", "sb-kafka-02"]) && output.groups.controller == tolist(["sb-controller"]) && sort(keys(output.groups)) == tolist(["controller", "jobmanager", "kafka", "monitoring", "spark_master", "spark_workers", "taskmanagers"])
    error_message = "kafka and controller get groups of their own, the production cluster none in the testbed's inventory: ${jsonencode(output.groups)}"
  }
  assert {
    condition     = output.groups.spark_master == tolist(["sb-controller"]) && output.groups.spark_workers == tolist(["sb-kafka-01", "sb-kafka-02"])
    error_message = "by default the Spark master runs on the controller and its workers on the Kafka nodes: ${jsonencode(output.groups)}"
  }
  assert {
    condition     = !strcontains(output.files["hosts.yml"], "sb-prod-") && !contains(keys(output.hosts), "sb-prod-jm") && !contains(keys(output.files), "group_vars/production.yml")
    error_message = "the testbed's inventory holds nothing of the production cluster"
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
    condition     = sort(keys(output.files)) == tolist(["group_vars/all.yml", "hosts.yml", "testbed.yml"]) && sort(keys(output.production_files)) == tolist(["group_vars/all.yml", "hosts.yml", "testbed.yml"])
    error_message = "the production cluster is an inventory of its own (production_files): ${jsonencode(keys(output.files))}"
  }
  assert {
    condition     = output.group_vars.kafka_default_replication_factor == 1 && output.group_vars.kafka_log_dirs == ["/data/kafka"] && strcontains(output.files["group_vars/all.yml"], "kafka_log_dirs: [\"/data/kafka\"]")
    error_message = "Kafka's settings appear once there are Kafka nodes"
  }
}

run "renders_the_production_inventory" {
  command = plan
  variables {
    nodes     = run.topology.nodes
    settings  = run.topology.settings
    addresses = { for i, name in sort(keys(run.topology.nodes)) : name => { private = "10.0.1.${i + 10}", public = "203.0.113.${i + 10}" } }
    ssh_user  = "admin"
    jump_host = "admin@203.0.113.99"
  }

  assert {
    # The groups site.yml and the controller deploy on, holding the production nodes and the shared monitoring node.
    condition     = output.production.groups.jobmanager == tolist(["sb-prod-jm"]) && output.production.groups.taskmanagers == tolist(["sb-prod-tm-01", "sb-prod-tm-02", "sb-prod-tm-03"]) && output.production.groups.monitoring == tolist(["sb-monitoring"]) && length(output.production.groups) == 3
    error_message = "the production inventory's groups: ${jsonencode(output.production.groups)}"
  }
  assert {
    condition     = sort(keys(output.production.hosts)) == tolist(["sb-monitoring", "sb-prod-jm", "sb-prod-tm-01", "sb-prod-tm-02", "sb-prod-tm-03"]) && output.production.hosts["sb-prod-tm-02"].ansible_host == var.addresses["sb-prod-tm-02"].private
    error_message = "the production inventory lists its own nodes at their private addresses"
  }
  assert {
    condition     = length(regexall("sb-(tb-|kafka|controller)", output.production_files["hosts.yml"])) == 0 && strcontains(output.production_files["hosts.yml"], "    taskmanagers:\n      hosts:\n        sb-prod-tm-01:\n") && strcontains(output.production_files["hosts.yml"], "ProxyJump=admin@203.0.113.99")
    error_message = "the production hosts.yml holds nothing of the testbed's nodes, and is reached as the testbed's is"
  }
  assert {
    condition     = output.production.group_vars.flink_jobmanager_host == var.addresses["sb-prod-jm"].private && output.production.group_vars.flink_rest_address == var.addresses["sb-prod-jm"].private && !strcontains(output.production_files["group_vars/all.yml"], var.addresses["sb-tb-jm"].private)
    error_message = "the production inventory's JobManager and REST address are the production JobManager's"
  }
  assert {
    condition     = output.production.group_vars.prometheus_listen_host == var.addresses["sb-monitoring"].private && output.production.group_vars.prometheus_port == 9091 && output.group_vars.prometheus_port == 9090
    error_message = "the production cluster's Prometheus runs on the monitoring node beside the testbed's, on another port (its state directory: tests/test_terraform.py)"
  }
  assert {
    condition     = output.production.group_vars.streambed_playbook == "{{ inventory_dir | dirname | dirname }}/ansible/site.yml" && output.production.group_vars.streambed_job_jar == "{{ inventory_dir | dirname | dirname }}/flink/build/streambed-job.jar"
    error_message = "paths resolve to the repository from inventories/<env>-production: two levels up"
  }
  assert {
    condition     = output.production.group_vars.flink_taskmanager_slots == 4 && output.production.group_vars.flink_memory_per_slot_mb == 2048 && output.production.group_vars.streambed_services == ["java", "flink", "prometheus"] && !contains(keys(output.production.group_vars), "kafka_log_dirs")
    error_message = "the production cluster's slot profile, and Java, Flink and Prometheus as its services"
  }
  assert {
    condition     = output.production.testbed.max_slots == 3 * 4 - 1 && output.production.testbed.memory_per_slot_mb == [2048] && output.production.testbed.slots_per_taskmanager == 4 && strcontains(output.production_files["testbed.yml"], "max_slots: 11\n")
    error_message = "the production testbed.yml offers the production cluster's slots less the source's, at its profile"
  }
}

run "no_production_inventory_without_a_production_cluster" {
  command = plan
  variables {
    nodes     = run.topology_without_production.nodes
    settings  = run.topology_without_production.settings
    addresses = { for name in keys(run.topology_without_production.nodes) : name => { private = "${name}.example" } }
  }

  assert {
    condition     = output.production == null && length(output.production_files) == 0 && sort(keys(output.files)) == tolist(["group_vars/all.yml", "hosts.yml", "testbed.yml"])
    error_message = "no production cluster, no production inventory"
  }
}

run "refuses_one_prometheus_port_for_both_clusters" {
  command = plan
  variables {
    nodes                      = run.topology.nodes
    settings                   = run.topology.settings
    addresses                  = { for name in keys(run.topology.nodes) : name => { private = "10.0.0.1" } }
    prometheus_port            = 9095
    production_prometheus_port = 9095
  }
  expect_failures = [var.production_prometheus_port]
}

run "refuses_one_state_directory_for_both_clusters" {
  command = plan
  variables {
    nodes                = run.topology.nodes
    settings             = run.topology.settings
    addresses            = { for name in keys(run.topology.nodes) : name => { private = "10.0.0.1" } }
    state_dir            = "/var/lib/streambed"
    production_state_dir = "/var/lib/streambed"
  }
  expect_failures = [var.production_state_dir]
}

run "extra_group_vars_override" {
  command = plan
  variables {
    nodes                 = run.topology.nodes
    settings              = run.topology.settings
    addresses             = { for name in keys(run.topology.nodes) : name => { private = "${name}.example" } }
    group_vars            = { flink_install = "pypi", flink_version = "2.3.0", flink_taskmanager_slots = "8", flink_checkpoints_dir = "file://{{ inventory_dir | dirname | dirname }}/checkpoints" }
    production_group_vars = { flink_version = "2.1.0" }
  }

  assert {
    condition     = output.group_vars.flink_install == "pypi" && output.group_vars.flink_version == "2.3.0" && length(regexall("(?m)^flink_install:", output.files["group_vars/all.yml"])) == 1
    error_message = "group_vars overrides a rendered value without a duplicate key"
  }
  assert {
    condition     = output.production.group_vars.flink_install == "pypi" && output.production.group_vars.flink_checkpoints_dir == "file://{{ inventory_dir | dirname | dirname }}/checkpoints"
    error_message = "group_vars reach the production inventory too, paths as the testbed has them (a sibling directory)"
  }
  assert {
    condition     = output.production.group_vars.flink_taskmanager_slots == 4 && output.group_vars.flink_taskmanager_slots == "8" && output.production.group_vars.flink_version == "2.1.0" && output.group_vars.flink_version == "2.3.0" && length(regexall("(?m)^flink_version:", output.production_files["group_vars/all.yml"])) == 1
    error_message = "the production cluster keeps its own slots over group_vars; production_group_vars set its variables alone"
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
  assert {
    condition     = contains(keys(output.hosts), "sb-prod-tm-01") && !contains(keys(output.hosts), "sb-prod-tm-03") && !strcontains(output.production_files["hosts.yml"], "spark")
    error_message = "a production node of an extra group is a host of the testbed's inventory too; the production inventory has no extra group"
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

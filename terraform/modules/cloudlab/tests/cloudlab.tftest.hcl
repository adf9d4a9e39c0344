# Topology -> profile.py's bindings; manifest addresses -> checked addresses for the inventory.

variables {
  name = "sb"
  nodes = {
    "sb-tb-jm"      = { role = "testbed_jobmanager", data_disk_gb = 0 }
    "sb-tb-tm-01"   = { role = "testbed_taskmanager", data_disk_gb = 0 }
    "sb-tb-tm-02"   = { role = "testbed_taskmanager", data_disk_gb = 0 }
    "sb-kafka-01"   = { role = "kafka", data_disk_gb = 250 }
    "sb-monitoring" = { role = "monitoring", data_disk_gb = 50 }
    "sb-controller" = { role = "controller", data_disk_gb = 0 }
  }
}

run "bindings_before_the_experiment" {
  command = plan

  assert {
    condition     = output.profile_bindings.testbed_taskmanagers == "2" && output.profile_bindings.production_taskmanagers == "0" && output.profile_bindings.kafka_nodes == "1" && output.profile_bindings.kafka_disk_gb == "250" && output.profile_bindings.controller == "true"
    error_message = "the profile is asked for the topology's counts and Kafka's disk: ${jsonencode(output.profile_bindings)}"
  }
  assert {
    condition     = !output.ready && length(output.addresses) == 0 && output.jump_host == null
    error_message = "no manifest, no addresses"
  }
}

run "addresses_from_the_manifest" {
  command = plan
  variables {
    manifest_addresses = { for i, name in sort(keys(var.nodes)) : name => { private = "10.10.1.${i + 1}", public = "${name}.exp.streambed.utah.cloudlab.us" } }
  }

  assert {
    condition     = output.ready && output.addresses["sb-kafka-01"].private == var.manifest_addresses["sb-kafka-01"].private && output.jump_host == "sb-controller.exp.streambed.utah.cloudlab.us"
    error_message = "every node's manifest address, and the controller as jump host"
  }
}

run "refuses_a_manifest_missing_nodes" {
  command = plan
  variables {
    manifest_addresses = { "sb-tb-jm" = { private = "10.10.1.1" } }
  }
  expect_failures = [var.manifest_addresses]
}

run "warns_of_nodes_foreign_to_the_topology" {
  command = plan
  variables {
    manifest_addresses = merge(
      { for name in keys(var.nodes) : name => { private = "10.10.1.9" } },
      { "sb-tb-tm-03" = { private = "10.10.1.10" } },
    )
  }
  expect_failures = [check.manifest_matches_the_topology]
}

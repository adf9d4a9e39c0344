# Sizes -> nodes: counts, names, sizes and the one-line validation errors.

run "defaults_describe_both_clusters" {
  command = plan

  assert {
    condition     = length([for n in values(output.nodes) : n if n.role == "testbed_taskmanager"]) == 4 && length([for n in values(output.nodes) : n if n.role == "production_taskmanager"]) == 8
    error_message = "the defaults must give 4 testbed and 8 production TaskManagers"
  }
  assert {
    condition     = output.roles.testbed_jobmanager.count == 1 && output.roles.production_jobmanager.count == 1 && output.roles.monitoring.count == 1 && output.roles.controller.count == 1
    error_message = "one JobManager per cluster, one monitoring node, one controller"
  }
  assert {
    condition     = output.kafka_nodes == 0 && output.roles.kafka.count == 0
    error_message = "no replay, no Kafka node"
  }
  assert {
    # 4 slots x the largest profile (4096) + 512 overhead + 1024 for the OS.
    condition     = output.nodes["streambed-tb-tm-01"].memory_mb == 4 * 4096 + 512 + 1024 && output.nodes["streambed-tb-tm-01"].cores == 4
    error_message = "a testbed TaskManager node must hold its largest memory profile"
  }
  assert {
    condition     = output.settings.testbed.max_slots == 4 * 4 - 1
    error_message = "max_slots is the testbed's slots less the source's"
  }
  assert {
    condition     = output.settings.production.max_slots == 8 * 4 - 1 && output.settings.production.memory_per_slot_mb == 2048
    error_message = "the production cluster offers its own slots less the source's, at its own profile"
  }
}

run "kafka_nodes_from_the_replay_rate" {
  command = plan
  variables {
    replay_rate   = 2500000
    replay_events = 3000000000
    event_bytes   = 200
  }

  assert {
    # ceil(2.5 M / 1.2 M) = 3, as streambed.dataset.kafka_nodes.
    condition     = output.kafka_nodes == 3 && length(output.roles.kafka.nodes) == 3
    error_message = "2.5 M events/s needs 3 Kafka nodes at 1.2 M each, got ${output.kafka_nodes}"
  }
  assert {
    # 3e9 x 200 B x 1.25 / 3 nodes = 250 GB each.
    condition     = output.kafka_data_disk_gb == 250 && output.nodes["streambed-kafka-02"].data_disk_gb == 250
    error_message = "each Kafka data directory must hold its share of the replay with headroom, got ${output.kafka_data_disk_gb}"
  }
}

run "kafka_rate_at_the_boundary" {
  command = plan
  variables {
    replay_rate = 1200000
  }

  assert {
    condition     = output.kafka_nodes == 1 && output.kafka_data_disk_gb == 20
    error_message = "exactly 1.2 M events/s is one node, with the minimum data directory"
  }
}

run "fewer_kafka_nodes_than_the_rate_needs_warns" {
  command = plan
  variables {
    replay_rate = 5000000
    kafka_nodes = 2
  }

  expect_failures = [check.kafka_serves_the_replay]
}

run "replication_above_the_node_count_is_refused" {
  command = plan
  variables {
    kafka_nodes              = 2
    kafka_replication_factor = 3
  }

  expect_failures = [output.nodes]
}

run "no_production_cluster" {
  command = plan
  variables {
    production_taskmanagers = 0
    controller              = false
  }

  assert {
    condition     = output.roles.production_jobmanager.count == 0 && length([for n in values(output.nodes) : n if n.cluster == "production"]) == 0 && !contains(keys(output.nodes), "streambed-controller")
    error_message = "without production TaskManagers there is no production JobManager either"
  }
  assert {
    condition     = output.settings.production.max_slots == 0
    error_message = "no production cluster offers no slot"
  }
}

run "rejects_a_production_cluster_the_sources_fill" {
  command = plan
  variables {
    production_taskmanagers          = 1
    production_slots_per_taskmanager = 2
    source_parallelism               = 2
  }
  expect_failures = [var.production_taskmanagers]
}

run "rejects_a_fractional_taskmanager_count" {
  command = plan
  variables {
    testbed_taskmanagers = 2.5
  }
  expect_failures = [var.testbed_taskmanagers]
}

run "rejects_an_empty_memory_list" {
  command = plan
  variables {
    testbed_memory_per_slot_mb = []
  }
  expect_failures = [var.testbed_memory_per_slot_mb]
}

run "rejects_a_source_taking_every_slot" {
  command = plan
  variables {
    testbed_taskmanagers          = 1
    testbed_slots_per_taskmanager = 2
    source_parallelism            = 2
  }
  expect_failures = [var.source_parallelism]
}

run "rejects_a_negative_kafka_count" {
  command = plan
  variables {
    kafka_nodes = -1
  }
  expect_failures = [var.kafka_nodes]
}

run "rejects_a_bad_name" {
  command = plan
  variables {
    name = "Stream_Bed"
  }
  expect_failures = [var.name]
}

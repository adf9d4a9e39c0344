# Sizes -> nodes. Pure arithmetic: platform modules turn `nodes` into machines, the inventory module
# turns those machines' addresses into the Ansible inventory.

locals {
  testbed_slots = var.testbed_taskmanagers * var.testbed_slots_per_taskmanager

  # The paper's figure: about 1.2 M events/s per SSD-bound Kafka node (streambed.dataset.kafka_nodes
  # computes the same, at least one node once something is replayed).
  kafka_nodes_needed = var.replay_rate > 0 ? max(1, ceil(var.replay_rate / var.kafka_node_rate)) : 0
  kafka_nodes        = var.kafka_nodes == null ? local.kafka_nodes_needed : var.kafka_nodes

  # Every copy of every event, spread over the nodes, with headroom; never below the minimum, since
  # Kafka's own logs and a topic's first segments need room even for a tiny replay.
  replay_bytes       = var.replay_events * var.event_bytes * var.kafka_replication_factor
  kafka_data_disk_gb = local.kafka_nodes == 0 ? 0 : max(var.kafka_min_disk_gb, ceil(local.replay_bytes * var.kafka_disk_headroom / local.kafka_nodes / 1e9))

  # A TaskManager's process is slots x memory per slot + overhead (the flink role's formula); the
  # testbed's nodes must hold its largest profile.
  testbed_taskmanager_mb    = var.testbed_slots_per_taskmanager * max(var.testbed_memory_per_slot_mb...) + var.taskmanager_overhead_mb
  production_taskmanager_mb = var.production_slots_per_taskmanager * var.production_memory_per_slot_mb + var.taskmanager_overhead_mb

  # role -> what each of its nodes needs. Roles with count 0 create nothing.
  roles = {
    testbed_jobmanager = {
      cluster   = "testbed", count = 1, cores = 2, data_disk_gb = 0
      memory_mb = var.jobmanager_memory_mb + var.node_os_memory_mb
    }
    testbed_taskmanager = {
      cluster   = "testbed", count = var.testbed_taskmanagers, data_disk_gb = 0
      cores     = ceil(var.testbed_slots_per_taskmanager * var.testbed_cores_per_slot)
      memory_mb = local.testbed_taskmanager_mb + var.node_os_memory_mb
    }
    production_jobmanager = {
      cluster   = "production", count = var.production_taskmanagers > 0 ? 1 : 0, cores = 2, data_disk_gb = 0
      memory_mb = var.jobmanager_memory_mb + var.node_os_memory_mb
    }
    production_taskmanager = {
      cluster   = "production", count = var.production_taskmanagers, data_disk_gb = 0
      cores     = ceil(var.production_slots_per_taskmanager * var.production_cores_per_slot)
      memory_mb = local.production_taskmanager_mb + var.node_os_memory_mb
    }
    kafka = {
      cluster   = "shared", count = local.kafka_nodes, cores = var.kafka_cores
      memory_mb = var.kafka_memory_mb, data_disk_gb = local.kafka_data_disk_gb
    }
    monitoring = {
      cluster = "shared", count = 1, cores = 2, memory_mb = 4096, data_disk_gb = var.monitoring_disk_gb
    }
    controller = {
      cluster = "shared", count = var.controller ? 1 : 0, cores = 2, memory_mb = 4096, data_disk_gb = 0
    }
  }

  # Short, stable node names (CloudLab's profile.py names its nodes the same way): a role with one
  # node has no number.
  short = {
    testbed_jobmanager     = "tb-jm"
    testbed_taskmanager    = "tb-tm"
    production_jobmanager  = "prod-jm"
    production_taskmanager = "prod-tm"
    kafka                  = "kafka"
    monitoring             = "monitoring"
    controller             = "controller"
  }
  singletons = ["testbed_jobmanager", "production_jobmanager", "monitoring", "controller"]

  nodes = merge([
    for role, r in local.roles : {
      for i in range(r.count) :
      (contains(local.singletons, role) ? "${var.name}-${local.short[role]}" : format("%s-%s-%02d", var.name, local.short[role], i + 1)) => {
        role         = role
        cluster      = r.cluster
        index        = i
        cores        = r.cores
        memory_mb    = r.memory_mb
        data_disk_gb = r.data_disk_gb
      }
    }
  ]...)
}

# Warnings, not errors: a user may know their nodes serve more than the paper's figure.
check "kafka_serves_the_replay" {
  assert {
    condition     = local.kafka_nodes >= local.kafka_nodes_needed
    error_message = "kafka_nodes = ${local.kafka_nodes} serves about ${local.kafka_nodes * var.kafka_node_rate} events/s but replay_rate asks ${var.replay_rate}: ${local.kafka_nodes_needed} nodes needed at kafka_node_rate."
  }
}

output "nodes" {
  description = "Node name -> {role, cluster, index, cores, memory_mb, data_disk_gb}: what each platform module creates."
  value       = local.nodes

  # A replication factor above the node count cannot be created by Kafka: stop before any machine is.
  precondition {
    condition     = local.kafka_nodes == 0 || var.kafka_replication_factor <= local.kafka_nodes
    error_message = "kafka_replication_factor (${var.kafka_replication_factor}) must not exceed the Kafka nodes (${local.kafka_nodes})."
  }
}

output "roles" {
  description = "Role -> {cluster, count, cores, memory_mb, data_disk_gb, nodes}: per-role sizes (instance types, CloudLab profile counts)."
  value = {
    for role, r in local.roles : role => merge(r, {
      nodes = sort([for name, n in local.nodes : name if n.role == role])
    })
  }
}

output "kafka_nodes" {
  description = "Kafka nodes: kafka_nodes, or derived from replay_rate."
  value       = local.kafka_nodes
}

output "kafka_data_disk_gb" {
  description = "SSD data directory per Kafka node, GB (0 without Kafka)."
  value       = local.kafka_data_disk_gb
}

output "settings" {
  description = "What the inventory module renders besides addresses: the clusters' Flink settings and the testbed's offer."
  value = {
    testbed = {
      taskmanagers          = var.testbed_taskmanagers
      slots_per_taskmanager = var.testbed_slots_per_taskmanager
      memory_per_slot_mb    = var.testbed_memory_per_slot_mb
      cpu_per_slot          = var.testbed_cpu_per_slot
      max_slots             = local.testbed_slots - var.source_parallelism
      source_parallelism    = var.source_parallelism
      max_source_rate       = var.max_source_rate
      sample_period_s       = var.sample_period_s
    }
    production = {
      taskmanagers          = var.production_taskmanagers
      slots_per_taskmanager = var.production_slots_per_taskmanager
      memory_per_slot_mb    = var.production_memory_per_slot_mb
      # What the production cluster offers a validated plan (its own testbed.yml): slots less the sources'.
      max_slots = max(0, var.production_taskmanagers * var.production_slots_per_taskmanager - var.source_parallelism)
    }
    jobmanager_memory_mb     = var.jobmanager_memory_mb
    taskmanager_overhead_mb  = var.taskmanager_overhead_mb
    kafka_replication_factor = var.kafka_replication_factor
  }
}

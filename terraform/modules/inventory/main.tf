locals {
  local = var.connection == "local"

  by_role = {
    for role in distinct([for n in values(var.nodes) : n.role]) :
    role => sort([for name, n in var.nodes : name if n.role == role])
  }

  # Ansible group -> node names, in the order hosts.yml lists them. The first three are the groups
  # ansible/site.yml deploys (inventories/local has those only); the rest exist when their role does.
  group_roles = {
    jobmanager              = "testbed_jobmanager"
    taskmanagers            = "testbed_taskmanager"
    monitoring              = "monitoring"
    kafka                   = "kafka"
    controller              = "controller"
    production_jobmanager   = "production_jobmanager"
    production_taskmanagers = "production_taskmanager"
  }
  group_order = ["jobmanager", "taskmanagers", "monitoring", "kafka", "controller", "production_jobmanager", "production_taskmanagers"]
  role_groups = {
    for g in local.group_order : g => lookup(local.by_role, local.group_roles[g], [])
    if length(lookup(local.by_role, local.group_roles[g], [])) > 0
  }
  groups     = merge(local.role_groups, { for g, names in var.extra_groups : g => sort(names) })
  production = contains(keys(local.groups), "production_jobmanager")

  address = { for name, a in var.addresses : name => a.private }
  jm      = local.address[local.by_role.testbed_jobmanager[0]]
  prod_jm = local.production ? local.address[local.by_role.production_jobmanager[0]] : null
  tm      = local.address[local.by_role.testbed_taskmanager[0]]
  prom    = local.address[local.by_role.monitoring[0]]

  # Per host (ssh): where Ansible and the cluster reach it. The flink role's defaults read
  # ansible_host (JobManager address, TaskManager address, Prometheus targets), so it is the private
  # address; the public one is kept for tunnels and the jump host.
  # (`{ for k, v in {...} : k => v if c }` keeps or drops keys: a conditional cannot choose between
  # objects of different attributes.)
  hosts = {
    for name in sort(keys(var.nodes)) : name => {
      for k, v in { ansible_host = local.address[name], public_address = try(var.addresses[name].public, null) } :
      k => v if v != null
    } if !local.local
  }
  host_vars = local.local ? tomap({
    ansible_connection         = "local"
    ansible_python_interpreter = "{{ ansible_playbook_python }}"
    }) : tomap({
    for k, v in {
      ansible_python_interpreter = var.python_interpreter
      ansible_user               = var.ssh_user
      ansible_ssh_common_args    = var.jump_host == null ? null : "-o ProxyJump=${var.jump_host}"
    } : k => v if v != null
  })

  repository = "{{ inventory_dir | dirname | dirname }}"
  t          = var.settings.testbed

  # group_vars/all.yml, in the order inventories/local/group_vars/all.yml has them. TaskManager
  # addresses are per host on clusters (ansible_host), one value on this machine.
  base_vars = merge(
    {
      streambed_state_dir        = var.state_dir
      streambed_playbook         = "${local.repository}/ansible/site.yml"
      streambed_job_jar          = "${local.repository}/flink/build/streambed-job.jar"
      streambed_queries_dir      = "${local.repository}/flink/queries"
      flink_install              = local.local ? "pypi" : "tarball"
      flink_state                = "started"
      flink_jobmanager_host      = local.jm
      flink_jobmanager_bind_host = local.jm
      flink_jobmanager_rpc_port  = var.flink_rpc_port
      flink_jobmanager_memory_mb = var.settings.jobmanager_memory_mb
      flink_rest_port            = var.flink_rest_port
      flink_rest_address         = local.jm
      flink_rest_bind_address    = local.jm
    },
    { for k, v in { flink_taskmanager_host = local.tm, flink_taskmanager_bind_host = local.tm } : k => v if local.local },
    {
      # One TaskManager process per taskmanagers host; the controller passes each budget's own.
      flink_taskmanagers            = 1
      flink_taskmanager_slots       = local.t.slots_per_taskmanager
      flink_memory_per_slot_mb      = local.t.memory_per_slot_mb[0]
      flink_taskmanager_overhead_mb = var.settings.taskmanager_overhead_mb
      flink_metrics_port_min        = var.metrics_ports.min
      flink_metrics_port_max        = var.metrics_ports.max
      prometheus_state              = "started"
      prometheus_listen_host        = local.prom
      prometheus_port               = var.prometheus_port
      prometheus_scrape_interval    = "${local.t.sample_period_s}s"
      prometheus_retention          = var.prometheus_retention
    },
    {
      for k, v in {
        # The kafka role's names: partitions on the SSD data directory, the topology's replication.
        kafka_log_dirs                   = [var.kafka_data_dir]
        kafka_default_replication_factor = var.settings.kafka_replication_factor
      } : k => v if contains(keys(local.groups), "kafka")
    },
  )
  base_order = [
    "streambed_state_dir", "streambed_playbook", "streambed_job_jar", "streambed_queries_dir",
    "flink_install", "flink_state", "flink_jobmanager_host", "flink_jobmanager_bind_host",
    "flink_jobmanager_rpc_port", "flink_jobmanager_memory_mb", "flink_rest_port", "flink_rest_address",
    "flink_rest_bind_address", "flink_taskmanager_host", "flink_taskmanager_bind_host", "flink_taskmanagers",
    "flink_taskmanager_slots", "flink_memory_per_slot_mb", "flink_taskmanager_overhead_mb",
    "flink_metrics_port_min", "flink_metrics_port_max", "prometheus_state", "prometheus_listen_host",
    "prometheus_port", "prometheus_scrape_interval", "prometheus_retention", "kafka_log_dirs",
    "kafka_default_replication_factor",
  ]
  all_vars  = merge(local.base_vars, var.group_vars)
  all_order = concat([for k in local.base_order : k if contains(keys(local.all_vars), k)], sort(setsubtract(keys(var.group_vars), local.base_order)))

  # The production cluster's hosts (group production): their JobManager and slot profile.
  production_vars = {
    flink_jobmanager_host      = local.prod_jm
    flink_jobmanager_bind_host = local.prod_jm
    flink_rest_address         = local.prod_jm
    flink_rest_bind_address    = local.prod_jm
    flink_taskmanager_slots    = var.settings.production.slots_per_taskmanager
    flink_memory_per_slot_mb   = var.settings.production.memory_per_slot_mb
  }

  testbed = {
    max_slots             = local.t.max_slots
    source_parallelism    = local.t.source_parallelism
    cpu_per_slot          = local.t.cpu_per_slot
    slots_per_taskmanager = local.t.slots_per_taskmanager
    memory_per_slot_mb    = local.t.memory_per_slot_mb
    max_source_rate       = local.t.max_source_rate
    sample_period_s       = local.t.sample_period_s
  }
  testbed_order = ["max_slots", "source_parallelism", "cpu_per_slot", "slots_per_taskmanager", "memory_per_slot_mb", "max_source_rate", "sample_period_s"]

  files = merge(
    {
      "hosts.yml" = templatefile("${path.module}/templates/hosts.yml.tftpl", {
        local      = local.local
        host_vars  = local.host_vars
        hosts      = local.hosts
        groups     = local.groups
        order      = concat([for g in local.group_order : g if contains(keys(local.role_groups), g)], sort(setsubtract(keys(var.extra_groups), local.group_order)))
        production = local.production
      })
      "group_vars/all.yml" = templatefile("${path.module}/templates/vars.yml.tftpl", {
        header = "Settings of this testbed, rendered by terraform/modules/inventory. Plain YAML: the StreamBed controller reads\n# it too. Paths are relative to this inventory (<repository> = two levels up), as in inventories/local."
        vars   = local.all_vars
        order  = local.all_order
      })
      "testbed.yml" = templatefile("${path.module}/templates/vars.yml.tftpl", {
        header = "What this testbed offers the planner (read by the StreamBed controller, not by Ansible), rendered by\n# terraform/modules/inventory from the topology."
        vars   = local.testbed
        order  = local.testbed_order
      })
    },
    {
      for f in(local.production ? ["group_vars/production.yml"] : []) : f => templatefile("${path.module}/templates/vars.yml.tftpl", {
        header = "The production cluster's hosts (group production): their own JobManager and slot profile, over all.yml."
        vars   = local.production_vars
        order  = sort(keys(local.production_vars))
      })
    },
  )
}

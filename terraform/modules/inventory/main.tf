locals {
  local = var.connection == "local"

  by_role = {
    for role in distinct([for n in values(var.nodes) : n.role]) :
    role => sort([for name, n in var.nodes : name if n.role == role])
  }

  # Ansible group -> node names, in the order hosts.yml lists them. The first three are the groups
  # ansible/site.yml deploys (inventories/local has those only); the rest exist when their role does.
  # The production cluster is not here: it is an inventory of its own (production/, below).
  group_roles = {
    jobmanager   = "testbed_jobmanager"
    taskmanagers = "testbed_taskmanager"
    monitoring   = "monitoring"
    kafka        = "kafka"
    controller   = "controller"
  }
  group_order = ["jobmanager", "taskmanagers", "monitoring", "kafka", "controller"]
  role_groups = {
    for g in local.group_order : g => lookup(local.by_role, local.group_roles[g], [])
    if length(lookup(local.by_role, local.group_roles[g], [])) > 0
  }
  # The data pipeline's Spark cluster on clusters (ansible/site.yml's spark play): its master on the
  # controller (else the monitoring node), its workers on the Kafka nodes, whose SSDs hold the lake
  # (else on the master alone); extra_groups replaces either. None on this machine: inventories/local
  # has only the testbed's groups.
  spark_master = coalescelist(lookup(local.by_role, "controller", []), local.by_role.monitoring)
  spark_groups = local.local ? {} : {
    spark_master  = slice(local.spark_master, 0, 1)
    spark_workers = coalescelist(lookup(local.by_role, "kafka", []), slice(local.spark_master, 0, 1))
  }
  groups     = merge(local.role_groups, local.spark_groups, { for g, names in var.extra_groups : g => sort(names) })
  production = length(lookup(local.by_role, "production_jobmanager", [])) > 0

  # The production cluster's inventory: its JobManager and TaskManagers in the groups site.yml and the
  # controller deploy on, watched from the testbed's monitoring node by a Prometheus of its own.
  # (`{ for k, v in {...} : k => v if c }` keeps or drops keys: a conditional cannot choose between
  # objects of different attributes.)
  production_groups = {
    for g, names in {
      jobmanager   = lookup(local.by_role, "production_jobmanager", [])
      taskmanagers = lookup(local.by_role, "production_taskmanager", [])
      monitoring   = local.by_role.monitoring
    } : g => names if local.production
  }

  address = { for name, a in var.addresses : name => a.private }
  jm      = local.address[local.by_role.testbed_jobmanager[0]]
  prod_jm = local.production ? local.address[local.by_role.production_jobmanager[0]] : null
  tm      = local.address[local.by_role.testbed_taskmanager[0]]
  prom    = local.address[local.by_role.monitoring[0]]

  # Per host (ssh): where Ansible and the cluster reach it. The flink role's defaults read
  # ansible_host (JobManager address, TaskManager address, Prometheus targets), so it is the private
  # address; the public one is kept for tunnels and the jump host.
  node_vars = {
    for name in sort(keys(var.nodes)) : name => {
      for k, v in {
        ansible_host      = local.address[name]
        public_address    = try(var.addresses[name].public, null)
        kafka_data_device = lookup(var.data_devices, name, null)
      } : k => v if v != null
    } if !local.local
  }
  # Each inventory lists the hosts of its own groups (a production node placed in an extra group, say
  # a Spark worker, is the testbed inventory's too).
  hosts            = { for name, v in local.node_vars : name => v if contains(flatten(values(local.groups)), name) }
  production_hosts = { for name, v in local.node_vars : name => v if contains(flatten(values(local.production_groups)), name) }
  host_vars = local.local ? tomap({
    ansible_connection         = "local"
    ansible_python_interpreter = "{{ ansible_playbook_python }}"
    }) : tomap({
    for k, v in {
      ansible_python_interpreter   = var.python_interpreter
      ansible_user                 = var.ssh_user
      ansible_become               = var.become == null ? true : var.become
      ansible_ssh_private_key_file = var.ssh_private_key_file
      ansible_ssh_common_args      = local.ssh_common_args
    } : k => v if v != null
  })

  ssh_args        = compact([coalesce(var.ssh_common_args, " "), var.jump_host == null ? "" : "-o ProxyJump=${var.jump_host}"])
  ssh_common_args = length([for a in local.ssh_args : a if trimspace(a) != ""]) == 0 ? null : join(" ", [for a in local.ssh_args : a if trimspace(a) != ""])

  repository = "{{ inventory_dir | dirname | dirname }}"
  # Where the roles keep state: on a node, the node's own directory (the controller's repository is
  # not there); on this machine, beside the repository as inventories/local has it.
  state_dir            = coalesce(var.state_dir, local.local ? "${local.repository}/.streambed/{{ inventory_dir | basename }}" : "/var/lib/streambed")
  production_state_dir = coalesce(var.production_state_dir, local.local ? local.state_dir : "/var/lib/streambed/production")
  t                    = var.settings.testbed
  p                    = var.settings.production

  # group_vars/all.yml, in the order inventories/local/group_vars/all.yml has them. TaskManager
  # addresses are per host on clusters (ansible_host), one value on this machine.
  base_vars = merge(
    {
      streambed_state_dir        = local.state_dir
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
        # With data disks the kafka role mounts them and places log.dirs there itself.
        kafka_log_dirs                   = length(var.data_devices) == 0 ? [var.kafka_data_dir] : null
        kafka_default_replication_factor = var.settings.kafka_replication_factor
      } : k => v if contains(keys(local.groups), "kafka") && v != null
    },
    # On nodes: the roles' five roots written out (the controller reads the state and log
    # directories from the inventory), and each cluster's Prometheus a datasource of the other's Grafana.
    { for k, v in {
      streambed_config_dir   = "/etc/streambed"
      streambed_log_dir      = "/var/log/streambed"
      streambed_run_dir      = "/run/streambed"
      streambed_software_dir = "/opt/streambed"
      flink_log_dir          = "/var/log/streambed"
    } : k => v if !local.local },
    # On this machine: the roots inside the state directory and services as the controller's own user.
    { for k, v in {
      streambed_software_dir  = "{{ streambed_state_dir }}"
      streambed_config_dir    = "{{ streambed_state_dir }}/conf"
      streambed_log_dir       = "{{ streambed_state_dir }}/log"
      streambed_run_dir       = "{{ streambed_state_dir }}/run"
      streambed_service_users = false
    } : k => v if local.local },
    { for k, v in {
      grafana_other_prometheus = [{ name = "Prometheus (production)", uid = "streambed-prometheus-production", url = "http://${local.prom}:${var.production_prometheus_port}" }]
    } : k => v if !local.local && local.production },
  )
  base_order = [
    "streambed_state_dir", "streambed_software_dir", "streambed_config_dir", "streambed_log_dir", "streambed_run_dir",
    "streambed_service_users", "streambed_playbook", "streambed_job_jar", "streambed_queries_dir",
    "flink_install", "flink_state", "flink_jobmanager_host", "flink_jobmanager_bind_host",
    "flink_jobmanager_rpc_port", "flink_jobmanager_memory_mb", "flink_rest_port", "flink_rest_address",
    "flink_rest_bind_address", "flink_taskmanager_host", "flink_taskmanager_bind_host", "flink_taskmanagers",
    "flink_taskmanager_slots", "flink_memory_per_slot_mb", "flink_taskmanager_overhead_mb",
    "flink_metrics_port_min", "flink_metrics_port_max", "prometheus_state", "prometheus_listen_host",
    "prometheus_port", "prometheus_scrape_interval", "prometheus_retention", "kafka_log_dirs",
    "kafka_default_replication_factor", "flink_log_dir", "grafana_other_prometheus",
  ]
  all_vars  = merge(local.base_vars, var.group_vars)
  all_order = concat([for k in local.base_order : k if contains(keys(local.all_vars), k)], sort(setsubtract(keys(var.group_vars), local.base_order)))

  # The production inventory's group_vars/all.yml: the testbed's settings (group_vars included; its
  # directory is a sibling of the testbed's, so paths to the repository read the same), without Kafka's (no kafka group here), then what is the production cluster's own:
  # its JobManager and REST address, its slot profile, a Prometheus on another port of the same
  # monitoring node with a state directory of its own (both clusters watched at once), and Java with
  # Flink and Prometheus as its services (site.yml would run Flink and Prometheus only on an inventory
  # of these three groups, and would start a second Grafana and node exporter on the monitoring node
  # with every service). production_group_vars on top.
  production_vars = merge(
    { for k, v in local.all_vars : k => v if !startswith(k, "kafka_") },
    {
      streambed_state_dir        = local.production_state_dir
      streambed_services         = ["java", "flink", "prometheus"]
      flink_jobmanager_host      = local.prod_jm
      flink_jobmanager_bind_host = local.prod_jm
      flink_rest_address         = local.prod_jm
      flink_rest_bind_address    = local.prod_jm
      flink_taskmanagers         = 1
      flink_taskmanager_slots    = local.p.slots_per_taskmanager
      flink_memory_per_slot_mb   = local.p.memory_per_slot_mb
      prometheus_port            = var.production_prometheus_port
    },
    # The monitoring node runs both clusters' Prometheus: the production one in roots of its own.
    { for k, v in {
      streambed_config_dir     = "/etc/streambed/production"
      streambed_log_dir        = "/var/log/streambed/production"
      streambed_run_dir        = "/run/streambed/production"
      flink_log_dir            = "/var/log/streambed/production"
      grafana_other_prometheus = [{ name = "Prometheus (testbed)", uid = "streambed-prometheus-testbed", url = "http://${local.prom}:${var.prometheus_port}" }]
    } : k => v if !local.local },
    var.production_group_vars,
  )
  production_order = concat(
    [for k in slice(local.base_order, 0, 9) : k if contains(keys(local.production_vars), k)],
    ["streambed_services"],
    [for k in slice(local.base_order, 9, length(local.base_order)) : k if contains(keys(local.production_vars), k)],
    sort(setsubtract(keys(local.production_vars), concat(local.base_order, ["streambed_services"]))),
  )

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

  # production/testbed.yml: what the production cluster offers a plan validated on it (the testbed's
  # sources, its own slots and profile, no cgroup quota).
  production_testbed = {
    max_slots             = local.p.max_slots
    source_parallelism    = local.t.source_parallelism
    cpu_per_slot          = 0
    slots_per_taskmanager = local.p.slots_per_taskmanager
    memory_per_slot_mb    = [local.p.memory_per_slot_mb]
    max_source_rate       = local.t.max_source_rate
    sample_period_s       = local.t.sample_period_s
  }

  files = {
    "hosts.yml" = templatefile("${path.module}/templates/hosts.yml.tftpl", {
      local     = local.local
      host_vars = local.host_vars
      hosts     = local.hosts
      groups    = local.groups
      order     = concat([for g in local.group_order : g if contains(keys(local.role_groups), g)], sort(setsubtract(keys(merge(local.spark_groups, var.extra_groups)), local.group_order)))
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
  }

  # The production cluster: an inventory of its own, written beside the testbed's (<inventory>-production:
  # a sibling, not a subdirectory, since Ansible reads an inventory directory recursively and would merge
  # the production nodes into the testbed's groups). Inventory.load and
  # `streambed validate --testbed flink --inventory inventories/<env>-production` take it as is.
  production_files = { for f, text in {
    "hosts.yml" = templatefile("${path.module}/templates/hosts.yml.tftpl", {
      local     = false
      host_vars = local.host_vars
      hosts     = local.production_hosts
      groups    = local.production_groups
      order     = local.production ? ["jobmanager", "taskmanagers", "monitoring"] : []
    })
    "group_vars/all.yml" = templatefile("${path.module}/templates/vars.yml.tftpl", {
      header = "Settings of the production cluster, rendered by terraform/modules/inventory: the testbed's\n# with its own JobManager, slots and Prometheus. Paths are relative to this inventory (<repository> = two levels up)."
      vars   = local.production_vars
      order  = local.production_order
    })
    "testbed.yml" = templatefile("${path.module}/templates/vars.yml.tftpl", {
      header = "What the production cluster offers a plan validated on it (read by the StreamBed controller, not by Ansible),\n# rendered by terraform/modules/inventory from the topology."
      vars   = local.production_testbed
      order  = local.testbed_order
    })
  } : f => text if local.production }
}

# The whole chain on a mocked grid5000 provider: topology -> grid5000 -> inventory.

mock_provider "grid5000" {
  override_during = plan
}

variables {
  ssh_public_key          = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnIKvU1pqWYdeX7Pn3CbSRl0bD2tqbd0rjaBE8Xq5nm streambed"
  testbed_taskmanagers    = 2
  production_taskmanagers = 0
  jump_host               = "jdoe@access.grid5000.fr"
}

run "renders_the_inventory_of_the_jobs" {
  command = plan

  override_resource {
    target          = module.grid5000.grid5000_job.role["testbed_taskmanager"]
    override_during = plan
    values          = { assigned_nodes = ["parasilo-9.rennes.grid5000.fr", "parasilo-8.rennes.grid5000.fr"] }
  }
  override_resource {
    target          = module.grid5000.grid5000_job.role["testbed_jobmanager"]
    override_during = plan
    values          = { assigned_nodes = ["parasilo-1.rennes.grid5000.fr"] }
  }
  override_resource {
    target          = module.grid5000.grid5000_job.role["monitoring"]
    override_during = plan
    values          = { assigned_nodes = ["parasilo-2.rennes.grid5000.fr"] }
  }
  override_resource {
    target          = module.grid5000.grid5000_job.role["controller"]
    override_during = plan
    values          = { assigned_nodes = ["parasilo-3.rennes.grid5000.fr"] }
  }

  assert {
    condition     = strcontains(output.inventory_files["hosts.yml"], "    streambed-tb-tm-01:\n      ansible_host: \"parasilo-8.rennes.grid5000.fr\"") && strcontains(output.inventory_files["hosts.yml"], "ansible_user: \"root\"")
    error_message = "TaskManagers are the hosts OAR assigned, reached as root (kadeploy's key)"
  }
  assert {
    condition     = strcontains(output.inventory_files["group_vars/all.yml"], "prometheus_listen_host: \"parasilo-2.rennes.grid5000.fr\"") && length(output.production_inventory_files) == 0
    error_message = "Prometheus on the monitoring host; no production cluster asked for"
  }
}

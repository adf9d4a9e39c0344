# The Grid'5000 module against a mocked grid5000 provider (the schema stub serves its schema):
# one deploy job per role, deployments, and node names mapped onto the hosts OAR assigns.

mock_provider "grid5000" {
  override_during = plan
}

variables {
  name           = "sb"
  ssh_public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnIKvU1pqWYdeX7Pn3CbSRl0bD2tqbd0rjaBE8Xq5nm streambed"
  properties     = { kafka = "cluster='paravance'" }
  nodes = {
    "sb-tb-jm"      = { role = "testbed_jobmanager" }
    "sb-tb-tm-01"   = { role = "testbed_taskmanager" }
    "sb-tb-tm-02"   = { role = "testbed_taskmanager" }
    "sb-kafka-01"   = { role = "kafka" }
    "sb-monitoring" = { role = "monitoring" }
  }
}

run "one_deploy_job_per_role" {
  command = plan

  override_resource {
    target          = grid5000_job.role["testbed_taskmanager"]
    override_during = plan
    values          = { assigned_nodes = ["parasilo-7.rennes.grid5000.fr", "parasilo-3.rennes.grid5000.fr"], id = "2071" }
  }
  override_resource {
    target          = grid5000_job.role["kafka"]
    override_during = plan
    values          = { assigned_nodes = ["paravance-40.rennes.grid5000.fr"] }
  }
  override_resource {
    target          = grid5000_job.role["testbed_jobmanager"]
    override_during = plan
    values          = { assigned_nodes = ["parasilo-1.rennes.grid5000.fr"] }
  }
  override_resource {
    target          = grid5000_job.role["monitoring"]
    override_during = plan
    values          = { assigned_nodes = ["parasilo-2.rennes.grid5000.fr"] }
  }

  assert {
    condition     = length(grid5000_job.role) == 4 && grid5000_job.role["testbed_taskmanager"].resources == "/nodes=2,walltime=4:00" && contains(grid5000_job.role["kafka"].types, "deploy")
    error_message = "one deploy job per role, sized to the role's nodes"
  }
  assert {
    condition     = grid5000_job.role["kafka"].properties == "cluster='paravance'" && grid5000_job.role["monitoring"].properties == null
    error_message = "a role's OAR properties select its hardware"
  }
  assert {
    condition     = grid5000_deployment.role["kafka"].environment == "debian12-min" && grid5000_deployment.role["kafka"].nodes == toset(["paravance-40.rennes.grid5000.fr"])
    error_message = "each job's nodes are deployed with the environment"
  }
  assert {
    # Sorted names onto sorted hosts: tm-01 -> parasilo-3, tm-02 -> parasilo-7.
    condition     = output.addresses["sb-tb-tm-01"].private == "parasilo-3.rennes.grid5000.fr" && output.addresses["sb-tb-tm-02"].private == "parasilo-7.rennes.grid5000.fr" && output.addresses["sb-kafka-01"].private == "paravance-40.rennes.grid5000.fr"
    error_message = "node names map onto the hosts OAR assigned: ${jsonencode(output.addresses)}"
  }
  assert {
    condition     = output.jobs["testbed_taskmanager"] == "2071"
    error_message = "the jobs' IDs are reported"
  }
}

run "refuses_fewer_nodes_than_asked" {
  command = plan

  override_resource {
    target          = grid5000_job.role["testbed_taskmanager"]
    override_during = plan
    values          = { assigned_nodes = ["parasilo-7.rennes.grid5000.fr"] }
  }
  expect_failures = [grid5000_job.role["testbed_taskmanager"]]
}

run "refuses_a_private_key" {
  command = plan
  variables {
    ssh_public_key = "-----BEGIN OPENSSH PRIVATE KEY-----"
  }
  expect_failures = [var.ssh_public_key]
}

run "refuses_an_unknown_site" {
  command = plan
  variables {
    site = "paris"
  }
  expect_failures = [var.site]
}

run "refuses_a_bad_walltime" {
  command = plan
  variables {
    walltime = "4h"
  }
  expect_failures = [var.walltime]
}

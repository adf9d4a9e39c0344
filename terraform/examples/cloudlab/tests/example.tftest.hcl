# The two steps of examples/cloudlab: bindings for profile.py, then the inventory of its manifest.

variables {
  cloudlab_user           = "jdoe"
  testbed_taskmanagers    = 2
  production_taskmanagers = 0
}

run "first_the_profile_bindings" {
  command = plan

  assert {
    condition     = length(output.inventory_files) == 0 && output.profile_bindings.testbed_taskmanagers == "2" && startswith(output.next_step, "start profile.py")
    error_message = "before the experiment: bindings and what to do, no inventory"
  }
}

run "then_the_inventory" {
  command = plan
  variables {
    manifest_addresses = {
      "streambed-tb-jm"      = { private = "10.10.1.1", public = "pc1.utah.cloudlab.us" }
      "streambed-tb-tm-01"   = { private = "10.10.1.2" }
      "streambed-tb-tm-02"   = { private = "10.10.1.3" }
      "streambed-monitoring" = { private = "10.10.1.4" }
      "streambed-controller" = { private = "10.10.1.5", public = "ctl.exp.streambed.utah.cloudlab.us" }
    }
  }

  assert {
    condition     = strcontains(output.inventory_files["hosts.yml"], "ProxyJump=jdoe@ctl.exp.streambed.utah.cloudlab.us") && strcontains(output.inventory_files["group_vars/all.yml"], "flink_jobmanager_host: \"10.10.1.1\"")
    error_message = "the inventory jumps through the controller and uses the LAN addresses"
  }
}

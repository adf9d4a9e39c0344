"""StreamBed on CloudLab: the testbed and production Flink clusters, Kafka, monitoring, controller.

Every node is a bare-metal machine on one experiment LAN (the cluster's private addresses); a node
of each role runs the same disk image. Kafka nodes get a local-disk blockstore of the size the
topology computes for the replay (mounted at kafka_data_dir), on a hardware type with SSDs.

Instructions:
Start it with the parameter values `terraform output profile_bindings` gives (examples/cloudlab),
then save the experiment's manifest and turn it into addresses with manifest.py (same folder);
`terraform apply` renders the Ansible inventory from them. Node names are the topology module's, so
the manifest maps back onto the topology's nodes.
"""

# CloudLab runs this file as a script with its own geni-lib (Python 3). The node plan and the
# request are plain functions so that they can be tested without a portal context (the geni-lib
# release on PyPI has a Python 2 portal module; its rspec modules work).

ROLES = (
    # (parameter holding the count, role, short name as in terraform/modules/topology, singleton)
    ("", "testbed_jobmanager", "tb-jm", True),
    ("testbed_taskmanagers", "testbed_taskmanager", "tb-tm", False),
    ("production_taskmanagers", "production_jobmanager", "prod-jm", True),
    ("production_taskmanagers", "production_taskmanager", "prod-tm", False),
    ("kafka_nodes", "kafka", "kafka", False),
    ("", "monitoring", "monitoring", True),
    ("controller", "controller", "controller", True),
)
HARDWARE = {"taskmanager": "tm_hardware", "kafka": "kafka_hardware"}
DEFAULTS = {
    "name": "streambed",
    "testbed_taskmanagers": 4,
    "production_taskmanagers": 8,
    "kafka_nodes": 0,
    "controller": True,
    "kafka_disk_gb": 20,
    "kafka_data_dir": "/data/kafka",
    "tm_hardware": "c6525-25g",
    "kafka_hardware": "m510",
    "other_hardware": "m510",
    "image": "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD",
}


def _getter(params):
    """A lookup in ``params`` (a mapping, or the portal's bound parameters) with the DEFAULTS."""
    if isinstance(params, dict):
        return lambda key: params.get(key, DEFAULTS.get(key))
    return lambda key: getattr(params, key, DEFAULTS.get(key))


def _count(value, singleton):
    """Nodes of a role from its parameter: a count, or for a singleton a flag (a production cluster's
    JobManager exists with its TaskManagers; the controller when asked for)."""
    if isinstance(value, str):
        value = {"true": 1, "false": 0}.get(value.lower(), value)
    count = int(value)
    return min(1, count) if singleton else count


def node_plan(params):
    """[(node name, role, hardware type)] for ``params``: the same names, in the same order per role,
    as terraform/modules/topology gives."""
    value = _getter(params)
    plan = []
    for count_key, role, short, singleton in ROLES:
        count = _count(value(count_key), singleton) if count_key else 1
        kind = "taskmanager" if role.endswith("taskmanager") else role
        hardware = value(HARDWARE.get(kind, "other_hardware"))
        for i in range(count):
            name = "%s-%s" % (value("name"), short) if singleton else "%s-%s-%02d" % (value("name"), short, i + 1)
            plan.append((name, role, hardware))
    return plan


def problems(params):
    """What is wrong with ``params``: (parameter, message) pairs."""
    value = _getter(params)
    out = []
    for key, least in (("testbed_taskmanagers", 1), ("production_taskmanagers", 0), ("kafka_nodes", 0)):
        try:
            ok = int(value(key)) == float(value(key)) and int(value(key)) >= least
        except (TypeError, ValueError):
            ok = False
        if not ok:
            out.append((key, "%s must be a whole number of at least %d" % (key, least)))
    if int(value("kafka_disk_gb")) < 1:
        out.append(("kafka_disk_gb", "kafka_disk_gb must be at least 1 GB"))
    return out


def build(request, pg, params):
    """Add the nodes of ``params`` and their LAN to ``request`` (a geni-lib request RSpec)."""
    value = _getter(params)
    lan = request.LAN("cluster")
    # Many nodes on one LAN span switches: tagged VLANs, and no bandwidth guarantee to refuse on.
    lan.best_effort = True
    lan.vlan_tagging = True
    for name, role, hardware in node_plan(params):
        node = request.RawPC(name)
        node.hardware_type = hardware
        node.disk_image = value("image")
        # The controller is the jump host administrators (and Ansible) come in through.
        node.routable_control_ip = role == "controller"
        lan.addInterface(node.addInterface("if-cluster"))
        if role == "kafka":
            store = node.Blockstore("%s-data" % name, value("kafka_data_dir"))
            store.size = "%dGB" % int(value("kafka_disk_gb"))
    return request


def main():
    import geni.portal as portal
    import geni.rspec.emulab  # noqa: F401 - adds Blockstore to nodes
    import geni.rspec.pg as pg

    pc = portal.Context()
    integer, string, boolean = portal.ParameterType.INTEGER, portal.ParameterType.STRING, portal.ParameterType.BOOLEAN
    pc.defineParameter("name", "Node name prefix (the topology's name)", string, DEFAULTS["name"])
    pc.defineParameter("testbed_taskmanagers", "Testbed TaskManagers", integer, DEFAULTS["testbed_taskmanagers"])
    pc.defineParameter("production_taskmanagers", "Production TaskManagers (0: no production cluster)", integer,
                       DEFAULTS["production_taskmanagers"])
    pc.defineParameter("kafka_nodes", "Kafka nodes", integer, DEFAULTS["kafka_nodes"])
    pc.defineParameter("controller", "A node for the StreamBed controller", boolean, DEFAULTS["controller"])
    pc.defineParameter("kafka_disk_gb", "Kafka data directory per node, GB", integer, DEFAULTS["kafka_disk_gb"])
    pc.defineParameter("kafka_data_dir", "Kafka data directory mount point", string, DEFAULTS["kafka_data_dir"])
    pc.defineParameter("tm_hardware", "Hardware type of TaskManagers", string, DEFAULTS["tm_hardware"])
    pc.defineParameter("kafka_hardware", "Hardware type of Kafka nodes (SSDs)", string, DEFAULTS["kafka_hardware"])
    pc.defineParameter("other_hardware", "Hardware type of the other nodes", string, DEFAULTS["other_hardware"])
    pc.defineParameter("image", "Disk image of every node", string, DEFAULTS["image"])
    params = pc.bindParameters()
    for key, message in problems(params):
        pc.reportError(portal.ParameterError(message, [key]))
    pc.verifyParameters()
    pc.printRequestRSpec(build(pc.makeRequestRSpec(), pg, params))


if __name__ == "__main__":
    main()

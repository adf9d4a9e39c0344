"""Infrastructure: platforms (providers), the services deployed on them, Ansible underneath.

* :mod:`.provider`: the Provider protocol (provision -> an Inventory; destroy) and the Inventory value.
* :mod:`.local`: this machine as the first provider, and the "flink" testbed factory.
* :mod:`.terraform`: Terraform's examples as providers (provision renders the inventory); :mod:`.platforms`:
  a platform by name (``--env``) and the inventory it renders.
* :mod:`.services`: Flink and Prometheus deployed from an inventory (the testbed), the whole site
  (every service of every group); the Flink testbed's settings.
* :mod:`.ansible`: ``run_playbook`` through ansible-runner, one-line :class:`DeploymentError` messages,
  and the inventory's rendered ``group_vars``.
* :mod:`.hosts`, :mod:`.transport`, :mod:`.nodes`: an inventory's hosts, commands on them (local or
  SSH through fabric), and the node operations built on those (logs, disks, fault tests, Kafka offsets).

Infrastructure may build engines (a FlinkTestbed from an inventory); engines never import it.
"""

from streambed.infra.ansible import DeploymentError, PlaybookResult, inventory_settings, run_playbook
from streambed.infra.provider import Inventory, Provider

__all__ = ["DeploymentError", "Inventory", "PlaybookResult", "Provider", "inventory_settings", "run_playbook"]

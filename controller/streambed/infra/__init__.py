"""Infrastructure: deploying the testbed (Flink, Prometheus) with Ansible.

* :mod:`streambed.infra.ansible` runs ``ansible/site.yml`` through ansible-runner and turns a failed
  play into one-line :class:`~streambed.infra.ansible.DeploymentError` messages.
"""

from streambed.infra.ansible import DeploymentError, PlaybookResult, inventory_settings, run_playbook

__all__ = ["DeploymentError", "PlaybookResult", "inventory_settings", "run_playbook"]

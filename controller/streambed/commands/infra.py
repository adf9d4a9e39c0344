"""``streambed infra provision|deploy|destroy --env ENV``: the platform's machines (Terraform), the
services on them (Ansible), and giving both back. ``ENV`` names a root module of
``terraform/examples`` and the inventory ``inventories/<ENV>`` it renders; ``local`` provisions
nothing and writes the local inventory. The work is in infra/terraform.py and infra/services.py;
this parses and displays."""

from __future__ import annotations

from pathlib import Path

from ..report.console import Output
from .args import Parser
from .common import output_options


def register(sub) -> None:
    sp = sub.add_parser("infra", help="provision a platform (Terraform), deploy its services (Ansible), destroy both")
    isub = sp.add_subparsers(dest="infra_command", required=True, parser_class=Parser)
    for name, func, help in (
            ("provision", cmd_provision, "apply terraform/examples/ENV and write the inventory it renders"),
            ("deploy", cmd_deploy, "apply ansible/site.yml to the inventory: every service of every group"),
            ("destroy", cmd_destroy, "stop every service of the inventory, then destroy what provision created")):
        p = isub.add_parser(name, help=help)
        p.add_argument("--env", required=True, help="the platform: a directory of terraform/examples "
                                                    "(local, ec2, grid5000, cloudlab)")
        p.add_argument("--inventory", type=Path, help="the inventory directory (default: inventories/ENV)")
        if name != "deploy":
            p.add_argument("--var-file", type=Path, help="a JSON file of Terraform variables (default: the "
                                                         "example's terraform.tfvars, as Terraform reads it)")
        output_options(p)
        p.set_defaults(func=func)


def _provider(args, out: Output):
    from ..infra.platforms import terraform_provider

    return terraform_provider(args.env, args.inventory, args.var_file, log=None if args.quiet else out.info)


def cmd_provision(args, out: Output) -> None:
    provider = _provider(args, out)
    out.info(f"provisioning {args.env} (terraform/examples/{args.env})")
    inventory = provider.provision()
    out.info(f"inventory written: {inventory.path}")
    out.result({"env": args.env, "inventory": str(inventory.path)})


def cmd_deploy(args, out: Output) -> None:
    from ..infra.platforms import inventories_of
    from ..infra.services import SiteService

    done = []
    inventories = inventories_of(args.env, args.inventory)
    for inventory in inventories:
        inventory.playbook  # checked before anything is said: a missing playbook is one line
    for inventory in inventories:
        out.info(f"deploying every service of {inventory.path} (ansible/site.yml)")
        result = SiteService(inventory, None if args.quiet else out.info).deploy()
        out.info(f"deployed: {result.ok} ok, {result.changed} changed in {result.elapsed_s:.0f} s")
        done.append({"inventory": str(inventory.path), "ok": result.ok, "changed": result.changed,
                     "elapsed_s": result.elapsed_s})
    out.result({"env": args.env, "deployed": done})


def cmd_destroy(args, out: Output) -> None:
    from ..infra.ansible import DeploymentError
    from ..infra.platforms import inventories_of
    from ..infra.services import SiteService

    provider = _provider(args, out)
    inventories = inventories_of(args.env, args.inventory, must_exist=False)
    for inventory in inventories:
        out.info(f"stopping every service of {inventory.path}")
        try:
            SiteService(inventory, None if args.quiet else out.info).destroy()
        except DeploymentError as e:
            if args.env == "local":
                raise
            # The machines go anyway: a host already gone must not keep the others running (and paid).
            out.warn(f"could not stop every service ({e}); destroying the machines anyway")
    out.info(f"destroying what provision created for {args.env}")
    provider.destroy(inventories[0] if inventories else None)
    out.result({"env": args.env, "stopped": [str(i.path) for i in inventories], "destroyed": True})

"""Schema-only stand-ins for the Terraform providers the platform modules use (aws, grid5000).

The provider registry cannot be reached from the machines this project is built on, and Terraform
needs a provider's binary even for ``validate`` and for ``terraform test`` with ``mock_provider``
(it reads the schema from it). These stubs serve, through PyPI's ``tf`` package (the plugin
protocol in Python), a schema with only the resources, data sources and attributes the modules use,
named and typed as the real providers name and type them (aws 5.x, pmorillon/grid5000 0.0.10). So
a misspelled argument or a wrong type fails ``validate`` here as it would against the real
provider; nothing is ever created (every create/read answers an error).

    python stub_provider.py aws|grid5000      (run by Terraform from the mirror built by mirror.py)
"""

from __future__ import annotations

import sys
from typing import Any

from tf import runner, schema, types
from tf.gen import tfplugin_pb2 as pb
from tf.iface import DataSource, Provider, Resource
from tf.utils import Diagnostics

S, N, B = types.String(), types.Number(), types.Bool()
SET_S, LIST_S, MAP_S = types.Set(S), types.List(S), types.Map(S)

# Attribute modes, as the provider's schema marks them.
REQ, OPT, COMP, OPT_COMP = "required", "optional", "computed", "optional+computed"


class ListBlock(schema.NestedBlock):
    """A nested block in LIST mode (the ``tf`` package offers SET and SINGLE only); the SDK's
    ``MaxItems: 1`` blocks (aws_instance's root_block_device, metadata_options) are lists."""

    def to_pb(self) -> pb.Schema.NestedBlock:
        return pb.Schema.NestedBlock(type_name=self.type_name, block=self.block.to_pb(), min_items=self.min_items,
                                     max_items=self.max_items, nesting=pb.Schema.NestedBlock.NestingMode.LIST)


def _attributes(fields: dict[str, tuple[Any, str]]) -> list[schema.Attribute]:
    return [schema.Attribute(name, kind, required=mode == REQ, optional=mode in (OPT, OPT_COMP),
                             computed=mode in (COMP, OPT_COMP)) for name, (kind, mode) in fields.items()]


def _block(fields: dict[str, tuple[Any, str]]) -> schema.Block:
    return schema.Block(attributes=_attributes(fields))


TAGS = {"tags": (MAP_S, OPT), "tags_all": (MAP_S, COMP)}
RULE = {
    "id": (S, COMP), "security_group_rule_id": (S, COMP), "arn": (S, COMP),
    "security_group_id": (S, REQ), "ip_protocol": (S, REQ), "from_port": (N, OPT), "to_port": (N, OPT),
    "cidr_ipv4": (S, OPT), "cidr_ipv6": (S, OPT), "referenced_security_group_id": (S, OPT),
    "description": (S, OPT), **TAGS,
}

# provider -> (provider configuration, resources, data sources); type name -> (attributes, blocks).
SCHEMAS: dict[str, tuple[dict, dict, dict]] = {
    "aws": (
        {"region": (S, OPT), "profile": (S, OPT)},
        {
            "aws_security_group": ({
                "id": (S, COMP), "arn": (S, COMP), "name": (S, OPT_COMP), "description": (S, OPT_COMP),
                "vpc_id": (S, OPT_COMP), "revoke_rules_on_delete": (B, OPT), **TAGS}, []),
            "aws_vpc_security_group_ingress_rule": (RULE, []),
            "aws_vpc_security_group_egress_rule": (RULE, []),
            "aws_instance": ({
                "id": (S, COMP), "arn": (S, COMP), "ami": (S, OPT_COMP), "instance_type": (S, OPT_COMP),
                "subnet_id": (S, OPT_COMP), "vpc_security_group_ids": (SET_S, OPT_COMP), "key_name": (S, OPT_COMP),
                "associate_public_ip_address": (B, OPT_COMP), "availability_zone": (S, OPT_COMP),
                "private_ip": (S, OPT_COMP), "public_ip": (S, COMP), "private_dns": (S, COMP),
                "public_dns": (S, COMP), "user_data": (S, OPT), **TAGS,
            }, [
                ListBlock("root_block_device", schema.NestMode.Single, _block({
                    "volume_size": (N, OPT_COMP), "volume_type": (S, OPT_COMP), "encrypted": (B, OPT_COMP),
                    "delete_on_termination": (B, OPT), "device_name": (S, COMP), "volume_id": (S, COMP)}),
                    max_items=1),
                ListBlock("metadata_options", schema.NestMode.Single, _block({
                    "http_tokens": (S, OPT_COMP), "http_endpoint": (S, OPT_COMP)}), max_items=1),
            ]),
            "aws_ebs_volume": ({
                "id": (S, COMP), "arn": (S, COMP), "availability_zone": (S, REQ), "size": (N, OPT_COMP),
                "type": (S, OPT_COMP), "iops": (N, OPT_COMP), "throughput": (N, OPT_COMP),
                "encrypted": (B, OPT_COMP), **TAGS}, []),
            "aws_volume_attachment": ({
                "id": (S, COMP), "device_name": (S, REQ), "volume_id": (S, REQ), "instance_id": (S, REQ)}, []),
        },
        {
            "aws_subnet": ({
                "id": (S, OPT_COMP), "vpc_id": (S, OPT_COMP), "availability_zone": (S, OPT_COMP),
                "cidr_block": (S, OPT_COMP), **{"tags": (MAP_S, OPT_COMP)}}, []),
            "aws_ami": ({
                "id": (S, COMP), "most_recent": (B, OPT), "owners": (LIST_S, OPT), "name": (S, COMP),
                "architecture": (S, COMP)}, [
                schema.NestedBlock("filter", schema.NestMode.Set, _block({"name": (S, REQ), "values": (SET_S, REQ)})),
            ]),
            "aws_ec2_instance_type": ({
                "id": (S, COMP), "instance_type": (S, REQ), "default_vcpus": (N, COMP), "memory_size": (N, COMP),
                "instance_storage_supported": (B, COMP), "total_instance_storage": (N, COMP)}, []),
        },
    ),
    "grid5000": (
        {"username": (S, OPT), "password": (S, OPT), "restfully_file": (S, OPT)},
        {
            "grid5000_job": ({
                "id": (S, COMP), "site": (S, REQ), "name": (S, OPT), "types": (SET_S, OPT), "resources": (S, OPT),
                "reservation": (S, OPT), "command": (S, OPT), "scheduled_at_limit": (S, OPT), "need_state": (S, OPT),
                "properties": (S, OPT), "state": (S, COMP), "assigned_nodes": (SET_S, COMP),
                "vlans_resources": (LIST_S, COMP), "subnets_resources": (LIST_S, COMP)}, []),
            "grid5000_deployment": ({
                "id": (S, COMP), "site": (S, REQ), "environment": (S, REQ), "key": (S, OPT), "nodes": (SET_S, REQ),
                "partition_number": (N, OPT), "vlan": (N, OPT), "state": (S, COMP)}, []),
        },
        {},
    ),
}
ADDRESSES = {"aws": "registry.terraform.io/hashicorp/aws", "grid5000": "registry.terraform.io/pmorillon/grid5000"}


def _kind(type_name: str, fields: dict, blocks: list, base: type) -> type:
    """A resource or data source class whose schema is ``fields`` and ``blocks``; it never acts."""

    def refuse(self, ctx, *args):
        ctx.diagnostics.add_error(f"{type_name} is a schema stub (terraform/stubs): it validates and is "
                                  f"mocked in tests, it creates nothing")
        return None

    members = {
        "get_name": classmethod(lambda cls: type_name),
        "get_schema": classmethod(lambda cls: schema.Schema(attributes=_attributes(fields), block_types=blocks)),
        "__init__": lambda self, provider: None,
        "read": refuse,
    }
    if base is Resource:
        members.update(create=refuse, update=refuse, delete=lambda self, ctx, current: None)
    return type(type_name, (base,), members)


class StubProvider(Provider):
    def __init__(self, name: str):
        self.name = name
        config, resources, data_sources = SCHEMAS[name]
        self.config = config
        self.resources = [_kind(t, f, b, Resource) for t, (f, b) in resources.items()]
        self.data_sources = [_kind(t, f, b, DataSource) for t, (f, b) in data_sources.items()]

    def get_model_prefix(self) -> str:
        return ""  # type names above are complete

    def full_name(self) -> str:
        return ADDRESSES[self.name]

    def get_provider_schema(self, diags: Diagnostics) -> schema.Schema:
        # aws's default_tags block: tags every resource the provider creates carries.
        blocks = [ListBlock("default_tags", schema.NestMode.Single, _block({"tags": (MAP_S, OPT)}))] \
            if self.name == "aws" else []
        return schema.Schema(attributes=_attributes(self.config), block_types=blocks)

    def validate_config(self, diags: Diagnostics, config: dict) -> None:
        pass

    def configure_provider(self, diags: Diagnostics, config: dict) -> None:
        pass

    def get_data_sources(self) -> list:
        return self.data_sources

    def get_resources(self) -> list:
        return self.resources


if __name__ == "__main__":
    runner.run_provider(StubProvider(sys.argv[1]), [sys.argv[0], *sys.argv[2:]])

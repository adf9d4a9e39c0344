"""A CloudLab experiment's manifest RSpec -> the node addresses the cloudlab module takes.

    python terraform/modules/cloudlab/manifest.py manifest.xml > terraform/examples/cloudlab/manifest.auto.tfvars.json

For each node (its client_id is the topology's node name): ``private``, its address on the
experiment LAN (what the cluster uses), and ``public``, its control host name (what SSH from
outside reaches). The manifest comes from the experiment page (Manifest tab) or the portal API.
Standard library only.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def addresses(manifest_xml: str) -> dict[str, dict[str, str | None]]:
    """client_id -> {private, public}; a node without a LAN address has its control host as both."""
    root = ET.fromstring(manifest_xml)
    out: dict[str, dict[str, str | None]] = {}
    for node in root.iter():
        if _local(node.tag) != "node" or "client_id" not in node.attrib:
            continue
        private = public = None
        for child in node.iter():
            kind = _local(child.tag)
            if kind == "ip" and private is None and child.get("address"):
                private = child.get("address")
            elif kind == "host" and child.get("name"):
                public = child.get("name")
            elif kind == "login" and public is None and child.get("hostname"):
                public = child.get("hostname")
        if private is None and public is None:
            raise ValueError(f"manifest: node {node.attrib['client_id']} has no address (is the experiment ready?)")
        out[node.attrib["client_id"]] = {"private": private or public, "public": public}
    if not out:
        raise ValueError("manifest: no node found (expected a CloudLab manifest RSpec)")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: manifest.py MANIFEST.xml > manifest.auto.tfvars.json", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as fh:
            found = addresses(fh.read())
    except (OSError, ValueError, ET.ParseError) as e:
        print(f"manifest.py: {argv[1]}: {e}", file=sys.stderr)
        return 1
    json.dump({"manifest_addresses": found}, sys.stdout, indent=2, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

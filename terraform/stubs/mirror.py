"""Build a filesystem mirror of the schema-stub providers and the Terraform CLI config naming it.

    python terraform/stubs/mirror.py DIR     -> prints DIR/terraformrc; then
    TF_CLI_CONFIG_FILE=DIR/terraformrc terraform init -backend=false   (offline)

Each stub is a small executable in Terraform's "unpacked" mirror layout
(DIR/mirror/<host>/<namespace>/<type>/<version>/<os_arch>/terraform-provider-<type>_v<version>)
that runs stub_provider.py with this Python. The CLI config installs only from that mirror, so
nothing is asked of a registry. Never commit what `init` writes next to a configuration from this
mirror (.terraform/, .terraform.lock.hcl: the stubs' hashes, not the real providers').
"""

from __future__ import annotations

import platform
import shlex
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# provider -> (source address, the version the stub stands in for: inside the modules' constraints).
PROVIDERS = {
    "aws": ("registry.terraform.io/hashicorp/aws", "5.100.0"),
    "grid5000": ("registry.terraform.io/pmorillon/grid5000", "0.0.10"),
}


def _os_arch() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    return f"{platform.system().lower()}_{arch}"


def build(directory: Path | str, python: str = sys.executable) -> Path:
    """Write the mirror and its CLI config under ``directory``; returns the CLI config's path."""
    directory = Path(directory).resolve()
    mirror = directory / "mirror"
    for name, (address, version) in PROVIDERS.items():
        target = mirror / address / version / _os_arch()
        target.mkdir(parents=True, exist_ok=True)
        executable = target / f"terraform-provider-{name}_v{version}"
        executable.write_text(f"#!/bin/sh\nexec {shlex.quote(python)} {shlex.quote(str(HERE / 'stub_provider.py'))} "
                              f"{name} \"$@\"\n")
        executable.chmod(0o755)
    config = directory / "terraformrc"
    sources = ", ".join(f'"{address}"' for address, _ in PROVIDERS.values())
    config.write_text(
        "# Offline: the schema stubs only (terraform/stubs/mirror.py).\n"
        "provider_installation {\n"
        f"  filesystem_mirror {{\n    path    = \"{mirror}\"\n    include = [{sources}]\n  }}\n"
        "}\n")
    return config


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python terraform/stubs/mirror.py DIR")
    print(build(sys.argv[1]))

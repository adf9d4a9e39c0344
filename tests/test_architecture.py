"""The layers of docs/architecture.md, checked on the source: who may import whom.

Every import of the package is read from the source with ``ast`` (also those inside functions),
relative imports resolved, and checked against the rules below. A new module falls under the rule
of the layer its name puts it in.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

PACKAGE = REPO / "controller" / "streambed"

LAYERS = {
    # layer: module name prefixes (a prefix matches the module and its submodules)
    "planner": ("streambed.planner",),
    "protocol": ("streambed.testbed.base",),
    "engines": ("streambed.testbed",),
    "infra": ("streambed.infra",),
    "campaigns": ("streambed.campaigns",),
    "cli": ("streambed.cli", "streambed.commands", "streambed.__main__"),
    "records": ("streambed.records",),
    "reports": ("streambed.report",),
    "metrics": ("streambed.metrics",),
    "domain": ("streambed.model", "streambed.errors", "streambed.checks", "streambed.files",
               "streambed.dataset", "streambed.extras"),
    "ledger": ("streambed.ledger",),
}

FORBIDDEN = {
    # layer: the layers it must never import, and why (docs/architecture.md)
    "planner": ({"engines", "infra", "cli", "records", "reports", "campaigns"},
                "the planner sees a testbed only through the Testbed protocol, and is assembled by the campaigns"),
    "engines": ({"planner", "infra", "cli", "records", "reports", "campaigns"},
                "engines know nothing of the planner or of how they are deployed"),
    "protocol": ({"planner", "engines", "infra", "cli", "records", "reports", "campaigns"},
                 "the protocol is the seam: it depends on domain types only"),
    "records": ({"planner", "engines", "infra", "cli", "reports", "campaigns"},
                "records depend on domain types and the ledger's read API"),
    "reports": ({"planner", "engines", "infra", "cli", "records", "campaigns"},
                "reports depend on domain types, never on the planner"),
    "metrics": ({"planner", "engines", "infra", "cli", "records", "reports", "campaigns", "ledger"},
                "metrics turn samples into measurements, nothing more"),
    "domain": ({"planner", "protocol", "engines", "infra", "cli", "records", "reports", "campaigns", "ledger",
                "metrics"}, "domain types are the bottom layer"),
    "ledger": ({"planner", "engines", "infra", "cli", "records", "reports", "campaigns", "metrics"},
               "the ledger stores steps; it knows no planner"),
    "infra": ({"planner", "cli", "records", "reports", "campaigns"},
              "infra deploys and provides testbeds; it plans nothing"),
    "campaigns": ({"cli"}, "campaigns are assembled by the commands, not the other way round"),
}


def layer_of(module: str) -> str | None:
    """The most specific layer whose prefix names ``module``."""
    best, length = None, -1
    for layer, prefixes in LAYERS.items():
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > length:
                best, length = layer, len(p)
    return best


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(module: str, source: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, imported module) for every import in ``source``, relative ones resolved."""
    base = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                target = ".".join(anchor + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # "from . import x" and "from .pkg import mod" may name submodules: check each as well
            found.append((node.lineno, target))
            found += [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return found


def violations(module: str, source: str, is_package: bool = False) -> list[str]:
    """The forbidden imports of ``module``, one line each."""
    own = layer_of(module)
    banned, why = FORBIDDEN.get(own, (set(), ""))
    out = []
    for line, target in imports(module, source, is_package):
        if not target.startswith("streambed"):
            continue
        other = layer_of(target)
        if other in banned and other != own:
            out.append(f"{module}:{line} imports {target} ({own} -> {other}: {why})")
    return sorted(set(out))


def package_sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield module_name(path), path.read_text(), path.name == "__init__.py"


def test_every_module_belongs_to_a_layer():
    unplaced = [m for m, _, _ in package_sources() if m != "streambed" and layer_of(m) is None]
    assert not unplaced, f"modules outside every layer of docs/architecture.md: {unplaced}"


def test_no_layer_imports_what_it_must_not():
    found = [v for m, src, pkg in package_sources() for v in violations(m, src, pkg)]
    assert not found, "forbidden imports:\n" + "\n".join(found)


@pytest.mark.parametrize("module, source", [
    ("streambed.planner.optimizer", "from ..testbed.sim.testbed import SimTestbed"),
    ("streambed.planner.explorer", "def f():\n    from ..infra.local import create_testbed"),
    ("streambed.testbed.flink", "from ..planner.estimator import CapacityEstimator"),
    ("streambed.testbed.sim.engine", "import streambed.infra.ansible"),
    ("streambed.records", "from .planner.explorer import ExplorerSettings"),
    ("streambed.report.tables", "from ..planner.policies.bids2 import bids2"),
    ("streambed.planner.policies.bids2", "from ...campaigns import chain"),
    ("streambed.model.plan", "from ..planner.surrogates import fit"),
    ("streambed.planner.estimator", "from ..commands import args"),
    ("streambed.planner.streambed", "from ..report import plots"),
    ("streambed.planner.streambed", "from ..campaigns.chain import assemble"),
    ("streambed.testbed.sim.truth", "from ...planner.estimator import verdict"),
    ("streambed.testbed.base", "from ..planner import PLANNERS"),
    ("streambed.model.plan", "import streambed.planner.search"),
], ids=["planner-engine", "planner-infra-lazy", "engine-planner", "engine-infra", "records-planner",
        "report-planner", "planner-campaigns", "domain-planner", "planner-cli", "planner-report", "planner-campaigns-init",
        "testbed-planner", "protocol-planner", "model-planner"])
def test_a_planted_bad_import_is_caught(module, source):
    assert violations(module, source), f"{source!r} in {module} should break a rule"


@pytest.mark.parametrize("module, source", [
    ("streambed.planner.estimator", "from ..testbed.base import Testbed"),
    ("streambed.campaigns.plan", "from ..report import plots"),
    ("streambed.infra.local", "from ..testbed.flink import FlinkTestbed"),
    ("streambed.records", "from . import ledger"),
    ("streambed.planner.search", "from ..testbed.base import Testbed"),
    ("streambed.planner.ds2", "from ..ledger import Ledger"),
    ("streambed.campaigns.chain", "from ..planner.explorer import ResourceExplorer"),
])
def test_allowed_imports_pass(module, source):
    assert not violations(module, source)


CLI = ("streambed.cli", "streambed.commands", "streambed.__main__")


def command_imports(module: str, source: str, is_package: bool = False) -> list[str]:
    """The imports of ``streambed.commands`` by ``module`` when it is not part of the command line."""
    if any(module == c or module.startswith(c + ".") for c in CLI):
        return []
    return [f"{module}:{line} imports {target}" for line, target in imports(module, source, is_package)
            if target == "streambed.commands" or target.startswith("streambed.commands.")]


def test_nothing_imports_the_commands_but_the_command_line():
    """Commands parse and display: what they share with a library or a Spark job belongs below them."""
    found = [v for m, src, pkg in package_sources() for v in command_imports(m, src, pkg)]
    for path in sorted((REPO / "spark").rglob("*.py")):
        found += command_imports(f"spark.{path.stem}", path.read_text())
    assert not found, "imports of the commands outside the command line:\n" + "\n".join(found)


@pytest.mark.parametrize("module, source, caught", [
    ("streambed.campaigns.plan", "from ..commands import args", True),
    ("streambed.planner.search", "def f():\n    import streambed.commands.args", True),
    ("spark.analytics", "from streambed.commands.args import Parser", True),
    ("streambed.cli", "from .commands import explore", False),
    ("streambed.commands.explore", "from .common import logs", False),
    ("streambed.campaigns.plan", "from ..checks import number", False),
])
def test_a_planted_import_of_the_commands_is_caught(module, source, caught):
    assert bool(command_imports(module, source)) is caught


def test_no_command_function_is_longer_than_60_lines():
    """Commands parse and display; anything longer is work that belongs in a campaign."""
    long = []
    for path in [PACKAGE / "cli.py", *sorted((PACKAGE / "commands").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > 60:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({n} lines)")
    assert not long, long

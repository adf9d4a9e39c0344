"""The testbed registry: a testbed name (the --testbed option) -> the factory that builds it.

A new engine is one module with a factory ``(TestbedRequest, log) -> Testbed`` and one line here.
Factories are imported when their testbed is asked for, so that a machine without an engine's
dependencies (PyFlink, Ansible) still runs the others.
"""

from __future__ import annotations

import importlib
from typing import Callable, Mapping

from ..errors import UserError
from ..extras import missing_extra
from ..testbed.base import Testbed, TestbedFactory, TestbedRequest

TESTBEDS: Mapping[str, str] = {
    "sim": "streambed.testbed.sim.testbed:create",    # the simulated testbed (stand-in for Flink, docs/sim.md)
    "flink": "streambed.infra.local:create_testbed",  # the local Flink cluster, deployed by Ansible
}
"""Testbed name -> "module:factory"."""


def factory(name: str, registry: Mapping[str, str | TestbedFactory] = TESTBEDS) -> TestbedFactory:
    """The factory registered as ``name``; a registry entry may also be the factory itself (tests)."""
    try:
        entry = registry[name]
    except KeyError:
        raise UserError(f"--testbed: expected {' or '.join(registry)}, got {name!r}") from None
    if callable(entry):
        return entry
    module, _, attribute = entry.partition(":")
    return getattr(_import(name, module), attribute)


def create(name: str, request: TestbedRequest, log: Callable[[str], None],
           registry: Mapping[str, str | TestbedFactory] = TESTBEDS) -> Testbed:
    """The testbed ``name`` built for ``request``; a missing dependency is one line, not a traceback."""
    build = factory(name, registry)
    try:
        return build(request, log)
    except ModuleNotFoundError as e:
        raise _missing(name, e) from None


def _import(name: str, module: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        raise _missing(name, e) from None


def _missing(name: str, e: ModuleNotFoundError) -> UserError:
    return missing_extra(f"--testbed {name}", e) or UserError(
        f"--testbed {name}: the {name} testbed needs the module {e.name or 'it imports'}, which is not "
        f"installed; run make install")

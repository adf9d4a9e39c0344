"""Which optional part of StreamBed (an extra of pyproject.toml) provides a module, so that a command
whose part is not installed says how to install it in one line instead of a traceback.

The core (the simulated testbed, fit, holdout, optimize --from-metrics, records, report) installs
alone; the Flink testbed, the infrastructure, the Spark jobs and the Kafka loader import their
packages only when they are used, and a missing one surfaces as ``ModuleNotFoundError`` with the
module's name, which :func:`missing_extra` turns into the line to show.
"""

from __future__ import annotations

from importlib import metadata
from typing import Mapping

from .errors import UserError

EXTRA_OF_MODULE: Mapping[str, str] = {
    # top-level module -> the extra that installs it
    "requests": "flink",
    "prometheus_api_client": "flink",
    "grafana_client": "flink",
    "pyflink": "flink",
    "ansible": "infra",
    "ansible_runner": "infra",
    "fabric": "infra",
    "paramiko": "infra",
    "invoke": "infra",
    "pyspark": "spark",
    "py4j": "spark",
    "kafka": "kafka",
    "confluent_kafka": "kafka",
}
"""The modules of the optional parts (pyproject.toml's extras), by their top-level name."""

FLINK_LIBRARIES = "apache-flink-libraries"
"""The distribution of the flink extra that carries Flink; PyFlink's own package (apache-flink, which
holds ``pyflink/__init__.py``) is installed beside it without its dependencies (make install)."""


def extra_for(module: str | None) -> str | None:
    """The extra that provides ``module`` (a dotted name), or None for a module of no extra."""
    return EXTRA_OF_MODULE.get((module or "").partition(".")[0])


def install_hint(extra: str, module: str | None) -> str:
    """How to install what provides ``module``: the extra, and for PyFlink the package the extra
    cannot pull in (its declared dependencies are the PyFlink API's, which StreamBed never runs)."""
    hint = f"pip install 'streambed[{extra}]'"
    if (module or "").partition(".")[0] != "pyflink":
        return hint
    try:
        release = f"=={metadata.version(FLINK_LIBRARIES)}"
    except metadata.PackageNotFoundError:
        release = " of the same release"
    return f"{hint}, then pip install --no-deps apache-flink{release} for pyflink (make install does both)"


def missing_extra(feature: str, error: ModuleNotFoundError) -> UserError | None:
    """The one-line error for ``feature`` (e.g. 'streambed data generate') failing on ``error``, or None
    when the missing module belongs to no extra (a broken installation, not a part left out)."""
    extra = extra_for(error.name)
    if extra is None:
        return None
    return UserError(f"{feature} needs the '{extra}' extra: {install_hint(extra, error.name)}")

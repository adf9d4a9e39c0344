"""The SparkSession of a job, built from settings with defaults in one place.

``master`` comes from the settings (``--master``, or ``STREAMBED_SPARK_MASTER``): ``local[2]`` here,
``spark://host:7077`` on a standalone cluster; the jobs run the same code on both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping

DEFAULT_MASTER = "local[2]"


@dataclass(frozen=True)
class SparkSettings:
    master: str = field(default_factory=lambda: os.environ.get("STREAMBED_SPARK_MASTER", DEFAULT_MASTER))
    app_name: str = "streambed"
    shuffle_partitions: int = 8
    """Small: the jobs shuffle little (sorting a registered data set, grouping a ledger's windows)."""
    driver_memory: str = "1g"
    conf: Mapping[str, str] = field(default_factory=dict)
    """Further spark.* settings (--conf k=v)."""


def session(settings: SparkSettings = SparkSettings()):
    """A SparkSession for ``settings`` (an existing one is reused: one per process)."""
    # A machine whose host name does not resolve makes Spark warn and sometimes hang; the local
    # master needs no network.
    if settings.master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(settings.master).appName(settings.app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(settings.shuffle_partitions))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", settings.driver_memory))
    for key, value in settings.conf.items():
        builder = builder.config(key, value)
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    from streambed.errors import UserError

    try:
        spark = builder.getOrCreate()
    except (Py4JError, PySparkException) as e:  # e.g. a master that does not answer: one line
        raise UserError(f"Spark master {settings.master}: no session: {failure_line(str(e))}") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def failure_line(text: str) -> str:
    """One line for a failed Spark job, from the text of its error (a Java stack trace, often several
    causes deep): the innermost ``Caused by:`` without its exception class, else the first line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    causes = [ln[len("Caused by:"):].strip() for ln in lines if ln.startswith("Caused by:")]
    line = causes[-1] if causes else (lines[0] if lines else "no message")
    exception, sep, message = line.partition(": ")
    if sep and message and "." in exception and " " not in exception:  # java.io.IOException: Mkdirs failed ...
        line = message
    return line[:300]

"""The key statistics a plan reads: ``--key-stats FILE``, or, for a campaign that replays a data set, that
data set's own (issue 35, item 3: "where the campaign replays a data set, compute the key concentration,
the heaviest keys' shares and the number of distinct keys of each keyed operator's key from the data at
rest, with Spark").

The file is the one ``streambed data keys`` writes (``<data set>/keys/<query>.json``, docs/data.md, "Key
statistics"): read where it exists, counted with Spark once where it does not. A data set does not change
once written (``streambed data generate`` and ``register`` write new ones), so a file of the same query is
reused as it stands.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from .. import dataset as ds
from ..errors import UserError
from ..extras import missing_extra
from ..model import keystats
from .base import Log, ignore

Count = Callable[[ds.DataSet, str, tuple, Path], keystats.DataKeyStatistics]
"""Counts a query's keyed operators in a data set and writes the statistics file (count_with_spark)."""


def stats_file(data: ds.DataSet, query: str) -> Path:
    """Where ``streambed data keys`` writes (and a plan reads) ``query``'s key statistics of ``data``."""
    return data.path / "keys" / f"{query}.json"


def count_with_spark(data: ds.DataSet, query: str, operators: tuple, target: Path,
                     master: str | None = None) -> keystats.DataKeyStatistics:
    """The key statistics of ``operators`` in ``data`` by the Spark job (spark/streambed_spark/keys.py),
    written to ``target``; Spark's master is ``master``, else $STREAMBED_SPARK_MASTER, else local."""
    try:
        from streambed_spark import keys
        from streambed_spark.session import SparkSettings, session
    except ModuleNotFoundError as e:
        raise missing_extra("counting a data set's keys with Spark", e) or UserError(
            f"counting a data set's keys with Spark needs the module {e.name}; run make install") from None
    from pyspark.sql import SparkSession

    owned = SparkSession.getActiveSession() is None  # a session the caller holds stays up
    spark = session(SparkSettings(master=master) if master else SparkSettings())
    try:
        result = keys.run(spark, data, query, operators)
    finally:
        if owned:  # a plan's campaign runs for hours after its count: Spark's driver memory is given back
            spark.stop()
    target.parent.mkdir(parents=True, exist_ok=True)
    result.write(target)
    return result


def replayed_key_stats(query: str, given: Path | None, input_name: str | None, lake: Path, *, counted: bool = True,
                       count: Count = count_with_spark, status: Log = ignore) -> Path | None:
    """The key statistics file a plan of ``query`` reads: ``given`` (``--key-stats``) where set; else, for a
    campaign replaying the data set ``input_name`` (``counted``: not ``--no-key-stats``), that data set's own,
    counted first where missing (``count``); else None, where the plan infers the skew from its runs alone
    (the generator, the sim, a query whose keys the data at rest does not hold: model/keystats.QUERY_KEYS)."""
    if given is not None:
        return given
    if input_name is None or not counted:
        return None
    operators = keystats.QUERY_KEYS.get(query)
    if not operators:
        status(f"{query} has no keyed operator whose key is a column of the data at rest: the key skew is "
               f"inferred from the runs")
        return None
    data = ds.load(input_name, lake)
    target = stats_file(data, query)
    if target.is_file():
        status(f"key statistics of {data.name}: {target} (streambed data keys)")
        return target
    if not os.access(target.parent if target.parent.exists() else data.path, os.W_OK):  # refused before Spark starts and before anything is measured
        raise UserError(f"--input {data.name}: its key statistics would be written to {target}, which this user "
                        f"cannot write; give --key-stats FILE (streambed data keys --out FILE) or --no-key-stats")
    status(f"counting the keys of {query}'s keyed operators in {data.name} with Spark (once; written to {target})")
    seconds = count(data, query, operators, target).seconds
    status(f"key statistics of {data.name} counted in {seconds:,.0f} s of Spark: {target}")
    return target

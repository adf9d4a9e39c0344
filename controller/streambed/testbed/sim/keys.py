"""The key statistics of the data a sim profile models: what ``streambed data keys`` counts with Spark in a
data set at rest (model/keystats.py), here read from the profile itself. A stand-in: the simulated testbed
replays no data; its keyed operators' key weights and hashes (partitioning.py) are the data.

The sim puts a key in group hash mod m as Flink puts it in murmur(hash) mod m, so the records per group
of 32,768 fold to every power-of-two max parallelism exactly as the real statistics do (and, for few keys,
the records per hash give every max parallelism), and a plan made with them (``streambed plan
--key-stats``) reads its keyed operators' busiest tasks from them.
"""

from __future__ import annotations

import numpy as np

from ...model.keystats import TOP_KEYS, DataKeyStatistics, KeyStatistics, hashed_counts
from .partitioning import keyed_streams
from .profile import SimProfile

RECORDS = 10**12
"""The records the statistics count: the profile gives each key's share; counts round share x RECORDS."""


def key_statistics(profile: SimProfile, records: int = RECORDS) -> DataKeyStatistics:
    """Per keyed operator of ``profile``'s query (a hash input): its keys' records, distinct keys,
    concentration, heaviest keys and records per key group of RECORDED_KEY_GROUPS, as the Spark job writes them."""
    operators = []
    keyed = profile.query().keyed
    for name, stream in keyed_streams(profile).items():
        if name not in keyed:
            continue
        counts = np.rint(stream.weights * records).astype(np.int64)
        held = np.flatnonzero(counts)
        groups, hashes = hashed_counts(zip(stream.hashes[held].tolist(), counts[held].tolist()), len(held))
        top = np.argsort(-counts, kind="stable")[:TOP_KEYS]
        operators.append(KeyStatistics(
            name, "key", int(counts.sum()), len(held), float(np.sum(counts.astype(np.float64) ** 2)),
            tuple(int(counts[k]) for k in top), tuple(f"key {k}" for k in top), groups, hashes))
    return DataKeyStatistics(profile.name, f"sim:{profile.name}", records, tuple(operators),
                             {"stand-in": "the sim's profile (no data set, no Spark)"})

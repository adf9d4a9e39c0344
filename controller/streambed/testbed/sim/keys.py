"""The key statistics of the data a sim profile models: what ``streambed data keys`` counts with Spark in a
data set at rest (model/keystats.py), here read from the profile itself. A stand-in: the simulated testbed
replays no data; its keyed operators' key weights and hashes (partitioning.py) are the data.

The sim puts a key in group hash mod m as Flink puts it in murmur(hash) mod m, so the records per group
of 32,768 fold to every power-of-two max parallelism exactly as the real statistics do, and a plan made
with them (``streambed plan --key-stats``) reads its keyed operators' busiest tasks from them.
"""

from __future__ import annotations

import numpy as np

from ...model.keystats import RECORDED_KEY_GROUPS, TOP_KEYS, DataKeyStatistics, KeyStatistics
from .partitioning import key_group_mass, keyed_streams
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
        groups = np.rint(key_group_mass(counts.astype(np.float64), stream.hashes, RECORDED_KEY_GROUPS)).astype(np.int64)
        top = np.argsort(-counts, kind="stable")[:TOP_KEYS]
        operators.append(KeyStatistics(
            name, "key", int(counts.sum()), int(np.count_nonzero(counts)), float(np.sum(counts.astype(np.float64) ** 2)),
            tuple(int(counts[k]) for k in top), tuple(f"key {k}" for k in top),
            {int(g): int(c) for g, c in enumerate(groups) if c}))
    return DataKeyStatistics(profile.name, f"sim:{profile.name}", records, tuple(operators),
                             {"stand-in": "the sim's profile (no data set, no Spark)"})

"""How records of a stream spread over the tasks of an operator.

Hash partitioning follows Flink: a key's hash selects one of ``max_parallelism`` key groups, and
key groups are assigned to tasks in contiguous ranges (``KeyGroupRangeAssignment``). With skewed
(Zipf) keys and uneven key-group counts per task, one task receives more than 1/p of the stream, and
because every upstream task blocks on its fullest output channel, the operator as a whole can go no
faster than that task allows (the paper's skew, section II).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...model import keygroups

FLINK_MIN_MAX_PARALLELISM = keygroups.MIN_MAX_PARALLELISM
FLINK_MAX_MAX_PARALLELISM = keygroups.MAX_MAX_PARALLELISM
flink_default_max_parallelism = keygroups.default_max_parallelism


def zipf_weights(count: int, exponent: float) -> np.ndarray:
    """Probability of each of ``count`` keys under Zipf(exponent); exponent 0 is uniform."""
    ranks = np.arange(1, count + 1, dtype=np.float64)
    w = ranks ** (-exponent)
    return w / w.sum()


def key_weights(count: int, exponent: float, hot: float = 0.0) -> np.ndarray:
    """Probability of each key: Zipf(exponent) over ``count`` keys for ``1 - hot`` of the records, and the
    first (hottest) key carries ``hot`` on top."""
    w = zipf_weights(count, exponent)
    if hot > 0:
        w *= 1.0 - hot
        w[0] += hot
    return w


def uniform_shares(parallelism: int) -> np.ndarray:
    return np.full(parallelism, 1.0 / parallelism)


def key_hashes(count: int, seed: int) -> np.ndarray:
    """A fixed 31-bit hash per key: a property of the data, not of a run."""
    return np.random.default_rng(seed).integers(0, 2**31 - 1, size=count, dtype=np.int64)


def key_group_mass(weights: np.ndarray, hashes: np.ndarray, max_parallelism: int) -> np.ndarray:
    return np.bincount(hashes % max_parallelism, weights=weights, minlength=max_parallelism)


def task_shares_from_key_groups(group_mass: np.ndarray, parallelism: int) -> np.ndarray:
    """Flink's contiguous key-group ranges: group g goes to task g * p // max_parallelism."""
    max_parallelism = group_mass.shape[0]
    owner = (np.arange(max_parallelism, dtype=np.int64) * parallelism) // max_parallelism
    return np.bincount(owner, weights=group_mass, minlength=parallelism)


class KeyedStream:
    """The key distribution of one keyed operator input, with cached task shares per parallelism."""

    def __init__(self, count: int, exponent: float, seed: int, max_parallelism: int | None = None,
                 hot: float = 0.0):
        self.count = count
        self.exponent = exponent
        self.hot = hot
        self.fixed_max_parallelism = max_parallelism
        self._weights = key_weights(count, exponent, hot)
        self._hashes = key_hashes(count, seed)
        self._mass: dict[int, np.ndarray] = {}
        self._shares = lru_cache(maxsize=4096)(self._compute_shares)

    @property
    def weights(self) -> np.ndarray:
        """Each key's share of the records."""
        return self._weights

    @property
    def hashes(self) -> np.ndarray:
        """Each key's hash (its group at m is hash mod m)."""
        return self._hashes

    def max_parallelism(self, parallelism: int) -> int:
        """Key groups of the operator started at ``parallelism`` (the profile's, else Flink's default)."""
        return keygroups.max_parallelism(parallelism, self.fixed_max_parallelism)

    @property
    def parallelism_limit(self) -> int:
        """The most tasks a keyed operator may have: Flink refuses a parallelism above the operator's
        max parallelism, which is at most 32,768 key groups."""
        return keygroups.parallelism_limit(self.fixed_max_parallelism)

    def _compute_shares(self, parallelism: int) -> np.ndarray:
        if parallelism > self.parallelism_limit:
            raise ValueError(f"parallelism {parallelism} exceeds the max parallelism {self.parallelism_limit}")
        mp = self.max_parallelism(parallelism)
        if mp not in self._mass:
            self._mass[mp] = key_group_mass(self._weights, self._hashes, mp)
        shares = task_shares_from_key_groups(self._mass[mp], parallelism)
        shares.setflags(write=False)
        return shares

    def shares(self, parallelism: int) -> np.ndarray:
        """Fraction of the stream each of the ``parallelism`` tasks receives (sums to 1)."""
        return self._shares(int(parallelism))

    def max_share(self, parallelism: int) -> float:
        return float(self.shares(parallelism).max())


def keyed_streams(profile) -> dict[str, KeyedStream]:
    """The key distribution of every keyed operator of a profile. The seed is the profile's data seed
    plus the operator's position, so the engine and the capacity model see the same data."""
    streams = {}
    for k, op in enumerate(profile.operators):
        if op.keys is not None:
            streams[op.name] = KeyedStream(op.keys.count, op.keys.zipf, profile.data_seed + k,
                                           profile.max_parallelism, hot=op.keys.hot)
    return streams

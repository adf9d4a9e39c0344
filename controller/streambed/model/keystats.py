"""Key statistics of a keyed operator's input, read from a data set at rest, and what the skew model takes from them.

A keyed operator (a GROUP BY, a JOIN, a PARTITION BY) sends each record to the task that owns its
key's key group. From the data at rest the distribution of those keys is known exactly: how many
distinct keys, the heaviest keys' shares and the concentration H = sum of the squared key shares
(model/keyskew.py infers the same H from task imbalance). Flink's own hash of each key gives the
key group it lands in, so the share of the busiest of p tasks is also exact for this data: records
are counted per key group at the finest resolution (32,768 groups, Flink's largest max parallelism)
and folded for any power-of-two max parallelism (Flink's defaults), since a hash modulo m is the
hash modulo 32,768 folded modulo m. Where the data has at most HASHED_KEYS distinct keys, each key's
hash is kept with its records, and the groups of any max parallelism follow (a job's own 624).

The Spark job is spark/streambed_spark/keys.py; this module is pure: the query -> key mapping, the
statistics and their JSON form, Flink's key hash, and the functions on counts.

Flink's hash of a SQL key. A keyed SQL operator keys by a ``BinaryRowData`` projection of the key
columns; ``KeyGroupRangeAssignment.assignToKeyGroup`` takes ``MathUtils.murmurHash(row.hashCode()) %
m``, and ``BinaryRowData.hashCode`` is Murmur3 (seed 42) over the row's bytes read as 4-byte
little-endian words: an 8-byte header (row kind, null bits) per 56 fields, then 8 bytes per BIGINT.
Only keys of BIGINT columns are hashed here; tests/test_keystats.py checks the hash against Flink's
own classes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..errors import UserError
from . import keygroups
from .keyskew import GroupShares, KeySkew, SkewChoice, more_pessimistic

RECORDED_KEY_GROUPS = keygroups.MAX_MAX_PARALLELISM
"""Key groups the statistics count records in: every power-of-two max parallelism up to it folds from them."""
TOP_KEYS = 10
"""Heaviest keys kept (their counts), for the top-1 and top-10 shares."""
HASHED_KEYS = 8192
"""The most distinct keys whose hashes the statistics list (key_hashes): few keys are where the groups
of a max parallelism that is not a power of two decide the busiest task (30 keys over a job's 624 groups),
and a list of 8,192 pairs stays a small file."""
FORMAT_VERSION = 1

# -- which key each keyed operator uses ----------------------------------------------------------------------------


@dataclass(frozen=True)
class KeySide:
    """One input of a keyed operator as data at rest holds it: events of ``kind`` (person, auction, bid),
    keyed by ``columns`` of that kind's struct, after the query's filter ``where`` (a Spark SQL
    predicate on the struct's fields) when the query filters that input before the operator."""

    kind: str
    columns: tuple[str, ...]
    where: str | None = None

    def text(self) -> str:
        cols = ", ".join(f"{self.kind}.{c}" for c in self.columns)
        return f"({cols})" if len(self.columns) > 1 else cols


@dataclass(frozen=True)
class KeyedOperator:
    """A keyed operator of a query (its name in the query's declared graph) and the inputs its key reads.
    A join has two sides keyed by values of the same type: its tasks receive both."""

    operator: str
    sides: tuple[KeySide, ...]
    clause: str
    """The query's clause that keys it, as written (GROUP BY B.bidder, ON B.auction = A.id, ...)."""

    @property
    def key(self) -> str:
        return " = ".join(s.text() for s in self.sides)


def _bid(*columns: str) -> KeySide:
    return KeySide("bid", columns)


QUERY_KEYS: Mapping[str, tuple[KeyedOperator, ...]] = {
    # Keyed operators whose key is a column of the data at rest, with the clause of flink/queries/<q>.sql that
    # keys them. Keys computed by the query (window bounds, DATE_FORMAT days, aggregates) are not at rest
    # and are left out; tests/test_keystats.py checks every entry against the query file's graph and SQL.
    "q3": (KeyedOperator("Join#3", (KeySide("auction", ("seller",), "category = 10"),
                                    KeySide("person", ("id",), "state IN ('OR', 'ID', 'CA')")),
                         "ON A.seller = P.id"),),
    "q4": (KeyedOperator("Join#3", (KeySide("auction", ("id",)), _bid("auction")), "WHERE A.id = B.auction"),),
    "q5": (KeyedOperator("GroupWindowAggregate#2", (_bid("auction"),), "GROUP BY B1.auction, HOP(...)"),),
    "q8": (KeyedOperator("GroupWindowAggregate#2", (KeySide("person", ("id", "name")),), "GROUP BY P.id, P.name, TUMBLE(...)"),
           KeyedOperator("GroupWindowAggregate#5", (KeySide("auction", ("seller",)),), "GROUP BY A.seller, TUMBLE(...)")),
    "q9": (KeyedOperator("Join#3", (KeySide("auction", ("id",)), _bid("auction")), "WHERE A.id = B.auction"),),
    "q11": (KeyedOperator("GroupWindowAggregate#2", (_bid("bidder"),), "GROUP BY B.bidder, SESSION(...)"),),
    "q12": (KeyedOperator("WindowAggregate#2", (_bid("bidder"),), "GROUP BY bidder, window_start, window_end"),),
    "q18": (KeyedOperator("Deduplicate#2", (_bid("bidder", "auction"),), "PARTITION BY bidder, auction"),),
    "q19": (KeyedOperator("Rank#2", (_bid("auction"),), "PARTITION BY auction"),),
    "q20": (KeyedOperator("Join#3", (_bid("auction"), KeySide("auction", ("id",), "category = 10")),
                          "ON B.auction = A.id"),),
}


def keyed_operators(query: str, known_queries: Iterable[str] = ()) -> tuple[KeyedOperator, ...]:
    """The keyed operators of ``query`` whose key the data at rest holds. UserError (one line) for a query
    not in ``known_queries`` (the query files there are; empty: not checked) or with no such operator."""
    known = sorted(known_queries)
    if known and query not in known:
        raise UserError(f"--query: no query {query!r:.60} (expected one of {', '.join(known)})")
    ops = QUERY_KEYS.get(query)
    if not ops:
        with_keys = ", ".join(sorted(QUERY_KEYS, key=lambda q: (len(q), q)))
        raise UserError(f"--query: {query} has no keyed operator whose key is a column of the data at rest "
                        f"(queries with one: {with_keys})")
    return ops


# -- Flink's key hash ---------------------------------------------------------------------------------------------

_M32 = 0xFFFFFFFF
C1, C2 = 0xCC9E2D51, 0x1B873593
"""Murmur3's constants, as Flink's MurmurHashUtil and MathUtils use them."""
SEED = 42
"""MurmurHashUtil's seed for binary rows."""


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k: int) -> int:
    return (_rotl((k * C1) & _M32, 15) * C2) & _M32


def _mix_h1(h: int, k: int) -> int:
    return (_rotl(h ^ k, 13) * 5 + 0xE6546B64) & _M32


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def row_words(values: Sequence[int]) -> list[int]:
    """The 4-byte words of a BinaryRowData holding ``values`` as BIGINT fields (row kind INSERT, none null):
    the header (8 bytes per 64 bits of row kind and null bits), then each value's low and high word."""
    words = [0] * (2 * ((len(values) + 63 + 8) // 64))
    for v in values:
        u = int(v) & 0xFFFFFFFFFFFFFFFF
        words += [u & _M32, u >> 32]
    return words


def row_hash(values: Sequence[int]) -> int:
    """``BinaryRowData.hashCode()`` of a row of BIGINT ``values``, as an unsigned 32-bit integer."""
    words = row_words(values)
    h = SEED
    for w in words:
        h = _mix_h1(h, _mix_k1(w))
    return _fmix(h ^ (4 * len(words)))


def spread_hash(code: int) -> int:
    """``MathUtils.murmurHash(code)``: a non-negative int from a hash code (unsigned 32-bit in)."""
    h = _fmix(_mix_h1(0, _mix_k1(code & _M32)) ^ 4)
    signed = h - (1 << 32) if h & 0x80000000 else h
    return abs(signed) if signed != -(1 << 31) else 0


def key_hash(values: Sequence[int]) -> int:
    """The hash whose remainder modulo the max parallelism is the key group of a SQL key of BIGINT ``values``."""
    return spread_hash(row_hash(values))


def key_group(values: Sequence[int], max_parallelism: int) -> int:
    """The key group Flink assigns a SQL key of BIGINT ``values`` among ``max_parallelism`` groups."""
    return key_hash(values) % int(max_parallelism)


# -- statistics -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyStatistics:
    """One keyed operator's key distribution in a data set."""

    operator: str
    key: str
    records: int
    """Records of the data set the operator receives (both sides of a join)."""
    distinct_keys: int
    sum_squares: float
    """Sum over keys of (records of the key)^2: the concentration's numerator."""
    top_counts: tuple[int, ...]
    """Records of the heaviest keys, heaviest first (at most TOP_KEYS)."""
    top_keys: tuple[str, ...] = ()
    """Those keys, as text."""
    key_groups: Mapping[int, int] | None = None
    """Records per key group of RECORDED_KEY_GROUPS (groups without records left out); None when the key
    is not hashed here (a key with a non-BIGINT column)."""
    key_hashes: Mapping[int, int] | None = None
    """Records per distinct key hash (Flink's murmur of the key's hash code: the key group is it modulo the
    max parallelism), where the keys were hashed and are at most HASHED_KEYS; else None."""

    def __post_init__(self):
        if self.records < 0 or self.distinct_keys < 0 or self.distinct_keys > self.records:
            raise ValueError(f"key statistics of {self.operator}: {self.distinct_keys} keys in {self.records} records")

    @property
    def concentration(self) -> float:
        """H = sum of the squared key shares (1/H: the effective number of keys); 0 without records."""
        return self.sum_squares / self.records ** 2 if self.records else 0.0

    def top_share(self, n: int) -> float:
        """The share of the records the ``n`` heaviest keys hold."""
        return sum(self.top_counts[:n]) / self.records if self.records else 0.0

    def to_dict(self) -> dict:
        d = {"operator": self.operator, "key": self.key, "records": self.records, "distinct_keys": self.distinct_keys,
             "sum_squares": self.sum_squares, "concentration": self.concentration,
             "top1_share": self.top_share(1), "top10_share": self.top_share(TOP_KEYS),
             "top_counts": list(self.top_counts), "top_keys": list(self.top_keys),
             "key_groups_recorded": RECORDED_KEY_GROUPS}
        d["key_groups"] = None if self.key_groups is None else [[g, c] for g, c in sorted(self.key_groups.items())]
        d["key_hashes"] = None if self.key_hashes is None else [[h, c] for h, c in sorted(self.key_hashes.items())]
        return d

    def figures(self) -> dict:
        """to_dict without the key groups and hashes (up to 32,768 pairs each): what a command prints."""
        return {k: v for k, v in self.to_dict().items() if k not in ("key_groups", "key_hashes")}

    @classmethod
    def from_dict(cls, d: Mapping) -> "KeyStatistics":
        groups, hashes = d.get("key_groups"), d.get("key_hashes")
        if groups is not None and int(d.get("key_groups_recorded", RECORDED_KEY_GROUPS)) != RECORDED_KEY_GROUPS:
            raise ValueError(f"key groups recorded at {d['key_groups_recorded']}, expected {RECORDED_KEY_GROUPS}")
        return cls(str(d["operator"]), str(d["key"]), int(d["records"]), int(d["distinct_keys"]),
                   float(d["sum_squares"]), tuple(int(c) for c in d["top_counts"]),
                   tuple(str(k) for k in d.get("top_keys", ())),
                   None if groups is None else {int(g): int(c) for g, c in groups},
                   None if hashes is None else {int(h): int(c) for h, c in hashes})


def statistics_of_counts(operator: str, key: str, counts: Mapping[tuple[int, ...], int],
                         hashed: bool = True) -> KeyStatistics:
    """The statistics of per-key record counts (key values -> records), key groups from Flink's hash when
    ``hashed``: what the Spark job computes, for counts small enough to hold in memory (tests, checks)."""
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    groups = hashes = None
    if hashed:
        groups, hashes = hashed_counts(((key_hash(k), c) for k, c in counts.items()), len(counts))
    return KeyStatistics(operator, key, sum(counts.values()), len(counts), float(sum(c * c for c in counts.values())),
                         tuple(c for _, c in ordered[:TOP_KEYS]),
                         tuple(",".join(map(str, k)) for k, _ in ordered[:TOP_KEYS]), groups, hashes)


def hashed_counts(keys: Iterable[tuple[int, int]], distinct_keys: int) -> tuple[dict[int, int], dict[int, int] | None]:
    """Records per key group of RECORDED_KEY_GROUPS and, for at most HASHED_KEYS ``distinct_keys``, per key
    hash, from (key hash, records) of each distinct key."""
    groups: dict[int, int] = {}
    hashes: dict[int, int] | None = {} if distinct_keys <= HASHED_KEYS else None
    for h, c in keys:
        g = h % RECORDED_KEY_GROUPS
        groups[g] = groups.get(g, 0) + c
        if hashes is not None:
            hashes[h] = hashes.get(h, 0) + c
    return groups, hashes


def fold_key_groups(groups: Mapping[int, int], max_parallelism: int) -> list[int]:
    """Records per key group at ``max_parallelism``, from records per group of RECORDED_KEY_GROUPS: a hash
    modulo m is the hash modulo RECORDED_KEY_GROUPS folded modulo m, when m divides it (a power of two)."""
    m = int(max_parallelism)
    if m < 1 or RECORDED_KEY_GROUPS % m:
        raise ValueError(f"max parallelism {m}: key groups fold only to a power of two up to {RECORDED_KEY_GROUPS}")
    out = [0] * m
    for g, c in groups.items():
        out[g % m] += c
    return out


def busiest_task_share(stats: KeyStatistics, parallelism: int, max_parallelism: int | None = None) -> float | None:
    """The share of the operator's records its busiest of ``parallelism`` tasks receives over
    ``max_parallelism`` key groups (Flink's default for the parallelism when None): key groups to tasks by
    KeyGroupRangeAssignment (group g to task g * p // m). None when the key groups are not known; ValueError
    for groups that neither fold from RECORDED_KEY_GROUPS nor follow from listed key hashes."""
    if stats.key_groups is None or stats.records <= 0:
        return None
    p = int(parallelism)
    m = keygroups.max_parallelism(p, max_parallelism)
    if not 1 <= p <= m:
        raise ValueError(f"parallelism {p}: expected 1 to the max parallelism {m}")
    if stats.key_hashes is not None and RECORDED_KEY_GROUPS % m:
        groups = [0] * m
        for h, c in stats.key_hashes.items():
            groups[h % m] += c
    else:
        groups = fold_key_groups(stats.key_groups, m)
    tasks = [0] * p
    for g, c in enumerate(groups):
        tasks[g * p // m] += c
    return max(tasks) / stats.records


def key_skew(stats: KeyStatistics) -> KeySkew:
    """The skew model's input from the data: its concentration H, its hottest key's share and, where the
    keys were hashed, its records per key group (the busiest task's share then exact wherever they fold),
    all exact for this data set. The hottest key is known, so no fainter key hides behind it (policies'
    hidden_key reads 0)."""
    groups = None
    if stats.key_groups is not None and stats.records > 0:
        counts = np.zeros(RECORDED_KEY_GROUPS)
        for g, c in stats.key_groups.items():
            counts[g] = c
        hashes = shares = None
        if stats.key_hashes is not None:
            hashes = list(stats.key_hashes)
            shares = [c / stats.records for c in stats.key_hashes.values()]
        groups = GroupShares(counts / stats.records, hashes, shares)
    return KeySkew(min(1.0, stats.concentration), min(1.0, stats.top_share(1)), groups=groups)


def skews_with_data(inferred: Mapping[str, KeySkew], data: Iterable[KeyStatistics], parallelism: int,
                    max_parallelism: int | None = None, runs: Mapping[str, Sequence] | None = None
                    ) -> tuple[dict[str, KeySkew], dict[str, SkewChoice]]:
    """Per keyed operator, the more pessimistic of the skew inferred from task imbalance (``inferred``,
    model.measurement.key_skews) and the data's (``data``) at ``parallelism`` (keyskew.more_pessimistic),
    or the data's where they counted its key groups and none of the operator's ``runs``
    (model.measurement.key_samples) contradicts them:
    the skews to plan with, and each choice (which one, both values) for the plan to show."""
    from_data = {s.operator: key_skew(s) for s in data}
    runs = runs or {}
    skews, choices = {}, {}
    for op in sorted(set(inferred) | set(from_data)):
        d = from_data.get(op)
        counted = d is not None and d.groups is not None and not d.groups.contradicted(runs.get(op, ()))
        choice = more_pessimistic(inferred.get(op), d, parallelism, max_parallelism, counted)
        if choice is not None:
            skews[op], choices[op] = choice.skew, choice
    return skews, choices


# -- the statistics file ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataKeyStatistics:
    """What ``streambed data keys`` writes: a query's keyed operators' statistics in one data set."""

    query: str
    dataset: str
    events: int
    operators: tuple[KeyStatistics, ...]
    spark: Mapping[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    """Wall-clock time of the Spark job (reading, counting, hashing)."""

    def to_dict(self) -> dict:
        return {"version": FORMAT_VERSION, "query": self.query, "dataset": self.dataset, "events": self.events,
                "operators": [s.to_dict() for s in self.operators], "spark": dict(self.spark),
                "seconds": self.seconds}

    @classmethod
    def from_dict(cls, d: Mapping) -> "DataKeyStatistics":
        if int(d.get("version", 0)) != FORMAT_VERSION:
            raise ValueError(f"key statistics version {d.get('version')!r}, expected {FORMAT_VERSION}")
        return cls(str(d["query"]), str(d["dataset"]), int(d["events"]),
                   tuple(KeyStatistics.from_dict(o) for o in d["operators"]), dict(d.get("spark", {})),
                   float(d.get("seconds", 0.0)))

    def write(self, path: Path) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        tmp.replace(path)


def read(path: Path) -> DataKeyStatistics:
    """A key statistics file; UserError (one line) when it is not one."""
    try:
        return DataKeyStatistics.from_dict(json.loads(Path(path).read_text()))
    except OSError as e:
        raise UserError(f"{path}: {e.strerror or e}") from None
    except (ValueError, KeyError, TypeError) as e:
        raise UserError(f"{path}: not a key statistics file ({e!s:.100})") from None

"""Data sets at rest in the data lake, and how much of one a campaign consumes (paper VII-VIII).

A data set is a directory of the lake written by the Spark jobs (spark/streambed_spark/lake.py):

    <lake>/<name>/dataset.json        the manifest below
    <lake>/<name>/json/part-NNNNN.json     JSON lines, in event order (what the Flink job replays)
    <lake>/<name>/parquet/part-NNNNN.parquet   the same events, for Spark and for users

This module reads manifests and sizes replays; it needs no Spark. The paper replays pre-generated
streams from Kafka, about 1.2 M events/s per SSD-bound Kafka node, and its own runs failed silently
when a stream ran out mid-run: here a campaign that could run out is refused before it starts.
"""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Protocol

from .errors import UserError
from .checks import shown
from .files import load_json, read_input_text


class Timing(Protocol):
    """What sizing reads of the estimator's timing (estimator.Timing; a domain module imports no algorithm)."""

    name: str
    warmup_s: float
    warmup_max_s: float
    max_iterations: int
    ramp_s: float
    observe_s: float
    steady_observe_s: float
    max_cooldown_s: float
    cooldown_rate_per_source: float

MANIFEST = "dataset.json"
MANIFEST_VERSION = 1
KINDS = ("person", "auction", "bid")
"""Nexmark event kinds, in event_type order (0, 1, 2)."""
DEFAULT_LAKE = Path("datalake")
"""The lake directory when none is given (``--lake``, ``DATALAKE=``), relative to the working directory."""
KAFKA_NODE_RATE = 1.2e6
"""Events/s one SSD-bound Kafka node serves to the replay (paper, section VIII)."""
DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


@dataclass(frozen=True)
class DataSet:
    """A data set's manifest: what it holds and where."""

    name: str
    path: Path
    events: int
    kinds: Mapping[str, int]
    """Events of each kind (person, auction, bid)."""
    formats: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Format (json, parquet) -> {"files": n, "bytes": b}."""
    origin: Mapping[str, object] = field(default_factory=dict)
    """How it was made: generated (seed, rate, ...) or registered (source path, time column)."""

    @property
    def replay_dir(self) -> Path:
        """The JSON lines files the Flink job replays."""
        return self.path / "json"

    def to_dict(self) -> dict:
        return {"version": MANIFEST_VERSION, "name": self.name, "events": self.events, "kinds": dict(self.kinds),
                "formats": {k: dict(v) for k, v in self.formats.items()}, "origin": dict(self.origin)}

    @staticmethod
    def from_dict(d: Mapping, path: Path) -> "DataSet":
        where = f"{path / MANIFEST}"
        if not isinstance(d, Mapping) or d.get("version") != MANIFEST_VERSION:
            raise UserError(f"{where}: not a StreamBed data set manifest of version {MANIFEST_VERSION}")
        try:
            events = int(d["events"])
            kinds = {k: int(d["kinds"].get(k, 0)) for k in KINDS}
            formats = {str(f): {"files": int(v["files"]), "bytes": int(v["bytes"])} for f, v in d["formats"].items()}
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise UserError(f"{where}: malformed manifest ({type(e).__name__}: {e})") from None
        if events < 0 or sum(kinds.values()) != events:
            raise UserError(f"{where}: events ({events}) is not the sum of the kinds {kinds}")
        return DataSet(str(d.get("name") or path.name), path, events, kinds, formats, dict(d.get("origin") or {}))


def dataset_path(name_or_path: str, lake: Path = DEFAULT_LAKE) -> Path:
    """A data set's directory: a path if it contains a '/', else a name in ``lake``."""
    if "/" in name_or_path or name_or_path in (".", ".."):
        return Path(name_or_path)
    if not DATASET_NAME.fullmatch(name_or_path):
        raise UserError(f"--input: expected a data set name of letters, digits, '_', '.' and '-' or a path, "
                        f"got {name_or_path!r:.60}")
    return lake / name_or_path


def load(name_or_path: str, lake: Path = DEFAULT_LAKE) -> DataSet:
    """The data set ``name_or_path``; one line naming it when it is not one."""
    path = dataset_path(name_or_path, lake)
    manifest = path / MANIFEST
    if not manifest.is_file():
        hint = f" (data sets in {lake}: {', '.join(names(lake))})" if names(lake) else \
            " (make datagen QUERY=... EVENTS=... writes one)"
        raise UserError(f"--input: {shown(path)} is not a data set: no {MANIFEST}{hint}")
    d = load_json(read_input_text(manifest), str(manifest))
    ds = DataSet.from_dict(d, path)
    if not any(ds.replay_dir.glob("part-*.json")):
        raise UserError(f"--input: {ds.replay_dir} holds no JSON lines files (part-*.json) to replay")
    return ds


def names(lake: Path) -> list[str]:
    """The data sets of ``lake``, by name (none when there is no lake yet)."""
    if not lake.is_dir():
        return []
    return sorted(p.name for p in lake.iterdir() if (p / MANIFEST).is_file())


def check_lake(lake: Path) -> Path:
    """``lake`` as a lake to list: a directory, or absent (no data set written yet). UserError naming
    --lake for a file, a device or a symbolic link that leads nowhere (a loop), which would otherwise
    list as an empty lake."""
    try:
        st = os.stat(lake)
    except FileNotFoundError:
        if os.path.islink(lake):
            raise UserError(f"--lake: {shown(lake)}: a symbolic link to nothing; expected the lake directory") from None
        return lake
    except OSError as e:
        raise UserError(f"--lake: {shown(lake)}: {e.strerror or e}; expected the lake directory") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UserError(f"--lake: {shown(lake)}: not a directory; expected the lake directory")
    return lake


# -- what a query reads ------------------------------------------------------------------------------------------

_FROM = re.compile(r"\b(FROM|JOIN)\b(.*?)(?=\b(?:WHERE|GROUP|ORDER|HAVING|JOIN|ON|UNION|LEFT|RIGHT|INNER|FULL|"
                   r"CROSS|WINDOW)\b|[();]|$)", re.IGNORECASE | re.DOTALL)


def kinds_read(sql: str) -> tuple[str, ...]:
    """The Nexmark kinds a query's SQL reads: the person, auction and bid views named in its FROM
    lists (``FROM auction A, bid B`` too) and JOINs."""
    sql = re.sub(r"--[^\n]*", "", sql)
    read = set()
    for _, tables in _FROM.findall(sql):
        for item in tables.split(","):
            words = item.split()
            if words and words[0].lower() in KINDS:
                read.add(words[0].lower())
    return tuple(k for k in KINDS if k in read)


def check_fits(ds: DataSet, query: str, sql: str) -> None:
    """UserError when the data set lacks a kind of event the query reads."""
    missing = [k for k in kinds_read(sql) if ds.kinds.get(k, 0) == 0]
    if missing:
        have = ", ".join(f"{n:,} {k}" for k, n in ds.kinds.items() if n) or "no events"
        raise UserError(f"--input {ds.name}: query {query} reads {' and '.join(missing)} events, which the data set "
                        f"does not hold (it has {have})")


# -- sizing --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sizing:
    """How much data a campaign's replay consumes, and the Kafka nodes that serve it."""

    rate: float
    """The largest rate any window asks of the source, events/s."""
    job_seconds: float
    """The longest one job replays (it restarts from the data set's start after that)."""
    job_events: int
    """Events one job replays at most."""
    jobs: int
    """Jobs the campaign starts (each replays from the data set's start)."""
    campaign_events: int
    """Events the whole campaign reads at most (jobs x job_events): the Kafka topics' traffic."""
    kafka_nodes: int

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def kafka_nodes(rate: float, node_rate: float = KAFKA_NODE_RATE) -> int:
    """SSD-bound Kafka nodes needed to serve ``rate`` events/s (paper VIII: about 1.2 M events/s each)."""
    return max(1, int(math.ceil(rate / node_rate)))


def job_seconds(t: Timing) -> tuple[float, float]:
    """(seconds at the full rate, seconds at the cooldown rate) of the longest estimate job: the
    warm-up, then per iteration a ramp-up and an observation (with its steady-state extension) at
    up to the full rate, and a cooldown of at most max_cooldown_s at the low rate (section IV)."""
    full = max(t.warmup_s, t.warmup_max_s) + t.max_iterations * (t.ramp_s + max(t.observe_s, t.steady_observe_s))
    return full, t.max_iterations * t.max_cooldown_s


def sizing(rate: float, timing: Timing, sources: int = 1, jobs: int = 1, node_rate: float = KAFKA_NODE_RATE) -> Sizing:
    """What a campaign of ``jobs`` estimate jobs at up to ``rate`` events/s replays. The source never
    emits faster than its target (the strict limiter), so rate x time bounds each phase."""
    full, cool = job_seconds(timing)
    per_job = int(math.ceil(rate * full + timing.cooldown_rate_per_source * sources * cool))
    return Sizing(rate, full + cool, per_job, jobs, per_job * jobs, kafka_nodes(rate, node_rate))


def validation_sizing(rate: float, multipliers: tuple[float, ...], ramp_s: float, duration_s: float,
                      node_rate: float = KAFKA_NODE_RATE) -> Sizing:
    """What validating a plan at production scale replays (section VIII): one job per multiplier of
    the plan's rate, each for its ramp-up and duration; Kafka sized for the largest multiple."""
    seconds = ramp_s + duration_s
    top = max(multipliers) * rate
    return Sizing(top, seconds, int(math.ceil(top * seconds)), len(multipliers),
                  sum(int(math.ceil(m * rate * seconds)) for m in multipliers), kafka_nodes(top, node_rate))


def max_rate(ds: DataSet, timing: Timing, sources: int = 1) -> float:
    """The fastest replay ``ds`` holds for the longest job of ``timing`` (the inverse of :func:`sizing`)."""
    full, cool = job_seconds(timing)
    return max(0.0, (ds.events - timing.cooldown_rate_per_source * sources * cool) / full)


def check_enough(ds: DataSet, s: Sizing) -> None:
    """Refuse, before anything runs, a campaign whose jobs could run out of data mid-run."""
    if s.job_events > ds.events:
        raise UserError(
            f"--input {ds.name}: a job of this campaign may replay up to {s.job_events:,} events "
            f"(up to {s.rate:,.0f} events/s for up to {s.job_seconds:,.0f} s) but the data set holds {ds.events:,}; "
            f"generate at least that many (make datagen EVENTS={s.job_events}) or lower the rate")

"""Simulation profiles: the YAML description of a query for the simulated testbed.

The format is documented in docs/sim-profiles.md. A profile describes, per operator, what makes
capacity planning hard (StreamBed paper, sections II-IV): per-edge selectivity, multi-input
operators, key skew under hash partitioning, window firings and their stragglers, state working sets
against the memory of a slot, warm-up, bounded buffers and noise.

Loading validates everything and reports the first problem as one line naming the field, e.g.
``q5.yaml: operators[1].keys.zipf: expected a number >= 0, got 'high'``.
"""

from __future__ import annotations

import math
import os
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from ... import checks
from ...errors import ProfileError, UserError
from ...files import load_yaml, read_input
from ...model import SOURCE, Query, state_span
from .partitioning import FLINK_MAX_MAX_PARALLELISM

MAX_KEY_COUNT = 10_000_000
"""Largest ``keys.count`` (docs/sim-profiles.md). The simulator draws every key: a probability and a
31-bit hash per key, arrays of ``count`` entries per keyed operator (partitioning.py), so memory and
set-up time grow with the count: at this bound, about 0.3 GB at the peak and under a second per keyed
operator; at 1e11 keys the arrays alone would need terabytes. Keys fall into at most 32768 key groups
(Flink's largest max parallelism), so ten million keys already fill every key group with hundreds of keys."""

KINDS = ("map", "filter", "window", "aggregate", "join", "sink")
PARTITIONINGS = ("rebalance", "hash")
FAMILIES = ("linear", "log", "sqrt")


@dataclass(frozen=True)
class KeySpec:
    """Key distribution of a hash-partitioned input: Zipf(``zipf``) over ``count`` keys, the first of
    which also carries a share ``hot`` of the records on its own (a hot key: a default value, a bot)."""

    count: int
    zipf: float
    hot: float = 0.0


@dataclass(frozen=True)
class WindowSpec:
    """A windowed operator fires every ``slide_s`` (tumbling: ``slide_s == size_s``).

    Firing emits the window's results in one burst (the saw-tooth load downstream) and costs
    ``fire_cost_s`` of task time per emitted record, stretched on each task and firing by a random
    straggler factor ``1 + xi`` with mean ``straggler_mean``, a Pareto tail of index
    ``straggler_tail`` (smaller = heavier tail; inf = every firing stretched by the mean) and at most
    ``straggler_cap`` times the mean.
    """

    size_s: float
    slide_s: float
    fire_cost_s: float
    straggler_mean: float
    straggler_tail: float
    straggler_cap: float = 20.0


@dataclass(frozen=True)
class StateSpec:
    """State kept by a stateful operator, per task.

    Working set (MB) = ``working_set_mb`` + ``bytes_per_record`` x records/s x ``retention_s`` / 1e6,
    grown during warm-up as ``1 - exp(-t / warmup_s)``. Below the working set, records miss the
    cache: cost x (1 + ``miss_penalty`` x miss_ratio ** ``miss_exponent``). A fresh task is
    ``warmup_speedup`` times faster while its state is empty (paper section IV, warm-up).
    """

    working_set_mb: float
    bytes_per_record: float
    retention_s: float
    miss_penalty: float
    miss_exponent: float
    warmup_s: float
    warmup_speedup: float


@dataclass(frozen=True)
class InputSpec:
    """An edge into an operator: ``selectivity`` records arrive per record ``source`` processes."""

    source: str
    selectivity: float
    partitioning: str


@dataclass(frozen=True)
class OperatorSpec:
    name: str
    kind: str
    rate: float
    """Records/s one task processes when 100 % busy, steady state, memory not limiting."""
    inputs: tuple[InputSpec, ...]
    keys: KeySpec | None = None
    window: WindowSpec | None = None
    state: StateSpec | None = None
    buffer_records: float = 20000.0
    """Input buffer of a task, in records (Flink's network buffers are fixed in bytes, so a fast
    operator's buffer holds only milliseconds of its stream)."""
    noise: float = 0.02
    """Relative standard deviation of a task's speed (AR(1) in time)."""
    noise_correlation_s: float = 10.0


@dataclass(frozen=True)
class AnalyticSpec:
    """Capacity given as a function f(M, P) of the paper's families (Eq. 6-8).

    The best configuration of P slots with M MB per slot sustains exactly f(M, P), up to a per-run
    multiplicative noise of relative standard deviation ``noise``. ``memory_feature`` says what M is
    in the formula: ``slot_mb`` or ``taskmanager_mb`` (slot MB x ``slots_per_taskmanager``, the
    paper's convention); ``log_transform`` is ``log`` or ``log1p`` (the paper's artifact uses log1p).
    """

    family: str
    a: float
    b: float
    c: float
    memory_feature: str = "taskmanager_mb"
    slots_per_taskmanager: int = 16
    log_transform: str = "log1p"
    noise: float = 0.0
    floor: float = 1000.0
    """Smallest capacity the profile reports where the formula goes to or below zero."""

    def feature(self, memory_mb: float, slots: float) -> tuple[float, float]:
        m = memory_mb * (self.slots_per_taskmanager if self.memory_feature == "taskmanager_mb" else 1)
        return float(m), float(slots)

    def capacity(self, memory_mb: float, slots: float) -> float:
        m, p = self.feature(memory_mb, slots)
        if self.family == "linear":
            v = self.a * m + self.b * p + self.c
        elif self.family == "sqrt":
            v = self.a * math.sqrt(m) + self.b * math.sqrt(p) + self.c
        else:
            log = math.log1p if self.log_transform == "log1p" else math.log
            v = self.a * log(m) + self.b * log(p) + self.c
        return max(v, self.floor)


@dataclass(frozen=True)
class Reference:
    """What the profile is calibrated against (documentation and the calibration test)."""

    single_task_mst: float | None = None
    shape: str | None = None
    poor_memory_mb: tuple[int, ...] = ()
    notes: str = ""


@dataclass(frozen=True)
class SimProfile:
    name: str
    description: str
    operators: tuple[OperatorSpec, ...]
    state_fraction: float = 0.4
    """Share of a slot's memory usable as state cache (Flink's managed-memory fraction)."""
    max_parallelism: int | None = None
    """Key groups of keyed operators; None = Flink's default rule (1.5 x p to a power of 2, >= 128)."""
    source_max_rate: float | None = None
    """The source's own limit, outside the slot budget (None: never limiting)."""
    data_seed: int = 7
    """Seed of the data itself (key hashes): fixed per profile, independent of run noise."""
    analytic: AnalyticSpec | None = None
    reference: Reference = field(default_factory=Reference)
    origin: str = ""

    def query(self) -> Query:
        return Query(
            name=self.name,
            operators=tuple(op.name for op in self.operators),
            edges=tuple((i.source, op.name) for op in self.operators for i in op.inputs),
            keyed=frozenset(op.name for op in self.operators if any(i.partitioning == "hash" for i in op.inputs)),
            max_parallelism=self.max_parallelism,
            state_span_s=state_span(max((op.window.size_s for op in self.operators if op.window), default=0.0)),
        )

    def operator(self, name: str) -> OperatorSpec:
        for op in self.operators:
            if op.name == name:
                return op
        raise KeyError(name)

    def edge_shares(self) -> dict[str, list[tuple[str, float]]]:
        """Per operator, its inputs and the share of each input's counted output the edge carries
        (metrics/window.with_offered). The engine counts an operator's records out at its largest
        out-edge selectivity (numRecordsOut counts a record once), so an edge of selectivity s
        carries s / that largest of them; an edge from the source carries s of the events emitted."""
        largest: dict[str, float] = {}
        for op in self.operators:
            for i in op.inputs:
                largest[i.source] = max(largest.get(i.source, 0.0), i.selectivity)
        return {op.name: [(i.source, i.selectivity if i.source == SOURCE or largest[i.source] <= 0
                           else i.selectivity / largest[i.source]) for i in op.inputs]
                for op in self.operators}

    def input_ratios(self) -> dict[str, float]:
        """Records into each operator per source event (the r_i of BIDS2, Table I), from selectivities."""
        out_ratio: dict[str, float] = {SOURCE: 1.0}
        ratios: dict[str, float] = {}
        for op in self.operators:
            r = sum(out_ratio[i.source] * i.selectivity for i in op.inputs)
            ratios[op.name] = r
            out_ratio[op.name] = r  # selectivities are per record processed by the upstream
        return ratios


# ----------------------------------------------------------------------------------------------
# Loading and validation


MAX_PROFILE_NUMBER = 1e15
"""The largest magnitude of a number in a profile (rates, sizes, coefficients): far beyond any query,
and far enough below a float's range that the formulas' products and sums stay finite."""

MAX_NOISE = 1.0
"""The largest relative standard deviation of speed noise: 100 %, beyond which a multiplicative
noise makes rates negative more often than not."""

MAX_TEXT_CHARS = 10_000
"""The longest text field (a description)."""


class _Fields:
    """Reads typed fields from a mapping, raising ProfileError naming the full path."""

    def __init__(self, data: Any, where: str, origin: str):
        if not isinstance(data, Mapping):
            raise ProfileError(f"{origin}: {where or 'profile'}: expected a mapping, got {type(data).__name__}")
        self.data = data
        self.where = where
        self.origin = origin

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, expected: str, got: Any) -> ProfileError:
        return ProfileError(f"{self.origin}: {self.path(key)}: expected {expected}, got {got!r:.80}")

    def name(self, key: str) -> str:
        """A name (the profile's, an operator's, an input's source): no control characters."""
        v = self.text(key)
        try:
            return checks.name(v)
        except checks.Invalid as e:
            raise ProfileError(f"{self.origin}: {self.path(key)}: {e}") from None

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def number(self, key: str, default: float | None = None, *, minimum: float | None = 0.0,
               strict: bool = False, allow_inf: bool = False, maximum: float = MAX_PROFILE_NUMBER) -> float:
        if not self.has(key):
            if default is None:
                raise ProfileError(f"{self.origin}: {self.path(key)}: missing (expected a number)")
            return default
        v = self.data[key]
        if isinstance(v, str) and allow_inf and v.strip().lower() in ("inf", "infinity", ".inf"):
            return math.inf
        if isinstance(v, str) and checks.is_number_text(v):
            raise ProfileError(
                f"{self.origin}: {self.path(key)}: expected a number, got text {v!r} (YAML reads quoted values "
                f"and exponents without a dot as text: write 1000000 or 1.0e+6)"
            )
        try:
            x = checks.number(v, minimum=minimum, strict=strict, allow_inf=allow_inf,
                              maximum=None if allow_inf else maximum)
            if minimum is None and x < -maximum:
                raise checks.Invalid(f"expected a number from {-maximum:g} to {maximum:g}, got {v!r:.60}")
            return x
        except checks.Invalid as e:
            raise ProfileError(f"{self.origin}: {self.path(key)}: {e}") from None

    def integer(self, key: str, default: int | None = None, *, minimum: int = 0) -> int:
        if not self.has(key):
            if default is None:
                raise ProfileError(f"{self.origin}: {self.path(key)}: missing (expected an integer)")
            return default
        try:
            # YAML writes integers as integers: 10.0 is a float there, refused like text
            return checks.integer(self.data[key], minimum=minimum, whole_floats=False)
        except checks.Invalid as e:
            raise ProfileError(f"{self.origin}: {self.path(key)}: {e}") from None

    def text(self, key: str, default: str | None = None, choices: tuple[str, ...] | None = None) -> str:
        if not self.has(key):
            if default is None:
                raise ProfileError(f"{self.origin}: {self.path(key)}: missing (expected text)")
            return default
        v = self.data[key]
        if not isinstance(v, str) or not v.strip():
            raise self.fail(key, "non-empty text", v)
        if len(v) > MAX_TEXT_CHARS:
            raise ProfileError(f"{self.origin}: {self.path(key)}: expected text of at most {MAX_TEXT_CHARS:,} "
                               f"characters, got {len(v):,}")
        if choices and v not in choices:
            raise self.fail(key, "one of " + ", ".join(choices), v)
        return v

    def sub(self, key: str) -> "_Fields | None":
        if not self.has(key):
            return None
        return _Fields(self.data[key], self.path(key), self.origin)

    def items(self, key: str) -> list["_Fields"]:
        v = self.data.get(key)
        if not isinstance(v, list) or not v:
            raise ProfileError(f"{self.origin}: {self.path(key)}: expected a non-empty list")
        return [_Fields(x, f"{self.path(key)}[{i}]", self.origin) for i, x in enumerate(v)]

    def unknown(self, allowed: set[str]) -> None:
        for k in self.data:
            if k not in allowed:
                raise ProfileError(
                    f"{self.origin}: {self.path(str(k))}: unknown field (expected one of {', '.join(sorted(allowed))})"
                )


def _parse_operator(f: _Fields, defaults: Mapping[str, float]) -> OperatorSpec:
    f.unknown({"name", "kind", "rate", "inputs", "keys", "window", "state", "buffer_records", "noise",
               "noise_correlation_s"})
    name = f.name("name")
    if name == SOURCE:
        raise f.fail("name", f"a name other than {SOURCE!r} (reserved for the source)", name)
    kind = f.text("kind", choices=KINDS)
    inputs = []
    for i in f.items("inputs"):
        i.unknown({"from", "selectivity", "partitioning"})
        inputs.append(InputSpec(
            source=i.name("from"),
            selectivity=i.number("selectivity", 1.0),
            partitioning=i.text("partitioning", "rebalance", PARTITIONINGS),
        ))
    keys = None
    if (k := f.sub("keys")) is not None:
        k.unknown({"count", "zipf", "hot"})
        count = k.integer("count", minimum=1)
        if count > MAX_KEY_COUNT:
            raise k.fail("count", f"an integer in [1, {MAX_KEY_COUNT:,}] (the simulator holds a weight and a "
                                  f"hash per key)", count)
        keys = KeySpec(count=count, zipf=k.number("zipf", 0.0), hot=k.number("hot", 0.0, maximum=0.99))
    if any(i.partitioning == "hash" for i in inputs) and keys is None:
        raise ProfileError(f"{f.origin}: {f.path('keys')}: missing (a hash-partitioned input needs a key distribution)")
    if keys is not None and not any(i.partitioning == "hash" for i in inputs):
        raise ProfileError(f"{f.origin}: {f.path('keys')}: unused (no input of this operator is hash-partitioned; "
                           f"set partitioning: hash on the keyed input)")
    window = None
    if (w := f.sub("window")) is not None:
        w.unknown({"size_s", "slide_s", "fire_cost_us", "straggler_mean", "straggler_tail", "straggler_cap"})
        size = w.number("size_s", minimum=0.0, strict=True)
        slide = w.number("slide_s", size, minimum=0.0, strict=True)
        if slide > size:
            raise w.fail("slide_s", f"a slide <= size_s ({size:g})", w.data["slide_s"])
        tail = w.number("straggler_tail", math.inf, minimum=1.0, strict=True, allow_inf=True)
        window = WindowSpec(
            size_s=size,
            slide_s=slide,
            fire_cost_s=w.number("fire_cost_us", 0.0) * 1e-6,
            straggler_mean=w.number("straggler_mean", 0.0),
            straggler_tail=tail,
            straggler_cap=w.number("straggler_cap", 20.0, minimum=0.0),
        )
    if kind == "window" and window is None:
        raise ProfileError(f"{f.origin}: {f.path('window')}: missing (an operator of kind window needs one)")
    if window is not None and kind != "window":
        raise f.fail("kind", "window (the operator has a window section)", kind)
    state = None
    if (s := f.sub("state")) is not None:
        s.unknown({"working_set_mb", "bytes_per_record", "retention_s", "miss_penalty", "miss_exponent",
                   "warmup_s", "warmup_speedup"})
        state = StateSpec(
            working_set_mb=s.number("working_set_mb", 0.0),
            bytes_per_record=s.number("bytes_per_record", 0.0),
            retention_s=s.number("retention_s", window.size_s if window else 0.0),
            miss_penalty=s.number("miss_penalty", 0.0),
            miss_exponent=s.number("miss_exponent", 1.0, minimum=0.0, strict=True),
            warmup_s=s.number("warmup_s", 60.0, minimum=0.0, strict=True),
            warmup_speedup=s.number("warmup_speedup", 1.0, minimum=1.0),
        )
    return OperatorSpec(
        name=name,
        kind=kind,
        rate=f.number("rate", minimum=0.0, strict=True),
        inputs=tuple(inputs),
        keys=keys,
        window=window,
        state=state,
        buffer_records=f.number("buffer_records", defaults["buffer_records"], minimum=0.0, strict=True),
        noise=f.number("noise", defaults["noise"], maximum=MAX_NOISE),
        noise_correlation_s=f.number("noise_correlation_s", defaults["noise_correlation_s"],
                                     minimum=0.0, strict=True),
    )


def _parse_analytic(f: _Fields) -> AnalyticSpec:
    f.unknown({"family", "a", "b", "c", "memory_feature", "slots_per_taskmanager", "log_transform", "noise",
               "floor"})
    return AnalyticSpec(
        family=f.text("family", choices=FAMILIES),
        a=f.number("a", minimum=None),
        b=f.number("b", minimum=None),
        c=f.number("c", minimum=None),
        memory_feature=f.text("memory_feature", "taskmanager_mb", ("slot_mb", "taskmanager_mb")),
        slots_per_taskmanager=f.integer("slots_per_taskmanager", 16, minimum=1),
        log_transform=f.text("log_transform", "log1p", ("log", "log1p")),
        noise=f.number("noise", 0.0, maximum=MAX_NOISE),
        floor=f.number("floor", 1000.0, minimum=0.0, strict=True),
    )


def parse_profile(data: Any, origin: str = "profile") -> SimProfile:
    f = _Fields(data, "", origin)
    f.unknown({"name", "description", "operators", "graph", "memory", "defaults", "source", "max_parallelism",
               "data_seed", "analytic", "reference"})
    name = f.name("name")
    analytic = _parse_analytic(a) if (a := f.sub("analytic")) is not None else None

    if f.has("graph"):
        # An analytic profile may borrow the operator graph (names, edges, rates, selectivities) of a
        # shipped profile; only its capacity law differs.
        if analytic is None:
            raise f.fail("graph", "no graph (only analytic profiles may borrow one)", f.data["graph"])
        if f.has("operators"):
            raise f.fail("graph", "either graph or operators, not both", f.data["graph"])
        if f.has("defaults"):
            raise ProfileError(f"{origin}: defaults: unused with graph (a borrowed graph keeps its operators' "
                               f"buffers and has no speed noise)")
        graph_ref = f.text("graph")
        if _ref_key(graph_ref) in _LOADING.get():
            raise f.fail("graph", "a profile that does not borrow its graph back from this one", graph_ref)
        try:
            base = load_profile(graph_ref)
        except ProfileError as e:
            msg = str(e)
            msg = msg[len("profile: "):] if msg.startswith("profile: ") else msg
            raise ProfileError(f"{origin}: graph: {msg}") from None
        operators = tuple(
            OperatorSpec(name=o.name, kind=o.kind, rate=o.rate, inputs=tuple(
                replace(i, partitioning="rebalance") for i in o.inputs), buffer_records=o.buffer_records, noise=0.0)
            for o in base.operators
        )
    else:
        d = f.sub("defaults")
        defaults = {"buffer_records": 20000.0, "noise": 0.02, "noise_correlation_s": 10.0}
        if d is not None:
            d.unknown(set(defaults))
            defaults = {
                "buffer_records": d.number("buffer_records", 20000.0, minimum=0.0, strict=True),
                "noise": d.number("noise", 0.02, maximum=MAX_NOISE),
                "noise_correlation_s": d.number("noise_correlation_s", 10.0, minimum=0.0, strict=True),
            }
        operators = tuple(_parse_operator(o, defaults) for o in f.items("operators"))

    names = [o.name for o in operators]
    kinds = {o.name: o.kind for o in operators}
    seen = {SOURCE}
    for idx, op in enumerate(operators):
        if op.name in names[:idx]:
            first = names.index(op.name)
            raise ProfileError(f"{origin}: operators[{idx}].name: duplicate operator {op.name!r} "
                               f"(also operators[{first}])")
        for j, i in enumerate(op.inputs):
            if i.source not in seen:
                what = "an earlier operator or 'source'" if i.source in names else "'source' or an operator name"
                raise ProfileError(
                    f"{origin}: operators[{idx}].inputs[{j}].from: expected {what}, got {i.source!r}"
                )
            if kinds.get(i.source) == "sink":
                raise ProfileError(
                    f"{origin}: operators[{idx}].inputs[{j}].from: expected an operator that is not a sink "
                    f"(a sink cannot feed another operator), got {i.source!r}"
                )
        seen.add(op.name)
    consumed = {i.source for op in operators for i in op.inputs}
    sinks = [op.name for op in operators if op.name not in consumed]
    if not sinks:  # unreachable while inputs must come from earlier operators (kept as a guard)
        raise ProfileError(f"{origin}: operators: the graph has no sink (an operator nothing reads)")

    mem = f.sub("memory")
    state_fraction = 0.4
    if mem is not None:
        mem.unknown({"state_fraction"})
        state_fraction = mem.number("state_fraction", 0.4, minimum=0.0, strict=True)
        if state_fraction > 1:
            raise mem.fail("state_fraction", "a fraction in (0, 1]", state_fraction)
    src = f.sub("source")
    source_max = None
    if src is not None:
        src.unknown({"max_rate"})
        if src.has("max_rate"):
            source_max = src.number("max_rate", minimum=0.0, strict=True)
    maxp = None
    if f.has("max_parallelism") and f.data["max_parallelism"] != "flink":
        maxp = f.data["max_parallelism"]
        if isinstance(maxp, bool) or not isinstance(maxp, int) or not 1 <= maxp <= FLINK_MAX_MAX_PARALLELISM:
            raise f.fail("max_parallelism", f"an integer in [1, {FLINK_MAX_MAX_PARALLELISM}] or 'flink'", maxp)
    ref = Reference()
    if (r := f.sub("reference")) is not None:
        r.unknown({"single_task_mst", "shape", "poor_memory_mb", "notes"})
        poor = r.data.get("poor_memory_mb") or []
        if not isinstance(poor, list) or not all(
                isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in poor):
            raise r.fail("poor_memory_mb", "a list of MB per slot", poor)
        ref = Reference(
            single_task_mst=r.number("single_task_mst", 0.0) or None,
            shape=r.text("shape", "", FAMILIES) if r.has("shape") else None,
            poor_memory_mb=tuple(poor),
            notes=r.text("notes", "-"),
        )
    return SimProfile(
        name=name,
        description=f.text("description", name),
        operators=operators,
        state_fraction=state_fraction,
        max_parallelism=maxp,
        source_max_rate=source_max,
        data_seed=f.integer("data_seed", 7),
        analytic=analytic,
        reference=ref,
        origin=origin,
    )


def shipped_profiles() -> list[str]:
    """Names of the profiles shipped with StreamBed (q1, q5, ..., paper-q5-log, ...)."""
    folder = resources.files(__package__).joinpath("profiles")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


_LOADING: ContextVar[tuple[str, ...]] = ContextVar("_LOADING", default=())
"""Profiles being loaded (outermost first), to report a graph borrowed in a cycle."""


def _is_path(text_ref: str) -> bool:
    """Whether a profile reference is a path: it looks like one (a YAML suffix, a directory part) or
    names no shipped profile. A shipped name wins over a file of that name in the working directory
    (write ./q5 for the file)."""
    if text_ref.endswith((".yaml", ".yml")) or "/" in text_ref or os.sep in text_ref:
        return True
    return text_ref not in shipped_profiles() and os.path.lexists(text_ref)


def _ref_key(text_ref: str) -> str:
    return f"file:{Path(text_ref).resolve()}" if _is_path(text_ref) else f"shipped:{text_ref}"


def load_profile(ref: str | Path, option: str = "profile") -> SimProfile:
    """Load a profile by shipped name (``q5``) or by path of a YAML file.

    ``option`` names where the reference came from (``--query``, ``--profile``) in the errors about the
    reference itself (unknown name, missing file); errors inside a file name the file and the field.
    """
    text_ref = str(ref)
    path = Path(text_ref)
    if _is_path(text_ref):
        if path.is_dir():
            raise ProfileError(f"{option}: {checks.shown(text_ref)} is a directory, not a profile YAML file")
        if not path.exists():
            raise ProfileError(f"{option}: file not found: {checks.shown(text_ref)}")
        origin = checks.shown(path.name)
        try:
            data = read_input(path)  # a FIFO or a huge file is refused, not read
        except UserError as e:
            raise ProfileError(f"{option}: {e} (expected a profile YAML file)") from None
        try:
            raw = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ProfileError(f"{origin}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    else:
        names = shipped_profiles()
        if text_ref not in names:
            raise ProfileError(
                f"{option}: unknown profile {text_ref!r:.80} (expected one of {', '.join(names)}, or a YAML file path)"
            )
        origin = f"{text_ref}.yaml"
        raw = resources.files(__package__).joinpath("profiles", origin).read_text(encoding="utf-8")
    try:
        data = load_yaml(raw, origin)
    except UserError as e:
        raise ProfileError(str(e)) from None
    token = _LOADING.set(_LOADING.get() + (_ref_key(text_ref),))
    try:
        return parse_profile(data, origin)
    finally:
        _LOADING.reset(token)

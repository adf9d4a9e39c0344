"""Recorded measurements: the files StreamBed plans from when no testbed runs.

Two kinds of record feed the planner's algorithms without a testbed:

* **single-task metrics**, BIDS2's input (paper section V, Eq. 1-4): per operator, the true
  processing rate o_i of one task and its input rate r_i relative to the source;
* **measurements** (memory per slot M, task slots P, MST), the Resource Explorer's data set D
  (section VI, Eq. 5-9).

Accepted files (docs/records.md documents every column). The content decides the format, not the
file name.

* Single-task metrics: one cache entry (``SingleTaskMetrics.to_dict()``); ``single-task-metrics.json``
  (memory per slot -> entry) of a plan campaign or of ``streambed export``; a plan or optimize
  campaign's ledger (``ledger.sqlite`` or its directory); the paper's ``bids2_vectors.json``; the
  paper's ``operator_rates_from_details.csv`` (and ``export``'s ``operator-rates.csv``, same columns).
* Measurements: ``exploration.json`` of a plan campaign; such a campaign's ledger; the
  paper's ``runs/search_*.csv`` (and ``export``'s ``measurements.csv``, same columns).

Memory is always returned per task **slot** in MB, the unit of the rest of StreamBed. The paper's
files give **TaskManager** memory in MB (``memory_mb``), 16 slots per TaskManager (data README,
"Column meanings"): readers divide, and writers multiply, by that number.

Every reader validates what it reads and raises :class:`RecordError` (a ``UserError``) naming the
file, the place in it (line, entry, operator), the field, the value and what is expected. The
functions are pure apart from reading and writing the files they are given.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from . import checks, ledger
from .errors import UserError
from .files import load_json, read_input, read_input_text, replacing, write_text
from .ledger import CampaignRecord
from .model import MAX_PLAN_SLOTS, Observation, OperatorRates, Plan, SingleTaskMetrics, check_slots

PAPER_SLOTS_PER_TASKMANAGER = 16
"""Task slots per TaskManager on the paper's testbed: its ``memory_mb`` columns are per TaskManager."""

SOURCE_OPERATOR = "Source"
"""How the paper's operator_rates_from_details.csv names the source; sources are outside BIDS2."""

MEASUREMENT_COLUMNS = ("query", "phase", "source_file", "row_index", "memory_mb", "memory_per_slot_mb",
                       "task_slots_per_tm", "used_task_slots", "observed_source_rate", "objective",
                       "operator_parallelism", "single_task", "run_kind", "n_operators", "source_limited",
                       "explorer_phase")
"""Columns ``export`` writes to measurements.csv: the paper's runs/*.csv names and meanings, the
last two are StreamBed's own (readers ignore columns they do not use)."""

OPERATOR_RATE_COLUMNS = ("query", "phase", "source_file", "row_index", "memory_mb", "task_parallelism_empty",
                         "operator", "parallelism", "true_processing_rate_per_task", "input_ratio_vs_source",
                         "source_rate")
"""Columns ``export`` writes to operator-rates.csv: those of the paper's operator_rates_from_details.csv
that BIDS2 needs, plus the source rate of the run (StreamBed's own)."""

_SQLITE_MAGIC = b"SQLite format 3\x00"


class RecordError(UserError):
    """A record file is missing, unreadable, or says something BIDS2 or the explorer cannot use."""


# -- what the readers return ----------------------------------------------------------------------------

@dataclass(frozen=True)
class MetricsRecord:
    """One set of single-task metrics found in a file, and what the file says about its use."""

    metrics: SingleTaskMetrics
    origin: str
    """Where in the file: 'entry 3', 'line 12', 'experiments/...csv row 0', '512 MB'."""
    slots: int | None = None
    """The slot budget the file solved these metrics for (bids2_vectors.json), if any."""
    recorded_objective: float | None = None
    """The BIDS2 objective the file recorded for that budget (the paper's, in bids2_vectors.json)."""
    recorded_parallelism: dict[str, int] | None = None


@dataclass(frozen=True)
class MetricsFile:
    path: Path
    format: str
    records: tuple[MetricsRecord, ...]


@dataclass(frozen=True)
class MeasurementFile:
    """The Resource Explorer's data set D read from a file, in file order (the order matters to the
    paper's prefix procedure, surrogates.paper_prefix_fit)."""

    path: Path
    format: str
    observations: tuple[Observation, ...]
    query: str | None
    operators: int | None
    """The query's number of operators when the file says it: the smallest budget that runs it."""
    slots_per_taskmanager: int | None
    """Slots per TaskManager when the file says it (the paper's task_slots_per_tm)."""


# -- loading any record file -----------------------------------------------------------------------------

def read_campaign(path: Path | str) -> CampaignRecord:
    """A campaign's ledger, read only (ledger.read_campaign); RecordError when it cannot be read."""
    try:
        return ledger.read_campaign(path)
    except UserError as exc:
        raise RecordError(str(exc)) from None


def _load(path: Path | str) -> tuple[str, Any]:
    """('ledger', Campaign) | ('json', object) | ('csv', (header, [(line, row dict)])).

    The content decides, not the file name: a ledger by SQLite's magic bytes, JSON by its first
    character, CSV by a header row of at least two comma-separated names.
    """
    p = Path(path)
    if p.is_dir():
        return "ledger", read_campaign(p)
    try:
        raw = read_input(p)
    except UserError as exc:
        raise RecordError(str(exc)) from None
    if raw.startswith(_SQLITE_MAGIC):
        return "ledger", read_campaign(p)
    if not raw.strip():
        raise RecordError(f"{path}: the file is empty")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise RecordError(f"{path}: not a text file (expected JSON, CSV or a StreamBed ledger)") from None
    if text.lstrip()[:1] in ("{", "[") or p.suffix.lower() == ".json":
        try:
            return "json", load_json(text, str(path))
        except UserError as exc:
            raise RecordError(str(exc)) from None
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except (StopIteration, csv.Error):
        header = []
    header = [h.strip() for h in header]
    if len(header) < 2:
        raise RecordError(f"{path}: neither JSON nor CSV with a header row (expected one of the formats in "
                          f"docs/records.md)")
    rows = []
    try:
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) > len(header) and any(c.strip() for c in row[len(header):]):
                raise RecordError(f"{path}: line {reader.line_num}: {len(row)} fields, but the header names "
                                  f"{len(header)} columns")
            # csv's line_num counts physical lines: quoted fields may span several. A row shorter than
            # the header lacks its last columns: the readers name the ones they need (_require_cells).
            rows.append((reader.line_num, dict(zip(header, (c.strip() for c in row)))))
    except csv.Error as exc:
        raise RecordError(f"{path}: malformed CSV at line {reader.line_num} ({exc})") from None
    return "csv", (header, rows)


def _fields(where: str, obj: Any, fields: Sequence[str]) -> Mapping:
    """``obj`` as a mapping that holds every one of ``fields``; RecordError naming what is missing."""
    if not isinstance(obj, Mapping):
        raise RecordError(f"{where}: expected {{{', '.join(fields)}}}, got {obj!r:.80}")
    missing = [k for k in fields if k not in obj]
    if missing:
        raise RecordError(f"{where}: missing field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return obj


def _require_columns(path, header: Sequence[str], columns: Iterable[str], what: str) -> None:
    missing = [c for c in columns if c not in header]
    if missing:
        raise RecordError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                          f"(expected {what}; see docs/records.md)")


def _require_cells(path, rows, columns: Sequence[str], *, any_of: Sequence[str] = ()) -> None:
    """Every row holds a value for each of ``columns`` (and for one of ``any_of``): a row shorter than the
    header does not, and is refused naming the line and the first missing column."""
    for line, r in rows:
        missing = [c for c in columns if c not in r]
        if any_of and not any(c in r for c in any_of):
            missing.append(" or ".join(any_of))
        if missing:
            raise RecordError(f"{path}: line {line}: missing column{'s' if len(missing) > 1 else ''} "
                              f"{', '.join(missing)} (the row has {len(r)} fields, fewer than the header)")


def _number(value: Any, where: str, field: str, *, minimum: float = 0.0, strict: bool = False,
            unit: str = "") -> float:
    """A finite number >= minimum (> minimum if ``strict``), text read too (CSV); RecordError naming the place."""
    try:
        return checks.number(value, minimum=minimum, strict=strict, text=True, unit=unit)
    except checks.Invalid as e:
        raise RecordError(f"{where}: {field}: {e}") from None


def _integer(value: Any, where: str, field: str, *, minimum: int = 1) -> int:
    try:
        return checks.integer(value, minimum=minimum, text=True)
    except checks.Invalid as e:
        raise RecordError(f"{where}: {field}: {e}") from None


def _slot_memory(taskmanager_mb: float, slots_per_tm: int) -> int:
    return int(round(taskmanager_mb / slots_per_tm))


# -- single-task metrics (BIDS2's input) -----------------------------------------------------------------

def _operators(where: str, ops: Any) -> tuple[tuple[str, OperatorRates], ...]:
    """Validated (name, OperatorRates) pairs from a list of {name, true_rate_per_task, input_ratio}."""
    if not isinstance(ops, list) or not ops:
        raise RecordError(f"{where}: operators must be a non-empty list of "
                          f"{{name, true_rate_per_task, input_ratio}}, got {ops!r:.80}")
    out, seen = [], set()
    for i, o in enumerate(ops):
        at = f"{where}, operator {i + 1}"
        _fields(at, o, ("name", "true_rate_per_task", "input_ratio"))
        try:
            name = checks.name(o["name"])
        except checks.Invalid as e:
            raise RecordError(f"{at}: name: {e}") from None
        if name in seen:
            raise RecordError(f"{at}: operator {name} is listed twice")
        seen.add(name)
        rates = _rates(f"{where}, operator {name}", o["true_rate_per_task"], o["input_ratio"],
                       "true_rate_per_task", "input_ratio")
        if "keyed" in o:
            try:
                rates = replace(rates, keyed=checks.boolean(o["keyed"]))
            except checks.Invalid as e:
                raise RecordError(f"{where}, operator {name}: keyed: {e}") from None
        out.append((name, rates))
    return tuple(out)


def _rates(where: str, true_rate: Any, ratio: Any, rate_field: str, ratio_field: str) -> OperatorRates:
    # o_i > 0: BIDS2's constraint lambda r_i <= pi_i o_i with o_i = 0 would pin the source rate to 0.
    # r_i >= 0: an operator that receives nothing (r_i = 0) constrains nothing; a negative share is an error.
    return OperatorRates(true_rate=_number(true_rate, where, rate_field, strict=True, unit="records/s"),
                         input_ratio=_number(ratio, where, ratio_field))


def _cache_entry(where: str, d: Mapping, *, memory_key: str | None = None) -> SingleTaskMetrics:
    """One ``SingleTaskMetrics.to_dict()`` (optimizer.py), validated."""
    if not isinstance(d, Mapping):
        raise RecordError(f"{where}: expected single-task metrics {{query, memory_mb, operators}}, got {d!r:.80}")
    if "operators" not in d:
        raise RecordError(f"{where}: missing field operators")
    memory = d.get("memory_mb", memory_key)
    if memory is None:
        raise RecordError(f"{where}: missing field memory_mb (memory per slot, MB)")
    return SingleTaskMetrics(query=str(d.get("query", "")), memory_mb=_integer(memory, where, "memory_mb"),
                             operators=_operators(where, d["operators"]),
                             source_rate=_number(d.get("source_rate", 0.0), where, "source_rate"))


def _is_entry(d: Any) -> bool:
    return isinstance(d, Mapping) and "operators" in d


def _metrics_from_json(path: Path, data: Any) -> MetricsFile:
    if isinstance(data, list) and not data:
        raise RecordError(f"{path}: holds no single-task metrics (an empty list; expected the paper's "
                          f"bids2_vectors.json entries, or an entry {{query, memory_mb, operators}})")
    if isinstance(data, list):
        return MetricsFile(path, "bids2_vectors.json", tuple(_bids2_vector(path, i, v) for i, v in enumerate(data)))
    if _is_entry(data):
        return MetricsFile(path, "single-task metrics", (MetricsRecord(_cache_entry(str(path), data), "entry"),))
    if isinstance(data, Mapping) and "single_task_metrics" in data:  # a plan or optimize campaign's result
        return _metrics_from_result(path, data, "campaign result")
    if isinstance(data, Mapping) and data and all(_is_entry(v) for v in data.values()):
        return MetricsFile(path, "single-task-metrics.json", tuple(
            MetricsRecord(_cache_entry(f"{path}: entry {k}", v, memory_key=k), f"{k} MB") for k, v in data.items()))
    raise RecordError(f"{path}: JSON holds no single-task metrics (expected an entry {{query, memory_mb, "
                      f"operators}}, single-task-metrics.json, or the paper's bids2_vectors.json)")


def _metrics_from_result(path: Path, result: Mapping, fmt: str) -> MetricsFile:
    stm = result.get("single_task_metrics")
    if _is_entry(stm):  # an optimize campaign: the one profile it optimized
        return MetricsFile(path, fmt, (MetricsRecord(_cache_entry(f"{path}: single_task_metrics", stm), "campaign"),))
    if isinstance(stm, Mapping) and stm:  # a plan campaign: memory -> entry
        return MetricsFile(path, fmt, tuple(
            MetricsRecord(_cache_entry(f"{path}: single_task_metrics {k}", v, memory_key=k), f"{k} MB")
            for k, v in stm.items()))
    raise RecordError(f"{path}: the campaign's result holds no single-task metrics")


def _bids2_vector(path: Path, i: int, v: Any) -> MetricsRecord:
    """One solve of the paper's bids2_vectors.json (data README, last section); memory_mb there is
    TaskManager MB."""
    where = f"{path}: entry {i + 1}"
    _fields(where, v, ("query", "memory_mb", "slots", "operators"))
    ops = _operators(where, v["operators"])
    slots = _integer(v["slots"], where, "slots")
    check_slots(slots, len(ops), query=str(v["query"]), field=f"{where}: slots", error=RecordError)
    metrics = SingleTaskMetrics(str(v["query"]),
                                _slot_memory(_number(v["memory_mb"], where, "memory_mb", strict=True),
                                             PAPER_SLOTS_PER_TASKMANAGER), ops)
    objective = v.get("paper_objective")
    origin = f"{v.get('source_file', '')} row {v.get('row_index', '?')}".strip()
    return MetricsRecord(metrics, origin or f"entry {i + 1}", slots,
                         None if objective is None else _number(objective, where, "paper_objective"),
                         dict(v["paper_parallelism"]) if isinstance(v.get("paper_parallelism"), Mapping) else None)


def _metrics_from_operator_rates(path: Path, header: Sequence[str], rows) -> MetricsFile:
    """The paper's operator_rates_from_details.csv: one line per run and operator. The single-task
    runs (every operator but the source at parallelism 1) are BIDS2's input, as in the paper (section
    V: the profiling run at parallelism 1); the other runs are skipped."""
    needed = ("query", "row_index", "memory_mb", "operator", "parallelism", "true_processing_rate_per_task",
              "input_ratio_vs_source")
    _require_columns(path, header, needed, "the columns of operator_rates_from_details.csv")
    _require_cells(path, rows, needed)
    runs: dict[tuple[str, str], list] = {}
    for line, r in rows:
        runs.setdefault((r.get("source_file", ""), r["row_index"]), []).append((line, r))
    records = []
    for (source_file, row_index), lines in runs.items():
        ops = [(line, r) for line, r in lines if r["operator"] != SOURCE_OPERATOR]
        where = f"{path}: line {lines[0][0]}"
        if not ops:
            raise RecordError(f"{where}: run {row_index} lists no operator besides the source")
        if any(_integer(r["parallelism"], f"{path}: line {line}", "parallelism") != 1 for line, r in ops):
            continue
        seen, operators = set(), []
        for line, r in ops:
            at = f"{path}: line {line}"
            if r["operator"] in seen:
                raise RecordError(f"{at}: operator {r['operator']} appears twice in run {row_index}")
            seen.add(r["operator"])
            operators.append((r["operator"], _rates(at, r["true_processing_rate_per_task"],
                                                    r["input_ratio_vs_source"], "true_processing_rate_per_task",
                                                    "input_ratio_vs_source")))
        first = lines[0][1]
        if len({(r["query"], r["memory_mb"]) for _, r in lines}) > 1:
            raise RecordError(f"{where}: run {row_index} mixes queries or memory values")
        memory = _slot_memory(_number(first["memory_mb"], where, "memory_mb", strict=True),
                              PAPER_SLOTS_PER_TASKMANAGER)
        source_rate = _number(first.get("source_rate") or 0.0, where, "source_rate")
        records.append(MetricsRecord(SingleTaskMetrics(first["query"], memory, tuple(operators), source_rate),
                                     f"{source_file} row {row_index}".strip()))
    if not records:
        raise RecordError(f"{path}: no single-task run (every operator but {SOURCE_OPERATOR} at parallelism 1)")
    return MetricsFile(path, "operator_rates_from_details.csv", tuple(records))


def read_single_task_metrics(path: Path | str) -> MetricsFile:
    """Single-task metrics, BIDS2's input (section V), from any accepted file (see the module doc)."""
    kind, data = _load(path)
    p = Path(path)
    if kind == "ledger":
        if data.result is None:
            raise RecordError(f"{data.path}: the {data.kind} campaign has no result yet (it did not finish)")
        return _metrics_from_result(p, data.result, f"{data.kind} campaign ledger")
    if kind == "json":
        return _metrics_from_json(p, data)
    header, rows = data
    return _metrics_from_operator_rates(p, header, rows)


# -- measurements (the Resource Explorer's data set) -----------------------------------------------------

def _measurements_from_points(path: Path, points: Any, fmt: str, query: str | None) -> MeasurementFile:
    if not isinstance(points, list):
        raise RecordError(f"{path}: points must be a list of {{memory_mb, slots, mst}}")
    obs, sizes = [], set()
    for i, pt in enumerate(points):
        where = f"{path}: point {i + 1}"
        _fields(where, pt, ("memory_mb", "slots", "mst"))
        obs.append(Observation(_number(pt["memory_mb"], where, "memory_mb", strict=True, unit="MB per slot"),
                               _integer(pt["slots"], where, "slots"),
                               _number(pt["mst"], where, "mst", unit="events/s")))
        if isinstance(pt.get("configuration"), Mapping):
            sizes.add(len(pt["configuration"]))
    return MeasurementFile(path, fmt, tuple(obs), query, sizes.pop() if len(sizes) == 1 else None, None)


def _measurements_from_json(path: Path, data: Any, fmt: str, query: str | None = None) -> MeasurementFile:
    if isinstance(data, Mapping) and isinstance(data.get("exploration"), Mapping):  # a plan campaign's result
        query = query or (data.get("plan") or {}).get("query")
        data = data["exploration"]
    if isinstance(data, Mapping) and "points" in data:
        return _measurements_from_points(path, data["points"], fmt, query)
    raise RecordError(f"{path}: JSON holds no measurements (expected exploration.json or a plan campaign's "
                      f"result, with points {{memory_mb, slots, mst}})")


def _measurements_from_runs(path: Path, header: Sequence[str], rows) -> MeasurementFile:
    """The paper's runs/*.csv (data README, step 1), file order kept."""
    _require_columns(path, header, ("used_task_slots", "observed_source_rate"), "the columns of the paper's "
                     "runs/search_*.csv")
    if "memory_per_slot_mb" not in header and "memory_mb" not in header:
        raise RecordError(f"{path}: missing column memory_per_slot_mb or memory_mb (TaskManager MB); see "
                          f"docs/records.md")
    _require_cells(path, rows, ("used_task_slots", "observed_source_rate"),
                   any_of=[c for c in ("memory_per_slot_mb", "memory_mb") if c in header])
    obs, queries, sizes, per_tm = [], [], set(), set()
    for line, r in rows:
        where = f"{path}: line {line}"
        if r.get("phase") == "regression":
            # the paper's large-scale runs: a mean source rate at a requested rate, not an MST
            raise RecordError(f"{where}: phase regression rows are production runs at a requested rate, not "
                              f"MST measurements (expected search or variable rows)")
        tm = PAPER_SLOTS_PER_TASKMANAGER
        if r.get("task_slots_per_tm"):
            tm = _integer(r["task_slots_per_tm"], where, "task_slots_per_tm")
            per_tm.add(tm)
        if r.get("memory_per_slot_mb"):
            memory = _number(r["memory_per_slot_mb"], where, "memory_per_slot_mb", strict=True, unit="MB")
        else:
            memory = _number(r.get("memory_mb"), where, "memory_mb", strict=True, unit="MB") / tm
        obs.append(Observation(memory, _integer(r["used_task_slots"], where, "used_task_slots"),
                               _number(r["observed_source_rate"], where, "observed_source_rate",
                                       unit="events/s")))
        if r.get("query") and r["query"] not in queries:
            queries.append(r["query"])
        if r.get("n_operators"):
            n = _integer(r["n_operators"], where, "n_operators")
            if n > MAX_PLAN_SLOTS:
                raise RecordError(f"{where}: n_operators must be at most {MAX_PLAN_SLOTS:,} (one slot each, and the "
                                  f"planner solves budgets of at most {MAX_PLAN_SLOTS:,} slots), got {r['n_operators']!r}")
            sizes.add(n)
    if not obs:
        raise RecordError(f"{path}: no measurement rows under the header")
    if len(queries) > 1:
        raise RecordError(f"{path}: holds measurements of several queries ({', '.join(queries)}); a model "
                          f"describes one query: give one query's file")
    return MeasurementFile(path, "runs csv", tuple(obs), queries[0] if queries else None,
                           sizes.pop() if len(sizes) == 1 else None, per_tm.pop() if len(per_tm) == 1 else None)


def read_measurements(path: Path | str) -> MeasurementFile:
    """(memory per slot, slots, MST) measurements, the explorer's data set D, from any accepted file."""
    kind, data = _load(path)
    p = Path(path)
    if kind == "ledger":
        if data.kind not in ("plan", "explore"):
            raise RecordError(f"{data.path}: a {data.kind} campaign; measurements for a model come from a plan "
                              f"or explore campaign")
        if data.result is None:
            raise RecordError(f"{data.path}: the {data.kind} campaign has no result yet (it did not finish)")
        return _measurements_from_json(p, data.result, f"{data.kind} campaign ledger", data.params.get("query"))
    if kind == "json":
        return _measurements_from_json(p, data, "exploration json")
    header, rows = data
    return _measurements_from_runs(p, header, rows)


# -- the paper's data set ----------------------------------------------------------------------------------

def paper_search_file(data_dir: Path | str, query: str) -> Path:
    """The paper's Resource Explorer search runs of a query: ``runs/search_<query>-<timestamp>.csv``
    (data README, "Layout"); Table IV was fitted on them."""
    found = sorted(Path(data_dir).glob(f"runs/search_{query}-*.csv"))
    if len(found) != 1:
        raise RecordError(f"{data_dir}: expected one runs/search_{query}-*.csv, found {len(found)}")
    return found[0]


# -- writers (streambed export) ---------------------------------------------------------------------------

def campaign_points(campaign: CampaignRecord) -> list[dict]:
    """The measurements (memory per slot, slots, MST, configuration, ...) of a finished campaign."""
    r = campaign.result
    if r is None:
        raise RecordError(f"{campaign.path}: the {campaign.kind} campaign has no result yet (it did not finish); "
                          f"finish it with --resume first")
    if campaign.kind not in ("plan", "explore", "optimize"):
        raise RecordError(f"{campaign.path}: a {campaign.kind} campaign; export reads plan, explore and optimize "
                          f"campaigns (their measurements are MSTs)")
    try:
        if campaign.kind == "plan":
            points = list(r["exploration"]["points"])
        elif campaign.kind == "explore":
            points = list(r["points"])
        else:  # optimize: one measurement, the BIDS2 configuration of one budget
            points = [{"memory_mb": r["memory_mb"], "slots": r["slots"], "mst": r["mst"],
                       "configuration": r["configuration"], "predicted_rate": r["predicted_rate"], "phase": "optimize",
                       "source_limited": bool((r.get("estimate") or {}).get("source_limited", False))}]
        for i, point in enumerate(points):
            where = f"point {i + 1}"
            _fields(where, point, ("memory_mb", "slots", "mst"))
            _number(point["memory_mb"], where, "memory_mb", strict=True)
            _integer(point["slots"], where, "slots")
            _number(point["mst"], where, "mst")
    except (KeyError, TypeError, AttributeError, RecordError) as e:
        what = f"no {e.args[0]!r}" if isinstance(e, KeyError) else " ".join(str(e).split())[:200]
        raise RecordError(f"{campaign.path}: damaged ledger: the {campaign.kind} campaign's result is incomplete "
                          f"({what}); streambed ledger verify --campaign-dir {campaign.path.parent} says more") from None
    return points


def campaign_single_task(campaign: CampaignRecord) -> list[SingleTaskMetrics]:
    """The single-task metrics a campaign measured (none for an explore campaign, whose result does not
    keep them)."""
    r = campaign.result or {}
    if "single_task_metrics" not in r:
        return []
    return [rec.metrics for rec in _metrics_from_result(campaign.path, r, "ledger").records]


def write_measurements_csv(path: Path | str, points: Sequence[Mapping], query: str, source: str,
                           slots_per_taskmanager: int = PAPER_SLOTS_PER_TASKMANAGER) -> None:
    """Measurements in the paper's runs/*.csv columns (MEASUREMENT_COLUMNS), readable by
    :func:`read_measurements` and by the paper's own tools. memory_mb is TaskManager MB, as there."""
    with replacing(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=MEASUREMENT_COLUMNS)
        w.writeheader()
        for i, p in enumerate(points):
            config = p.get("configuration") or {}
            w.writerow({"query": query, "phase": "search", "source_file": source, "row_index": i,
                        "memory_mb": p["memory_mb"] * slots_per_taskmanager, "memory_per_slot_mb": p["memory_mb"],
                        "task_slots_per_tm": slots_per_taskmanager, "used_task_slots": p["slots"],
                        "observed_source_rate": repr(float(p["mst"])),
                        "objective": repr(float(p.get("predicted_rate", 0.0))),
                        "operator_parallelism": json.dumps(config),
                        "single_task": bool(config) and all(v == 1 for v in config.values()), "run_kind": "bids2",
                        "n_operators": len(config) or "", "source_limited": bool(p.get("source_limited", False)),
                        "explorer_phase": p.get("phase", "")})


def write_single_task_json(path: Path | str, metrics: Sequence[SingleTaskMetrics]) -> None:
    """single-task-metrics.json: memory per slot -> ``SingleTaskMetrics.to_dict()``, as a plan campaign
    writes it."""
    write_text(path, json.dumps({str(m.memory_mb): m.to_dict() for m in metrics}, indent=2) + "\n")


def write_operator_rates_csv(path: Path | str, metrics: Sequence[SingleTaskMetrics], source: str,
                             slots_per_taskmanager: int = PAPER_SLOTS_PER_TASKMANAGER) -> None:
    """Single-task metrics in the paper's operator_rates_from_details.csv columns (OPERATOR_RATE_COLUMNS):
    one line per operator of each single-task run, every parallelism 1."""
    with replacing(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=OPERATOR_RATE_COLUMNS)
        w.writeheader()
        for i, m in enumerate(metrics):
            for name, r in m.operators:
                w.writerow({"query": m.query, "phase": "single-task", "source_file": source, "row_index": i,
                            "memory_mb": m.memory_mb * slots_per_taskmanager, "task_parallelism_empty": True,
                            "operator": name, "parallelism": 1,
                            "true_processing_rate_per_task": repr(float(r.true_rate)),
                            "input_ratio_vs_source": repr(float(r.input_ratio)),
                            "source_rate": repr(float(m.source_rate))})


# -- plans (plan.json) --------------------------------------------------------------------------------

def read_plan(path: Path | str, option: str = "--plan") -> Plan:
    """The plan.json a plan campaign writes, validated (Plan.from_dict): every failure is one line
    naming ``option`` and the file."""
    try:
        text = read_input_text(path)
    except UserError as e:
        raise UserError(f"{option}: {e}; expected the plan.json streambed plan writes") from None
    try:
        data = load_json(text, str(path))
    except UserError as e:
        raise UserError(f"{option}: {e}") from None
    return Plan.from_dict(data, origin=f"{option}: {path}")

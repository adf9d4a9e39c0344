"""Re-planning from records, the files' side (docs/records.md): the records of ``optimize --from-metrics``,
``fit``, ``holdout`` and a plan's ledger read and refused in one line when unusable, handed to the planner's
pure solves (planner/replan.py); and a campaign's records written as files those read (``export``)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence, TypeVar

from ..errors import UserError
from ..model import Features, Plan, Query, TestbedInfo
from ..planner.exploration import Exploration, ExplorerSettings
from ..planner.policies import PAPER_POLICY
from ..planner.replan import TRAINING, fit_plan, hold_out, plan_within_recorded, solve_records
from ..records import (MeasurementFile, MetricsFile, MetricsRecord, RecordError, campaign_points,
                       campaign_single_task, read_campaign, read_measurements, read_single_task_metrics,
                       write_measurements_csv, write_operator_rates_csv, write_single_task_json)
from .settings import ExportSettings, FitSettings, GuardRails, MetricsSettings

__all__ = ["MEMORY_FEATURES", "TRAINING", "export", "fit_measurements", "hold_out", "measurements_from",
           "plan_within", "read_metrics", "solve_records"]

T = TypeVar("T")

MEMORY_FEATURES = {"taskmanager-mb": "taskmanager_mb", "slot-mb": "slot_mb"}
"""--memory-feature values -> surrogates.Features.memory."""


def _read(option: str, reader: Callable[[str], T], path: str) -> T:
    try:
        return reader(path)
    except RecordError as e:
        raise UserError(f"{option}: {e}") from None


# -- optimize --from-metrics -----------------------------------------------------------------------------

def _select(records: Sequence[MetricsRecord], path: str, query: str | None, memory: int | None) -> list[MetricsRecord]:
    if not records:
        raise UserError(f"--from-metrics: {path} holds no single-task metrics (expected at least one entry)")
    chosen = [r for r in records if (query is None or r.metrics.query == query)
              and (memory is None or r.metrics.memory_mb == memory)]
    if not chosen:
        held = sorted({f"{r.metrics.query or '(unnamed query)'} at {r.metrics.memory_mb} MB" for r in records})
        asked = " at ".join(x for x in (query, f"{memory} MB" if memory else None) if x)
        raise UserError(f"--from-metrics: {path} has no single-task metrics of {asked} "
                        f"(it has {', '.join(held[:8])}{', ...' if len(held) > 8 else ''})")
    return chosen


# -- fit --------------------------------------------------------------------------------------------------

def measurements_from(path: str) -> MeasurementFile:
    """The measurements file an option named --measurements gives, or one line saying why not."""
    return _read("--measurements", read_measurements, path)


def fit_measurements(settings: FitSettings) -> dict:
    """``fit``: the recorded measurements of ``settings.measurements``, modelled and inverse-solved."""
    mf = measurements_from(settings.measurements)
    features = Features(memory=MEMORY_FEATURES[settings.memory_feature], log=settings.log,
                        slots_per_taskmanager=mf.slots_per_taskmanager or Features().slots_per_taskmanager)
    memories = settings.memories or sorted({int(round(o.memory_mb)) for o in mf.observations})
    guards = settings.guards.applied(ExplorerSettings())
    return fit_plan(mf, settings.rate, memories, settings.family, safety=settings.safety, training=settings.training,
                    features=features, guards=guards)


def read_metrics(settings: MetricsSettings) -> tuple[MetricsFile, list[MetricsRecord]]:
    """The single-task metrics of ``settings.path`` that match its query and memory filters."""
    f = _read("--from-metrics", read_single_task_metrics, settings.path)
    return f, _select(f.records, settings.path, settings.query, settings.memory_mb)


def export(settings: ExportSettings) -> dict:
    """``export``: a finished campaign's measurements and single-task metrics as the files fit and
    optimize --from-metrics read (docs/records.md)."""
    campaign = _read("--campaign-dir", read_campaign, settings.campaign_dir)
    try:
        points = campaign_points(campaign)
        metrics = campaign_single_task(campaign)
    except RecordError as e:
        raise UserError(f"--campaign-dir: {e}") from None
    query = str(campaign.params.get("query", ""))
    # the default is next to the ledger: <campaign-dir>/export, also when --campaign-dir names the ledger file
    option, directory = (("--out", Path(settings.out)) if settings.out
                         else ("--campaign-dir", campaign.path.parent / "export"))
    if directory.exists() and not directory.is_dir():
        raise UserError(f"{option}: {directory} is a file, not a directory; give --out DIRECTORY")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"{option}: cannot create the directory {directory} ({e.strerror or e}); "
                        f"give --out DIRECTORY") from None
    files = {"measurements": str(directory / "measurements.csv")}
    try:
        write_measurements_csv(files["measurements"], points, query, str(campaign.path))
        if metrics:
            files["single_task_metrics"] = str(directory / "single-task-metrics.json")
            files["operator_rates"] = str(directory / "operator-rates.csv")
            write_single_task_json(files["single_task_metrics"], metrics)
            write_operator_rates_csv(files["operator_rates"], metrics, str(campaign.path))
    except OSError as e:
        raise UserError(f"{option}: cannot write {e.filename or directory} ({e.strerror or e})") from None
    return {"campaign_dir": str(settings.campaign_dir), "kind": campaign.kind, "query": query,
            "ledger": str(campaign.path), "measurements": len(points),
            "single_task_metrics": [m.memory_mb for m in metrics], "files": files}


# -- a plan within a cluster -------------------------------------------------------------------------------

def plan_within(plan_path: Path | str, query: Query, info: TestbedInfo, memory_mb: int, slots: int) -> Plan:
    """The plan the campaign that wrote ``plan_path`` gives for the highest rate it serves within
    ``slots`` slots of ``memory_mb`` (explorer.ResourceExplorer.plan_within), from its ledger (beside
    plan.json: the measurements, single-task metrics, seed, policy and guard rails it planned with)."""
    directory = Path(plan_path).parent
    origin = f"--plan: {plan_path}"
    try:
        campaign = read_campaign(directory)
    except RecordError as e:
        raise UserError(f"{origin}: the plan's campaign ledger is needed to re-plan for this cluster ({e})") from None
    if campaign.kind != "plan" or not campaign.result or "exploration" not in campaign.result:
        raise UserError(f"{origin}: {campaign.path} holds no finished plan campaign (kind {campaign.kind}); "
                        f"finish it with make plan (--resume) first")
    p = campaign.params
    if p.get("query") != query.name:
        raise UserError(f"{origin}: its ledger planned {p.get('query')}, not {query.name}")
    guards = GuardRails(max_extrapolation=float(p.get("max_extrapolation", GuardRails.max_extrapolation)),
                        min_marginal=float(p.get("min_marginal", GuardRails.min_marginal)))
    settings = guards.applied(ExplorerSettings(seed=int(p.get("seed", 0)), risk=p.get("risk"),
                                               safety=float(p.get("safety", ExplorerSettings.safety))))
    try:
        single = campaign_single_task(campaign)
        exploration = Exploration.from_dict(campaign.result["exploration"])
    except (RecordError, KeyError, TypeError) as e:
        raise UserError(f"{origin}: {campaign.path}: unreadable plan result ({e})") from None
    return plan_within_recorded(exploration, single, query, info, settings, str(p.get("policy", PAPER_POLICY)),
                                memory_mb, slots, origin)

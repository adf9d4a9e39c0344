"""A plan: for a target rate, the budget per memory per slot and its configuration (section VI, "Model
usage"), as plan.json holds it."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace
from typing import Mapping

from .. import checks
from ..errors import UserError
from .catchup import CatchUp

MAX_PLAN_SLOTS = 100_000
"""The largest budget the planner solves for (the inverse solve's upper bound)."""
HELD_AT_CHECKPOINT = "measured at a checkpoint"
"""How ``configured_from`` begins for an entry that is a checkpoint's budget (planner/checkpoints.held_at_checkpoint)."""


@dataclass(frozen=True)
class PlanEntry:
    """The plan for one memory per slot: budget and configuration (``slots`` None if unreachable)."""

    memory_mb: int
    slots: int | None
    predicted_mst: float | None
    """The surrogate model's capacity at that budget."""
    configuration: dict[str, int] | None
    """Per-operator parallelism from a last BIDS2 pass (sums to ``slots``)."""
    bids2_rate: float | None
    by_family: dict[str, int | None] = field(default_factory=dict)
    """The slots each candidate family, fitted on the same measurements, would plan (None: unreachable):
    how much the plan rests on the family choice."""
    configured_from: str | None = None
    """Which run's rates the last BIDS2 pass used (explorer.final_metrics), None if unreachable."""
    max_slots: int | None = None
    """The largest budget this plan trusts its model to: the extrapolation limit, or where the model's
    gain per added slot falls below the stated fraction of the testbed's (sizing.trusted_slots)."""
    max_rate: float | None = None
    """The highest rate the plan supports within ``max_slots`` (the model there, over the safety factor)."""
    unreachable: str | None = None
    """Why no budget is planned (None when one is)."""
    risk: float | None = None
    """The estimated risk that ``slots`` do not sustain the rate: the share of the curves the
    measurements allow (bootstrap fits) that predict less there."""
    efficiency: float | None = None
    """The share of its configuration's predicted rate the plan expects that configuration to sustain,
    from what the testbed's budgets sustained (sizing.efficiency)."""
    model_slots: int | None = None
    """The model's own budget (its inverse solve), before the last pass checked the configuration;
    what ``fit`` gives from the same measurements."""
    max_parallelism: int | None = None
    """The job's max parallelism the configuration needs (Flink's pipeline.max-parallelism); None:
    Flink's default, derived from each keyed operator's parallelism."""
    model: dict | None = None
    """The model this entry solved when a checkpoint measured its memory beyond the testbed (explorer.model_for);
    None: the plan's ``model``."""
    key_warning: str | None = None
    """A keyed operator whose configuration a key the testbed could not see would hold below the rate
    (policies/skew.hidden_key_capacity): what the plan cannot exclude, and what would."""
    unseen: tuple[str, ...] = ()
    """One line per thing the plan rests on that the testbed could not observe at the planned scale: an
    operator's key skew, memory behaviour or key-group steps, a configuration the model was not fitted
    on (planner/caveats.unseen_reasons)."""
    beyond_trusted: bool = False
    """The budget lies beyond the model's trusted limit (``max_slots``) and the measurements show no
    ceiling: a plan to confirm with a staged measurement (``checkpoint``), not a bare unreachable."""
    checkpoint: str | None = None
    """The staged measurement that would confirm a beyond-trusted plan (``--checkpoint-slots N``)."""
    memory_by_operator: dict[str, int] | None = None
    """Per operator, the memory per slot its tasks need for this configuration to keep the rate, where
    some need less than ``memory_mb`` (planner/memory.py); None: one memory per slot for all."""

    @property
    def total_memory_mb(self) -> int | None:
        """Memory over all slots: per operator where ``memory_by_operator`` says, else slots x memory_mb."""
        if self.slots is None:
            return None
        if self.memory_by_operator and self.configuration:
            return sum(p * self.memory_by_operator.get(op, self.memory_mb) for op, p in self.configuration.items())
        return self.slots * self.memory_mb

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["unseen"] = list(self.unseen)
        if self.memory_by_operator:  # only then: plans of one size keep the JSON they had
            d["total_memory_mb"] = self.total_memory_mb
        return d


@dataclass(frozen=True)
class Plan:
    """For a target rate: the budget per memory per slot and its configuration, with the safety factor."""

    query: str
    rate: float
    safety: float
    family: str
    model: dict
    entries: tuple[PlanEntry, ...]
    risk: float | None = None
    """The risk of under-provisioning the plan was sized for (None: sized by the flat safety factor)."""
    warnings: tuple[str, ...] = ()
    """Plan-level warnings: measurements repeated or taken while the testbed's host was short of CPU
    (planner/caveats.disturbance_warning)."""
    key_skew: dict = field(default_factory=dict)
    """Per keyed operator, the key skew the plan used and where it comes from, with both candidates
    where the data's key statistics were given (model/keyskew.SkewChoice): {"source", "inferred",
    "data", "busiest_inferred", "busiest_data"}."""
    probes: tuple[dict, ...] = ()
    """The skew probes measured before this plan (planner/probes.py): operator, tasks, MST, testbed seconds."""
    catch_up: CatchUp | None = None
    """The backlog the plan drains after a restart (plan --catch-up): ``rate`` is then its effective rate,
    catch_up.rate x (1 + B/T); None: sized for the rate alone."""

    def entry(self, memory_mb: int) -> PlanEntry:
        for e in self.entries:
            if e.memory_mb == memory_mb:
                return e
        raise KeyError(memory_mb)

    def to_dict(self) -> dict:
        d = {"query": self.query, "rate": self.rate, "safety": self.safety, "risk": self.risk,
             "family": self.family, "model": self.model, "entries": [e.to_dict() for e in self.entries]}
        if self.warnings:
            d["warnings"] = list(self.warnings)
        if self.key_skew:
            d["key_skew"] = self.key_skew
        if self.probes:
            d["probes"] = [dict(p) for p in self.probes]
        if self.catch_up is not None:
            d["catch_up"] = self.catch_up.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: Mapping, origin: str = "plan") -> "Plan":
        """A plan as ``to_dict`` (plan.json) writes it, validated: UserError naming ``origin`` and the field."""

        def fail(where: str, expected: str, got) -> UserError:
            return UserError(f"{origin}: {where}: expected {expected}, got {got!r:.80}")

        def number(where: str, v, *, optional: bool = False, positive: bool = True) -> float | None:
            if v is None and optional:
                return None
            try:
                return checks.number(v, minimum=0.0, strict=positive)
            except checks.Invalid as e:
                raise UserError(f"{origin}: {where}: {e}") from None

        def integer(where: str, v, *, optional: bool = False) -> int | None:
            if v is None and optional:
                return None
            try:
                return checks.integer(v, minimum=1)
            except checks.Invalid as e:
                raise UserError(f"{origin}: {where}: {e}") from None

        def entry_model(where: str, v) -> dict | None:
            if v is not None and not isinstance(v, Mapping):
                raise fail(where, "an object (a surrogate model) or null", v)
            return dict(v) if v is not None else None

        if not isinstance(d, Mapping):
            raise UserError(f"{origin}: not a StreamBed plan (expected a JSON object with query, rate, safety, "
                            f"family, model and entries), got {type(d).__name__}")
        missing = [k for k in ("query", "rate", "entries") if k not in d]
        if missing:
            raise UserError(f"{origin}: not a StreamBed plan (missing {', '.join(missing)})")
        if not isinstance(d["query"], str) or not d["query"]:
            raise fail("query", "a query name", d["query"])
        rate = number("rate", d["rate"])
        safety = number("safety", d.get("safety", 1.0))
        family = d.get("family", "")
        if not isinstance(family, str):
            raise fail("family", "a family name", family)
        model = d.get("model") or {}
        if not isinstance(model, Mapping):
            raise fail("model", "an object", model)
        raw = d["entries"]
        if not isinstance(raw, list) or not raw:
            raise fail("entries", "a non-empty list of {memory_mb, slots, configuration}", raw)
        entries, seen = [], {}
        for i, e in enumerate(raw):
            at = f"entries[{i}]"
            if not isinstance(e, Mapping):
                raise fail(at, "an object {memory_mb, slots, configuration}", e)
            if "memory_mb" not in e:
                raise UserError(f"{origin}: {at}.memory_mb: missing (memory per slot, MB)")
            memory = integer(f"{at}.memory_mb", e["memory_mb"])
            if memory in seen:
                raise UserError(f"{origin}: {at}.memory_mb: {memory} MB is planned twice (also entries[{seen[memory]}])")
            seen[memory] = i
            slots = integer(f"{at}.slots", e.get("slots"), optional=True)
            config = e.get("configuration")
            if slots is not None:
                expected = "operator -> positive integer parallelism"
                if not isinstance(config, Mapping) or not config:
                    raise fail(f"{at}.configuration", expected, config)
                for op, p in config.items():
                    if isinstance(p, bool) or not isinstance(p, numbers.Integral) or p < 1:
                        raise UserError(f"{origin}: {at}.configuration: expected {expected}, got {op}: {p!r:.40}")
                config = {str(op): int(p) for op, p in config.items()}
                if sum(config.values()) != slots:
                    raise UserError(f"{origin}: {at}.configuration: the parallelism sums to {sum(config.values())}, "
                                    f"expected slots ({slots})")
            elif config is not None:
                raise UserError(f"{origin}: {at}.configuration: expected null, as slots is null (no budget found), "
                                f"got {config!r:.80}")
            by_family = e.get("by_family") or {}
            if not isinstance(by_family, Mapping):
                raise fail(f"{at}.by_family", "an object family -> slots", by_family)
            configured_from = e.get("configured_from")
            if configured_from is not None and not isinstance(configured_from, str):
                raise fail(f"{at}.configured_from", "text", configured_from)
            unreachable = e.get("unreachable")
            if unreachable is not None and not isinstance(unreachable, str):
                raise fail(f"{at}.unreachable", "text", unreachable)
            key_warning = e.get("key_warning")
            if key_warning is not None and not isinstance(key_warning, str):
                raise fail(f"{at}.key_warning", "text", key_warning)
            unseen = e.get("unseen") or []
            if not isinstance(unseen, list) or not all(isinstance(u, str) for u in unseen):
                raise fail(f"{at}.unseen", "a list of text lines", unseen)
            beyond = e.get("beyond_trusted", False)
            if not isinstance(beyond, bool):
                raise fail(f"{at}.beyond_trusted", "true or false", beyond)
            staged = e.get("checkpoint")
            if staged is not None and not isinstance(staged, str):
                raise fail(f"{at}.checkpoint", "text", staged)
            entries.append(PlanEntry(memory, slots, number(f"{at}.predicted_mst", e.get("predicted_mst"), optional=True,
                                                          positive=False),
                                     config, number(f"{at}.bids2_rate", e.get("bids2_rate"), optional=True,
                                                    positive=False), dict(by_family), configured_from,
                                     integer(f"{at}.max_slots", e.get("max_slots"), optional=True),
                                     number(f"{at}.max_rate", e.get("max_rate"), optional=True, positive=False),
                                     unreachable, number(f"{at}.risk", e.get("risk"), optional=True, positive=False),
                                     number(f"{at}.efficiency", e.get("efficiency"), optional=True, positive=False),
                                     integer(f"{at}.model_slots", e.get("model_slots"), optional=True),
                                     integer(f"{at}.max_parallelism", e.get("max_parallelism"), optional=True),
                                     entry_model(f"{at}.model", e.get("model")), key_warning, tuple(unseen),
                                     beyond, staged))
            per_operator = e.get("memory_by_operator")
            if per_operator is not None:
                if (not isinstance(per_operator, Mapping) or config is None
                        or any(op not in config for op in per_operator)):
                    raise fail(f"{at}.memory_by_operator", "an object operator (of the configuration) -> MB per slot",
                               per_operator)
                entries[-1] = replace(entries[-1], memory_by_operator={
                    str(op): integer(f"{at}.memory_by_operator.{op}", mb) for op, mb in per_operator.items()})
        risk = number("risk", d.get("risk"), optional=True)
        warnings = d.get("warnings") or []
        if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
            raise fail("warnings", "a list of text lines", warnings)
        key_skew = d.get("key_skew") or {}
        if not isinstance(key_skew, Mapping):
            raise fail("key_skew", "an object operator -> key skew", key_skew)
        probes = d.get("probes") or []
        if not isinstance(probes, list) or not all(isinstance(p, Mapping) for p in probes):
            raise fail("probes", "a list of objects", probes)
        catch_up = None
        if d.get("catch_up") is not None:
            try:
                catch_up = CatchUp.from_dict(d["catch_up"])
            except checks.Invalid as e:
                raise UserError(f"{origin}: catch_up: {e}") from None
        return cls(d["query"], rate, safety, family, dict(model), tuple(entries), risk, tuple(warnings),
                   dict(key_skew), tuple(dict(p) for p in probes), catch_up)


FAMILY_SPREAD_LIMIT = 1.5
"""The candidate families disagree on a plan when their slot counts differ by more than this factor."""


def family_spread(by_family: dict[str, int | None]) -> float:
    """Largest over smallest slot count the families plan; infinite when some reach the rate and others
    do not, 1.0 when they agree (or none reaches it)."""
    reached = [v for v in by_family.values() if v is not None]
    if not reached:
        return 1.0
    if len(reached) < len(by_family):
        return math.inf
    return max(reached) / min(reached)

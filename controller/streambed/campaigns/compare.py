"""The compare campaign: every way to size a job (planner/, PLANNERS) on the same query, rate and
testbed, each sizing judged the same way.

Each method explores on a testbed of its own (built alike from the campaign's settings, so that one
method's runs leave nothing behind for the next) and plans for the rate; its testbed time is what it
cost. On the simulated testbed the configuration it plans is then judged by the sim's ground truth,
as ``streambed sim truth --plan`` judges a plan's own configuration (testbed/sim/truth.py:
GroundTruth.configuration_mst). A Flink testbed has no ground truth: the Capacity Estimator measures
the configuration's MST there, where the testbed holds it (campaigns/judge.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import StreamBedError, UserError
from ..model import Configuration
from ..model.verdict import UNDER
from ..planner import PLANNERS, PlanningRequest, Sizing, planner_named
from ..planner.estimator import DEFAULT_TIMING, NO_PHASES, Phases, Timing
from .judge import judge
from .base import Advance, Log, ignore, open_ledger, testbed_of
from .settings import CampaignSettings

SUSTAINS = "sustains"
NOT_JUDGED = "not judged"
UNREACHABLE = "unreachable"
FAILED = "failed"


@dataclass(frozen=True)
class CompareSettings:
    """What compare runs: methods (PLANNERS names; empty: all registered) on one query at one rate."""

    campaign: CampaignSettings
    rate: float
    methods: tuple[str, ...] = ()
    memories: tuple[int, ...] = ()
    """Memory per slot the methods may choose from; empty: each method's own choice of the testbed's."""
    max_measurements: int | None = None
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per method, its options (PlanningRequest.options)."""
    judge_timing: str = DEFAULT_TIMING
    """The estimator timing that measures each sizing's MST on a testbed without ground truth (Flink)."""


def check_methods(methods: tuple[str, ...]) -> tuple[str, ...]:
    """The methods asked for, each registered (one line listing the known ones when not); none: all."""
    known = tuple(PLANNERS)
    unknown = [m for m in methods if m not in PLANNERS]
    if unknown:
        raise UserError(f"--methods: unknown method {unknown[0]!r} (expected any of {', '.join(known) or 'none'})")
    chosen = tuple(dict.fromkeys(methods)) or known
    if not chosen:
        raise UserError("--methods: no planner is registered")
    return chosen


def runnable(methods: tuple[str, ...], explicit: bool,
             request: Callable[[str], PlanningRequest]) -> tuple[tuple[str, ...], dict[str, str]]:
    """The methods that can run as asked, and why each other one cannot. A method says what it lacks
    through its planner's ``missing(request)`` (learned: a training set). Asked for by name, such a
    method is refused in one line; in the default (every registered method) it is left out, with the
    line saying how to include it, so that a bare ``compare`` runs to the end."""
    kept, left_out = [], {}
    for name in methods:
        missing = getattr(planner_named(name), "missing", None)
        why = missing(request(name)) if callable(missing) else None
        if why is None:
            kept.append(name)
        elif explicit:
            raise UserError(f"--methods: {name} {why}")
        else:
            left_out[name] = why
    return tuple(kept), left_out


def verdict(mst: float | None, rate: float) -> str:
    """A sizing's verdict by its configuration's MST (None: no judge)."""
    if mst is None:
        return NOT_JUDGED
    return SUSTAINS if mst >= rate else UNDER


class CompareCampaign:
    """Explore, plan and judge each method in turn; one ledger step per method."""

    kind = "compare"

    def __init__(self, settings: CompareSettings, *, status: Log = ignore, log: Log = ignore,
                 phases: Phases = NO_PHASES):
        if not settings.rate > 0:
            raise UserError(f"--rate: expected a positive number of events/s, got {settings.rate}")
        self.settings, self.status, self.log, self.phases = settings, status, log, phases
        self.methods = check_methods(settings.methods)
        for name in settings.options:
            if name not in self.methods:
                raise UserError(f"--set: option for {name!r}, which is not compared (methods: {', '.join(self.methods)})")
        for name in self.methods:  # a method that reads its options up front refuses bad ones here, in one line
            planner = planner_named(name)
            if callable(getattr(planner, "options", None)):
                planner.options(self.request(name))
        self.methods, self.left_out = runnable(self.methods, bool(settings.methods), self.request)
        if not self.methods:
            raise UserError("--methods: no method can run as asked (" + "; ".join(
                f"{m} {why}" for m, why in self.left_out.items()) + ")")
        c = settings.campaign
        self._testbed = testbed_of(c, status)  # refuses a bad query, profile or testbed before anything runs
        self.query = self._testbed.query(c.query)
        info = self._testbed.info()
        for memory in settings.memories:
            info.check_memory(memory, "--memory")
        self.truth = self._ground_truth() if c.testbed.name == "sim" else None
        try:
            self.judge_timing = Timing.named(settings.judge_timing)
        except UserError as e:
            raise UserError(f"--judge-timing: {e}") from None
        self.directory = c.directory_for(self.kind)
        self.title = f"comparing {len(self.methods)} method(s) on {self.query.name} at {settings.rate:,.0f} events/s"
        self.total = len(self.methods)

    def _ground_truth(self):
        from ..testbed.sim.profile import load_profile
        from ..testbed.sim.truth import GroundTruth

        t = self.settings.campaign.testbed
        return GroundTruth(load_profile(t.profile or self.settings.campaign.query, option="--profile"))

    def _truth_for(self, sizing: Sizing):
        """The judge of a sizing: with its per-operator memory where it has one (each operator's tasks
        on slots of their own memory), else the campaign's ground truth."""
        if not sizing.memory_by_operator:
            return self.truth
        from ..testbed.sim.operator_memory import OperatorMemoryTruth

        return OperatorMemoryTruth(self.truth.profile, sizing.memory_by_operator, self.truth.settings)

    def params(self) -> dict:
        c, s = self.settings.campaign, self.settings
        return {"testbed": c.testbed.name, "query": self.query.name, "rate": s.rate, "methods": list(self.methods),
                "memories": list(s.memories), "seed": c.seed, "max_slots": c.testbed.max_slots,
                "max_measurements": s.max_measurements,
                "options": {m: dict(o) for m, o in s.options.items()}}

    def run(self, advance: Advance = ignore) -> dict:
        rows = []
        with open_ledger(self.settings.campaign, self.kind, self.params()) as ledger:
            for i, method in enumerate(self.methods):
                row = ledger.step(f"method:{method}", lambda: self._method(method, ledger, first=i == 0))
                rows.append(row)
                advance(row_line(row))
            data = {"query": self.query.name, "rate": self.settings.rate,
                    "testbed": self.settings.campaign.testbed.name, "rows": rows, "ledger": str(ledger.path),
                    "left_out": dict(self.left_out)}
            ledger.set_result(data)
        return data

    def request(self, method: str) -> PlanningRequest:
        s = self.settings
        return PlanningRequest(s.campaign.query, s.rate, memories=tuple(s.memories), seed=s.campaign.seed,
                               max_measurements=s.max_measurements, options=dict(s.options.get(method, {})))

    def _method(self, method: str, ledger, first: bool) -> dict:
        s = self.settings
        request = self.request(method)
        testbed = self._testbed if first else testbed_of(s.campaign, self.status)
        self.status(f"{method}: exploring")
        planner = planner_named(method)
        try:
            sizing = planner.plan(planner.explore(testbed, request, self.log), request)
        except StreamBedError as e:  # one method failing leaves the others' rows
            return {"method": method, "verdict": FAILED, "error": str(e), "slots": None, "memory_mb": None,
                    "total_memory_mb": None, "testbed_seconds": None, "steps": None, "mst": None,
                    "mst_over_rate": None, "sizing": None}
        return self._judged(sizing, testbed, ledger)

    def _judged(self, sizing: Sizing, testbed, ledger) -> dict:
        mst, bottleneck, judge_seconds = None, None, None
        if sizing.configuration is None:
            what = UNREACHABLE
        elif self.truth is None:
            self.status(f"{sizing.method}: measuring its configuration's MST on the testbed")
            judged = judge(testbed, self.query, sizing, ledger, self.judge_timing, self.log, self.phases)
            mst, what = judged.mst, judged.verdict(sizing.rate, SUSTAINS, UNDER)
            judge_seconds = judged.testbed_seconds
        else:
            self.status(f"{sizing.method}: judging its configuration by the sim's ground truth")
            mp = sizing.detail.get("max_parallelism") if isinstance(sizing.detail, Mapping) else None
            truth = self._truth_for(sizing).configuration_mst(
                Configuration.of(self.query, dict(sizing.configuration), mp), sizing.memory_mb)
            mst, bottleneck = truth.mst, truth.bottleneck
            what = verdict(mst, sizing.rate)
        return {"method": sizing.method, "verdict": what, "slots": sizing.slots, "memory_mb": sizing.memory_mb,
                "total_memory_mb": sizing.total_memory_mb, "testbed_seconds": sizing.testbed_seconds,
                "steps": len(sizing.steps), "measurements": sizing.measurements, "mst": mst,
                "mst_over_rate": None if mst is None else mst / sizing.rate, "bottleneck": bottleneck,
                "unreachable": sizing.unreachable, "notes": list(sizing.notes), "sizing": sizing.to_dict(),
                "judge_seconds": judge_seconds}


def row_line(row: dict) -> str:
    """One compared method as a progress line."""
    if row["verdict"] == FAILED:
        return f"{row['method']}: failed ({row['error']})"
    if row["slots"] is None:
        return f"{row['method']}: unreachable"
    judged = f", MST {row['mst']:,.0f} ({row['mst_over_rate']:.2f} x the rate)" if row["mst"] is not None else ""
    return f"{row['method']}: {row['slots']} slots x {row['memory_mb']} MB{judged}: {row['verdict']}"

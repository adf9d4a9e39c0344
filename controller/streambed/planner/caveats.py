"""What a plan rests on that the testbed did not show, and how that enters its risk.

* ``unseen_reasons``: per planned entry, each operator whose key skew, memory behaviour or key-group
  steps the testbed could not observe at the planned scale, and a configuration the model was not
  fitted on; one line each (PlanEntry.unseen).
* ``family_risk_floor``: the candidate families fitted on the same measurements disagree; the share
  of them whose own plan is larger than the chosen budget is a floor on the risk (the bootstrap of
  one family sees only the scatter of the measurements, not which curve they follow beyond).
* ``disturbed``/``disturbance_warning``: measurements the testbed repeated, or took, while its host
  was short of CPU (model/measurement.CpuContention): a plan-level warning and a share of the risk.
* ``hidden_key_risk``: a key too faint for the testbed could hold the plan below the rate.
* ``unattributed_loss``: the testbed's largest budget fell well short of its configuration's prediction
  with no operator busy enough to account for it; the plan spreads that loss over every operator.
* ``combined_risk``: independent sources of risk, combined.
* ``beyond_trusted_start``: between "unreachable" and a plan, the budget a plan beyond the model's
  trusted range starts from.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from ..model import keygroups
from ..model.stalls import STALL_GROWTH
from .probes import HEAVIER, PROBE_RATIO

UNSEEN_RISK = 0.10
"""The risk an entry carries at least when it rests on something the testbed could not observe at the
planned scale (a stated prior, not a measurement: no measurement bounds what was not seen)."""
HIDDEN_KEY_RISK = 0.30
"""The risk an entry carries at least when a key too faint to stand out among the testbed's tasks could hold
one of its keyed operators below the rate (PlanEntry.key_warning, sizing.hidden_keys): the runs fit the
keys with that key and without it. A stated prior, of the order measured: on two held-out generated seeds,
5 of the 18 planned entries with such a warning fell short, and none of the 48 without one
(docs/evaluation.md, section G, "How the planner got here"; the full account in the evaluation log,
`git show 955fb85:docs/evaluation.md`, "A key the testbed could not exclude")."""
UNATTRIBUTED_ETA = 0.80
"""A largest budget that sustains less than this share of what the policy predicts for its configuration
lost a fifth of its capacity to something the prediction does not count (unattributed_loss)."""
ATTRIBUTING_BUSY = 0.80
"""An operator whose busiest task is this busy at the MST accounts for the budget's bound itself (a
bottleneck near saturation); below it in every operator, the loss is no operator's throughput."""
UNATTRIBUTED_RISK = 0.30
"""The risk an entry carries at least with an unattributed loss (unattributed_loss). A stated prior, of the
order measured: on the held-out generated seeds 20261218 and 20261219, three profiles read such a loss at
48 slots (a window whose firings straggle in each); of their 12 planned entries 7 fell short, of the
other 107 planned entries one (docs/evaluation.md, section G). The proxy's efficiency (the optimizer's own
prediction for each budget), read from those runs' exploration.json, stands in for the plan's. An entry
whose stalling operators the plan bounds (stall_reason) carries it too: their growth law is a prior."""
MEMORY_BOUND = 1.15
"""An operator is memory-bound when its single-task rate differs by more than this factor between the
memories per slot measured: its per-task state at the planned scale is not what the testbed held."""
FEW_KEYS = 10.0
"""Keys per task (1/H even keys' worth over the planned tasks) below which the busiest task's share turns on
where the hash puts whole keys: the plan sizes the busiest task of a typical hashing (model/keyskew.
typical_busiest), which one draw in two may exceed (3,000 even keys over 1,437 tasks, two a task, left a
plan by the normal tail alone at 0.956 of its target: docs/evaluation.md, section E)."""
FEW_GROUPS = 8.0
"""Key groups per task below which Flink's key-group steps weigh (the busiest task owns up to
1/8 = 12.5 % more than the mean at 8 groups per task, 100 % at one)..."""
STEP_GAIN = 2.0
"""...when the testbed's runs had at least this many times more groups per task."""
CPU_PRESSURE_SHARE = 0.05
"""A kept window counts as taken under CPU pressure when the testbed's CPU groups waited for more than
this share of their quota (half the Flink testbed's 0.10, above which it discards and repeats)."""


def family_risk_floor(by_family: Mapping[str, int | None], slots: int | None) -> float:
    """The share of the candidate families whose own plan needs more than ``slots``; 0 without families or
    budget. A family with no answer (None) is not counted as larger: within its guard rails it says where
    its curve stops being trusted, not that it needs more (counted, every linear plan of section A whose
    concave families stop at 4-16 x the testbed read a 67 % risk)."""
    if slots is None or not by_family:
        return 0.0
    larger = sum(1 for v in by_family.values() if v is not None and v > slots)
    return larger / len(by_family)


def combined_risk(*risks: float | None) -> float | None:
    """The risk of independent sources together: 1 - prod(1 - r); None when every source is None."""
    known = [min(1.0, max(0.0, r)) for r in risks if r is not None]
    if not known:
        return None
    return 1.0 - math.prod(1.0 - r for r in known)


def what_tells(beyond_data: bool) -> str:
    """What settles a key skew the runs could not show: the data's key statistics, or, where the plan read
    them and the runs read more skew than they give (``beyond_data``: keystats.skews_with_data chose the
    runs'), a checkpoint at the plan's scale. The data count the whole data set, a run sees the part it
    replays: on real Flink, q11's window on 2 tasks put 64 % of its input on one where the data set's key
    groups give it 52 %, and 300,000-event slices of that data set give 50-64 % (docs/data.md, "Key
    statistics")."""
    if beyond_data:
        return ("the data's key statistics were read, but the runs read more skew than they give (they count the "
                "whole data set, a run the part it replays): a checkpoint at this scale (--checkpoint-slots) tells")
    return "the data's key statistics (--input, --key-stats) or a checkpoint at this scale (--checkpoint-slots) tell"


def unseen_reasons(configuration: Mapping[str, int], widest: Mapping[str, int], keyed: Iterable[str], *,
                   memory_bound: Mapping[str, float] | None = None,
                   heavier: Mapping[str, tuple[float, float]] | None = None,
                   groups_per_task: Mapping[str, float] | None = None,
                   keys: Mapping[str, float] | None = None,
                   max_parallelism: int | None = None, measured_max_parallelisms: Iterable[int | None] = (),
                   trusted_slots: int | None = None, slots: int | None = None,
                   counted: Iterable[str] = (), beyond_data: Iterable[str] = (),
                   ratio: float = PROBE_RATIO) -> tuple[str, ...]:
    """What the plan of ``configuration`` rests on that the testbed did not observe, one line each:

    * a keyed operator planned at more than ``ratio`` x the widest it ran (``widest``, probes included):
      its key skew is carried by the square-root law, not seen;
    * a memory-bound operator (``memory_bound``: its single-task rate's spread over the memories
      measured, above MEMORY_BOUND) planned so wide: its per-task state shrinks to a share the testbed
      never held;
    * a keyed operator planned to load its busiest task more than HEAVIER x the heaviest load a task of
      it took at that memory (``heavier``: the planned load and the heaviest seen): its state grows with
      its load (model/loadrate.py), and at that load it was never held;
    * a keyed operator planned with fewer than FEW_GROUPS key groups per task where the testbed's runs
      had STEP_GAIN x more (``groups_per_task``: the fewest per task any run had): Flink's key-group steps;
    * a keyed operator planned with fewer than FEW_KEYS keys per task (``keys``: 1/H, its even keys'
      worth): where the hash puts whole keys sets its busiest task, which no law predicts;
    * a job max parallelism (``max_parallelism``) no measured run had (``measured_max_parallelisms``):
      the model was fitted on other key groups;
    * a budget beyond the model's trusted limit (``trusted_slots``).

    A keyed operator in ``counted`` has its busiest task given by the data's key groups at this
    configuration (KeySkew.exact): neither its skew nor its few keys a task are unseen; one in
    ``beyond_data`` had the data's statistics read and the runs' skew chosen over them (what_tells)."""
    keyed = set(keyed)
    counted, beyond_data = set(counted), set(beyond_data)
    memory_bound = memory_bound or {}
    groups_per_task = groups_per_task or {}
    lines = []
    for op, p in configuration.items():
        seen = max(1, int(widest.get(op, 1)))
        wide = p > ratio * seen
        if op in keyed and wide and op not in counted:
            lines.append(f"{op}: key skew seen on at most {seen:,} tasks, planned on {p:,} (carried by the "
                         f"square-root law of model/keyskew.py, not measured)")
        spread = memory_bound.get(op, 1.0)
        if spread > MEMORY_BOUND and wide:
            lines.append(f"{op}: its rate per task differs {spread:.2f} x between the memories per slot measured; "
                         f"at {p:,} tasks each holds about {seen / p:.2g} of the state the widest run's tasks held")
        planned, heaviest = (heavier or {}).get(op, (0.0, 0.0))
        if heaviest > 0 and planned > HEAVIER * heaviest:
            lines.append(f"{op}: planned at {planned:,.0f} records/s on its busiest task; the heaviest a task of it "
                         f"took on the testbed at this memory was {heaviest:,.0f} (its state at that load not seen)")
        if op in keyed and op not in counted and (keys or {}).get(op, 0.0) > 0 and keys[op] / p < FEW_KEYS:
            lines.append(f"{op}: about {keys[op]:,.0f} even keys' worth over {p:,} tasks ({keys[op] / p:.2g} a task): "
                         f"its busiest task holds whole keys where the hash puts them, planned as a typical hashing's "
                         f"busiest, which one draw in two may exceed; {what_tells(op in beyond_data)}")
        if op in keyed:
            m = keygroups.max_parallelism(p, max_parallelism)
            per_task = m / p
            before = groups_per_task.get(op)
            if per_task < FEW_GROUPS and before is not None and before >= STEP_GAIN * per_task:
                busiest = math.ceil(m / p) / m * p
                lines.append(f"{op}: {p:,} tasks over {m:,} key groups ({per_task:.1f} per task, the busiest "
                             f"{100 * (busiest - 1):.0f} % above the mean); the testbed's runs had at least "
                             f"{before:.0f} per task")
    if max_parallelism is not None and max_parallelism not in set(measured_max_parallelisms):
        lines.append(f"the configuration sets the job's max parallelism to {max_parallelism:,}; the model was "
                     f"fitted on runs with other key groups")
    if trusted_slots is not None and slots is not None and slots > trusted_slots:
        lines.append(f"the budget ({slots:,} slots) lies beyond the model's trusted limit ({trusted_slots:,})")
    return tuple(lines)


def unattributed_loss(points: Iterable, memory_mb: int, slots: int, eta: float) -> str | None:
    """The line for a largest budget (``slots`` at ``memory_mb``, efficiency ``eta``: its MST over what the
    policy predicts for its configuration) that lost more than 1 - UNATTRIBUTED_ETA of its capacity while
    no operator of its measurement (``points``: ExplorationPoints, the lowest MST of that budget counts) was
    ATTRIBUTING_BUSY busy. Such a loss is not any operator's throughput: a window whose straggling firings
    stall the job's input shows no busy operator and no steady back-pressure. Where the rate search's
    failing windows name no stalling operator (model/stalls.py; an exploration recorded without their
    per-operator metrics), the plan lowers every operator's capacity by it alike (sizing.efficiency), so
    the operator that lost it gets too few tasks. None otherwise."""
    at = [p for p in points if p.memory_mb == memory_mb and p.slots == slots and p.mst > 0 and p.measurement]
    if eta >= UNATTRIBUTED_ETA or not at:
        return None
    point = min(at, key=lambda p: p.mst)
    busiest = max((float(o["busyness_max"]) for o in point.measurement.get("operators", ())), default=1.0)
    if busiest >= ATTRIBUTING_BUSY:
        return None
    return (f"the testbed's largest budget ({slots:,} slots) sustained {100 * eta:.0f} % of what its configuration "
            f"predicts while no operator was more than {100 * busiest:.0f} % busy: no operator accounts for the loss, "
            f"so the plan spreads it over all of them. A window whose firings stall the job then gets too few "
            f"tasks; a checkpoint at this scale (--checkpoint-slots) tells")


def stall_reason(operator: str, stall, planned: int) -> str:
    """The line for an entry whose ``operator`` the testbed's largest budget read as stalling (``stall``:
    model/stalls.Stall), given ``planned`` tasks: what its capacity at that scale rests on."""
    return (f"{operator}'s pauses, not its busy time, held the testbed's largest budget at {stall.rate:,.0f} events/s "
            f"on {stall.parallelism:,} task{'s' if stall.parallelism != 1 else ''} of it (the operators in front of it "
            f"waited on it just above that rate); the plan gives it {planned:,}, its capacity growing as the "
            f"{'square root' if STALL_GROWTH == 0.5 else f'power {STALL_GROWTH:g}'} of its tasks (the slowest of "
            f"more pauses is longer; a heavier tail of pauses needs more tasks). A checkpoint at this scale "
            f"(--checkpoint-slots) tells")


def unattributed_risk(line: str | None) -> float:
    """The risk floor of an entry with an unattributed loss (UNATTRIBUTED_RISK when it has one)."""
    return UNATTRIBUTED_RISK if line else 0.0


def unseen_risk(unseen: Sequence[str]) -> float:
    """The risk floor of an entry's unseen reasons (UNSEEN_RISK when there is any)."""
    return UNSEEN_RISK if unseen else 0.0


def hidden_key_risk(key_warning: str | None) -> float:
    """The risk floor of an entry whose keyed operators a key the testbed could not exclude may hold below the
    rate (HIDDEN_KEY_RISK when it carries a key warning)."""
    return HIDDEN_KEY_RISK if key_warning else 0.0


def disturbed(repeated: int, cpu_shortfall: float) -> bool:
    """Whether a measurement had windows repeated, or kept one taken while the testbed's CPU groups waited
    for more than CPU_PRESSURE_SHARE of their quota."""
    return repeated > 0 or cpu_shortfall > CPU_PRESSURE_SHARE


def disturbance_warning(points: Sequence[tuple[int, float]]) -> tuple[float, str | None]:
    """For the measurements a plan rests on, each (windows repeated, the largest CPU shortfall share of a
    kept window): the share disturbed (``disturbed``), and a plan-level warning when any was."""
    if not points:
        return 0.0, None
    bad = [(r, s) for r, s in points if disturbed(r, s)]
    if not bad:
        return 0.0, None
    repeated = sum(r for r, _ in bad)
    worst = max(s for _, s in bad)
    return len(bad) / len(points), (
        f"{len(bad)} of the {len(points)} measurements were disturbed: {repeated} window(s) repeated because the "
        f"testbed's host was short of CPU, the worst kept window's CPU groups waited for {100 * worst:.0f} % of "
        f"their quota. Their MSTs may be low; measure again on a quieter host before trusting the plan")


BEYOND_TRUSTED_RULES = ("agree", "smallest", "chosen", "off")
"""Where a plan beyond the trusted range starts (beyond_trusted_start); "off": none, unreachable as before."""


def beyond_trusted_start(answers: Mapping[str, int | None], chosen: str, rule: str = "agree",
                         spread: float = 1.5) -> int | None:
    """The budget a plan beyond the trusted range starts from, before the configuration check grows it
    (each family's answer is its unbounded inverse solve, the paper's without guard rails). None when the
    chosen family reaches the rate at no budget (a flat tail the measurements' fit shows: a ceiling), or
    with rule "off". "smallest": the smallest answer of any family, the last pass then growing it until the
    plan's own configuration reaches the rate at the measured efficiency (beyond the trusted range the
    chosen family's flat tail is what is not trusted: a sqrt fit asked 6-10 x the slots a generated profile
    needed); "chosen": the chosen family's own answer."""
    if rule not in BEYOND_TRUSTED_RULES:
        raise ValueError(f"beyond-trusted rule {rule!r}: expected one of {', '.join(BEYOND_TRUSTED_RULES)}")
    if rule == "off" or answers.get(chosen) is None:
        return None
    if rule == "chosen":
        return answers[chosen]
    reached = [v for v in answers.values() if v is not None]
    if rule == "agree":
        if len(reached) < len(answers) or max(reached) > spread * min(reached):
            return None
        return max(reached)
    return min(reached)

"""Resource Explorer: the capacity planning model and the plan (paper section VI, Eq. 5-9).

The explorer coordinates; each concern is a module of its own:

* Candidate search (search.py). The search space is P from the query's number of operators to the
  testbed's slots, and M among the memory sizes per slot. D is bootstrapped with the four corners;
  then a search strategy (Bayesian optimisation by default) proposes (M, P); each proposal is a
  Configuration Optimizer call, and its cost is the lowest LOOCV RMSE among the linear, log and sqrt
  models on D (Eq. 9). The search stops when the RMSE grows by more than 10 % between two
  measurements, at least 3 measurements after the corners, or at 20 measurements.
* Model selection (selection.py). Each family is fitted on the half of D with the lowest P and tested
  on the other half; the lowest test RMSE wins, and that family is refitted on all of D.
* Model usage (sizing.py). Per memory per slot, the smallest P whose prediction reaches safety x the
  requested rate (1.10 by default) within the trusted budgets, and its configuration from a last
  policy pass with the true processing rates and input ratios of the largest run of D with that
  profile (the profile's single-task run when D has none), checked against the efficiency measured.
* Checkpoints (checkpoints.py): staged measurements beyond the testbed where the plan is in doubt.
* Skew probes (probes.py): a keyed operator planned far wider than the testbed ran it, measured at the
  testbed's widest before the plan trusts its key skew.
* Caveats (caveats.py): what each entry rests on that the testbed did not show, a plan beyond the
  model's trusted range, measurements taken while the host was short of CPU, and their risk.
"""

from __future__ import annotations

import math

from dataclasses import replace
from typing import Callable, Mapping, Sequence

import numpy as np

from ..errors import UserError
from ..model import (Budget, Configuration, Features, Measurement, Observation, Plan, PlanEntry, Query,
                     SingleTaskMetrics, Surrogate, TestbedInfo, family_spread)
from ..model import keygroups, loadrate
from ..model.keystats import skews_with_data
from ..model.measurement import key_samples, key_skews
from ..model.stalls import Stall, stalling
from . import caveats
from .checkpoints import checkpoint_budget, checkpoint_family, checkpoint_range, held_at_checkpoint
from .estimator import Estimator
from .exploration import CHECKPOINT, CONFIRM, LOAD_PROBE, PROBE, Exploration, ExplorationPoint, ExplorerSettings
from .policies import skew
from .memory import heaviest_loads
from .probes import (LOAD_PROBE_GAIN, decides, load_probe_configuration, load_probe_targets, probe_configuration, probe_targets,
                     probe_width, widest_runs)
from .optimizer import Optimizer, OptimizerResult
from .search import SearchSpace, corners, search_class, should_stop
from .selection import best_loocv, select
from .sizing import (MEASURE_NEXT, Solve, confirm_step, configured_slots, efficiency, guarded_solve, hidden_keys, configuration_gain,
                     key_warning, margin_over_choices, measured_etas, outnumbered_keys, planned_max_parallelism, plans_by_family, pooled_decline, predictor,
                     rates_hold, risk_of, trusted_slots)
from .surrogates import bootstrap_fits, fit, predictions


def check_search_space(query: Query, info: TestbedInfo, memories: Sequence[int], *, memory_option: str = "memory",
                       slots_option: str | None = None) -> list[int]:
    """The explorer's search space (section VI): memories the testbed offers, and at least two slot
    counts, from the query's operator count (one slot each) to the testbed's slots. Returns the
    memories, sorted. ``slots_option`` names the option that set the testbed's size, if one did."""
    memories = sorted(set(int(m) for m in memories))
    unknown = [m for m in memories if m not in info.memory_per_slot]
    if unknown:
        raise UserError(f"{memory_option}: the {info.name} testbed offers {info.offered()} MB per slot, not "
                        f"{', '.join(map(str, unknown))}")
    if info.max_slots <= query.size:
        if slots_option:
            raise UserError(f"{slots_option}: must exceed the {query.size} operators of {query.name} (the explorer needs "
                            f"at least two slot counts, {query.size} and more), got {info.max_slots}")
        raise UserError(f"the {info.name} testbed offers {info.max_slots} slots; {query.name} has {query.size} "
                        f"operators and the explorer needs more slots than operators (at least two slot counts)")
    return memories


OUTNUMBERED = "unreachable as far as the testbed can tell"
"""How an entry made unreachable by outnumbered keys (sizing.outnumbered_keys) begins: no budget beyond the
trusted range would tell more."""

class ResourceExplorer:
    """Section VI's Resource Explorer: explores (memory per slot, slots) through the Configuration
    Optimizer, selects a model of D, and plans budgets and configurations for a rate."""

    def __init__(self, optimizer: Optimizer, info: TestbedInfo, settings: ExplorerSettings | None = None,
                 log: Callable[[str], None] | None = None):
        self.optimizer = optimizer
        self.info = info
        self.settings = settings or ExplorerSettings()
        self.log = log or (lambda message: None)

    def explore(self, memories: Sequence[int], on_point: Callable[[ExplorationPoint], None] | None = None) -> Exploration:
        s = self.settings
        query = self.optimizer.query
        memories = check_search_space(query, self.info, memories)
        lo, hi = query.size, self.info.max_slots
        ex = Exploration()
        history: list[float] = []

        def measure(memory: int, slots: int, phase: str) -> ExplorationPoint:
            i = len(ex.points)
            pt = ExplorationPoint.of(self.optimizer.optimize(Budget(slots, memory), f"co{i:02d}/{memory}MB/{slots}"),
                                     phase)
            ex.points.append(pt)
            pt.rmse = best_loocv(ex.observations(), s.features, s.families)
            history.append(pt.rmse)
            self.log(f"{phase} {len(ex.points)}: {slots} slots x {memory} MB -> MST {pt.mst:,.0f} events/s, "
                     f"best LOOCV RMSE {pt.rmse:,.0f}")
            if on_point:
                on_point(pt)
            return pt

        strategy = search_class(s.search)  # an unknown name is refused before anything is measured
        boot = corners(lo, hi, memories)
        for m, p in boot:
            measure(m, p, "corner")
        search = strategy(SearchSpace(lo, hi, tuple(memories)), seed=s.seed,
                          initial_points=len(boot) + s.min_after_corners)
        # Before the fourth corner LOOCV is undefined: the corners all carry the bootstrap's cost.
        for pt in ex.points:
            search.tell(pt.slots, pt.memory_mb, history[-1])
        reason = should_stop(history, len(boot), s)
        while reason is None:
            slots, memory = search.ask()
            pt = measure(memory, slots, "search")
            search.tell(slots, memory, pt.rmse)
            reason = should_stop(history, len(boot), s)
        ex.stop_reason = reason
        select(ex, s, self.observations(ex))
        ex.optimizer_calls = len(ex.points)
        ex.testbed_seconds = sum(p.testbed_seconds for p in ex.points)
        return ex

    def observations(self, ex: Exploration, points: Sequence[ExplorationPoint] | None = None) -> list[Observation]:
        """The measurements (``points``, D's by default) as the surrogate models read them (*deviation*
        from section VI, Eq. 6-8): each MST times its configuration gain (sizing.configuration_gain), what
        the configuration the plan would give that budget predicts over the one it ran, both on the plan's
        metrics. Two things bend the raw MSTs. Flink's default key groups: their steps (128 groups over 37
        tasks: the busiest owns 4, the mean 3.46) bend them down as the testbed's budgets grow, and a family
        fitted on that bend carries it far beyond. And the explorer's configurations: configured from the
        single-task metrics, an operator whose rate the larger runs read lower got too few tasks, and the
        budgets it starved read flat (held-out `gen-20261202-0015` at 4 GB: 30-48 slots at 9.9-10.3 M events/s,
        one aggregate task; configured as the plan configures them, 11.3-19.6 M). A plan sets its own key
        groups and configuration and checks them in its last pass (configured_slots). The search's cost
        (Eq. 9) reads the MSTs as measured, and so do the models of a query without keyed operators (its
        configurations barely move with the plan's metrics; `fit` on its recorded MSTs, which has no
        per-operator rates, then gives the same model).
        The gain reads the key skew by its law, not by the data's counted key groups (KeySkew.groups):
        those would add their hashing at 32,768 groups, a jitter from budget to budget for the families to fit
        (section E's few-keys probe: the split then chose a family that planned 1.7-2.2 x its minimum at 3 x)."""
        points = list(ex.points if points is None else points)
        if not self.optimizer.query.keyed:  # read as measured: `fit` on its recorded MSTs gives the same model
            return [p.observation() for p in points]
        policy, metrics, out = self.optimizer.policy, {}, []
        for p in points:
            if p.memory_mb not in metrics:
                m = self.final_metrics(ex, p.memory_mb)[0]
                metrics[p.memory_mb] = m.with_key_skew({n: replace(r.key_skew, groups=None) for n, r in m.operators
                                                        if r.key_skew is not None and r.key_skew.groups is not None})
            o = p.observation()
            out.append(replace(o, mst=o.mst * configuration_gain(policy, metrics[p.memory_mb], p)))
        return out

    def features(self, ex: Exploration) -> Features:
        """How memory and slots enter D's models: the settings', with the slot slope per memory
        where the selection chose it (select_features)."""
        return Surrogate.from_dict(ex.model).features if ex.model else self.settings.features

    def final_metrics(self, ex: Exploration, memory_mb: int, held: bool = True,
                      unseen_held: bool = True) -> tuple[SingleTaskMetrics, str]:
        """The rates of the plan's last BIDS2 pass and where they come from (section VI, "Model usage"):
        "the true processing rates and busyness levels collected for the largest number of cores in D
        with the selected resource profile". A profile D never measured falls back to its single-task
        metrics (measured by the estimator when missing). An operator whose rate falls with its tasks'
        load in the runs of that memory is held to the load a task of it sustains (load_limits): the
        largest run's tasks are its lightest loaded, a plan's are loaded more (``held`` False: not held,
        the rates as read), and a keyed operator to the heaviest load the testbed could show a task of it
        (shown_loads; ``unseen_held`` False: not that hold)."""
        query = self.optimizer.query
        # a checkpoint measures the configuration these metrics give; its own rates would configure anew
        runs = [p for p in ex.points if p.memory_mb == memory_mb and p.measurement and p.mst > 0 and p.phase != CHECKPOINT]
        skews, _ = self.key_skew(ex)
        if runs:
            top = max(runs, key=lambda p: (p.slots, p.mst))
            metrics = SingleTaskMetrics.from_measurement(query, memory_mb, Measurement.from_dict(top.measurement))
            origin = f"the largest run of D ({top.slots} slots)"
        else:
            metrics, origin = self.optimizer.single_task(memory_mb), "the single-task run"
        if not held:
            return metrics.with_key_skew(skews), origin
        rates = dict(metrics.operators)
        read = {op: r.true_rate for op, r in rates.items()}
        limits = {op: x for op, x in self.load_limits(ex, memory_mb, read).items() if op in rates and x < rates[op].true_rate}
        if limits:
            origin += "; " + ", ".join(f"{op} at most {x:,.0f} records/s a task" for op, x in limits.items()) + \
                " (the rate falls with the task's load: model/loadrate.py)"
        shown = {op: x for op, x in self.shown_loads(ex, memory_mb, metrics).items()
                 if unseen_held and x < limits.get(op, read[op])}
        if shown:
            origin += "; " + ", ".join(f"{op} at most {x:,.0f} records/s a task" for op, x in shown.items()) + \
                " (the heaviest load the testbed could show a task of it)"
        metrics = metrics.with_key_skew(skews).with_load_limits({**limits, **shown})
        stalls = self.stalls(ex, memory_mb)
        if stalls:
            origin += "; " + ", ".join(f"{op}'s stalls held the source to {s.rate:,.0f} events/s on {s.parallelism} "
                                       f"task{'s' if s.parallelism != 1 else ''}" for op, s in stalls.items()) + \
                " (more tasks: model/stalls.py)"
        return metrics.with_stalls(stalls), origin

    def stalls(self, ex: Exploration, memory_mb: int) -> dict[str, Stall]:
        """The operators whose pauses held the largest budget of ``memory_mb`` (model/stalls.py), each with the
        rate it held the source to and its tasks there: where no operator was caveats.ATTRIBUTING_BUSY busy at
        that budget's MST and the rate search's failing windows just above the MST name them
        (model/stalls.stalling). Its efficiency need not show the loss: a load probe of a stalling window
        reads its one task's stall-bound load as its rate, and the plan then carries that load to every
        task. Empty otherwise, and for explorations recorded without per-operator window metrics."""
        runs = [p for p in ex.points if p.memory_mb == memory_mb and p.measurement and p.mst > 0
                and p.phase != CHECKPOINT and p.configuration]
        if not runs or not self.settings.stalls:
            return {}
        top = max(p.slots for p in runs)
        point = min((p for p in runs if p.slots == top), key=lambda p: p.mst)
        busiest = max((float(o["busyness_max"]) for o in point.measurement.get("operators", ())), default=1.0)
        if busiest >= caveats.ATTRIBUTING_BUSY:
            return {}
        return {op: Stall(point.configuration[op], point.mst)
                for op in stalling(self.optimizer.query, point.trace or (), point.mst, caveats.ATTRIBUTING_BUSY)
                if op in point.configuration}

    def heaviest_seen(self, ex: Exploration, memory_mb: int, metrics: SingleTaskMetrics) -> dict[str, float]:
        """Per operator, the heaviest load a task of it took at ``memory_mb`` (memory.heaviest_loads over D,
        the probes and the single-task run), however lightly busy."""
        single = self.optimizer.measured_single_task().get(memory_mb)
        runs = [Measurement.from_dict(p.measurement) for p in (*ex.points, *ex.probes)
                if p.memory_mb == memory_mb and p.measurement and p.mst > 0]
        return heaviest_loads(single if single is not None else replace(metrics, source_rate=0.0), runs)

    def shown_loads(self, ex: Exploration, memory_mb: int, metrics: SingleTaskMetrics) -> dict[str, float]:
        """Per keyed operator whose task the testbed cannot load further at ``memory_mb`` (its load probe
        was measured there, or no configuration within the testbed loads it past caveats.HEAVIER x the
        heaviest load a task of it took: load_probe_configuration), the most records/s the plan gives a
        task of it: HEAVIER x that heaviest load, or loadrate.MIN_BUSYNESS of its rate where more. A
        task's state grows with its load (model/loadrate.py); beyond what the testbed showed, a plan rests
        on a state never held (a generated window at 1 GB, planned on one task at 1.55 x the heaviest load
        seen, sustained 0.67 of the target by the truth; held, it gets 7 tasks and the target holds)."""
        probed = {p.probed for p in ex.probes if p.phase == LOAD_PROBE and p.memory_mb == memory_mb and p.probed}
        heaviest, out = self.heaviest_seen(ex, memory_mb, metrics), {}
        for op, r in metrics.operators:
            # a task less busy than loadrate.MIN_BUSYNESS holds little state: its rate is not even read there
            seen = heaviest.get(op, 0.0)
            load = max(caveats.HEAVIER * seen, loadrate.MIN_BUSYNESS * r.true_rate)
            if r.keyed and seen > 0 and load < r.true_rate and (
                    op in probed or load_probe_configuration(metrics, op, self.info.max_slots, load) is None):
                out[op] = load
        return out

    def load_points(self, ex: Exploration, memory_mb: int) -> dict[str, list[loadrate.LoadPoint]]:
        """Per operator, the loads its tasks took in the runs of ``memory_mb`` (D's, the probes' and the
        single-task run's) and the true rate read at each (model/loadrate.py)."""
        seen: dict[str, list[loadrate.LoadPoint]] = {}
        for p in (*ex.points, *ex.probes):
            if p.memory_mb == memory_mb and p.measurement and p.mst > 0:
                for om in Measurement.from_dict(p.measurement).operators:
                    seen.setdefault(om.operator, []).extend(loadrate.points_of([om]))
                if p.phase == LOAD_PROBE and p.probed:
                    m = Measurement.from_dict(p.measurement)
                    ratio = m.operator(p.probed).input_rate / m.achieved_rate if m.achieved_rate > 0 else 0.0
                    load = loadrate.probe_limit(p.mst, p.predicted_rate, ratio)
                    if load is not None:
                        seen.setdefault(p.probed, []).append(loadrate.LoadPoint(load, load))
        single = self.optimizer.measured_single_task().get(memory_mb)
        if single is not None:
            for name, r in single.operators:
                load = single.source_rate * r.input_ratio
                if r.true_rate > 0 and load / r.true_rate >= loadrate.MIN_BUSYNESS:
                    seen.setdefault(name, []).append(loadrate.LoadPoint(load, r.true_rate))
        return seen

    def load_limits(self, ex: Exploration, memory_mb: int, read: Mapping[str, float] | None = None) -> dict[str, float]:
        """Per operator whose true rate falls with its tasks' load at ``memory_mb``, the most records/s a
        task of it sustains (loadrate.sustained_load; ``read``: the rate the plan reads otherwise)."""
        read = read or {}
        limits = {op: loadrate.sustained_load(points, read.get(op)) for op, points in self.load_points(ex, memory_mb).items()}
        return {op: x for op, x in limits.items() if x is not None}

    def key_skew(self, ex: Exploration) -> tuple[dict, dict]:
        """The key skew of each keyed operator the plan uses, and each choice to show (plan.key_skew):
        pooled over D's runs and the skew probes (model/measurement.key_skews; the widest run, a probe
        where there is one, is the one the hot-key test reads), and, where the campaign has the data's
        key statistics (ExplorerSettings.key_statistics), the data's counted key groups where no run
        contradicts them, else the more pessimistic of the two at the widest parallelism a plan may give an
        operator (keystats.skews_with_data)."""
        query = self.optimizer.query
        runs = [(Measurement.from_dict(p.measurement), p.max_parallelism) for p in (*ex.points, *ex.probes)
                if p.measurement and p.mst > 0]
        inferred = key_skews(query, runs)
        if not self.settings.key_statistics:
            return inferred, {op: {"source": "tasks", "inferred": k.to_dict()} for op, k in inferred.items()}
        samples = key_samples(query, runs)
        widest = min(keygroups.parallelism_limit(query.max_parallelism),
                     max(self.info.max_slots, int(self.settings.max_extrapolation * self.info.max_slots)))
        stats = [k for k in self.settings.key_statistics if k.operator in query.keyed]
        skews, choices = skews_with_data(inferred, stats, widest, query.max_parallelism, samples)
        shown = {op: {"source": c.source, "inferred": c.inferred.to_dict() if c.inferred else None,
                      "data": c.data.to_dict() if c.data else None, "busiest_inferred": c.busiest_inferred,
                      "busiest_data": c.busiest_data, "compared_at": widest, "counted": c.counted}
                 | ({"inferred_hottest_held_to": c.inferred_held_to} if c.inferred_held_to is not None else {})
                 for op, c in choices.items()}
        return skews, shown

    def beyond_data(self, ex: Exploration) -> set[str]:
        """The keyed operators whose data statistics the plan read but whose runs read more skew, so that the
        plan uses the runs' (key_skew): for them the data cannot settle a key the runs could not show."""
        return {op for op, c in self.key_skew(ex)[1].items() if c.get("data") and c["source"] == "tasks"}

    def memory_efficiency(self, ex: Exploration, memory_mb: int, metrics: SingleTaskMetrics
                   ) -> tuple[Callable[[int], float], int, float] | None:
        """``efficiency`` of one memory per slot, its decline pooled over every memory measured
        (``pooled_decline``), each memory's budgets predicted with that memory's own plan metrics."""
        policy = self.optimizer.policy
        spans = [m for m in sorted({p.memory_mb for p in ex.points})  # a decline needs two budgets
                 if len({p.slots for p in ex.points if p.memory_mb == m}) >= 2]
        per_memory = [measured_etas(ex.points, m, predictor(policy, self.final_metrics(ex, m)[0])) for m in spans]
        return efficiency(ex.points, memory_mb, predictor(policy, metrics), decline=pooled_decline(per_memory),
                          law=self.settings.decline_law)

    def measured_from_smallest(self, ex: Exploration, memory_mb: int) -> list[tuple[int, float]]:
        """(slots, eta) of D's runs of ``memory_mb``: each run's MST over the policy's prediction of its
        configuration from the smallest run's rates (with the plan's key skew); empty without runs."""
        runs = [p for p in ex.points if p.memory_mb == memory_mb and p.measurement and p.mst > 0
                and p.phase != CHECKPOINT]
        if not runs:
            return []
        smallest = min(runs, key=lambda p: (p.slots, -p.mst))
        skews, _ = self.key_skew(ex)
        metrics = SingleTaskMetrics.from_measurement(self.optimizer.query, memory_mb,
                                                     Measurement.from_dict(smallest.measurement)).with_key_skew(skews)
        return measured_etas(runs, memory_mb, predictor(self.optimizer.policy, metrics))

    def rates_hold(self, ex: Exploration, memory_mb: int) -> bool:
        """Whether D's runs of ``memory_mb`` read their tasks' rates holding as the budget grows
        (sizing.rates_hold on measured_from_smallest). The rules that trust the configuration's capacity
        with the data's keys need it: the capacity is the policy's from the rates read, and the data counts
        the keys, not a slowdown of every task."""
        return rates_hold(self.measured_from_smallest(ex, memory_mb), self.settings.rates_hold_floor)

    def _configure(self, ex: Exploration, memory_mb: int, rate: float, solve: Solve, alternatives: dict,
                   model: Surrogate, fits: Sequence[Surrogate]) -> PlanEntry:
        """The plan's last pass for one memory per slot (section VI, "Model usage"): the policy's
        configuration of the model's budget, checked against the efficiency the testbed measured and
        grown until that configuration reaches the rate; where Flink's default key groups cost slots,
        the same with the job's max parallelism set (planned_max_parallelism). With the data's key statistics
        the scan starts below the model's budget (``below_model_with_keys``): the configuration's capacity,
        with the data's exact key shares at the measured efficiency, is what the curve approximates."""
        s, m, policy = self.settings, memory_mb, self.optimizer.policy
        metrics, origin = self.final_metrics(ex, m)
        eff = self.memory_efficiency(ex, m, metrics)
        slots, max_parallelism = solve.slots, None
        if eff is not None:
            eta, top, eta_top = eff
            need = rate * (1.0 if s.risk is not None else s.safety)
            start = solve.slots
            if s.key_statistics and s.below_model_with_keys > 1 and self.rates_hold(ex, m):
                start = max(self.optimizer.query.size, math.ceil(solve.slots / s.below_model_with_keys))
            slots, most = configured_slots(policy, metrics, eta, need, start, solve.max_slots)
            if self.optimizer.query.keyed and (slots is None or slots > start):
                fixed = replace(metrics, max_parallelism=planned_max_parallelism(slots or solve.max_slots))
                fixed_slots, fixed_most = configured_slots(policy, fixed, eta, need, start, solve.max_slots)
                if fixed_slots is not None and (slots is None or fixed_slots < slots):
                    slots, most, metrics, max_parallelism = fixed_slots, fixed_most, fixed, fixed.max_parallelism
            if s.key_statistics and need > rate:
                # the data's keys give each busiest task's share at any width: the factor on the slots
                # where on the rate it would cost more (sizing.margin_budget), over the key groups whose
                # configuration reaches the rate on fewer slots (Flink's default ones or the job's own)
                candidates = [(metrics, max_parallelism)]
                if self.optimizer.query.keyed and max_parallelism is None:
                    fixed = replace(metrics, max_parallelism=planned_max_parallelism(slots or solve.max_slots))
                    candidates.append((fixed, fixed.max_parallelism))
                capped, exact, chosen = margin_over_choices(slots, s.safety, solve.max_slots, [
                    (configured_slots(policy, keys, eta, rate, start, slots or solve.max_slots)[0],
                     lambda lo, hi, keys=keys: configured_slots(policy, keys, eta, rate, lo, hi)[0])
                    for keys, _ in candidates])
                metrics, max_parallelism = candidates[chosen]
                if capped != slots:
                    origin += (f"; the safety factor on the slots: {capped:,}, {s.safety:g} x the {exact:,} whose "
                               f"configuration reaches the rate (on the rate: "
                               f"{f'{slots:,} slots' if slots else f'beyond {solve.max_slots:,}'})")
                slots = capped
            if slots is None:
                return PlanEntry(
                    m, None, None, None, None, alternatives, None, solve.max_slots, most * rate / need,
                    model_slots=solve.slots,
                    unreachable=f"unreachable within {solve.max_slots:,} slots: no configuration up to that many slots, at "
                    f"the share of its predicted rate that the measured budgets reached ({100 * eta_top:.0f} % at {top} "
                    f"slots, {100 * eta(solve.max_slots):.0f} % by their trend at {solve.max_slots:,}), supports more "
                    f"than {most * rate / need:,.0f} events/s. {MEASURE_NEXT}")
        sol = policy.configure(metrics, slots)
        outnumbered = outnumbered_keys(metrics, sol.parallelism, rate) if s.outnumbered_keys else {}
        if outnumbered:
            return PlanEntry(
                m, None, None, None, None, alternatives, None, solve.max_slots, solve.max_rate, model_slots=solve.slots,
                unreachable=f"{OUTNUMBERED}: " + "; ".join(
                    f"{op} would run {sol.parallelism[op]:,} tasks over about {keys:,.0f} keys' worth, so its busiest "
                    f"task holds its hottest key whole, and a key with up to {100 * w:.2g} % of its input, which its "
                    f"runs could not exclude, would hold it at {cap:,.0f} events/s"
                    for op, (keys, w, cap) in outnumbered.items())
                + f". Whether such a key exists: {caveats.what_tells(bool(self.beyond_data(ex) & set(outnumbered)))} "
                  "(docs/planner.md, key skew).")
        used = min(slots, sum(sol.parallelism.values()))  # fewer where key groups were aligned (optimizer.py)
        return PlanEntry(m, used, float(model.predict(m, slots)), sol.parallelism, sol.predicted_rate, alternatives,
                         origin, solve.max_slots, solve.max_rate, risk=risk_of(fits, m, slots, rate),
                         efficiency=eff[0](slots) if eff is not None else None, model_slots=solve.slots,
                         max_parallelism=max_parallelism,
                         key_warning=key_warning(metrics, sol.parallelism, rate, self.beyond_data(ex)))

    def plan(self, ex: Exploration, rate: float, memories: Sequence[int], family: str | None = None) -> Plan:
        """Inverse-solve the chosen model per memory per slot, then a last pass of the policy for each budget.
        A memory a checkpoint measured solves its own model (model_for), recorded in its entry. An entry the
        testbed holds is read against its measurements (_measured)."""
        s = self.settings
        query = self.optimizer.query
        obs = self.observations(ex, [p for p in ex.points if p.phase != CHECKPOINT])
        model = fit(family or ex.family, obs, self.features(ex))
        entries = []
        shared = bootstrap_fits(model.family, obs, self.features(ex), samples=s.bootstrap_samples, seed=s.seed)
        checkpoints = [p for p in ex.points if p.phase == CHECKPOINT]
        for m in sorted(set(int(x) for x in memories)):
            own, own_obs, local = (model, obs, False) if family else self.model_for(ex, m)
            fits = bootstrap_fits(own.family, own_obs, self.features(ex), samples=s.bootstrap_samples,
                                  seed=s.seed) if local else shared
            solve = guarded_solve(own, m, rate, min_slots=query.size, measured_slots=max(o.slots for o in own_obs),
                                  settings=s, fits=fits)
            alternatives = plans_by_family(own_obs, self.features(ex), s.families, m, rate, safety=s.safety,
                                           min_slots=query.size, max_slots=s.max_plan_slots, settings=s)
            recorded = own.to_dict() if local else None
            if solve.slots is None:
                entry = PlanEntry(m, None, None, None, None, alternatives, None, solve.max_slots, solve.max_rate,
                                  solve.unreachable, model=recorded)
            else:
                entry = replace(self._configure(ex, m, rate, solve, alternatives, own, fits), model=recorded)
            if entry.slots is None and not (entry.unreachable or "").startswith(OUTNUMBERED):  # no range would tell more
                entry = replace(self._beyond_trusted(ex, m, rate, entry, own, own_obs, fits), model=recorded)
            entries.append(held_at_checkpoint(self._measured(ex, self._with_caveats(ex, entry, rate), rate), checkpoints,
                                              rate, s.safety))
        skews, shown = self.key_skew(ex)
        shares = [(p.repeated_windows, p.cpu_shortfall) for p in (*ex.points, *ex.probes)]
        disturbed_share, warning = caveats.disturbance_warning(shares)
        if disturbed_share:
            entries = [replace(e, risk=caveats.combined_risk(e.risk, disturbed_share)) if e.slots else e
                       for e in entries]
        probes = tuple({"operator": next((op for op, n in p.configuration.items() if n > 1), None), "tasks":
                        max(p.configuration.values()), "memory_mb": p.memory_mb, "mst": p.mst,
                        "testbed_seconds": p.testbed_seconds} for p in ex.probes)
        return Plan(query=query.name, rate=rate, safety=1.0 if s.risk is not None else s.safety, family=model.family,
                    model=model.to_dict(), entries=tuple(entries), risk=s.risk,
                    warnings=(warning,) if warning else (), key_skew=shown, probes=probes)

    def _measured(self, ex: Exploration, entry: PlanEntry, rate: float) -> PlanEntry:
        """An entry the testbed holds, as the testbed measured it (confirm). Its own configuration measured at
        the rate or more: it stands. Measured short: the budget grows by the shortfall, with the safety
        factor (confirm_step), configured by the last pass, to be measured in turn; a budget far from D's
        points is not left to the model's next fit, which one point barely moves (a generated join planned
        on 35 slots measured 0.98 of the rate, and the refitted model gave 35 again). Not measured: it
        waits for its measurement, while confirmations are to come (ExplorerSettings.confirm_rounds of that
        memory). Once they are spent, the smallest budget of its memory measured at the rate or more (D's
        or a confirmation), in the configuration measured; where none did, the entry with a line saying so
        and a risk of 1."""
        if not self.holds(entry) or not self.settings.confirm_rounds:
            return entry
        confirms = sum(p.phase == CONFIRM and p.memory_mb == entry.memory_mb for p in ex.points)
        model, first, tried = entry, self.measured_mst(ex, entry), set()
        mst = first
        while mst is not None and mst < rate and entry.slots not in tried:
            tried.add(entry.slots)
            grown = confirm_step(entry.slots, mst, rate, self.settings.safety)
            if grown > self.info.max_slots:
                break
            entry = self._configured_entry(ex, entry, grown)
            mst = self.measured_mst(ex, entry)
        if mst is not None and mst >= rate:
            return replace(entry, configured_from=f"{entry.configured_from}; measured on the testbed at {mst:,.0f} events/s")
        if confirms < self.settings.confirm_rounds and mst is None and self.holds(entry):
            return entry
        if not confirms:
            return model
        held = [p for p in ex.points if p.memory_mb == entry.memory_mb and p.phase != CHECKPOINT and p.mst >= rate]
        said = (f"the model's {model.slots} slots measured {first:,.0f} events/s" if first is not None else
                f"the model's {model.slots} slots not measured, its {self.settings.confirm_rounds} confirmations spent")
        if not held:
            return replace(entry, unseen=(*entry.unseen, f"no budget of {entry.memory_mb} MB measured the rate on the "
                                          f"testbed ({said})"), risk=1.0)
        best = min(held, key=lambda p: (p.slots, -p.mst))
        return replace(entry, slots=best.slots, configuration=dict(best.configuration), predicted_mst=best.mst,
                       max_parallelism=best.max_parallelism,
                       configured_from=f"measured on the testbed: {best.slots} slots at {best.mst:,.0f} events/s ({said})")

    @staticmethod
    def measured_mst(ex: Exploration, entry: PlanEntry) -> float | None:
        """The MST the testbed measured for ``entry``'s own configuration at its budget (a confirmation, or
        a point of D that ran the same one), the latest where measured twice; None: never measured."""
        same = [p.mst for p in ex.points if p.phase != CHECKPOINT and p.memory_mb == entry.memory_mb
                and p.slots == entry.slots and p.configuration == entry.configuration
                and p.max_parallelism == entry.max_parallelism]
        return same[-1] if same else None

    def _configured_entry(self, ex: Exploration, entry: PlanEntry, slots: int) -> PlanEntry:
        """``entry`` moved to ``slots``, configured as the plan's last pass configures any budget."""
        metrics, origin = self.final_metrics(ex, entry.memory_mb)
        proposal, max_parallelism = self._configured(metrics, slots)
        return replace(entry, slots=min(slots, sum(proposal.parallelism.values())), configuration=dict(proposal.parallelism),
                       bids2_rate=proposal.predicted_rate, max_parallelism=max_parallelism,
                       configured_from=f"{origin}; grown from a budget measured short")

    def _beyond_trusted(self, ex: Exploration, memory_mb: int, rate: float, entry: PlanEntry, model: Surrogate,
                        obs: Sequence[Observation], fits: Sequence[Surrogate]) -> PlanEntry:
        """Between "unreachable" and a plan: the rate lies beyond the model's trusted limit (or beyond what its
        configurations reach there), but the measurements may show no ceiling. The model solved without its
        guard rails (the paper's inverse solve, up to max_plan_slots) gives the budget to start from
        (caveats.beyond_trusted_start), and the last pass grows it until its own configuration, at the
        efficiency measured, reaches the rate. Still unreachable, naming the ceiling, when the chosen family
        reaches the rate nowhere (a flat tail) or no configuration does (a hot key, key groups exhausted,
        the efficiency's decline); otherwise a plan marked ``beyond_trusted``, with every family's unbounded
        answer and the staged measurement that would confirm it. Where the families disagree and the plan has the
        data's key statistics (``beyond_trusted_keys``), the budget is the last pass's own answer between theirs:
        the policy's capacities with the data's key shares, at the measured efficiency, instead of a curve's
        tail no measurement reached."""
        s, query = self.settings, self.optimizer.query
        capped, unshown = self._capped(ex, memory_mb, rate)
        if capped:  # a hot key or exhausted key groups: no budget beyond the range either
            return replace(entry, unreachable=f"{entry.unreachable.rstrip('.')}. No budget at all reaches it: "
                           + "; ".join(capped) + ".")
        if unshown:  # not a ceiling the runs showed: a task would carry more than any run could load it with
            return replace(entry, unreachable=f"{entry.unreachable.rstrip('.')}. No budget reaches it at the loads the "
                           f"testbed showed: " + "; ".join(unshown) + ".")
        unbounded = replace(s, max_extrapolation=float(s.max_plan_slots), min_marginal=0.0)
        answers = plans_by_family(obs, self.features(ex), s.families, memory_mb, rate, safety=s.safety,
                                  min_slots=query.size, max_slots=s.max_plan_slots, settings=unbounded)
        start = caveats.beyond_trusted_start(answers, model.family, s.beyond_trusted)
        reached = [v for v in answers.values() if v is not None]
        # the last pass may grow the families' answer by their own agreement's margin, no further: a
        # configuration that needs more rests on the efficiency's trend alone (and scanning to 100,000
        # slots took the skew-aware policy most of a minute on q8)
        limit = None if start is None else min(s.max_plan_slots, math.ceil(s.max_family_spread * start))
        configured = (start is None and s.key_statistics and s.beyond_trusted_keys == "configured"
                      and answers.get(model.family) is not None and self.rates_hold(ex, memory_mb))
        if configured:  # the data's keys: the policy's capacities, not a family's tail, between the answers
            start, limit = min(reached), min(s.max_plan_slots, math.ceil(s.max_family_spread * max(reached)))
        given = ", ".join(f"{f} {v:,}" if v is not None else f"{f} none" for f, v in answers.items())
        if start is None:
            if answers.get(model.family) is None:
                why = (f"the {model.family} model, solved without its guard rails, reaches the rate at no budget up to "
                       f"{s.max_plan_slots:,} slots: the measurements level off (a ceiling)")
            else:
                why = (f"solved without their guard rails, the families disagree ({given} slots): the measurements "
                       f"cannot tell which curve holds out there; a staged measurement (--checkpoint-slots "
                       f"{self.checkpoint_at(ex, entry, obs, max(reached)):,}) would")
            return replace(entry, unreachable=f"{entry.unreachable.rstrip('.')}. Beyond the trusted range, {why}.")
        solve = Solve(start, limit, entry.max_rate or 0.0)
        planned = self._configure(ex, memory_mb, rate, solve, answers, model, fits)
        said = (f"the families disagree ({given} slots)" if configured else f"the families agree on {start:,} slots")
        if planned.slots is None:
            return replace(entry, unreachable=f"{entry.unreachable.rstrip('.')}. Solved without their guard rails, "
                           f"{said}, but no configuration from {start:,} to {limit:,} slots reaches the rate at the "
                           f"share of its predicted rate the measured budgets reached.")
        if configured:
            planned = replace(planned, configured_from=f"{planned.configured_from}; beyond the trusted range {said}: "
                              f"sized by its own configuration with the data's keys")
        return replace(planned, max_slots=entry.max_slots, max_rate=entry.max_rate, beyond_trusted=True,
                       checkpoint=f"--checkpoint-slots {planned.slots}")

    def _capped(self, ex: Exploration, memory_mb: int, rate: float) -> tuple[list[str], list[str]]:
        """The operators whose capacity at the most tasks they may run (a keyed one at Flink's 32,768 over as
        many key groups, whatever the job's own max parallelism) stays below ``rate`` (a hot key, key
        groups exhausted), one line each, and apart from them those capped only by the load the testbed
        could show a task of them (shown_loads: their rate as read reaches ``rate``). The first are a
        ceiling the measurements show (issue 35, item 5); the second rest on loads no run could show."""
        metrics, _ = self.final_metrics(ex, memory_mb)
        read = dict(self.final_metrics(ex, memory_mb, unseen_held=False)[0].operators)
        shown = self.shown_loads(ex, memory_mb, self.final_metrics(ex, memory_mb, held=False)[0])
        capped, unshown = [], []
        for name, r in metrics.operators:
            # a keyed operator at Flink's most tasks over as many key groups: a plan sets the job's max
            # parallelism where its own would cost slots (_configure), so the job's own is no ceiling
            most, groups = ((keygroups.MAX_MAX_PARALLELISM, keygroups.MAX_MAX_PARALLELISM) if r.keyed
                            else (self.settings.max_plan_slots, None))
            cap = skew.capacity(r, most, groups)
            if cap >= rate:
                continue
            hot = r.key_skew.floor if r.key_skew is not None else 0.0
            line = (f"{name} sustains at most {cap:,.0f} events/s at {most:,} tasks"
                    + (f" over {groups:,} key groups" if groups is not None else "")
                    + (f" (its hottest key carries {100 * hot:.2g} % of its input)" if hot > 0.01 else ""))
            if name in shown and skew.capacity(read[name], most, groups) >= rate:
                unshown.append(f"{line}, its tasks held to {shown[name]:,.0f} records/s, the heaviest load the "
                               "testbed could show one")
            else:
                capped.append(line)
        return capped, unshown

    def _with_caveats(self, ex: Exploration, entry: PlanEntry, rate: float) -> PlanEntry:
        """The entry with what it rests on that the testbed did not show (caveats.unseen_reasons) and its
        risk raised by the families' disagreement, by those reasons and by a key the testbed could not
        exclude (key_warning; caveats.combined_risk)."""
        if entry.slots is None or not entry.configuration:
            return entry
        query = self.optimizer.query
        seen = [p for p in (*ex.points, *ex.probes) if p.mst > 0]
        widest = widest_runs(p.configuration for p in seen)
        groups = {}
        for op in query.keyed:
            per = [keygroups.max_parallelism(p.configuration[op], p.max_parallelism) / p.configuration[op]
                   for p in seen if p.configuration.get(op)]
            if per:
                groups[op] = min(per)
        rates = dict(self.final_metrics(ex, entry.memory_mb)[0].operators)
        keys = {op: 1.0 / r.key_skew.concentration for op, r in rates.items()
                if r.keyed and r.key_skew is not None and r.key_skew.concentration > 0}
        fixed = entry.max_parallelism or query.max_parallelism
        counted = [op for op, p in entry.configuration.items() if op in rates and rates[op].key_skew is not None
                   and rates[op].key_skew.exact(keygroups.max_parallelism(p, fixed))]
        unseen = caveats.unseen_reasons(
            entry.configuration, widest, query.keyed, memory_bound=self._memory_bound(ex),
            heavier=self.planned_loads(ex, entry, rate),
            groups_per_task=groups, keys=keys, max_parallelism=entry.max_parallelism,
            measured_max_parallelisms={p.max_parallelism for p in seen},
            trusted_slots=entry.max_slots if entry.beyond_trusted else None, slots=entry.slots, counted=counted,
            beyond_data=self.beyond_data(ex))
        stalled = [(op, r.stall) for op, r in rates.items() if r.stall is not None and op in entry.configuration]
        if stalled:
            loss = "; ".join(caveats.stall_reason(op, st, entry.configuration[op]) for op, st in stalled)
        else:
            eff = self.memory_efficiency(ex, entry.memory_mb, self.final_metrics(ex, entry.memory_mb)[0])
            loss = caveats.unattributed_loss(ex.points, entry.memory_mb, eff[1], eff[2]) if eff else None
        unseen = (*unseen, loss) if loss else unseen
        risk = caveats.combined_risk(entry.risk, caveats.family_risk_floor(entry.by_family, entry.slots),
                                     caveats.unseen_risk(unseen), caveats.hidden_key_risk(entry.key_warning),
                                     caveats.unattributed_risk(loss))
        return replace(entry, unseen=unseen, risk=risk)

    def planned_loads(self, ex: Exploration, entry: PlanEntry, rate: float) -> dict[str, tuple[float, float]]:
        """Per keyed operator of the entry, (the load the entry puts on its busiest task at ``rate``, the
        heaviest load a task of it took in the runs of the entry's memory, however lightly busy:
        memory.heaviest_loads over D, the probes and the single-task run)."""
        metrics, _ = self.final_metrics(ex, entry.memory_mb)
        heaviest = self.heaviest_seen(ex, entry.memory_mb, metrics)
        rates, fixed = dict(metrics.operators), entry.max_parallelism or metrics.max_parallelism
        out = {}
        for op in self.optimizer.query.keyed:
            if op in entry.configuration and op in rates:
                share = skew.busiest_share(rates[op], entry.configuration[op], fixed)
                out[op] = (rate * rates[op].input_ratio * share, heaviest.get(op, 0.0))
        return out

    def _memory_bound(self, ex: Exploration) -> dict[str, float]:
        """Per operator, how much its rate per task differs between the memories per slot measured (largest
        over smallest of the plan metrics' true rates); empty with one memory."""
        memories = sorted({p.memory_mb for p in ex.points})
        if len(memories) < 2:
            return {}
        rates: dict[str, list[float]] = {}
        for m in memories:
            for name, r in self.final_metrics(ex, m)[0].operators:
                rates.setdefault(name, []).append(r.true_rate)
        return {n: max(v) / min(v) for n, v in rates.items() if min(v) > 0}

    def probe(self, ex: Exploration, plan: Plan, estimator: Estimator) -> list[ExplorationPoint]:
        """Skew probes (probes.py): each keyed operator that ``plan`` runs at more than PROBE_RATIO x the
        widest it ran on the testbed, or that a key too faint for the runs to show may hold below the rate
        (hidden_key_operators), is measured once more through ``estimator`` (the testbed's) alone at
        the testbed's widest, every other operator at one task, at the largest memory explored (the keys
        do not depend on it). The probes' per-task input records then join the skew model
        (key_skew). Returns the probes measured, none when every keyed operator was seen wide enough."""
        if not self.settings.probes:
            return []
        query = self.optimizer.query
        width = probe_width(self.info.max_slots, query.size, query.max_parallelism)
        widest = widest_runs(p.configuration for p in (*ex.points, *ex.probes) if p.mst > 0)
        suspects = self.hidden_key_operators(ex, plan)
        targets = probe_targets([e.configuration for e in plan.entries if e.configuration], widest, query.keyed, width,
                                suspects=suspects, decisive=self.decisive_probes(ex, plan, suspects, width))
        memory = max(p.memory_mb for p in ex.points)
        new = []
        for op in targets:
            cfg = Configuration.of(query, probe_configuration(query.operators, op, width), query.max_parallelism)
            pt = self._measure_probe(ex, estimator, cfg, memory, op, PROBE, f"probe/{memory}MB/{op}")
            self.log(f"skew probe: {op} on {width} tasks ({pt.slots} slots x {memory} MB) -> MST {pt.mst:,.0f} "
                     f"events/s")
            new.append(pt)
        return new + self._load_probes(ex, plan, estimator)

    def hidden_key_operators(self, ex: Exploration, plan: Plan) -> set[str]:
        """The keyed operators of ``plan``'s entries that a key the runs could not show may hold below the
        plan's rate at their planned parallelism (sizing.hidden_keys: the entries' key warnings)."""
        out: set[str] = set()
        for e in plan.entries:
            if e.configuration:
                metrics, _ = self.final_metrics(ex, e.memory_mb)
                if e.max_parallelism:
                    metrics = replace(metrics, max_parallelism=e.max_parallelism)
                out |= set(hidden_keys(metrics, e.configuration, plan.rate))
        return out

    def decisive_probes(self, ex: Exploration, plan: Plan, suspects: set[str], width: int) -> set[str]:
        """The ``suspects`` a probe of ``width`` tasks would settle for every entry of ``plan`` that runs them
        (probes.decides): any key that holds them below the rate stands out there."""
        out: set[str] = set()
        for op in suspects:
            verdicts = []
            for e in plan.entries:
                if e.configuration and op in e.configuration:
                    metrics, _ = self.final_metrics(ex, e.memory_mb)
                    fixed = e.max_parallelism or metrics.max_parallelism
                    verdicts.append(decides(dict(metrics.operators)[op], width, e.configuration[op], plan.rate, fixed))
            if verdicts and all(verdicts):
                out.add(op)
        return out

    def _measure_probe(self, ex: Exploration, estimator: Estimator, cfg: Configuration, memory_mb: int, op: str,
                       phase: str, key: str) -> ExplorationPoint:
        """A probe's configuration measured through ``estimator`` at ``memory_mb`` (``key`` names it in the
        ledger), its prediction by the plan's rates of that memory; kept in ``ex.probes``, naming ``op``."""
        budget = Budget(cfg.slots, memory_mb)
        metrics, _ = self.final_metrics(ex, memory_mb)
        est = estimator.estimate(self.optimizer.query.name, budget, cfg, key)
        pt = replace(ExplorationPoint.of(OptimizerResult(budget, cfg, self.optimizer.policy.predict(metrics, cfg.as_dict()),
                                                         est.mst, est.to_dict()), phase), probed=op)
        ex.probes.append(pt)
        return pt

    def _load_probes(self, ex: Exploration, plan: Plan, estimator: Estimator) -> list[ExplorationPoint]:
        """Load probes (probes.py): per memory per slot of the plan, each keyed operator whose busiest task
        the plan loads more than LOAD_PROBE_GAIN x the heaviest a task of it took at that memory, measured
        on one task at that memory, the others as wide as loading it takes (load_probe_configuration);
        an operator no configuration within the testbed loads more than that is left to the plan's
        unseen reasons."""
        query, new = self.optimizer.query, []
        for e in plan.entries:
            if not e.configuration:
                continue
            loads = self.planned_loads(ex, e, plan.rate * plan.safety)
            metrics, _ = self.final_metrics(ex, e.memory_mb)
            for op in load_probe_targets(loads, query.keyed):
                planned, heaviest = loads[op]
                parallelism = load_probe_configuration(metrics, op, self.info.max_slots, LOAD_PROBE_GAIN * heaviest)
                if parallelism is None:
                    self.log(f"load probe: {op} at {e.memory_mb} MB: no configuration within {self.info.max_slots} slots "
                             f"loads its task more than the heaviest seen ({heaviest:,.0f} records/s)")
                    continue
                cfg = Configuration.of(query, parallelism, query.max_parallelism)
                pt = self._measure_probe(ex, estimator, cfg, e.memory_mb, op, LOAD_PROBE,
                                         f"probe/{e.memory_mb}MB/load/{op}")
                self.log(f"load probe: {op} on one task ({pt.slots} slots x {e.memory_mb} MB), planned at "
                         f"{planned:,.0f} records/s a task, the heaviest seen {heaviest:,.0f} -> MST {pt.mst:,.0f} events/s")
                new.append(pt)
        return new

    def checkpoint(self, ex: Exploration, plan: Plan, estimator: Estimator, slots: int) -> list[ExplorationPoint]:
        """``--checkpoint-slots``: staged measurements on part of the production cluster (Imai et al.'s
        validation points). For each memory per slot whose plan is unreachable, whose
        candidate families disagree by more than ``max_family_spread``, or whose keyed operators a key
        too faint for the testbed could hold below the rate (PlanEntry.key_warning: the checkpoint's tasks
        read the keys at the plan's own scale), ``estimator`` (a cluster of
        ``slots``) measures the plan's own configuration (the last pass, _configured) at the budget where
        the families fitted on D diverge most (checkpoint_budget). That memory's plan then rests on its
        own points (model_for). Returns the points measured, none when every plan agrees."""
        measured = max(p.slots for p in ex.points if p.phase != CHECKPOINT)
        if slots <= measured:
            raise UserError(f"--checkpoint-slots: must exceed the largest budget measured on the testbed ({measured}), "
                            f"got {slots}")
        s, query, new = self.settings, self.optimizer.query, []
        for e in plan.entries:
            if (e.slots is not None and family_spread(e.by_family) <= s.max_family_spread and not e.key_warning
                    and not e.beyond_trusted):
                continue
            if checkpoint_range(e, slots) <= measured:
                continue
            _, obs, _ = self.model_for(ex, e.memory_mb)
            budget = Budget(self.checkpoint_at(ex, e, obs, slots), e.memory_mb)
            metrics, _ = self.final_metrics(ex, e.memory_mb)
            proposal, max_parallelism = self._configured(metrics, budget.slots)
            cfg = Configuration.of(query, proposal.parallelism, max_parallelism)
            est = estimator.estimate(query.name, budget, cfg, f"checkpoint/{budget.memory_mb}MB/{budget.slots}")
            pt = ExplorationPoint.of(OptimizerResult(budget, cfg, proposal.predicted_rate, est.mst, est.to_dict()),
                                     CHECKPOINT)
            ex.points.append(pt)
            pt.rmse = best_loocv(self.observations(ex), self.features(ex), s.families)
            self.log(f"checkpoint: {budget.slots} slots x {budget.memory_mb} MB -> MST {pt.mst:,.0f} events/s")
            new.append(pt)
        ex.optimizer_calls = len(ex.points)
        return new

    def checkpoint_at(self, ex: Exploration, entry: PlanEntry, obs: Sequence[Observation], slots: int) -> int:
        """The budget a checkpoint on a cluster of ``slots`` measures for ``entry``: where the families fitted on
        ``obs`` diverge most (checkpoint_budget), beyond the testbed and no further than checkpoint_range. A
        plan names it as the cluster to stage, since a larger cluster measures there too (q8 at 3 x, 4 GB,
        with the data's keys: log's answer is 19,759 slots, the checkpoint measures at 436)."""
        measured = max(p.slots for p in ex.points if p.phase != CHECKPOINT)  # the testbed's: not another memory's checkpoint
        hi = max(measured + 1, checkpoint_range(entry, slots))
        return checkpoint_budget(obs, self.features(ex), self.settings.families, entry.memory_mb, measured + 1, hi)

    def holds(self, entry: PlanEntry) -> bool:
        """Whether the testbed can run ``entry``'s budget: its slots and its memory per slot."""
        return (entry.slots is not None and bool(entry.configuration) and entry.slots <= self.info.max_slots
                and entry.memory_mb in self.info.memory_per_slot)

    def confirm(self, ex: Exploration, plan: Plan, estimator: Estimator) -> list[ExplorationPoint]:
        """Each entry whose budget the testbed holds, measured in its own configuration (*not in the paper*:
        its plans lay beyond its testbed). Within the testbed the model only interpolates, but between
        few points: on a 2,000-slot testbed q8 at 2 GB was planned on 113 slots between runs of 9 and
        305, and its configuration sustained 0.83 of the rate by the truth. The measurement joins D
        (phase CONFIRM), so the plan made again fits it; an entry measured short grows (_measured)."""
        query, new = self.optimizer.query, []
        for e in plan.entries:
            if not self.holds(e) or self.measured_mst(ex, e) is not None:
                continue
            budget = Budget(e.slots, e.memory_mb)
            cfg = Configuration.of(query, e.configuration, e.max_parallelism)
            # the configuration in the key: a grown budget and the model's next answer may share a slot count
            est = estimator.estimate(query.name, budget, cfg, f"confirm/{budget.memory_mb}MB/{budget.slots}/{cfg.key()}")
            pt = ExplorationPoint.of(OptimizerResult(budget, cfg, e.predicted_mst or 0.0, est.mst, est.to_dict()), CONFIRM)
            ex.points.append(pt)
            pt.rmse = best_loocv(self.observations(ex), self.features(ex), self.settings.families)
            self.log(f"confirm: {budget.slots} slots x {budget.memory_mb} MB, the plan's configuration -> MST "
                     f"{pt.mst:,.0f} events/s ({pt.mst / plan.rate:.2f} x the rate)")
            new.append(pt)
        ex.optimizer_calls = len(ex.points)
        return new

    def confirmed_plan(self, ex: Exploration, rate: float, memories: Sequence[int], estimator: Estimator,
                       on_point: Callable[[ExplorationPoint], None] = lambda p: None) -> Plan:
        """The plan, with every entry the testbed holds measured (confirm) and made again with the
        measurements in D until no entry moves to a budget not yet measured, at most
        ExplorerSettings.confirm_rounds times; then the measurements decide (_measured). A measurement
        above the model's prediction moves the plan down, one below moves it up."""
        plan = self.plan(ex, rate, memories)
        for _ in range(self.settings.confirm_rounds):
            points = self.confirm(ex, plan, estimator)
            for p in points:
                on_point(p)
            if not points:
                return plan
            plan = self.plan(ex, rate, memories)
        return plan

    def confirm_memory(self, ex: Exploration, plan: Plan, estimator: Estimator) -> list[ExplorationPoint]:
        """Each entry with memory per operator (planner/memory.py) whose budget the testbed holds, measured
        so (Budget.memory_by_operator), on a testbed that deploys it: a smaller memory is chosen from
        rates read in runs whose state may have been young, so the measurement decides (a split measured
        short is not planned: planner/streambed.with_memory_per_operator)."""
        query, new = self.optimizer.query, []
        if not self.info.operator_memory:
            return new
        for e in plan.entries:
            if not self.holds(e) or not e.memory_by_operator or any(
                    c.configuration == e.configuration and c.memory_by_operator == e.memory_by_operator
                    for c in ex.confirmations):  # one deployment, whichever memory's entry it came from
                continue
            budget = Budget(e.slots, e.memory_mb, tuple(sorted(e.memory_by_operator.items())))
            cfg = Configuration.of(query, e.configuration, e.max_parallelism)
            split = ",".join(f"{op}={mb}" for op, mb in budget.memory_by_operator)
            est = estimator.estimate(query.name, budget, cfg, f"confirm/{budget.slots}/{cfg.key()}/memory:{split}")
            pt = replace(ExplorationPoint.of(OptimizerResult(budget, cfg, e.predicted_mst or 0.0, est.mst, est.to_dict()),
                                             CONFIRM), memory_by_operator=dict(e.memory_by_operator))
            ex.confirmations.append(pt)
            self.log(f"confirm: {budget.slots} slots, memory per operator -> MST {pt.mst:,.0f} events/s "
                     f"({pt.mst / plan.rate:.2f} x the rate)")
            new.append(pt)
        return new

    def _configured(self, metrics: SingleTaskMetrics, slots: int):
        """The plan's configuration of ``slots`` (its last pass): the policy's, or, for a keyed query,
        the one with the job's max parallelism set (planned_max_parallelism) when that predicts more.
        Returns (the policy's proposal, the max parallelism or None)."""
        policy = self.optimizer.policy
        proposal = policy.configure(metrics, slots)
        if not self.optimizer.query.keyed:
            return proposal, None
        fixed = policy.configure(replace(metrics, max_parallelism=planned_max_parallelism(slots)), slots)
        if fixed.predicted_rate > proposal.predicted_rate:
            return fixed, planned_max_parallelism(slots)
        return proposal, None

    def model_for(self, ex: Exploration, memory_mb: int) -> tuple[Surrogate, list[Observation], bool]:
        """The model a plan for ``memory_mb`` solves, and the measurements it rests on: D's (section VI),
        or, once a checkpoint measured that memory beyond the testbed, that memory's own
        (checkpoint_family): the family whose fit on D came closest to the checkpoint, refitted on that
        memory's points alone, the testbed's and the checkpoint's. Why that memory's points: Eq. 6-8
        give every memory one slot slope, so one checkpoint would move every memory's plan (q8 at
        512 MB stalls near 0.6 M events/s at 500 slots where at 4 GB it grows to 28 M). Returns
        (model, measurements, whether it is that memory's own)."""
        s = self.settings
        testbed = self.observations(ex, [p for p in ex.points if p.phase != CHECKPOINT])
        staged = self.observations(ex, [p for p in ex.points if p.phase == CHECKPOINT and p.memory_mb == memory_mb])
        if staged:
            family = checkpoint_family(testbed, staged, self.features(ex), s.families)
            obs = [o for o in testbed if o.memory_mb == memory_mb] + staged
            try:
                return fit(family or ex.family, obs, self.features(ex)), obs, True
            except ValueError:  # a family that cannot take these points: D's model instead
                pass
        return fit(ex.family, testbed, self.features(ex)), testbed, False

    def rate_within(self, ex: Exploration, memory_mb: int, slots: int) -> float:
        """The highest rate this explorer's plan serves with at most ``slots`` slots of ``memory_mb``:
        section VI's "Model usage" read backwards. The model at that budget (the trusted limit at most,
        trusted_slots) over the safety factor, or its risk bound, and no more than that budget's own
        configuration reaches at the efficiency the testbed measured (the plan's last pass)."""
        s, query = self.settings, self.optimizer.query
        model, obs, _ = self.model_for(ex, memory_mb)
        limit, _ = trusted_slots(model, memory_mb, max(o.slots for o in obs), s)
        n = min(slots, limit)
        if n < query.size:
            raise UserError(f"{query.name} needs at least {query.size} slots (one per operator); {slots} given")
        if s.risk is not None:
            fits = bootstrap_fits(model.family, obs, self.features(ex), samples=s.bootstrap_samples, seed=s.seed)
            bound = float(np.quantile(predictions(fits, memory_mb, [n])[:, 0], s.risk)) if fits else 0.0
        else:
            bound = float(model.predict(memory_mb, n)) / s.safety
        metrics, _ = self.final_metrics(ex, memory_mb)
        eff = self.memory_efficiency(ex, memory_mb, metrics)
        if eff is not None:
            reach = self._configured(metrics, n)[0].predicted_rate
            bound = min(bound, eff[0](n) * reach / (1.0 if s.risk is not None else s.safety))
        return max(0.0, bound)

    def plan_within(self, ex: Exploration, memory_mb: int, slots: int) -> Plan:
        """The plan for rate_within(ex, memory_mb, slots): a budget of at most ``slots``, configured
        as the plan configures any budget. The rate steps down by 1 % while the last pass's growth
        (configured_slots) lands above ``slots``."""
        rate = self.rate_within(ex, memory_mb, slots) * (1 - 1e-9)  # the bound itself, not a rounding above it
        for _ in range(50):
            if rate <= 0:
                break
            plan = self.plan(ex, rate, [memory_mb])
            entry = plan.entry(memory_mb)
            if entry.slots is not None and entry.slots <= slots:
                return plan
            rate *= 0.99
        raise UserError(f"{self.optimizer.query.name}: no rate this plan supports fits {slots} slots of "
                        f"{memory_mb} MB")


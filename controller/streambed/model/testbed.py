"""What a testbed offers the planner: the Resource Explorer's search space (section VI)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import UserError
from .query import Budget


@dataclass(frozen=True)
class TestbedInfo:
    """What a testbed offers: the explorer's search space comes from here (section VI)."""

    name: str
    max_slots: int
    memory_per_slot: tuple[int, ...]
    """Memory per slot, MB, that the testbed can deploy."""
    sample_period: float = 5.0
    source_parallelism: int = 32
    """Source tasks, set apart from the budget (the paper: 32-64); cooldown rates are per source."""
    max_source_rate: float = 1e10
    """The most the sources can inject, events/s: the Capacity Estimator warms up at this rate."""
    notes: tuple[str, ...] = field(default=())
    reproducible: bool = False
    """Whether the same calls give the same measurements (the simulated testbed). A resumed campaign
    then re-runs its recorded steps on it, discarding their results for the recorded ones, so that
    the testbed's state, and every measurement after the kill, is the uninterrupted campaign's."""
    operator_memory: bool = False
    """Whether the testbed deploys a memory per slot of its own to an operator's tasks
    (Budget.memory_by_operator; Flink's fine-grained resource profiles). The simulated testbed does."""
    backlog_start: bool = False
    """Whether ``start`` takes ``backlog_s``: the job starts with that many seconds of input at its rate
    already queued in the source (a restart's backlog), read as fast as the job accepts. The simulated
    testbed does; the Flink testbed's rate-limited source has no start offset."""

    __test__ = False

    def offered(self) -> str:
        return ", ".join(str(m) for m in self.memory_per_slot)

    def check_memory(self, memory_mb: int, option: str = "memory") -> None:
        """The one rule for memory: a testbed deploys only the memory per slot it offers."""
        if memory_mb not in self.memory_per_slot:
            raise UserError(f"{option}: the {self.name} testbed offers {self.offered()} MB per slot, got {memory_mb}")

    def check_budget(self, budget: Budget, *, memory_option: str = "memory", slots_option: str = "slots") -> None:
        """A budget the testbed can deploy: memory it offers, no more slots than it has."""
        self.check_memory(budget.memory_mb, memory_option)
        if budget.memory_by_operator and not self.operator_memory:
            raise UserError(f"{memory_option}: the {self.name} testbed deploys one memory per slot for every operator, "
                            f"not per-operator memory")
        for _, mb in budget.memory_by_operator:
            self.check_memory(mb, memory_option)
        if budget.slots > self.max_slots:
            raise UserError(f"{slots_option}: uses {budget.slots} slots, the {self.name} testbed offers at most "
                            f"{self.max_slots}")

    def check_window(self, seconds: float, option: str = "window") -> None:
        """An observation window holds at least one metric sample."""
        if seconds < self.sample_period:
            raise UserError(f"{option}: expected at least the testbed's metric sample period "
                            f"({self.sample_period:g} s), got {seconds:g}")

"""Catch-up after a restart: a backlog of B seconds of input drained within T seconds while the input
keeps coming (the Flink autoscaler's restart time and catch-up duration). The formulas, the B/T
option's reading, and the drain time read from pending records, shared by every planner that sizes
for it and by the validation that measures it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from .. import checks


def catch_up_factor(backlog_s: float, within_s: float) -> float:
    """How much faster than the rate a job must process to drain ``backlog_s`` seconds of input within
    ``within_s`` seconds while the input keeps coming: 1 + B/T."""
    if within_s <= 0:
        raise ValueError("the catch-up time must be positive")
    return 1.0 + backlog_s / within_s


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(ms|s|m|min|h)?\s*$", re.IGNORECASE)
_UNIT_S = {None: 1.0, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def seconds(text: str) -> float:
    """A duration such as '300s', '5m', '1h' (no unit: seconds), in seconds."""
    match = _DURATION.match(text)
    if not match:
        raise checks.Invalid(f"expected a duration such as 300s or 5m, got {text!r:.40}")
    return float(match.group(1)) * _UNIT_S[match.group(2).lower() if match.group(2) else None]


def parse_catch_up(value: Any) -> tuple[float, float]:
    """A backlog B >= 0 and the time T > 0 to drain it, seconds: 'B/T' ('300s/600s', '5m/30m') or a pair."""
    if isinstance(value, str):
        parts = value.split("/")
        if len(parts) != 2:
            raise checks.Invalid(f"expected B/T such as 300s/600s, got {value!r:.40}")
        b, t = seconds(parts[0]), seconds(parts[1])
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        b, t = (checks.number(x) for x in value)
    else:
        raise checks.Invalid(f"expected B/T such as 300s/600s, got {value!r:.40}")
    if t <= 0:
        raise checks.Invalid(f"expected a positive time to drain the backlog, got {value!r:.40}")
    return b, t


@dataclass(frozen=True)
class CatchUp:
    """A plan's catch-up: ``rate`` sustained, and ``backlog_s`` seconds of it drained within ``within_s``."""

    backlog_s: float
    within_s: float
    rate: float
    """The steady rate, events/s (the plan itself is sized for ``effective_rate``)."""

    @property
    def factor(self) -> float:
        return catch_up_factor(self.backlog_s, self.within_s)

    @property
    def effective_rate(self) -> float:
        """The rate every operator the backlog reaches is sized for: rate x (1 + B/T)."""
        return self.rate * self.factor

    @property
    def backlog_events(self) -> float:
        return self.backlog_s * self.rate

    def to_dict(self) -> dict:
        return {"backlog_s": self.backlog_s, "within_s": self.within_s, "rate": self.rate,
                "effective_rate": self.effective_rate}

    @classmethod
    def from_dict(cls, d: Any) -> "CatchUp":
        """From ``to_dict``; checks.Invalid naming the field when one is missing or not a number."""
        if not isinstance(d, dict):
            raise checks.Invalid(f"expected an object {{backlog_s, within_s, rate}}, got {d!r:.60}")
        try:
            b = checks.number(d.get("backlog_s"), minimum=0.0)
            t = checks.number(d.get("within_s"), minimum=0.0, strict=True)
            r = checks.number(d.get("rate"), minimum=0.0, strict=True)
        except checks.Invalid as e:
            raise checks.Invalid(f"backlog_s, within_s, rate: {e}") from None
        return cls(b, t, r)


def drain_time(times: Sequence[float], pending: Sequence[float], *, tolerance: float) -> float | None:
    """Seconds from the first sample until pending records first fall to ``tolerance`` (events) or
    below and stay there to the last sample; None when they never do. Pending records that dip and
    grow again (a burst drained, then the job falling behind) have not drained."""
    if len(times) != len(pending):
        raise ValueError("times and pending must have the same length")
    drained_at = None
    for t, p in zip(times, pending):
        if p <= tolerance:
            if drained_at is None:
                drained_at = t
        else:
            drained_at = None
    return None if drained_at is None else drained_at - times[0]

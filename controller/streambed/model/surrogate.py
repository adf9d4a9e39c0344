"""The surrogate model f(M, P) = lambda_src of the Resource Explorer (paper section VI, Eq. 5-8).

A fitted model is part of a plan, and reports draw it; fitting, cross-validation, selection and the
inverse solve are the planner's (surrogates.py). Three families (Eq. 6-8)::

    linear:  a*M       + b*P       + c
    log:     a*log M   + b*log P   + c
    sqrt:    a*sqrt(M) + b*sqrt(P) + c

How M enters is set by :class:`Features`: the paper's artifact uses TaskManager MB (16 slots per
TaskManager) and log1p, which reproduce Tables III and IV; memory arguments are always per slot.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

FAMILIES = ("linear", "log", "sqrt")
"""The three candidate surrogate families of Eq. 6 (linear), 7 (log) and 8 (sqrt)."""

_MEMORY_MODES = ("taskmanager_mb", "slot_mb")
_LOG_MODES = ("log1p", "log")


@dataclass(frozen=True)
class Features:
    """How (memory per slot, slots) enter the models.

    The paper's artifact uses TaskManager memory in MB (slot MB x 16 slots per TaskManager) and
    ``log1p`` for the log family (see the data README, step 2: "What the paper's RE actually
    uses"). ``memory="slot_mb"`` and ``log="log"`` give the paper text's Eq. 6-8 literally.

    The coefficient ``a`` of a fitted :class:`Surrogate` is in units of the transformed memory
    feature, e.g. MST per TaskManager MB for the default linear model.
    """

    memory: str = "taskmanager_mb"  # or "slot_mb"
    slots_per_taskmanager: int = 16
    log: str = "log1p"  # or "log"
    interaction: bool = False
    """A term d g(M) g(P): each memory per slot its own slot slope, b + d g(M). Eq. 6-8 (False)
    give every memory one slot slope; the explorer adds the term where cross-validation prefers it
    (selection.select_features)."""

    def __post_init__(self) -> None:
        if self.memory not in _MEMORY_MODES:
            raise ValueError(f"Features.memory must be one of {_MEMORY_MODES}, got {self.memory!r}")
        if self.log not in _LOG_MODES:
            raise ValueError(f"Features.log must be one of {_LOG_MODES}, got {self.log!r}")
        if (
            isinstance(self.slots_per_taskmanager, bool)
            or not isinstance(self.slots_per_taskmanager, (int, np.integer))
            or self.slots_per_taskmanager < 1
        ):
            raise ValueError(
                "Features.slots_per_taskmanager must be a positive integer, "
                f"got {self.slots_per_taskmanager!r}"
            )

    def memory_value(self, memory_mb_per_slot):
        """The memory value the models see for a memory per slot in MB (scalar or array)."""
        if self.memory == "taskmanager_mb":
            if isinstance(memory_mb_per_slot, np.ndarray):
                return memory_mb_per_slot * float(self.slots_per_taskmanager)
            return float(memory_mb_per_slot) * self.slots_per_taskmanager
        if isinstance(memory_mb_per_slot, np.ndarray):
            return memory_mb_per_slot.astype(float)
        return float(memory_mb_per_slot)

    def transform(self, family: str, x):
        """g(x) for a family: identity (Eq. 6), log or log1p (Eq. 7), square root (Eq. 8).

        Raises ValueError for an unknown family, and for non-positive values with log and sqrt.
        """
        check_family(family)
        x = np.asarray(x, dtype=float)
        if not np.all(np.isfinite(x)):
            raise ValueError("memory and slots must be finite numbers")
        if family == "linear":
            return x
        if np.any(x <= 0):
            raise ValueError(f"the {family} model needs positive memory and slots (got a value <= 0)")
        if family == "sqrt":
            return np.sqrt(x)
        return np.log1p(x) if self.log == "log1p" else np.log(x)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Features":
        return cls(
            memory=d.get("memory", "taskmanager_mb"),
            slots_per_taskmanager=int(d.get("slots_per_taskmanager", 16)),
            log=d.get("log", "log1p"),
            interaction=bool(d.get("interaction", False)),
        )


@dataclass(frozen=True)
class Surrogate:
    """A fitted surrogate ``f(M, P) = a g(M) + b g(P) + c`` (Eq. 6-8), plus ``d g(M) g(P)`` where
    ``features.interaction`` fitted that term.

    ``g`` is the identity, log (or log1p) or square root according to ``family``; M goes through
    ``features.memory_value`` first, so ``predict`` takes memory per slot in MB.
    """

    family: str
    a: float
    b: float
    c: float
    features: Features = Features()
    d: float = 0.0

    def __post_init__(self) -> None:
        check_family(self.family)
        for name in ("a", "b", "c", "d"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"Surrogate.{name} must be finite, got {getattr(self, name)!r}")

    def predict(self, memory_mb, slots):
        """Predicted MST (events/s) for memory per slot ``memory_mb`` and ``slots`` task slots.

        Vectorized: numpy arrays broadcast; two scalars give a float.
        """
        scalar = np.ndim(memory_mb) == 0 and np.ndim(slots) == 0
        m = self.features.memory_value(np.asarray(memory_mb, dtype=float))
        gm = self.features.transform(self.family, m)
        gp = self.features.transform(self.family, np.asarray(slots, dtype=float))
        out = self.a * gm + self.b * gp + self.c + self.d * gm * gp
        return float(out) if scalar else out

    def slot_slope(self, memory_mb: float) -> float:
        """The coefficient of g(P) at ``memory_mb`` per slot: b, or b + d g(M) with the interaction.
        The prediction grows with P at that memory exactly when it is positive."""
        if self.d == 0.0:
            return self.b
        return self.b + self.d * float(self.features.transform(self.family, self.features.memory_value(float(memory_mb))))

    def to_dict(self) -> dict:
        return {
            "family": self.family,
            "a": float(self.a),
            "b": float(self.b),
            "c": float(self.c),
            "d": float(self.d),
            "features": self.features.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Surrogate":
        return cls(
            family=d["family"],
            a=float(d["a"]),
            b=float(d["b"]),
            c=float(d["c"]),
            features=Features.from_dict(d.get("features", {})),
            d=float(d.get("d", 0.0)),
        )


def check_family(family: str) -> None:
    if family not in FAMILIES:
        raise ValueError(f"unknown surrogate family {family!r}; expected one of {FAMILIES}")

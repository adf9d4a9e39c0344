"""Argument types: each failure is one line naming what is expected."""

from __future__ import annotations

import argparse
import re

from .. import checks
from ..checks import DefaultsHelp, Parser  # noqa: F401  (the commands' parser, shared with the Spark jobs)
from ..errors import UserError
from ..model import MAX_PLAN_SLOTS
from ..model.catchup import parse_catch_up

_SUFFIX = {"k": 1e3, "m": 1e6, "g": 1e9}

# Bounds of what a command takes: each far beyond any real use, so that a typo is refused before a
# campaign starts instead of allocating for ever, waiting for ever or failing after hours.
MAX_SEED = 2**32 - 1
"""numpy's legacy generators and scikit-optimize take seeds below 2^32."""
MAX_SECONDS = 7 * 24 * 3600.0
"""A week: no warm-up, window or validation run of a capacity campaign lasts longer."""
MAX_MEMORY_MB = 1 << 20
"""1 TB per slot."""
MAX_RATE = 1e12
"""Events/s: a thousand times the largest deployments the paper cites."""
MIN_RATE = 1.0
"""Events/s: below one event a second no window measures a rate (5e-324 read as 0 and searched for ever)."""
MAX_COUNT = 10_000
"""Measurements or windows one command asks for."""
MAX_SAFETY = 10.0
MAX_MULTIPLE = 1e4
"""Times a testbed's MST a default target may be: beyond any extrapolation a plan trusts."""


def positive_number(text: str) -> float:
    """'2.5e6', '2500000' or '2.5M' -> 2500000.0."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgG]?)\s*", text)
    try:
        if not m:
            raise checks.Invalid(text)
        return checks.number(float(m.group(1)) * _SUFFIX.get(m.group(2).lower(), 1.0), minimum=0.0, strict=True)
    except checks.Invalid:
        raise argparse.ArgumentTypeError(f"expected a positive number such as 2.5e6 or 2.5M, got {text!r:.60}") from None


def rate(text: str) -> float:
    """A rate in events/s, from MIN_RATE to MAX_RATE."""
    value = positive_number(text)
    if not MIN_RATE <= value <= MAX_RATE:
        raise argparse.ArgumentTypeError(f"expected a rate of at least {MIN_RATE:g} and at most {MAX_RATE:g} "
                                         f"events/s, got {text!r:.60}")
    return value


def extrapolation(text: str) -> float:
    """How many times the largest budget measured a plan may use: a positive factor up to
    MAX_PLAN_SLOTS (no plan has more slots, so a larger factor changes nothing; 1e308 overflowed)."""
    value = positive_number(text)
    if value > MAX_PLAN_SLOTS:
        raise argparse.ArgumentTypeError(f"expected a factor from above 0 to {MAX_PLAN_SLOTS:,} such as 50, "
                                         f"got {text!r:.60}")
    return value


def name(text: str) -> str:
    """A name typed on the command line (an operator, a profile): no control characters."""
    try:
        return checks.name(text.strip())
    except checks.Invalid as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def multiple(text: str) -> float:
    """A positive factor up to MAX_MULTIPLE, such as 2 or 10."""
    value = positive_number(text)
    if value > MAX_MULTIPLE:
        raise argparse.ArgumentTypeError(f"expected a factor of at most {MAX_MULTIPLE:g} such as 2 or 10, got {text!r:.60}")
    return value


def safety(text: str) -> float:
    """An over-provisioning factor: 1 (none) to MAX_SAFETY; below 1 would plan less than the target."""
    try:
        value = checks.number(text, minimum=1.0, text=True)
    except checks.Invalid:
        value = 0.0
    if not 1.0 <= value <= MAX_SAFETY:
        raise argparse.ArgumentTypeError(f"expected a factor from 1 to {MAX_SAFETY:g} such as 1.1, got {text!r:.60}")
    return value


def _integer(text: str, minimum: int, maximum: int, expected: str) -> int:
    try:
        if len(text) > 30:  # before int(): no number of this kind has more digits
            raise checks.Invalid(text)
        value = checks.integer(text, minimum=minimum, text=True, whole_floats=False)
    except checks.Invalid:
        value = None
    if value is None or value > maximum:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r:.60}")
    return value


def slots(text: str) -> int:
    """A number of task slots, up to the largest budget the planner solves for."""
    return _integer(text, 1, MAX_PLAN_SLOTS, f"a number of slots from 1 to {MAX_PLAN_SLOTS:,}")


def memory_mb(text: str) -> int:
    return _integer(text, 1, MAX_MEMORY_MB, f"whole MB per slot from 1 to {MAX_MEMORY_MB:,}")


def count(text: str) -> int:
    return _integer(text, 1, MAX_COUNT, f"a count from 1 to {MAX_COUNT:,}")


def seed(text: str) -> int:
    """A seed: 0 to 2^32 - 1."""
    return _integer(text, 0, MAX_SEED, f"a seed from 0 to {MAX_SEED} such as 0 or 42")


def non_negative_seconds(text: str) -> float:
    try:
        value = checks.number(text, minimum=0.0, text=True)
    except checks.Invalid:
        value = -1.0
    if not 0.0 <= value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected seconds from 0 to {MAX_SECONDS:,.0f} (a week), got {text!r:.60}")
    return value


def catch_up(text: str) -> tuple[float, float]:
    """'B/T' such as 300s/600s or 5m/30m (units s, m, h; none: seconds): a backlog of B >= 0 seconds of
    input drained within T > 0 seconds, each at most MAX_SECONDS."""
    try:
        backlog, within = parse_catch_up(text)
    except checks.Invalid:
        backlog, within = -1.0, 0.0
    if not (0.0 <= backlog <= MAX_SECONDS and 0.0 < within <= MAX_SECONDS):
        raise argparse.ArgumentTypeError(f"expected B/T, a backlog B >= 0 drained within T > 0 (units s, m or h, "
                                         f"each at most a week) such as 300s/600s, got {text!r:.60}")
    return backlog, within


def non_negative_number(text: str) -> float:
    try:
        return checks.number(text, minimum=0.0, text=True)
    except checks.Invalid:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r:.60}") from None


def fraction(text: str) -> float:
    """A share from 0 to 1, such as 0.25."""
    try:
        return checks.number(text, minimum=0.0, maximum=1.0, text=True)
    except checks.Invalid:
        raise argparse.ArgumentTypeError(f"expected a fraction from 0 to 1 such as 0.25, got {text!r:.60}") from None


def risk(text: str) -> float:
    """A risk of under-provisioning: a probability in (0, 0.5]."""
    try:
        value = checks.number(text, minimum=0.0, strict=True, text=True)
    except checks.Invalid:
        value = -1.0
    if not 0 < value <= 0.5:
        raise argparse.ArgumentTypeError(f"expected a risk in (0, 0.5] such as 0.05, got {text!r}")
    return value


def number_list(text: str) -> tuple[float, ...]:
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected comma-separated numbers such as 1e6,2e6")
    if len(parts) > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_COUNT:,} numbers, got {len(parts):,}")
    return tuple(rate(p) for p in parts)


def name_list(text: str) -> list[str]:
    """'q1,q5' -> ['q1', 'q5']; at least one name."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated names such as q1,q5, got {text!r:.60}")
    if len(names) > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_COUNT:,} names, got {len(names):,}")
    return [name(n) for n in names]


def memory_list(text: str) -> tuple[int, ...]:
    """'2048,4096' -> (2048, 4096): memory per slot, whole MB."""
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected comma-separated MB per slot such as 2048,4096")
    values = []
    for p in parts:
        try:
            values.append(memory_mb(p.strip()))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"expected whole MB per slot from 1 to {MAX_MEMORY_MB:,} such as "
                                             f"2048,4096, got {p.strip()!r:.60}") from None
    return tuple(values)


def operator_pairs(text: str) -> dict[str, int]:
    """'Calc#1=2,Sink#2=1' -> {'Calc#1': 2, 'Sink#2': 1}: a configuration as typed (the campaign checks
    the operators against the query)."""
    mapping: dict[str, int] = {}
    parts = text.split(",")
    if len(parts) > MAX_PLAN_SLOTS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_PLAN_SLOTS:,} operator=parallelism pairs")
    for part in parts:
        if not part.strip():
            continue
        op, sep, p = part.partition("=")
        op = op.strip()
        if not sep:
            raise argparse.ArgumentTypeError(f"expected operator=parallelism pairs such as Calc#1=2,Sink#2=1, "
                                             f"got {part!r:.60}")
        op = name(op)
        if op in mapping:
            raise argparse.ArgumentTypeError(f"operator {op} is given twice")
        try:
            mapping[op] = _integer(p.strip(), 1, MAX_PLAN_SLOTS, "")
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"parallelism of {op:.60} must be an integer from 1 to {MAX_PLAN_SLOTS:,}, "
                                             f"got {p!r:.60}") from None
    return mapping

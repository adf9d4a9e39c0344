"""Argument types: each failure is one line naming what is expected."""

from __future__ import annotations

import argparse
import re

from .. import checks
from ..errors import UserError

_SUFFIX = {"k": 1e3, "m": 1e6, "g": 1e9}


def positive_number(text: str) -> float:
    """'2.5e6', '2500000' or '2.5M' -> 2500000.0."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgG]?)\s*", text)
    try:
        if not m:
            raise checks.Invalid(text)
        return checks.number(float(m.group(1)) * _SUFFIX.get(m.group(2).lower(), 1.0), minimum=0.0, strict=True)
    except checks.Invalid:
        raise argparse.ArgumentTypeError(f"expected a positive number such as 2.5e6 or 2.5M, got {text!r}") from None


def _integer(text: str, minimum: int, expected: str) -> int:
    try:
        return checks.integer(text, minimum=minimum, text=True, whole_floats=False)
    except checks.Invalid:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None


def positive_int(text: str) -> int:
    return _integer(text, 1, "a positive integer")


def non_negative_int(text: str) -> int:
    """A seed: 0, 1, 2, ... (numpy's generators take no negative seed)."""
    return _integer(text, 0, "a non-negative integer such as 0 or 42")


def non_negative_seconds(text: str) -> float:
    try:
        return checks.number(text, minimum=0.0, text=True)
    except checks.Invalid:
        raise argparse.ArgumentTypeError(f"expected a non-negative number of seconds, got {text!r}") from None


def non_negative_number(text: str) -> float:
    try:
        return checks.number(text, minimum=0.0, text=True)
    except checks.Invalid:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None


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
    return tuple(positive_number(p) for p in parts)


def name_list(text: str) -> list[str]:
    """'q1,q5' -> ['q1', 'q5']; at least one name."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated names such as q1,q5, got {text!r}")
    return names


def memory_list(text: str) -> tuple[int, ...]:
    """'2048,4096' -> (2048, 4096): memory per slot, whole MB."""
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected comma-separated MB per slot such as 2048,4096")
    values = []
    for p in parts:
        try:
            values.append(checks.integer(p, minimum=1, text=True))
        except checks.Invalid:
            raise argparse.ArgumentTypeError(f"expected positive whole MB per slot such as 2048,4096, "
                                             f"got {p.strip()!r}") from None
    return tuple(values)


def operator_pairs(text: str) -> dict[str, int]:
    """'Calc#1=2,Sink#2=1' -> {'Calc#1': 2, 'Sink#2': 1}: a configuration as typed (the campaign checks
    the operators against the query)."""
    mapping: dict[str, int] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        op, sep, p = part.partition("=")
        op = op.strip()
        if not sep:
            raise argparse.ArgumentTypeError(f"expected operator=parallelism pairs such as Calc#1=2,Sink#2=1, "
                                             f"got {part!r}")
        if op in mapping:
            raise argparse.ArgumentTypeError(f"operator {op} is given twice")
        try:
            mapping[op] = checks.integer(p, minimum=1, text=True, whole_floats=False)
        except checks.Invalid:
            raise argparse.ArgumentTypeError(f"parallelism of {op} must be a positive integer, got {p!r}") from None
    return mapping


class DefaultsHelp(argparse.HelpFormatter):
    """--help shows each option's default, taken from the settings the option fills (campaigns/settings.py)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        d = action.default
        shown = not (d is None or d is False or d == () or d == [] or d == argparse.SUPPRESS)
        if shown and "%(default)" not in text and action.option_strings:
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", DefaultsHelp)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # argparse prints usage + message; we print one line
        raise UserError(message)



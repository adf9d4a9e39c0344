"""Argument types: each failure is one line naming what is expected."""

from __future__ import annotations

import argparse
import math
import re

from ..errors import UserError
from ..model import Configuration

_SUFFIX = {"k": 1e3, "m": 1e6, "g": 1e9}


def positive_number(text: str) -> float:
    """'2.5e6', '2500000' or '2.5M' -> 2500000.0."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgG]?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected a positive number such as 2.5e6 or 2.5M, got {text!r}")
    value = float(m.group(1)) * _SUFFIX.get(m.group(2).lower(), 1.0)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _int_at_least(text: str, lowest: int, expected: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = lowest - 1
    if value < lowest:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _int_at_least(text, 1, "a positive integer")


def non_negative_int(text: str) -> int:
    """A seed: 0, 1, 2, ... (numpy's generators take no negative seed)."""
    return _int_at_least(text, 0, "a non-negative integer such as 0 or 42")


def non_negative_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a non-negative number of seconds, got {text!r}")
    return value


def number_list(text: str) -> list[float]:
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected comma-separated numbers such as 1e6,2e6")
    return [positive_number(p) for p in parts]


def name_list(text: str) -> list[str]:
    """'q1,q5' -> ['q1', 'q5']; at least one name."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated names such as q1,q5, got {text!r}")
    return names


def memory_list(text: str) -> list[int]:
    """'2048,4096' -> [2048, 4096]: memory per slot, whole MB."""
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected comma-separated MB per slot such as 2048,4096")
    values = []
    for p in parts:
        try:
            value = float(p)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value >= 1 and value == int(value)):
            raise argparse.ArgumentTypeError(f"expected positive whole MB per slot such as 2048,4096, got {p.strip()!r}")
        values.append(int(value))
    return values


def parse_configuration(text: str, query) -> Configuration:
    """'Calc#1=2,Sink#2=1' -> Configuration."""
    mapping = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise UserError(f"--config: expected operator=parallelism pairs such as Calc#1=2,Sink#2=1, got {part!r}")
        op, _, p = part.partition("=")
        if op.strip() in mapping:
            raise UserError(f"--config: operator {op.strip()} is given twice")
        try:
            mapping[op.strip()] = int(p)
        except ValueError:
            raise UserError(f"--config: parallelism of {op.strip()} must be an integer, got {p!r}") from None
    unknown = [op for op in mapping if op not in query.operators]
    if unknown:
        raise UserError(f"--config: unknown operator(s) {', '.join(unknown)} for query {query.name} "
                        f"(expected: {', '.join(query.operators)})")
    return Configuration.of(query, mapping)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints usage + message; we print one line
        raise UserError(message)



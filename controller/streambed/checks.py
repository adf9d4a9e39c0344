"""Checks of values that come from outside: the command line, record files, plan files, sim profiles.

One rule and one wording per kind of value. Each check returns the value in its type or raises
:class:`Invalid`, whose message says what was expected and what came; the caller puts where the
value came from in front (an option, a file and line, a field path) and raises its own error type
(UserError, RecordError, ProfileError), so every bad input still ends as one line naming its place.
"""

from __future__ import annotations

import argparse
import math
import numbers
import re
from typing import Any

from .errors import UserError


class Invalid(ValueError):
    """A value failed a check; the message reads 'expected ..., got ...'."""


def _bound(minimum: float | None, strict: bool) -> str:
    if minimum is None:
        return ""
    return f" > {minimum:g}" if strict else f" >= {minimum:g}"


MAX_DIGITS = 30
"""The most digits an integer from outside may have: far more than any count, seed or rate, far fewer
than Python's own 4,300-digit limit on converting text, which fails with a traceback."""

MAX_NAME_CHARS = 200
"""The longest name (operator, query, profile) accepted: Flink's own names are far shorter."""


def number(value: Any, *, minimum: float | None = 0.0, strict: bool = False, text: bool = False,
           allow_inf: bool = False, unit: str = "", maximum: float | None = None) -> float:
    """A real number (never a bool), finite unless ``allow_inf``, >= ``minimum`` (> if ``strict``;
    None: no bound) and <= ``maximum`` (None: none). ``text``: text such as '2.5e6' is read as a
    number too (command lines, CSV)."""
    what = (f"a number{_bound(minimum, strict)}{f' and <= {maximum:g}' if maximum is not None else ''}"
            f"{f' ({unit})' if unit else ''}")
    got = value
    if text and isinstance(value, str) and len(value) > 100:
        raise Invalid(f"expected {what}, got text of {len(value):,} characters")
    if text and isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise Invalid(f"expected {what}, got {got!r:.60}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise Invalid(f"expected {what}, got {got!r:.60}")
    try:
        x = float(value)
    except OverflowError:
        raise Invalid(f"expected a finite number, got one too large for a float ({str(value)[:20]}...)") from None
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise Invalid(f"expected a finite number, got {got!r:.60}")
    if minimum is not None and (x < minimum or (strict and x <= minimum)):
        raise Invalid(f"expected {what}, got {got!r:.60}")
    if maximum is not None and x > maximum:
        raise Invalid(f"expected {what}, got {got!r:.60}")
    return x


def integer(value: Any, *, minimum: int = 1, text: bool = False, whole_floats: bool = True) -> int:
    """An integer >= ``minimum`` (never a bool). ``whole_floats``: 4.0 counts as 4 (JSON and CSV write
    numbers that way); ``text``: '4' (and '4.0' with whole_floats) is read too."""
    what = f"an integer >= {minimum}"
    got = value
    if text and isinstance(value, str) and len(value.strip()) > MAX_DIGITS:
        raise Invalid(f"expected {what} of at most {MAX_DIGITS} digits, got text of {len(value.strip()):,} characters")
    if text and isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            if not whole_floats:
                raise Invalid(f"expected {what}, got {got!r:.60}") from None
            value = number(value, minimum=None, text=True) if is_number_text(value) else None
    if isinstance(value, bool) or value is None:
        raise Invalid(f"expected {what}, got {got!r:.60}")
    if isinstance(value, numbers.Integral):
        n = int(value)
        if abs(n).bit_length() > 100:  # about 30 digits; repr of a huge int would itself fail
            raise Invalid(f"expected {what} of at most {MAX_DIGITS} digits, got one of {abs(n).bit_length()} bits")
    elif whole_floats and isinstance(value, numbers.Real) and math.isfinite(value) and value == int(value):
        n = int(value)
    else:
        raise Invalid(f"expected {what}, got {got!r:.60}")
    if n < minimum:
        raise Invalid(f"expected {what}, got {got!r:.60}")
    return n


def is_number_text(text: str) -> bool:
    """Whether ``text`` reads as a number ('1e6', ' 2.5 ')."""
    try:
        float(text)
    except ValueError:
        return False
    return True


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def name(value: Any, *, max_chars: int = MAX_NAME_CHARS) -> str:
    """A name (operator, query, profile): non-empty text up to ``max_chars``, no control characters
    (a newline in a name would split every table row and error line that shows it)."""
    if not isinstance(value, str):
        raise Invalid(f"expected a name (text), got {value!r:.60}")
    if not value.strip():
        raise Invalid(f"expected a non-empty name, got {value!r:.60}")
    if len(value) > max_chars:
        raise Invalid(f"expected a name of at most {max_chars} characters, got {len(value):,}")
    if m := _CONTROL.search(value):
        raise Invalid(f"expected a name without control characters, got {value!r:.60} "
                      f"(a {m.group()!r} at character {m.start() + 1})")
    return value


def boolean(value: Any) -> bool:
    """true or false, as JSON and YAML write them: never text such as 'yes' or a number."""
    if not isinstance(value, bool):
        raise Invalid(f"expected true or false, got {value!r:.60}")
    return value


def shown(text: Any) -> str:
    """``text`` for an error line: control characters escaped as repr does (a newline in a path
    would otherwise split the one error line in two)."""
    s = str(text)
    if not _CONTROL.search(s):
        return s
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], s)


# -- command lines ---------------------------------------------------------------------------------------------------
# Here rather than in commands/ so that the Spark jobs (spark/streambed_spark), run by spark-submit
# without the CLI, refuse bad options the same way.

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
    """An argument parser whose errors are one line (UserError) instead of usage and exit status 2."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", DefaultsHelp)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # argparse prints usage + message; we print one line
        raise UserError(message)

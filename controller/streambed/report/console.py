"""Terminal output: rich tables and progress on stderr, results as JSON on stdout with ``--json``.

Keeping stdout for the JSON document alone lets ``streambed ... --json | jq`` work while progress
is still shown.
"""

from __future__ import annotations

import json
import math
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

ECHO_EVERY_S = 2.0
"""Without a terminal (a log file, CI), progress is printed as lines, at most one per this many seconds."""


class Output:
    def __init__(self, json_mode: bool = False, quiet: bool = False):
        self.json_mode = json_mode
        self.err = Console(stderr=True, highlight=False)
        self.out = Console(highlight=False)
        self.quiet = quiet
        self._step: Step | None = None

    def status(self, message: str) -> None:
        """What long work is doing now: the description of the running progress bar (one line per
        message when stderr is not a terminal), else an info line."""
        if self._step is not None:
            self._step.describe(message)
        else:
            self.info(message)

    def info(self, message: str) -> None:
        if not self.quiet:
            self.err.print(message)

    def warn(self, message: str) -> None:
        """Something the user must know about a result, on stderr (not with --quiet: it leaves stderr
        to errors; a JSON result carries what its warnings say)."""
        if not self.quiet:
            self.err.print(f"[bold yellow]warning:[/] {message}")

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """A table for people: on stdout normally, on stderr when stdout carries JSON (and nowhere
        then with --quiet: stderr is for errors alone)."""
        if self.json_mode and self.quiet:
            return
        t = Table(title=title, title_justify="left")
        for i, c in enumerate(columns):
            t.add_column(c, justify="left" if i == 0 else "right")
        for r in rows:
            t.add_row(*(fmt(v) for v in r))
        (self.err if self.json_mode else self.out).print(t)

    def result(self, data: Any) -> None:
        """The command's result: printed as JSON when --json was given."""
        if self.json_mode:
            sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=_default) + "\n")

    @contextmanager
    def progress(self, description: str, total: float | None = None) -> Iterator["Step"]:
        columns = [SpinnerColumn(), TextColumn("{task.description}")]
        if total is not None:
            columns += [BarColumn(), MofNCompleteColumn()]
        p = Progress(*columns, TimeElapsedColumn(), console=self.err, transient=False, disable=self.quiet)
        p.start()
        try:
            task = p.add_task(description, total=total)
            # Not a terminal (a log file, CI): no live bar, so each step is one line instead. The
            # opening description waits for the first step: input refused before any work must
            # leave exactly one line (the error) on stderr.
            echo = self.err.print if not (self.quiet or self.err.is_terminal) else None
            self._step = Step(p, task, echo)
            yield self._step
        except BaseException:
            self._step = None
            # The caller prints one error line: leave no progress line above it. A transient live
            # display erases itself on a terminal and writes nothing to a file or pipe; p.stop()
            # would also end the (absent) line with a newline there, so stop the live display alone.
            p.live.transient = True
            p.live.stop()
            raise
        self._step = None
        if echo is not None:
            # The echoed lines told it all: no final copy of the bar below them (and no empty line,
            # which Progress.stop() prints off a terminal).
            p.live.transient = True
            p.live.stop()
        else:
            p.stop()


class Step:
    def __init__(self, progress: Progress, task, echo=None):
        self._p = progress
        self._task = task
        self._echo = echo
        self._opening: str | None = progress.tasks[0].description if echo else None
        self._last_echo = -math.inf

    def _line(self, text: str, description: str | None = None) -> None:
        # The opening waits for the first step; when that step's line repeats it, one line says both.
        if self._opening is not None and self._opening != description:
            self._echo(self._opening)
        self._opening = None
        self._echo(text)

    def advance(self, n: float = 1, description: str | None = None) -> None:
        self._p.update(self._task, advance=n, description=description or self._p.tasks[0].description)
        if self._echo:
            t = self._p.tasks[0]
            # One line per step for slow work (estimates, measurements); fast loops (hundreds of
            # solves) print at most one line per ECHO_EVERY_S, and their last step.
            now = time.monotonic()
            if now - self._last_echo >= ECHO_EVERY_S or (t.total is not None and t.completed >= t.total):
                self._last_echo = now
                self._line(f"[{t.completed:g}{f'/{t.total:g}' if t.total is not None else ''}] {t.description}",
                           t.description)

    def describe(self, description: str) -> None:
        self._p.update(self._task, description=description)
        if self._echo:
            self._line(description)


def fmt(v: Any) -> str:
    """Numbers as people read them: 1,234,567 or 0.123; None as '-'."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "inf"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.3f}"
    return str(v)


def _default(o: Any) -> Any:
    if hasattr(o, "to_dict"):
        return o.to_dict()
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")

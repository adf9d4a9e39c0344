"""Running the ``streambed`` command as a user does, for the CLI tests: a subprocess in a scratch
directory, with the project's rules for its output (bad input: one line naming the field, exit
status 2, no traceback; ``--json``: exactly one JSON document on stdout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(sys.executable).with_name("streambed")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "streambed"]


def cli_env(columns: int) -> dict:
    env = dict(os.environ)
    # Whatever terminal pytest runs in, the command sees plain pipes: no forced colours or TTY mode.
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES", "CLICOLOR_FORCE"):
        env.pop(var, None)
    env["COLUMNS"] = str(columns)  # wide: table cells are not wrapped; narrow: errors must still be one line
    env["NO_COLOR"] = "1"
    return env


def streambed(*args: str, cwd: Path, columns: int = 200, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, *args], cwd=cwd, env=cli_env(columns), capture_output=True, text=True,
                          timeout=timeout)


def json_result(proc: subprocess.CompletedProcess):
    """The one JSON document on stdout of a successful command (json.loads refuses anything extra)."""
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        pytest.fail(f"stdout is not exactly one JSON document ({exc}):\n{proc.stdout[:2000]}")


def error_line(proc: subprocess.CompletedProcess) -> str:
    """The one error line of a refused command (exit 2, nothing on stdout, no traceback)."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{proc.stderr}"
    assert lines[0].startswith("streambed: error: "), lines[0]
    return lines[0]


def q1_plan(entry: dict | None = None, **top) -> str:
    """A plan.json of q1 at 4096 MB per slot (6 slots: Calc#1 4, Sink#2 2), with ``entry``'s fields changed
    in its one entry and ``top``'s at the top level."""
    plan = {"query": "q1", "rate": 5e6, "safety": 1.1, "family": "linear", "model": {},
            "entries": [{"memory_mb": 4096, "slots": 6, "predicted_mst": 6e6,
                         "configuration": {"Calc#1": 4, "Sink#2": 2}, "bids2_rate": 6.6e6, **(entry or {})}]}
    return json.dumps({**plan, **top})

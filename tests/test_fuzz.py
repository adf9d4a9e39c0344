"""Fuzzing the command line: generated bad invocations, each refused with one line, exit 2, no traceback,
and quickly (a bound checked before any campaign starts never waits for a testbed).

Every case takes a valid invocation of one command (the simulated testbed) and spoils one thing: an
option's value (from bad values of that option's kind), an input file (a FIFO, a directory, a sparse
file above the size cap, deeply nested JSON or YAML, binary bytes, an empty file), a query name, an
unknown option, or a missing required one. The cases come from a seeded generator, so a failure
names a case that reproduces.
"""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import pytest

from streambed import cli

CASES = 360
SECONDS_PER_CASE = 20
"""A refusal comes before any measurement: far below this even on a busy 2-core machine."""

BAD = {
    "number": ["-1", "0", "nan", "inf", "-inf", "1e400", "abc", "", " ", "0x10", "1,5", "1e13", "9" * 5000, "1e-400"],
    "int": ["-1", "0", "1.5", "nan", "abc", "", "9" * 5000, "99999999999999999999", "1e3", "4 4", "100001"],
    "memory": ["-1", "0", "1.5", "abc", "", "9" * 5000, "1048577", "2048,,x", "nan"],
    "seed": ["-1", "4294967296", "1.5", "nan", "abc", "9" * 5000, "18446744073709551616"],
    "safety": ["0.5", "1e-300", "0", "-1", "11", "nan", "inf", "x"],
    "seconds": ["-1", "1e12", "nan", "inf", "abc", "604801"],
    "config": ["Calc#1=0", "Calc#1=-1", "Calc#1=x", "Nope#9=1", "Calc#1", "=3", "Calc#1=1,Calc#1=2",
               "Calc#1=" + "9" * 5000, "Calc#1=1e9"],
    "rates": ["", ",", "1e6,-1", "1e6,abc", "1e13", ",".join(["1e6"] * 10_001)],
    "count": ["0", "-1", "10001", "abc", "1.5"],
    "risk": ["0", "0.6", "-0.1", "nan", "x"],
    "query": ["../../etc/passwd", "", "q5;rm -rf /", "x" * 1000, "Q1", "no-such-query"],
    "choice": ["nope", "", "LINEAR"],
}


def _files(d: Path) -> dict[str, Path]:
    """Bad input files of every kind."""
    d.mkdir()
    fifo = d / "fifo.json"
    os.mkfifo(fifo)
    big = d / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(65 * 1024 * 1024)  # sparse: above the cap without using the disk
    nested = d / "nested.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    nested_yaml = d / "nested.yaml"
    nested_yaml.write_text("a: " + "[" * 50_000 + "]" * 50_000 + "\n")
    binary = d / "binary.json"
    binary.write_bytes(bytes(range(256)) * 64)
    empty = d / "empty.json"
    empty.write_text("")
    wrong = d / "wrong.json"
    wrong.write_text('{"query": 5, "entries": "no"}')
    deep_plan = d / "deep-plan.json"
    deep_plan.write_text('{"query": "q1", "entries": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return {"fifo": fifo, "big": big, "nested": nested, "nested_yaml": nested_yaml, "binary": binary,
            "empty": empty, "wrong": wrong, "deep_plan": deep_plan, "directory": d, "missing": d / "missing.json"}


def _commands(files: dict[str, Path]) -> list[tuple[list[str], dict[str, str]]]:
    """(valid argv, {option: kind of its value}) per command; {dir} is the case's campaign directory."""
    return [
        (["sim", "run", "--profile", "q1", "--rate", "1e6", "--slots", "4", "--duration", "5", "--memory", "4096",
          "--seed", "0"],
         {"--rate": "number", "--slots": "int", "--duration": "seconds", "--memory": "memory", "--seed": "seed"}),
        (["sim", "truth", "--profile", "q1", "--memory", "4096", "--slots", "4"], {"--memory": "memory", "--slots": "int"}),
        (["sim", "min-slots", "--profile", "q1", "--rate", "1e6", "--memory", "4096", "--max-slots", "64"],
         {"--rate": "number", "--memory": "memory", "--max-slots": "int"}),
        (["measure", "--query", "q1", "--rates", "1e6", "--window", "5", "--warmup", "5", "--ramp", "5",
          "--config", "Calc#1=1,Sink#2=1", "--campaign-dir", "{dir}"],
         {"--rates": "rates", "--window": "seconds", "--warmup": "seconds", "--ramp": "seconds", "--config": "config",
          "--query": "query", "--memory": "memory", "--seed": "seed"}),
        (["estimate", "--query", "q1", "--timing", "quick", "--campaign-dir", "{dir}"],
         {"--memory": "memory", "--config": "config", "--seed": "seed", "--timing": "choice", "--query": "query"}),
        (["optimize", "--query", "q1", "--slots", "4", "--timing", "quick", "--campaign-dir", "{dir}"],
         {"--slots": "int", "--memory": "memory", "--seed": "seed", "--policy": "choice"}),
        (["explore", "--query", "q1", "--timing", "quick", "--campaign-dir", "{dir}"],
         {"--max-measurements": "count", "--profiles": "memory", "--max-slots": "int", "--seed": "seed"}),
        (["plan", "--query", "q1", "--rate", "1e7", "--timing", "quick", "--campaign-dir", "{dir}"],
         {"--rate": "number", "--safety": "safety", "--risk": "risk", "--max-measurements": "count",
          "--profiles": "memory", "--max-slots": "int", "--seed": "seed", "--query": "query",
          "--max-extrapolation": "number"}),
        (["fit", "--measurements", str(files["wrong"]), "--rate", "1e6"],
         {"--rate": "number", "--safety": "safety", "--family": "choice", "--measurements": "file"}),
        (["holdout", "--measurements", str(files["wrong"]), "--reference", "3e4"],
         {"--reference": "number", "--measurements": "file", "--memory": "memory"}),
        (["validate", "--query", "q1", "--plan", str(files["wrong"]), "--campaign-dir", "{dir}"],
         {"--plan": "file", "--rate": "number", "--ramp": "seconds", "--duration": "seconds", "--window": "seconds",
          "--multipliers": "rates", "--production-slots": "int"}),
        (["optimize", "--from-metrics", str(files["wrong"])], {"--from-metrics": "file", "--slots": "int"}),
        (["export", "--campaign-dir", str(files["missing"])], {"--campaign-dir": "file"}),
        (["ledger", "verify", "--campaign-dir", str(files["missing"])], {"--campaign-dir": "file"}),
        (["sim", "check", str(files["nested_yaml"])], {}),
    ]


def _spoil(rng: random.Random, argv: list[str], kinds: dict[str, str], files: dict[str, Path]) -> list[str]:
    """``argv`` with one thing made wrong."""
    how = rng.random()
    if how < 0.07:
        return argv + [rng.choice(["--no-such-option", "-x", "--rate=", "--"])]
    if how < 0.12:  # a required option left out
        required = [i for i, a in enumerate(argv) if a in ("--rate", "--query", "--profile", "--rates",
                                                            "--measurements", "--from-metrics")]
        if required:
            i = rng.choice(required)
            return argv[:i] + argv[i + 2:]
    if not kinds:
        return argv + ["--nope"]
    option = rng.choice(sorted(kinds))
    kind = kinds[option]
    if kind == "file":
        value = str(rng.choice(sorted(files.values())) if rng.random() < 0.5 else files[rng.choice(sorted(files))])
        if option == "--campaign-dir":
            value = str(rng.choice([files["fifo"], files["big"], files["missing"], files["binary"], files["empty"]]))
    else:
        value = rng.choice(BAD[kind])
    if option in argv:
        i = argv.index(option)
        return argv[:i + 1] + [value] + argv[i + 2:]
    return argv + [option, value]


def _cases(files: dict[str, Path]) -> list[list[str]]:
    rng = random.Random(20261124)
    commands = _commands(files)
    return [_spoil(rng, *commands[i % len(commands)], files) for i in range(CASES)]


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


def test_generated_bad_invocations_are_one_line_exit_2_no_traceback(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "100000")  # one line is one line, however long
    monkeypatch.chdir(tmp_path)
    files = _files(tmp_path / "inputs")
    cases = _cases(files)
    assert len(cases) >= 300
    previous = signal.signal(signal.SIGALRM, _alarm)
    failures = []
    try:
        for i, argv in enumerate(cases):
            argv = [a.replace("{dir}", str(tmp_path / f"c{i}")) for a in argv]
            shown = " ".join(a if len(a) < 80 else a[:40] + "..." for a in argv)
            signal.alarm(SECONDS_PER_CASE)
            try:
                code = cli.main(argv)
            except _Hang:
                failures.append(f"case {i}: still running after {SECONDS_PER_CASE} s: {shown}")
                continue
            except BaseException as exc:  # a traceback: exactly what must never reach a user
                failures.append(f"case {i}: {type(exc).__name__}: {str(exc)[:200]}: {shown}")
                continue
            finally:
                signal.alarm(0)
            out = capsys.readouterr()
            lines = [line for line in out.err.splitlines() if line.strip()]
            error = [line for line in lines if line.startswith("streambed: error: ")]
            if code != 2 or len(error) != 1 or "Traceback" in out.err:
                failures.append(f"case {i}: exit {code}, stderr {out.err[-300:]!r}: {shown}")
            elif len(lines) != 1:
                failures.append(f"case {i}: {len(lines)} lines on stderr ({lines[:3]}): {shown}")
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures[:30])

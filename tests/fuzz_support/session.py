"""One fuzz run: the fork server, the corpus, and the judgement of every invocation.

The invariants, per invocation (docs/robustness.md):
- exit status 0 or 2; never a signal, never another status;
- no traceback on stdout or stderr;
- exit 2: exactly one non-blank line on stderr;
- --json: stdout is exactly one JSON document on exit 0 (and on exit 2 unless it is empty; always
  for ``ledger verify``); exit 0 with --quiet: nothing on stderr;
- done within TIMEOUT_S and MEMORY_BYTES of address space;
- FIFOs, device nodes, symlinks and directories the case named are still what they were, and
  nothing outside the case's directory changed.
A case the fork server's guard stopped (it tried to start a process or open a connection: an
engine) is counted apart: it shows an input that got past every check to an engine, not a failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, reject, seed, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from . import corpus as corpus_mod
from .commands import commands
from .forkserver import CRASH_EXIT, GUARD_EXIT, ForkServer
from .strategies import Builder, Case, file_type

TIMEOUT_S = 30
MEMORY_BYTES = 1 << 30
ALWAYS_JSON = {"ledger verify"}
"""Commands whose --json prints a document even when they refuse (a verdict on a damaged ledger is a
result); any other refused command may leave stdout empty, but never prints half a document."""


def cli_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES", "CLICOLOR_FORCE",
                        "STREAMBED_INVENTORY", "DATALAKE", "PYTEST_CURRENT_TEST")}
    # a user's terminal width: an error wrapped by the console would be two lines, as the user sees it
    env.update(COLUMNS="80", NO_COLOR="1", HOME=str(home), MPLBACKEND="Agg", MPLCONFIGDIR=str(home / "mpl"),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    return env


def _snapshot(root: Path) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            st_ = os.lstat(p)
            h.update(f"{p}:{st_.st_mode}:{st_.st_size}:{st_.st_mtime_ns}\n".encode())
    return h.hexdigest()


@dataclass
class Outcome:
    number: int
    argv: list[str]
    exit: int | None
    seconds: float
    max_rss_mb: float
    problems: list[str]
    guard: str
    cwd: str
    made: list[str]
    stderr_tail: str


@dataclass
class Session:
    root: Path
    seed: int
    keep_failures: Path | None = None
    """Where failing cases' directories are kept (with repro.sh); None: not kept."""
    progress: bool = False
    """A line on stderr every 100 invocations (make fuzz)."""
    outcomes: list[Outcome] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    _seen: set = field(default_factory=set)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        home = self.root / "home"
        (home / "mpl").mkdir(parents=True, exist_ok=True)
        self.server = ForkServer(cli_env(home))
        self.commands = commands()
        self.corpus = corpus_mod.build(self.root / "corpus", self.server)
        self.outside = self.root / "outside"
        (self.outside / "victim-dir").mkdir(parents=True, exist_ok=True)
        (self.outside / "victim.txt").write_text("must stay as it is\n")
        (self.outside / "victim-dir" / "keep.txt").write_text("must stay as it is\n")
        self._outside = _snapshot(self.outside)
        self.cases = self.root / "cases"
        self.cases.mkdir(exist_ok=True)

    def close(self) -> None:
        self.server.close()

    # -- one case -----------------------------------------------------------------------------------------------

    def run_case(self, draw) -> Outcome:
        number = len(self.outcomes)
        cwd = self.cases / f"case-{number}"
        if cwd.exists():
            shutil.rmtree(cwd)
        cwd.mkdir()
        case = Builder(draw, self.corpus, cwd, self.outside).build(self.commands)
        fingerprint = hashlib.sha256(repr((case.argv, case.made)).encode("utf-8", "surrogatepass")).hexdigest()
        if fingerprint in self._seen:  # Hypothesis mutates earlier cases; an exact repeat teaches nothing
            shutil.rmtree(cwd, ignore_errors=True)
            reject()
        self._seen.add(fingerprint)
        io = self.root / "io"
        io.mkdir(exist_ok=True)
        out, err, guard = io / "stdout", io / "stderr", io / "guard"
        guard.unlink(missing_ok=True)
        result = self.server.run(case.argv, str(cwd), str(out), str(err), str(guard), TIMEOUT_S, MEMORY_BYTES)
        stdout = out.read_text(errors="replace")
        stderr = err.read_text(errors="replace")
        guarded = guard.read_text(errors="replace").strip() if guard.exists() else ""
        problems = self.judge(case, result, stdout, stderr)
        outcome = Outcome(number, case.argv, result["exit"] if not result["timed_out"] else None, result["seconds"],
                          result["max_rss_mb"], problems, guarded, str(cwd), case.made, stderr[-1500:])
        self.outcomes.append(outcome)
        if self.progress and len(self.outcomes) % 100 == 0:
            print(f"fuzz: {len(self.outcomes)} invocations, {len(self.failures())} failing, "
                  f"{time.monotonic() - self.started:.0f} s", file=sys.stderr, flush=True)
        if problems and self.keep_failures is not None:
            self._keep(outcome, stdout, stderr)
        shutil.rmtree(cwd, ignore_errors=True)
        return outcome

    def judge(self, case: Case, result: dict, stdout: str, stderr: str) -> list[str]:
        problems = []
        code = result["exit"]
        if result["timed_out"]:
            problems.append(f"hang: still running after {TIMEOUT_S} s")
        elif result["signal"] is not None:
            problems.append(f"crash: killed by signal {result['signal']}")
        elif code == GUARD_EXIT:
            return []  # stopped before an engine started: counted apart
        elif code == CRASH_EXIT or "Traceback (most recent call last)" in stdout + stderr:
            problems.append("traceback")
        elif code not in (0, 2):
            problems.append(f"exit {code}")
        if "MemoryError" in stderr:
            problems.append("memory: MemoryError under the 1 GB limit")
        lines = [line for line in stderr.splitlines() if line.strip()]
        if code == 2 and len(lines) != 1:
            problems.append(f"multi-line error: {len(lines)} lines on stderr")
        if case.json and code in (0, 2):
            command = _command(case.argv)
            if code == 0 or stdout.strip() or (command in ALWAYS_JSON and _parses(case.argv)):
                try:
                    json.loads(stdout)
                except ValueError as e:
                    problems.append(f"json: stdout is not one JSON document ({str(e)[:80]}; {len(stdout)} chars)")
        if code == 0 and case.quiet and "--json" not in case.argv and lines:
            problems.append(f"quiet: {len(lines)} lines on stderr")
        if code == 0 and case.quiet and case.json and lines:
            problems.append(f"quiet: {len(lines)} lines on stderr with --json --quiet")
        for path, kind in case.specials.items():
            now = file_type(Path(path))
            if now != kind:
                problems.append(f"replaced: {Path(path).name!r} was a {kind}, is now {now}")
        snap = _snapshot(self.outside)
        if snap != self._outside:
            problems.append("outside: a file outside the case's directory changed")
            shutil.rmtree(self.outside)
            (self.outside / "victim-dir").mkdir(parents=True)
            (self.outside / "victim.txt").write_text("must stay as it is\n")
            (self.outside / "victim-dir" / "keep.txt").write_text("must stay as it is\n")
            self._outside = _snapshot(self.outside)
        return problems

    def _keep(self, o: Outcome, stdout: str, stderr: str) -> None:
        target = self.keep_failures / f"case-{o.number}"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(o.cwd, target, symlinks=True, ignore_dangling_symlinks=True,
                        copy_function=_copy_special, dirs_exist_ok=True)
        (target / "repro.sh").write_text("#!/bin/sh\n# a fuzz failure: " + "; ".join(o.problems) + "\ncd \"$(dirname \"$0\")\"\n"
                                         f"exec streambed {shlex.join(o.argv)}\n")
        (target.parent / f"case-{o.number}.stdout").write_text(stdout)
        (target.parent / f"case-{o.number}.stderr").write_text(stderr)

    # -- the summary --------------------------------------------------------------------------------------------

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.problems]

    def groups(self) -> dict[str, list[int]]:
        """Failures grouped by what broke, the command and the shape of the last stderr line (numbers,
        quoted values and paths left out), so that one cause is one entry: {signature: [case numbers]}."""
        found: dict[str, list[int]] = {}
        for o in self.failures():
            last = (o.stderr_tail.strip().splitlines() or [""])[-1]
            shape = re.sub(r"'[^']*'|\"[^\"]*\"|\S*/\S*|\d+", "_", last)[:90]
            key = f"{' / '.join(p.split(':')[0] for p in o.problems)} | {_command(o.argv)} | {shape}"
            found.setdefault(key, []).append(o.number)
        return dict(sorted(found.items(), key=lambda kv: -len(kv[1])))

    def summary(self) -> dict:
        kinds = Counter(p.split(":")[0] for o in self.outcomes for p in o.problems)
        exits = Counter(("signal" if any(p.startswith("crash") for p in o.problems) else "timeout") if o.exit is None else ("guard" if o.exit == GUARD_EXIT else str(o.exit))
                        for o in self.outcomes)
        per_command = Counter(_command(o.argv) for o in self.outcomes)
        seconds = sorted(o.seconds for o in self.outcomes)
        return {
            "seed": self.seed,
            "invocations": len(self.outcomes),
            "exits": dict(sorted(exits.items())),
            "failures": len(self.failures()),
            "tracebacks": kinds.get("traceback", 0),
            "hangs": kinds.get("hang", 0),
            "multi_line_errors": kinds.get("multi-line error", 0),
            "problems": dict(sorted(kinds.items())),
            "stopped_at_engine_guard": exits.get("guard", 0),
            "per_command": dict(sorted(per_command.items())),
            "seconds_total": round(time.monotonic() - self.started, 1),
            "seconds_per_invocation": {"median": seconds[len(seconds) // 2] if seconds else 0,
                                       "max": seconds[-1] if seconds else 0},
            "max_rss_mb": max((o.max_rss_mb for o in self.outcomes), default=0),
            "slowest": [{"case": o.number, "seconds": o.seconds, "argv": o.argv}
                        for o in sorted(self.outcomes, key=lambda o: -o.seconds)[:5]],
            "largest": [{"case": o.number, "max_rss_mb": o.max_rss_mb, "argv": o.argv}
                        for o in sorted(self.outcomes, key=lambda o: -o.max_rss_mb)[:5]],
            "failure_groups": self.groups(),
            "failing_cases": [{"case": o.number, "argv": o.argv, "problems": o.problems, "files": o.made,
                               "stderr": o.stderr_tail[-600:]} for o in self.failures()],
            "guarded_cases": [{"case": o.number, "argv": o.argv, "guard": o.guard[:200]}
                              for o in self.outcomes if o.exit == GUARD_EXIT][:50],
        }

    def report(self, limit: int = 20) -> str:
        lines = []
        for o in self.failures()[:limit]:
            lines.append(f"case {o.number} (seed {self.seed}): {'; '.join(o.problems)}\n"
                         f"  streambed {shlex.join(o.argv)[:1500]}\n"
                         + "".join(f"  file {m[:400]}\n" for m in o.made)
                         + f"  stderr: {o.stderr_tail[-800:]!r}")
        return "\n".join(lines)


def _parses(argv: list[str]) -> bool:
    """Whether the CLI's parser accepts ``argv`` (so the command itself ran)."""
    from streambed import cli
    try:
        cli.build_parser().parse_args(argv)
        return True
    except (Exception, SystemExit):
        return False


def _command(argv: list[str]) -> str:
    """'sim run', 'plan': the words of argv before its first option."""
    words = []
    for a in argv:
        if a.startswith("-") or len(words) == 2:
            break
        words.append(a)
    return " ".join(words)


def _copy_special(src: str, dst: str) -> None:
    """Copy a regular file; recreate a FIFO; leave out what cannot be copied (a device node, a giant)."""
    st_ = os.lstat(src)
    import stat
    if stat.S_ISFIFO(st_.st_mode):
        os.mkfifo(dst)
    elif stat.S_ISREG(st_.st_mode) and st_.st_size < 8 << 20:
        shutil.copy2(src, dst)


def run(session: Session, examples: int) -> None:
    """``examples`` generated cases from the session's seed, each judged and recorded. The body never
    raises on a failure: a long run collects every failure instead of stopping and shrinking at the first,
    and the caller reports them."""

    # Hypothesis' own files (a cache of constants it reads from the code) in the session's directory, not
    # in the working tree
    set_hypothesis_home_dir(str(session.root / "hypothesis"))

    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), print_blob=False)
    @seed(session.seed)
    @given(st.data())
    def one(data) -> None:
        session.run_case(data.draw)

    one()

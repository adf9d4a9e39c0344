"""Generated invocations: a command of the parser, its options with valid or hostile values, and
the files they name, made in the case's working directory (copies of the corpus, often damaged, or
special paths: FIFOs, device nodes, symlinks, directories, sparse giants).

Everything is drawn through Hypothesis (``draw``), so a seed reproduces the argv and every byte of
every file. Engine commands are not filtered here: the fork server's guard stops any process or
Internet connection a case would start (forkserver.py), and the run counts those stops.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from hypothesis import strategies as st

from streambed.campaigns.testbeds import TESTBEDS
from streambed.planner.estimator import TIMINGS
from streambed.planner.policies import POLICIES

from . import mutate
from .commands import Command, Option
from .corpus import DATASET, PLAN_ARGV, PROFILES, Corpus

Draw = Callable[[st.SearchStrategy], Any]

PROFILE_NAMES = sorted(p.stem for p in PROFILES.glob("*.yaml"))
QUERIES = sorted({n for n in PROFILE_NAMES if not n.startswith("paper-")})

VALID: dict[str, list[str]] = {
    "rate": ["1e6", "2.5M", "1e7", "3e4", "100k", "5e5"],
    "slots": ["1", "2", "4", "8", "48"],
    "memory_mb": ["1024", "4096", "512", "2048"],
    "memory_list": ["1024", "1024,4096", "512,2048"],
    "seed": ["0", "42", "7"],
    "count": ["1", "2", "3"],
    "non_negative_seconds": ["0", "5", "10", "30"],
    "positive_number": ["2", "1.5", "10"],
    "non_negative_number": ["0", "0.05", "0.2"],
    "safety": ["1", "1.1", "1.5"],
    "risk": ["0.05", "0.5", "0.2"],
    "multiple": ["2", "10"],
    "number_list": ["1e6", "1e6,2e6", "1,1.2,1.5"],
    "operator_pairs": ["Calc#1=1,Sink#2=1", "Calc#1=2", "Calc#1=4,Sink#2=2"],
    "name_list": ["q1", "q1,q5", "q2"],
    "_events": ["1000", "200000"],
    "_gb": ["20", "0", "1.5"],
    "query": QUERIES,
    "testbed": ["sim"] * 6 + sorted(TESTBEDS),
    "timing": ["quick"] if "quick" in TIMINGS else sorted(TIMINGS)[:1],
    "policy": sorted(POLICIES),
    "env": ["local", "ec2", "grid5000"],
    "address": ["localhost:9092", "127.0.0.1:9092"],
    "host": ["localhost", "node-1"],
    "name": ["ds2", "bids", "event_time", "events"],
    "master": ["local[1]"],
    "formats": ["json", "json,parquet", "parquet"],
    "url": ["http://localhost:3000"],
    "text": ["/data", "/tmp"],
}
"""Values a user would type, by option kind (the product's own registries for names). Campaigns run with
the quick timing and at most 3 measurements (BOUNDED): a valid campaign with the paper's timings runs
for minutes on the sim by design, which says nothing about bad input."""
BOUNDED = ("testbed", "timing", "max_measurements")
"""Options always given to the commands that have them (valid unless spoiled): sim, quick, 1 to 3."""

HOSTILE_NUMBERS = ["-1", "0", "nan", "inf", "-inf", "1e308", "1e309", "5e-324", "1e-400", mutate.HUGE_DIGITS,
                   "1" + "0" * 400, "0x10", "1_000", "1,5", " ", "", "1e6\n2e6", "١٢", "+5", "1e", ".", "9" * 30]
HOSTILE_TEXT = ["", " ", "\n", "a\nb", "q1\n", "\x1b[2J", "\u202eq1", "x" * 5000, "../../../etc/passwd", "-",
                "--json", "q1;rm -rf .", "Q1", "%s", "\t", "é", "\x7f", "q1\r", "a" * 101]
SPECIALS = ["missing", "dir", "empty", "fifo", "null", "zero", "full", "loop", "dangling", "link_outside",
            "link_outside_dir", "sparse", "control_name", "long", "deep_missing", "binary", "link_to_dir"]
DEVICES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7)}
SLOW = {"sim calibrate": "checks profiles against the paper's shapes, about 7 s per profile on this machine: "
                         "1 case in 10 of those that draw it, always with --profiles of one name"}
"""Commands drawn rarely, and why: each legitimate run takes seconds, not the fuzz's tenths of a second."""


@dataclass
class Case:
    argv: list[str]
    cwd: Path
    made: list[str] = field(default_factory=list)
    """What each file the case made is, for the report of a failure."""
    specials: dict[str, str] = field(default_factory=dict)
    """Path -> file type of each FIFO, device, symlink or directory the case made (must survive it)."""

    @property
    def json(self) -> bool:
        return "--json" in self.argv

    @property
    def quiet(self) -> bool:
        return "--quiet" in self.argv


def file_type(path: Path) -> str:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "missing"
    for test, name in ((stat.S_ISLNK, "symlink"), (stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "char-device"),
                       (stat.S_ISDIR, "directory"), (stat.S_ISREG, "file")):
        if test(mode):
            return name
    return "other"


class Builder:
    """Makes one case in ``cwd`` from drawn choices."""

    def __init__(self, draw: Draw, corpus: Corpus, cwd: Path, outside: Path):
        self.draw = draw
        self.corpus = corpus
        self.cwd = cwd
        self.outside = outside
        self.case = Case([], cwd)
        self._n = 0

    # -- files --------------------------------------------------------------------------------------------------

    def _name(self, suffix: str = "") -> str:
        self._n += 1
        return f"f{self._n}{suffix}"

    def _note(self, path: str, what: str) -> str:
        self.case.made.append(f"{path!r}: {what}")
        return path

    def special(self, kind: str | None = None, suffix: str = "") -> str:
        kind = kind or self.draw(st.sampled_from(SPECIALS))
        name = self._name(suffix)
        p = self.cwd / name
        if kind == "missing":
            return self._note(f"missing/{name}", "does not exist")
        if kind == "dir":
            p.mkdir()
        elif kind == "empty":
            p.write_bytes(b"")
        elif kind == "fifo":
            os.mkfifo(p)
        elif kind in DEVICES:
            try:
                os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(*DEVICES[kind]))
            except PermissionError:  # not root: a device node of our own cannot be made; an empty file instead
                p.write_bytes(b"")
                kind = "empty"
        elif kind == "loop":
            os.symlink(name + "-b", p)
            os.symlink(name, self.cwd / (name + "-b"))
        elif kind == "dangling":
            os.symlink("nowhere/at/all", p)
        elif kind == "link_outside":
            os.symlink(self.outside / "victim.txt", p)
        elif kind == "link_outside_dir":
            os.symlink(self.outside / "victim-dir", p)
        elif kind == "link_to_dir":
            (self.cwd / (name + "-d")).mkdir()
            os.symlink(name + "-d", p)
        elif kind == "sparse":
            with open(p, "wb") as fh:
                fh.truncate(65 * 1024 * 1024)
        elif kind == "control_name":
            name = f"a\nb\x1b[31m{name}{suffix}"
            p = self.cwd / name
            p.write_text("{}")
        elif kind == "long":
            return self._note("x" * 5000, "a name longer than NAME_MAX")
        elif kind == "deep_missing":
            return self._note("a/" * 2000 + "x", "a path 4,000 characters deep")
        elif kind == "binary":
            p.write_bytes(self.draw(st.binary(min_size=1, max_size=4096)))
        if kind not in ("empty", "binary", "control_name", "sparse"):
            self.case.specials[str(p)] = file_type(p)
        return self._note(name, kind)

    def damaged(self, fmt: str, source: Path, target: Path) -> None:
        """``source`` copied to ``target``, damaged by a mutation of its format."""
        content = source.read_bytes()
        if fmt == "ledger":
            if source != target:
                shutil.copy(source, target)
            self._note(str(target.relative_to(self.cwd)), "ledger: " + mutate.ledger(self.draw, target))
            return
        if fmt in ("profile", "inventory_yaml"):
            new = mutate.yaml_file(self.draw, content)
        elif fmt == "csv":
            new = mutate.csv_file(self.draw, content)
        elif fmt == "text":
            new = mutate.raw(self.draw, content)
        else:
            new = mutate.json_file(self.draw, content)
        target.write_bytes(new)
        self._note(str(target.relative_to(self.cwd)), f"{source.name} damaged ({len(new)} bytes): {new[:200]!r}")

    def file(self, formats: list[str], damaged: bool) -> str:
        """A copy of a corpus file of one of ``formats``, damaged or whole."""
        fmt = self.draw(st.sampled_from(formats))
        source = self.draw(st.sampled_from(self.corpus.of(fmt)))
        name = self._name(source.suffix)
        if damaged:
            self.damaged(fmt, source, self.cwd / name)
        else:
            shutil.copy(source, self.cwd / name)
        return name

    def campaign_dir(self, hostile: bool, existing: bool) -> str:
        if not hostile:
            how = "copy" if existing else self.draw(st.sampled_from(["fresh", "fresh", "copy"]))
        else:
            how = self.draw(st.sampled_from(["damaged", "damaged", "damaged", "special"]))
        if how == "special":
            return self.special()
        name = self._name("-campaign")
        if how == "fresh":
            return self._note(name, "a new campaign directory")
        target = self.cwd / name
        shutil.copytree(self.corpus.campaign, target)
        victim = self.draw(st.sampled_from(["ledger", "ledger", "ledger", "plan", "exploration", "metrics"])) \
            if how == "damaged" else "none"
        if victim == "ledger":
            self.damaged("ledger", target / "ledger.sqlite", target / "ledger.sqlite")
        elif victim != "none":
            f = {"plan": "plan.json", "exploration": "exploration.json", "metrics": "single-task-metrics.json"}[victim]
            self.damaged(victim, target / f, target / f)
        return self._note(name, f"a copy of the corpus campaign ({victim} damaged or copied)")

    def inventory(self, hostile: bool) -> str:
        if hostile and self.draw(st.integers(0, 4)) == 0:
            return self.special()
        target = self.cwd / "inventories" / self._name()
        shutil.copytree(self.corpus.inventory, target)
        if not hostile:
            return str(target.relative_to(self.cwd))
        victim = self.draw(st.sampled_from(["testbed.yml", "testbed.yml", "hosts.yml", "group_vars/all.yml", "remove"]))
        if victim == "remove":
            gone = self.draw(st.sampled_from(["testbed.yml", "hosts.yml", "group_vars/all.yml"]))
            (target / gone).unlink()
            self._note(str(target.relative_to(self.cwd)), f"inventory without {gone}")
        else:
            self.damaged("inventory_yaml", target / victim, target / victim)
        return str(target.relative_to(self.cwd))

    def lake(self, hostile: bool) -> str:
        if hostile and self.draw(st.integers(0, 4)) == 0:
            return self.special()
        name = self.draw(st.sampled_from(["datalake", self._name("-lake")]))
        target = self.cwd / name
        if not target.exists():
            shutil.copytree(self.corpus.lake, target)
            if hostile:
                manifest = target / DATASET / "dataset.json"
                self.damaged("manifest", manifest, manifest)
        return name

    def output(self, hostile: bool) -> str:
        if not hostile:
            return self._note(self._name(self.draw(st.sampled_from([".html", ".csv", "", "/"]))), "a new path")
        if self.draw(st.booleans()):
            p = self.cwd / self._name(".html")
            p.write_text("existing")
            return self._note(p.name, "an existing regular file")
        return self.special(self.draw(st.sampled_from(["dir", "fifo", "null", "full", "zero", "loop", "dangling",
                                                       "link_outside", "link_outside_dir", "link_to_dir",
                                                       "control_name", "long", "deep_missing"])))

    def profile(self, hostile: bool) -> str:
        how = self.draw(st.sampled_from(["file", "shadow", "text"] if hostile else ["name", "name", "copy"]))
        if how == "copy":
            return self.file(["profile"], damaged=False)
        if how == "name":
            return self.draw(st.sampled_from(PROFILE_NAMES))
        if how == "shadow":  # a file of a shipped profile's name in the working directory
            name = self.draw(st.sampled_from(PROFILE_NAMES))
            if not (self.cwd / name).exists():
                (self.cwd / name).write_text("not: [a, profile\n")
                self._note(name, "a file named like a shipped profile")
            return name
        if how == "text":
            return self.draw(st.sampled_from(HOSTILE_TEXT))
        return self.file(["profile"], damaged=True)

    # -- values -------------------------------------------------------------------------------------------------

    def hostile(self, kind: str) -> str:
        numeric = kind in VALID and VALID[kind][0][:1].isdigit()
        pool = HOSTILE_NUMBERS if numeric else HOSTILE_TEXT
        return self.draw(st.one_of(st.sampled_from(pool), mutate.hostile_strings.filter(lambda s: "\x00" not in s)))

    def value(self, opt: Option, cmd: Command, hostile: bool) -> str:
        """A value for ``opt``: what a user would type, or (``hostile``) something spoiled: a malformed
        value, a damaged file, a special path."""
        kind = opt.kind
        if kind == "choice":
            return self.hostile("text") if hostile else self.draw(st.sampled_from(list(opt.choices)))
        files = {
            "profile_file": ["profile"],
            "records": ["metrics", "exploration", "csv", "ledger"],
            "path_plan": ["plan"],
            "path_var_file": ["text"],
        }
        if kind in files:
            if hostile and self.draw(st.integers(0, 3)) == 0:
                return self.special() if self.draw(st.booleans()) else self.hostile("text")
            formats = files[kind] if not hostile or self.draw(st.integers(0, 4)) else \
                ["metrics", "exploration", "csv", "plan", "profile", "manifest"]  # a file of another kind
            return self.file(formats, damaged=hostile)
        makers = {
            "profile": lambda: self.profile(hostile),
            "campaign_dir": lambda: self.campaign_dir(hostile, existing=cmd.path[0] in (
                "export", "ledger", "report", "analytics") or "--resume" in self.case.argv),
            "out": lambda: self.output(hostile),
            "path_dest": lambda: self.output(hostile),
            "path_inventory": lambda: self.inventory(hostile),
            "path_checkpoint_inventory": lambda: self.inventory(hostile),
            "path_lake": lambda: self.lake(hostile),
            "path_queries_dir": lambda: self.special() if hostile else str(self.corpus.queries),
            "path_path": lambda: self.lake(hostile) + "/" + DATASET + "/json",
            "input": lambda: self.draw(st.sampled_from(["../" + DATASET, "nope", "generator/..", "."]
                                                       if hostile else ["generator", DATASET,
                                                                        self.lake(False) + "/" + DATASET])),
        }
        if kind in makers:
            if hostile and kind not in ("profile", "campaign_dir", "out", "path_dest") and \
                    self.draw(st.integers(0, 4)) == 0:
                return self.hostile("text")
            return makers[kind]()
        if hostile or kind not in VALID:  # a kind this fuzz does not know yet is still fuzzed
            return self.hostile(kind)
        return self.draw(st.sampled_from(VALID[kind]))

    # -- the invocation -----------------------------------------------------------------------------------------

    def resume(self) -> Case:
        """The corpus campaign's own plan, resumed on a damaged copy of its directory: the same parameters,
        so the resume reaches the damaged rows instead of stopping at a changed parameter."""
        argv = list(PLAN_ARGV)
        i = argv.index("--campaign-dir")
        argv[i + 1] = self.campaign_dir(hostile=True, existing=True)
        argv.append("--resume")
        for flag in ("--json", "--quiet"):
            if self.draw(st.booleans()):
                argv.append(flag)
        self.case.argv += argv
        return self.case

    def build(self, commands: list[Command]) -> Case:
        """A command with its required options and some optional ones, all valid but for 0 to 3 spoiled
        places (an option's value or a file it names): mostly one, so that the spoiled place is what the
        command meets, not an earlier refusal of something else."""
        if self.draw(st.integers(0, 7)) == 0:
            return self.resume()
        cmd = self.draw(st.sampled_from(commands))
        if cmd.name in SLOW and self.draw(st.integers(0, 9)):
            cmd = self.draw(st.sampled_from([c for c in commands if c.name not in SLOW]))
        argv = self.case.argv
        argv += cmd.path
        if cmd.option("resume") and self.draw(st.integers(0, 3)) == 0:
            argv.append("--resume")
        chosen = []
        for opt in cmd.options:
            if opt.dest == "resume":
                continue
            if opt.kind == "flag":
                if self.draw(st.integers(0, 9)) < (5 if opt.dest in ("json", "quiet") else 2):
                    argv.append(opt.flag)
            elif opt.dest in BOUNDED or opt.required or (cmd.name in SLOW and opt.dest == "profiles"):
                # (a missing required option is one of the spoils below)
                chosen.append(opt)
            elif self.draw(st.integers(0, 9)) < 3:
                chosen.append(opt)
        spoils = self.draw(st.sampled_from([0, 1, 1, 1, 1, 2, 3]))
        hostile = set(self.draw(st.permutations(range(len(chosen))))[:spoils]) if chosen else set()
        for i, opt in enumerate(chosen):
            if i in hostile and opt.required and self.draw(st.integers(0, 9)) == 0:
                continue  # left out
            if cmd.name == "sim calibrate" and opt.dest == "profiles":  # one profile: see SLOW
                argv += [opt.flag, self.draw(st.sampled_from(HOSTILE_TEXT if i in hostile else PROFILE_NAMES))]
                continue
            if opt.dest == "testbed" and i not in hostile:
                argv += [opt.flag, "sim"]
                continue
            n = self.draw(st.integers(1, 3)) if opt.many else 1
            values = [self.value(opt, cmd, i in hostile) for _ in range(n)]
            argv += ([opt.flag] if opt.flag else []) + values
        extra = self.draw(st.integers(0, 39))
        if extra == 0:
            argv.append(self.draw(st.sampled_from(["--no-such-option", "-x", "--rate=", "extra-positional"])))
        elif extra == 1:  # an option given twice
            opts = [a for a in argv if a.startswith("--") and a not in ("--json", "--quiet", "--resume")]
            if opts:
                argv += [self.draw(st.sampled_from(opts)), self.hostile("text")]
        return self.case

"""Every ``streambed`` command and its options, read from the CLI's own parser.

Walking ``cli.build_parser()`` instead of listing commands by hand means a new command or option is
fuzzed the day it is registered. Each option gets a *kind*: the name of its argparse type function
(``rate``, ``slots``, ``Path``...), ``flag`` for a switch, ``choice`` for a fixed set, or, for a
plain string, what its destination says it holds (``query``, ``campaign_dir``...).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from streambed import cli

TEXT_KINDS = {
    "query": "query", "profile": "profile", "testbed": "testbed", "timing": "timing", "policy": "policy",
    "input": "input", "measurements": "records", "from_metrics": "records", "campaign_dir": "campaign_dir",
    "out": "out", "file": "profile_file", "env": "env", "bootstrap": "address", "bootstrap_server": "address",
    "host": "host", "topic": "name", "name": "name", "master": "master", "formats": "formats", "kind": "name",
    "time_column": "name", "grafana_url": "url", "path": "out",
}
"""Kinds of the options without a type function, by destination; any other is plain ``text``."""


@dataclass(frozen=True)
class Option:
    flag: str
    """'--rate', or '' for a positional argument."""
    dest: str
    kind: str
    required: bool
    choices: tuple[str, ...] = ()
    many: bool = False
    """Takes one or more values (nargs '+')."""


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]
    options: tuple[Option, ...]

    @property
    def name(self) -> str:
        return " ".join(self.path)

    def option(self, dest: str) -> Option | None:
        return next((o for o in self.options if o.dest == dest), None)


def _kind(action: argparse.Action) -> str:
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return "flag"
    if action.choices:
        return "choice"
    if action.type is not None:
        name = getattr(action.type, "__name__", type(action.type).__name__)
        # an option typed Path still holds a particular kind of file or directory: its destination says which
        return TEXT_KINDS.get(action.dest, name) if name == "Path" and action.dest in ("campaign_dir", "out") \
            else ("path_" + action.dest if name == "Path" else name)
    return TEXT_KINDS.get(action.dest, "text")


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> list[Command]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subs:
        found = []
        for name, child in subs[0].choices.items():
            found += _walk(child, path + (name,))
        return found
    options = []
    for a in parser._actions:
        if isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
            continue
        options.append(Option(a.option_strings[-1] if a.option_strings else "", a.dest, _kind(a),
                              bool(a.required or not a.option_strings),
                              tuple(str(c) for c in a.choices) if a.choices else (), a.nargs in ("+", "*")))
    return [Command(path, tuple(options))]


def commands() -> list[Command]:
    """Every leaf command of ``streambed`` (``sim run``, ``plan``, ``ledger verify``...)."""
    return _walk(cli.build_parser(), ())

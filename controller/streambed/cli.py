"""The ``streambed`` command: argument parsing and dispatch (implementations in commands/).

Every command that produces results accepts ``--json`` (the result as one JSON document on stdout,
progress on stderr). Bad input ends with one line naming the field and what is expected, exit
status 2, and no traceback.
"""

from __future__ import annotations

import sys
from typing import Sequence

from . import __version__
from .checks import shown
from .commands import (analytics, compare, data, estimate, explore, infra, ledger, measure, nodes, optimize, plan, records,
                       report, sim, testbed, validate)
from .commands.args import Parser
from .errors import StreamBedError
from .extras import missing_extra
from .report.console import Output

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130

COMMANDS = (sim, measure, estimate, optimize, explore, plan, validate, records, testbed, infra, ledger, data, analytics,
            nodes, report, compare)
"""Each command module registers its subcommands (parser and handler); a new command is one module here."""


def build_parser() -> Parser:
    p = Parser(prog="streambed", description="Capacity planning for stream processing (StreamBed).")
    p.add_argument("--version", action="version", version=f"streambed {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.register(sub)
    return p


def _file_error(e: OSError | UnicodeDecodeError) -> str:
    """'<filename>: <strerror>' of a file-system error, on one line."""
    if isinstance(e, UnicodeDecodeError):
        return f"a file is not UTF-8 text ({e.reason} at byte {e.start})"
    what = e.strerror or str(e) or type(e).__name__
    if e.filename is not None and e.filename2 is not None:
        return f"{e.filename} -> {e.filename2}: {what}"
    return f"{e.filename}: {what}" if e.filename is not None else what


def _feature(args) -> str:
    """'streambed <command> [<subcommand>]' of the parsed arguments."""
    if args is None:
        return "streambed"
    sub = getattr(args, f"{args.command}_command", None)
    return " ".join(["streambed", args.command] + ([sub] if sub else []))


def main(argv: Sequence[str] | None = None) -> int:
    json_mode = "--json" in (argv if argv is not None else sys.argv[1:])
    out = Output(json_mode=json_mode)
    args = None
    try:
        args = build_parser().parse_args(argv)
        out = Output(json_mode=getattr(args, "json", False), quiet=getattr(args, "quiet", False))
        args.func(args, out)
        return 0
    except StreamBedError as e:
        out.err.print(f"streambed: error: {shown(e)}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_USER_ERROR
    except ModuleNotFoundError as e:
        # An optional part (an extra of pyproject.toml) not installed: say which, in one line.
        missing = missing_extra(_feature(args), e)
        if missing is None:
            raise
        out.err.print(f"streambed: error: {shown(missing)}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_USER_ERROR
    except (OSError, UnicodeDecodeError) as e:
        # Last safety net: the commands name the option of every file they know to check; a file-system
        # error that still gets here is shown as one line, never as a traceback.
        out.err.print(f"streambed: error: {shown(_file_error(e))}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        out.err.print("streambed: interrupted; finished measurements are in the ledger, continue with --resume",
                      markup=False)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())

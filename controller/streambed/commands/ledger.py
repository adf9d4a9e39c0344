"""``streambed ledger verify``: whether a campaign's ledger is whole, and what survives when it is not
(ledger.verify does the work; this parses and displays)."""

from __future__ import annotations

from ..errors import UserError
from ..report.console import Output
from .args import Parser
from .common import output_options


def register(sub) -> None:
    sp = sub.add_parser("ledger", help="a campaign's ledger: check it")
    lsub = sp.add_subparsers(dest="ledger_command", required=True, parser_class=Parser)
    verify = lsub.add_parser("verify", help="check a campaign's ledger: SQLite's integrity check, then every "
                                            "step, event and result read back")
    verify.add_argument("--campaign-dir", required=True, help="the campaign directory (or its ledger.sqlite)")
    output_options(verify)
    verify.set_defaults(func=cmd_verify)


def cmd_verify(args, out: Output) -> None:
    from ..ledger import verify

    try:
        report = verify(args.campaign_dir)
    except UserError as e:
        # --json: one document on stdout whatever happens; the error line still goes to stderr (exit 2)
        out.result({"path": str(args.campaign_dir), "intact": False, "error": str(e)})
        raise

    def count(n: int, what: str) -> str:
        return f"{n:,} {what}{'' if n == 1 else 's'}"

    summary = f"{count(report['steps'], 'step')}, {count(report['events'], 'event')}, " \
              f"{'a result' if report['result'] else 'no result'}"
    unchecked = f"; {count(report['unchecked'], 'row')} written before checksums existed, unchecked" \
        if report["unchecked"] else ""
    out.result(report)
    if not report["intact"]:
        raise UserError(f"{report['path']}: {report['damage'][0]}; readable: {summary}{unchecked}. Resume refuses it: "
                        f"start the campaign again in a new --campaign-dir")
    out.info(f"{report['path']}: a whole {report['kind']} ledger: {summary}{unchecked}")

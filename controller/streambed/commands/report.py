"""``streambed report``: a campaign's report page, one self-contained HTML file (report/html.py does
the work; this parses and displays)."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..report.console import Output
from .common import output_options


def register(sub) -> None:
    sp = sub.add_parser("report", help="write a campaign's report page: one self-contained HTML file (plan, model, "
                                       "estimator trace, busyness, validation runs)")
    sp.add_argument("--campaign-dir", required=True, type=Path,
                    help="the directory of a plan, explore, estimate or validate campaign")
    sp.add_argument("--out", type=Path, help="the page to write (default: report.html in the campaign directory)")
    sp.add_argument("--plan", type=Path, help="validate campaigns: the plan.json they ran, shown with its risk")
    output_options(sp)
    sp.set_defaults(func=cmd_report)


def cmd_report(args, out: Output) -> None:
    from ..files import check_target, write_text
    from ..records import read_plan
    from ..report.html import REPORT_FILE, load, render

    if args.out:  # refused before the campaign is read and the page rendered
        try:
            check_target(args.out)
        except UserError as e:
            raise UserError(f"--out: {e}") from None
    campaign = load(args.campaign_dir, read_plan(args.plan).to_dict() if args.plan else None)
    path = args.out or campaign.directory / REPORT_FILE
    page = render(campaign)
    try:
        write_text(path, page)
    except (OSError, UserError) as e:
        raise UserError(f"{'--out' if args.out else '--campaign-dir'}: {e}") from None
    out.info(f"written: {path}")
    out.result({"report": str(path)})

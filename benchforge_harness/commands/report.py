"""`report`: rebuild report.md / report.html / charts from a results.json (after editing nothing else)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchforge_harness.commands import common
from benchforge_harness.io import InputError
from benchforge_harness.report import write_report

NAME = "report"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        NAME,
        help="rebuild the Markdown/HTML report of a finished run",
        description="Rewrite report.md, report.html and charts/ next to a results.json written by any scoring "
        "command, without calling a model.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("results", metavar="RESULTS_JSON", help="results.json of a judge/pairwise/touchstone/... run")
    parser.set_defaults(run=run)


def run(args) -> int:
    path = Path(args.results)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    from benchforge_harness.commands import report_builders  # the registry imports this module

    builder = report_builders().get(results.get("command") if isinstance(results, dict) else None)
    if builder is None:
        raise InputError(f"{path}: not a harness results file (no known 'command' field)")
    write_report(path.parent, builder(results))
    common.say(f"report: wrote {path.parent / 'report.md'} and {path.parent / 'report.html'}")
    return 0

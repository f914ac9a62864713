"""The CLI commands: each parses its options, runs a scoring mode and writes a report.

Each command module has NAME, add_parser(subparsers) and run(args) -> exit status. The scoring
commands are the registry's modes that have a command (harness.scoring.MODES): one module per
mode, named after its command; `report` rebuilds a report with the mode's own builder. COMMANDS
is the one list both cli.py and `report` read.
"""

import importlib

from harness.commands import infer, report, verify
from harness.scoring import MODES

COMMANDS = {
    infer.NAME: infer,
    **{m.command: importlib.import_module(f"harness.commands.{m.command}") for m in MODES.values() if m.command},
    report.NAME: report,
    verify.NAME: verify,
}


def report_builders() -> dict:
    """results.json "command" -> the function that turns its results into a Report."""
    return {m.command: m.build_report for m in MODES.values() if m.command and m.report}

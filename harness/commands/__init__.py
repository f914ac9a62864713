"""The CLI commands: each parses its options, calls the scoring library and writes a report.

Each command module has NAME, add_parser(subparsers) and run(args) -> exit status; scoring
commands also have build_report(results) -> Report, which `report` uses to rebuild a report.
COMMANDS is the one registry both cli.py and `report` read.
"""

from harness.commands import agreement, hallucination, infer, judge, mcq, pairwise, report, touchstone, verify

COMMANDS = {module.NAME: module for module in (infer, mcq, judge, pairwise, touchstone, hallucination, agreement, report, verify)}


def report_builders() -> dict:
    """results.json "command" -> the function that turns its results into a Report."""
    return {name: module.build_report for name, module in COMMANDS.items() if hasattr(module, "build_report")}

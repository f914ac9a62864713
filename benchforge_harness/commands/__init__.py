"""The CLI commands: each parses its options, runs a scoring mode and writes a report.

Each command module has NAME, add_parser(subparsers) and run(args) -> exit status. The scoring
commands are the registry's modes that have a command (benchforge_harness.scoring.MODES): one module per
mode, named after its command; `report` rebuilds a report with the mode's own builder. COMMANDS
is the one list both cli.py and `report` read.
"""

from benchforge_harness.commands import (
    agreement,
    estimate,
    hallucination,
    infer,
    judge,
    mcq,
    pairwise,
    report,
    submit,
    touchstone,
    verify,
)

# One module per registered mode that has a command, in the registry's order; each has its
# report builder (results -> Report), which `report` reads again from results.json's "command".
SCORING = (judge, pairwise, mcq, touchstone, hallucination, agreement)
REPORT_BUILDERS = {module.NAME: module.build_report for module in SCORING}

COMMANDS = {
    infer.NAME: infer,
    **{module.NAME: module for module in SCORING},
    report.NAME: report,
    estimate.NAME: estimate,
    verify.NAME: verify,
    submit.NAME: submit,
}


def report_builders() -> dict:
    """results.json "command" -> the function that turns its results into a Report."""
    return dict(REPORT_BUILDERS)

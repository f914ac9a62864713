"""`hallucination`: 0-10 degree of hallucination judged from the human image description."""

from __future__ import annotations

from benchforge_harness import charts
from benchforge_harness.commands.judging import JudgeCommand, per_category_means
from benchforge_harness.report import Chart, Report, Section, Table

NAME = "hallucination"

DESCRIPTION = """\
Rate from 0 to 10 how much of each answer's content about the image is absent from, or
contradicted by, the human-written image description (0 = fully supported; lower is better).
The judge reads the description instead of the image. Needs items with a description.
Unreadable judge replies are re-asked, then counted as unparsed and left out of the mean.
"""


def build_report(results: dict) -> Report:
    models = results["models"]
    report = Report(
        title=f"Hallucination: {results['release']}",
        intro=[
            (
                f"{results['items']} questions with an image description. 0 = everything the answer says about the "
                "image is supported by the description, 10 = nearly all of it is made up; lower is better."
            ),
        ],
    )
    report.sections.append(
        Section(
            "Overview",
            [
                Table(
                    ["model", "mean (0-10, lower is better)", "scored", "unparsed", "errors", "no answer"],
                    [[n, m["mean"], m["scored"], m["unparsed"], m["errors"], m["no_answer"]] for n, m in models.items()],
                ),
                Chart("hallucination", charts.bars({n: m["mean"] for n, m in models.items()}, 10, "Mean hallucination degree")),
            ],
        )
    )
    report.sections.append(per_category_means(models))
    return report


COMMAND = JudgeCommand(
    "hallucination",
    "0-10 hallucination degree from the image description",
    DESCRIPTION,
    template="hallucination",
    report=build_report,
)
add_parser = COMMAND.add_parser
run = COMMAND.run

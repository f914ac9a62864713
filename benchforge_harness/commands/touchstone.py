"""`touchstone`: both answers scored 1-10 from the image description, positions swapped and averaged."""

from __future__ import annotations

from benchforge_harness import charts
from benchforge_harness.commands.judging import JudgeCommand
from benchforge_harness.report import Chart, Report, Section, Table

NAME = "touchstone"

DESCRIPTION = """\
TouchStone-style scoring. The judge never sees the image: it reads the human-written image
description, the question, the model's answer and the release's reference answer, and scores
both from 1 to 10 (helpfulness, relevance, accuracy, completeness), the two scores on its first
line. Each question is judged twice with the two answers' positions swapped; a question's
score is the mean of the two. A model's score is the mean over questions (x100 as in the paper
is shown too). Needs items with a description and a reference answer. A question whose scores
could not be read in either position is left out of the mean and counted as unparsed.
"""


def build_report(results: dict) -> Report:
    models = results["models"]
    report = Report(
        title=f"TouchStone scoring: {results['release']}",
        intro=[
            (
                f"{results['items']} questions with an image description and a reference answer; each judged twice "
                "with positions swapped, scores averaged. Unreadable judge replies are counted, not averaged."
            ),
        ],
    )
    report.sections.append(
        Section(
            "Overview",
            [
                Table(
                    ["model", "score (1-10)", "score x100", "reference score", "scored", "unparsed", "errors", "no answer"],
                    [
                        [
                            n,
                            m["score"],
                            m["score_x100"],
                            m["reference_score"],
                            m["scored"],
                            m["unparsed"],
                            m["errors"],
                            m["no_answer"],
                        ]
                        for n, m in models.items()
                    ],
                )
            ],
        )
    )
    categories = list(dict.fromkeys(c for m in models.values() for c in m["by_category"]))
    series = {n: {c: m["by_category"].get(c, {}).get("mean") for c in categories} for n, m in models.items()}
    report.sections.append(
        Section(
            "Per category",
            [
                Chart("radar_categories", charts.radar(series, categories, 10, "Mean score per category")),
                Table(["category"] + list(models), [[c] + [series[n][c] for n in models] for c in categories]),
            ],
        )
    )
    return report


COMMAND = JudgeCommand(
    "touchstone",
    "description-based scoring against the reference answer",
    DESCRIPTION,
    template="touchstone",
    report=build_report,
)
add_parser = COMMAND.add_parser
run = COMMAND.run

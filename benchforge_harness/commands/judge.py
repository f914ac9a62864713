"""`judge`: pointwise 1-10 grades against the reference answer, per task/category, plus alignment."""

from __future__ import annotations

from benchforge_harness import charts
from benchforge_harness.commands import common
from benchforge_harness.commands.judging import JudgeCommand, Prepared, per_category_means
from benchforge_harness.io import InputError
from benchforge_harness.report import Chart, Report, Section, Table, number

NAME = "judge"

DESCRIPTION = """\
Grade each model answer from 1 to 10 with a judge model that sees the question, its type, any
earlier turns, the reference answer and the answer, but not the image. The general rubric and
the task rules (counting, OCR, reasoning, writing, meme, multi-turn) live in benchforge_harness/prompts/.
Reports the mean grade per task, per category and overall, and the alignment score over seed
groups (a seed and its rewrites): N / sum of each group's population standard deviation.
Replies that cannot be read are re-asked, then counted as "unparsed" and listed; they are not
part of the means, and the report says how many there were.
"""


def prepare(args, release, prompts, answers, client) -> Prepared:
    """Only open questions with a reference answer can be graded (the command has said why the
    others are left out); with none, nothing is scored."""
    items = [item for item in release.items if not item.is_mcq and item.reference_answer]
    if not items:
        raise InputError(
            f"{NAME}: no open question of {release.name} has a reference answer to judge against; nothing was scored"
        )
    return Prepared(
        settings={"rules": common.rules_fingerprint(prompts, release, {i.task for i in items})},
        options={"rules": common.release_rules(release)},
    )


def build_report(results: dict) -> Report:
    models = results["models"]
    report = Report(
        title=f"Pointwise judging: {results['release']}",
        intro=[
            f"{results['items']} open questions with a reference answer, graded 1-10 by the judge"
            + (
                f" ({results['skipped_without_reference']} without a reference were skipped)"
                if results.get("skipped_without_reference")
                else ""
            )
            + ". "
            "Means leave out unreadable judge replies (counted in 'unparsed') and answers the model never gave "
            "('no answer'); alignment = number of seed groups / sum of their score standard deviations "
            "(groups of one question are left out).",
        ],
    )
    overview = Table(
        ["model", "mean", "alignment", "groups", "judged", "unparsed", "errors", "no answer"],
        [
            [
                name,
                number(m["mean"]),
                number(m["alignment"]["score"]),
                m["alignment"]["groups"],
                m["judged"],
                m["unparsed"],
                m["errors"],
                m["no_answer"],
            ]
            for name, m in models.items()
        ],
    )
    points = {name: (number(m["mean"]), number(m["alignment"]["score"])) for name, m in models.items()}
    report.sections.append(
        Section(
            "Overview",
            [
                overview,
                Chart(
                    "quadrant",
                    charts.quadrant(points, "Average score vs alignment", "average score (1-10)", "alignment score"),
                    "Dashed lines: means over the models; top right is high-scoring and consistent.",
                ),
            ],
        )
    )
    tasks = list(dict.fromkeys(t for m in models.values() for t in m["by_task"]))
    series = {name: {t: m["by_task"].get(t, {}).get("mean") for t in tasks} for name, m in models.items()}
    report.sections.append(
        Section(
            "Per task",
            [
                Chart("radar_tasks", charts.radar(series, tasks, 10, "Mean score per task")),
                Table(["task"] + list(models), [[t] + [series[name][t] for name in models] for t in tasks]),
            ],
        )
    )
    report.sections.append(per_category_means(models))
    problems = [f"{name}: unparsed {', '.join(m['unparsed_ids'][:20])}" for name, m in models.items() if m["unparsed_ids"]]
    problems += [
        f"{name}: judge call failed for {', '.join(m['error_ids'][:20])} (rerun to retry)"
        for name, m in models.items()
        if m["error_ids"]
    ]
    if problems:
        report.sections.append(Section("Problems", problems))
    return report


COMMAND = JudgeCommand(
    "pointwise",
    "pointwise 1-10 judging and the alignment score",
    DESCRIPTION,
    template="pointwise",
    report=build_report,
    prepare=prepare,
)
add_parser = COMMAND.add_parser
run = COMMAND.run

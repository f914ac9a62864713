"""`judge`: pointwise 1-10 grades against the reference answer, per task/category, plus alignment."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import charts
from harness.commands import common
from harness.io import InputError
from harness.prompts import Prompts
from harness.release import load_release
from harness.report import Chart, Report, Section, Table, json_safe, number
from harness.runner import SampleLog
from harness.scoring.judges import pointwise_judge

NAME = "judge"

DESCRIPTION = """\
Grade each model answer from 1 to 10 with a judge model that sees the question, its type, any
earlier turns, the reference answer and the answer, but not the image. The general rubric and
the task rules (counting, OCR, reasoning, writing, meme, multi-turn) live in harness/prompts/.
Reports the mean grade per task, per category and overall, and the alignment score over seed
groups (a seed and its rewrites): N / sum of each group's population standard deviation.
Replies that cannot be read are re-asked, then counted as "unparsed" and listed; they are not
part of the means, and the report says how many there were.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        NAME,
        help="pointwise 1-10 judging and the alignment score",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_release_option(parser)
    common.add_llm_options(parser)
    common.add_judge_option(parser)
    common.add_predictions_option(parser)
    common.add_run_options(parser, "results/judge")
    parser.set_defaults(run=run)


def run(args) -> int:
    release = load_release(args.release)
    prompts = Prompts(args.prompts)
    predictions = common.load_all_predictions(args.predictions, release)
    client = common.ready_client(args, [args.judge])
    items = [item for item in release.items if not item.is_mcq and item.reference_answer]
    unscorable = [item for item in release.items if not item.is_mcq and not item.reference_answer]
    if unscorable:
        common.say(f"{NAME}: {len(unscorable)} open question(s) cannot be scored: {no_reference_reason(release, unscorable)}")
    if not items:
        raise InputError(
            f"{NAME}: no open question of {release.name} has a reference answer to judge against; nothing was scored"
        )
    out = Path(args.out)
    common.require_same_settings(
        out,
        {
            "command": NAME,
            "judge": common.endpoint_identity(client.endpoints[args.judge]),
            "template": prompts.get("pointwise").sha256,
            "retry": prompts.get("retry_pointwise").sha256,
            "rules": common.rules_fingerprint(prompts, release, {i.task for i in items}),
            "parse_retries": args.parse_retries,
        },
        args.restart,
    )
    log = SampleLog(out / "samples.jsonl")
    scored = pointwise_judge(
        client,
        args.judge,
        release.items,
        common.answers_of(predictions),
        sink=log,
        prompts=prompts,
        rules=common.release_rules(release),
        parse_retries=args.parse_retries,
        **common.run_options(args),
    )
    log.compact(scored.rows)
    results = {**scored.results, "release": release.name, "run": common.run_section(scored.stats, client, args.judge, "judge")}
    stats = scored.stats
    return common.finish(
        NAME,
        out,
        results,
        build_report(json_safe(results)),
        common.failed_rows(scored.rows.values()),
        f"{stats.sent} judged this run ({stats.cached} from the cache), {stats.skipped} already done, "
        f"{stats.usage.get('calls', 0)} judge calls",
    )


def no_reference_reason(release, items) -> str:
    """Why these open questions have no reference answer, and where their scores come from instead."""
    splits = sorted({item.split or "unsplit" for item in items})
    where = f" ({', '.join(splits)} split)" if splits != ["unsplit"] else ""
    if release.manifest.get("variant") == "public" and release.manifest.get("withheld"):
        return (
            f"this public bundle withholds their reference answers{where}. Score them on the benchmark's "
            "leaderboard, or with the private bundle."
        )
    return f"they have no reference answer{where}."


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
    categories = list(dict.fromkeys(c for m in models.values() for c in m["by_category"]))
    report.sections.append(
        Section(
            "Per category",
            [
                Table(
                    ["category"] + list(models),
                    [[c] + [models[name]["by_category"].get(c, {}).get("mean") for name in models] for c in categories],
                )
            ],
        )
    )
    problems = [f"{name}: unparsed {', '.join(m['unparsed_ids'][:20])}" for name, m in models.items() if m["unparsed_ids"]]
    problems += [
        f"{name}: judge call failed for {', '.join(m['error_ids'][:20])} (rerun to retry)"
        for name, m in models.items()
        if m["error_ids"]
    ]
    if problems:
        report.sections.append(Section("Problems", problems))
    return report

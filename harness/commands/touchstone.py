"""`touchstone`: both answers scored 1-10 from the image description, positions swapped and averaged."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import charts
from harness.commands import common
from harness.prompts import Prompts
from harness.release import load_release
from harness.report import Chart, Report, Section, Table, json_safe
from harness.runner import SampleLog
from harness.scoring.judges import touchstone_judge

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


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        NAME,
        help="description-based scoring against the reference answer",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_release_option(parser)
    common.add_llm_options(parser)
    common.add_judge_option(parser)
    common.add_predictions_option(parser)
    common.add_run_options(parser, "results/touchstone")
    parser.set_defaults(run=run)


def run(args) -> int:
    release = load_release(args.release)
    prompts = Prompts(args.prompts)
    predictions = common.load_all_predictions(args.predictions, release)
    client = common.ready_client(args, [args.judge])
    out = Path(args.out)
    common.require_same_settings(
        out,
        {
            "command": NAME,
            "judge": common.endpoint_identity(client.endpoints[args.judge]),
            "template": prompts.get("touchstone").sha256,
            "retry": prompts.get("retry_touchstone").sha256,
            "parse_retries": args.parse_retries,
        },
        args.restart,
    )
    log = SampleLog(out / "samples.jsonl")
    scored = touchstone_judge(
        client,
        args.judge,
        release.items,
        common.answers_of(predictions),
        sink=log,
        prompts=prompts,
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

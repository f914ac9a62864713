"""`hallucination`: 0-10 degree of hallucination judged from the human image description."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import charts
from harness.commands import common
from harness.prompts import Prompts
from harness.release import load_release
from harness.report import Chart, Report, Section, Table, json_safe
from harness.runner import SampleLog
from harness.scoring.judges import hallucination_judge

NAME = "hallucination"

DESCRIPTION = """\
Rate from 0 to 10 how much of each answer's content about the image is absent from, or
contradicted by, the human-written image description (0 = fully supported; lower is better).
The judge reads the description instead of the image. Needs items with a description.
Unreadable judge replies are re-asked, then counted as unparsed and left out of the mean.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        NAME,
        help="0-10 hallucination degree from the image description",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_release_option(parser)
    common.add_llm_options(parser)
    common.add_judge_option(parser)
    common.add_predictions_option(parser)
    common.add_run_options(parser, "results/hallucination")
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
            "template": prompts.get("hallucination").sha256,
            "retry": prompts.get("retry_hallucination").sha256,
            "parse_retries": args.parse_retries,
        },
        args.restart,
    )
    log = SampleLog(out / "samples.jsonl")
    scored = hallucination_judge(
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
    categories = list(dict.fromkeys(c for m in models.values() for c in m["by_category"]))
    report.sections.append(
        Section(
            "Per category",
            [
                Table(
                    ["category"] + list(models),
                    [[c] + [models[n]["by_category"].get(c, {}).get("mean") for n in models] for c in categories],
                )
            ],
        )
    )
    return report

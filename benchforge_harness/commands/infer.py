"""`infer`: run a model under test over the release's open questions and write its predictions."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchforge_harness.calls import SampleLog
from benchforge_harness.commands import common
from benchforge_harness.io import InputError
from benchforge_harness.release import load_release
from benchforge_harness.scoring.answers import answer_questions
from benchforge_harness.scoring.modes import open_question

NAME = "infer"

DESCRIPTION = """\
Ask a model (an endpoint from the models file) every open question of the release: earlier
turns of a multi-turn item are sent as the conversation history, the images go inline with the
first user turn, and the question is the last user turn. Multiple-choice items are left to
`mcq`. Answers are appended to the predictions JSONL as they arrive ({"id", "model",
"answer", "error"}); a failed call is recorded with answer null and its error, not fatal. Run
the same command again to resume: finished answers are kept, failed ones are asked again.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        NAME,
        help="answer the release's questions with a model under test",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_release_option(parser)
    common.add_llm_options(parser)
    parser.add_argument("--model", required=True, metavar="NAME", help="endpoint name of the model under test")
    parser.add_argument("--out", metavar="JSONL", help="predictions file (default: predictions/<model>.jsonl)")
    parser.add_argument("--text-only", action="store_true", help="send the questions without their images")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N items (a quick trial)")
    parser.set_defaults(run=run)


def run(args) -> int:
    release = load_release(args.release, split=args.split)
    common.say_skipped(NAME, release, open_question, "open")
    client = common.ready_client(args, [args.model])
    out = Path(args.out or Path("predictions") / f"{args.model}.jsonl")
    log = SampleLog(out)
    others = {row.get("model") for row in log.rows.values()} - {args.model}
    if others:
        raise InputError(f"{out} holds answers of {', '.join(sorted(map(str, others)))}; use another --out for {args.model!r}")
    _, stats = answer_questions(
        client,
        args.model,
        release.items,
        sink=log,
        text_only=args.text_only,
        image_loader=common.image_loader(release),
        limit=args.limit,
        **common.run_options(args),
    )
    log.compact(stats.rows)
    failures = common.failed_rows(stats.rows.values())
    common.report_failures(NAME, failures)
    common.say(
        f"{NAME}: {len(stats.rows)} questions: {stats.sent} asked this run ({stats.cached} answered from the cache), "
        f"{stats.skipped} already answered, {len(failures)} failed; predictions in {out}"
    )
    return 1 if failures else 0

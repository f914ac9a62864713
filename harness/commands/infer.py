"""`infer`: run a model under test over the release's open questions and write its predictions."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands import common
from harness.io import InputError
from harness.release import load_release
from harness.runner import OK, Job, SampleLog, run_jobs

DESCRIPTION = """\
Ask a model (an endpoint from the models file) every open question of the release: earlier
turns of a multi-turn item are sent as the conversation history, the images go inline with the
first user turn, and the question is the last user turn. Multiple-choice items are left to
`mcq`. Answers are appended to the predictions JSONL as they arrive ({"id", "model",
"answer", "error"}); a failed call is recorded with answer null and its error, not fatal. Run
the same command again to resume: finished answers are kept, failed ones are asked again.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("infer", help="answer the release's questions with a model under test",
                                   description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_release_option(parser)
    common.add_llm_options(parser)
    parser.add_argument("--model", required=True, metavar="NAME", help="endpoint name of the model under test")
    parser.add_argument("--out", metavar="JSONL", help="predictions file (default: predictions/<model>.jsonl)")
    parser.add_argument("--text-only", action="store_true", help="send the questions without their images")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N items (a quick trial)")
    parser.set_defaults(run=run)


def run(args) -> int:
    release = load_release(args.release)
    client = common.open_client(args)
    model = common.endpoint(client, args.model)
    items = [item for item in release.items if not item.is_mcq][: args.limit]
    if not items:
        raise InputError(f"{release.root}: no open (non multiple-choice) questions to answer")
    attach = common.check_vision(model, release, items, args.text_only, "model")
    out = Path(args.out or Path("predictions") / f"{args.model}.jsonl")
    log = SampleLog(out)
    others = {row.get("model") for row in log.rows.values()} - {args.model}
    if others:
        raise InputError(f"{out} holds answers of {', '.join(sorted(map(str, others)))}; use another --out for {args.model!r}")

    def parse(text: str) -> dict:
        return {"answer": text}

    jobs = [
        Job(key=item.id, build=lambda item=item: common.conversation(release, item, item.question, attach),
            meta={"id": item.id, "model": args.model}, parse=parse)
        for item in items
    ]
    stats = run_jobs(client, args.model, jobs, log, label=f"infer {args.model}", parse_retries=0, keep_outputs=False,
                     with_images=attach, **common.worker_options(args))
    log.compact(job.key for job in jobs)
    failed = sum(1 for job in jobs if log.rows[job.key]["status"] != OK)
    common.say(f"infer: {stats.sent} asked this run ({stats.cached} from cache), {stats.skipped} already answered, "
               f"{failed} failed (run again to retry); predictions in {out}")
    return 0 if failed == 0 else 1

"""`hallucination`: 0-10 degree of hallucination judged from the human image description."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import charts
from harness.commands import common
from harness.parsing import parse_rating
from harness.prompts import Prompts
from harness.release import load_release
from harness.report import Chart, Report, Section, Table, json_safe, write_outputs
from harness.runner import ERROR, OK, UNPARSED, Job, SampleLog, require_same_settings, run_jobs

DESCRIPTION = """\
Rate from 0 to 10 how much of each answer's content about the image is absent from, or
contradicted by, the human-written image description (0 = fully supported; lower is better).
The judge reads the description instead of the image. Needs items with a description.
Unreadable judge replies are re-asked, then counted as unparsed and left out of the mean.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("hallucination", help="0-10 hallucination degree from the image description",
                                   description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_release_option(parser)
    common.add_llm_options(parser)
    common.add_judge_option(parser)
    common.add_predictions_option(parser)
    common.add_run_options(parser, "results/hallucination")
    parser.set_defaults(run=run)


def run(args) -> int:
    release = load_release(args.release)
    prompts = Prompts(args.prompts)
    template, retry = prompts.get("hallucination"), prompts.get("retry_hallucination")
    predictions = common.load_all_predictions(args.predictions, release)
    client = common.open_client(args)
    judge = common.endpoint(client, args.judge)
    items = [item for item in release.items if item.description and not item.is_mcq]
    out = Path(args.out)
    require_same_settings(out, {"command": "hallucination", "judge": common.endpoint_identity(judge),
                                "template": template.sha256, "retry": retry.sha256,
                                "parse_retries": args.parse_retries}, args.restart)

    def parse(text: str) -> dict:
        rating = parse_rating(text, low=0, high=10, keys=("score", "hallucination", "rating"))
        return {"score": rating.value, "reason": rating.reason}

    jobs = []
    for model in predictions:
        for item in items:
            if item.id not in model.answers:
                continue
            prompt = template.render(description=item.description, question=item.question, answer=model.answers[item.id])
            jobs.append(Job(
                key=f"{model.model}\t{item.id}",
                build=lambda prompt=prompt: [{"role": "user", "content": prompt}],
                meta={"model": model.model, "id": item.id, "category": item.category, "task": item.task},
                parse=parse,
                retry=lambda problem: retry.render(problem=problem),
            ))
    log = SampleLog(out / "samples.jsonl")
    stats = run_jobs(client, args.judge, jobs, log, label="hallucination", parse_retries=args.parse_retries,
                     **common.worker_options(args))
    log.compact(job.key for job in jobs)
    results = {"command": "hallucination", "release": release.name, "items": len(items), "models": {}}
    for model in predictions:
        rows = [log.rows.get(f"{model.model}\t{item.id}") for item in items if item.id in model.answers]
        ok_rows = [row for row in rows if row and row["status"] == OK]
        results["models"][model.model] = {
            "scored": len(ok_rows),
            "unparsed": sum(1 for row in rows if row and row["status"] == UNPARSED),
            "errors": sum(1 for row in rows if not row or row["status"] == ERROR),
            "no_answer": sum(1 for item in items if item.id not in model.answers),
            "mean": sum(r["score"] for r in ok_rows) / len(ok_rows) if ok_rows else None,
            "by_category": common.group_mean(ok_rows, "category", "score"),
        }
    results["run"] = {**stats.as_dict(), "judge": args.judge}
    paths = write_outputs(out, results, build_report(json_safe(results)))
    common.say(f"hallucination: {stats.sent} judged this run ({stats.cached} from cache); "
               f"{stats.usage.get('calls', 0)} judge calls; results in {paths['results']}")
    return 0


def build_report(results: dict) -> Report:
    models = results["models"]
    report = Report(title=f"Hallucination: {results['release']}", intro=[
        f"{results['items']} questions with an image description. 0 = everything the answer says about the "
        "image is supported by the description, 10 = nearly all of it is made up; lower is better.",
    ])
    report.sections.append(Section("Overview", [
        Table(["model", "mean (0-10, lower is better)", "scored", "unparsed", "errors", "no answer"],
              [[n, m["mean"], m["scored"], m["unparsed"], m["errors"], m["no_answer"]] for n, m in models.items()]),
        Chart("hallucination", charts.bars({n: m["mean"] for n, m in models.items()}, 10, "Mean hallucination degree")),
    ]))
    categories = list(dict.fromkeys(c for m in models.values() for c in m["by_category"]))
    report.sections.append(Section("Per category", [Table(
        ["category"] + list(models),
        [[c] + [models[n]["by_category"].get(c, {}).get("mean") for n in models] for c in categories],
    )]))
    return report

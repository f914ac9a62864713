"""`touchstone`: both answers scored 1-10 from the image description, positions swapped and averaged."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands import common
from harness.parsing import parse_score_pair
from harness.prompts import Prompts
from harness.release import load_release
from harness.report import Chart, Report, Section, Table, json_safe, write_outputs
from harness import charts
from harness.runner import ERROR, UNPARSED, Job, SampleLog, require_same_settings, run_jobs

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
    parser = subparsers.add_parser("touchstone", help="description-based scoring against the reference answer",
                                   description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_release_option(parser)
    common.add_llm_options(parser)
    common.add_judge_option(parser)
    common.add_predictions_option(parser)
    common.add_run_options(parser, "results/touchstone")
    parser.set_defaults(run=run)


def run(args) -> int:
    release = load_release(args.release)
    prompts = Prompts(args.prompts)
    template, retry = prompts.get("touchstone"), prompts.get("retry_touchstone")
    predictions = common.load_all_predictions(args.predictions, release)
    client = common.open_client(args)
    judge = common.endpoint(client, args.judge)
    items = [item for item in release.items if item.description and item.reference_answer and not item.is_mcq]
    out = Path(args.out)
    require_same_settings(out, {"command": "touchstone", "judge": common.endpoint_identity(judge),
                                "template": template.sha256, "retry": retry.sha256,
                                "parse_retries": args.parse_retries}, args.restart)

    def parse(text: str) -> dict:
        return {"scores": list(parse_score_pair(text))}

    jobs = []
    for model in predictions:
        for item in items:
            if item.id not in model.answers:
                continue
            for position in (1, 2):  # where the model's answer is shown
                answers = (model.answers[item.id], item.reference_answer)
                first, second = answers if position == 1 else answers[::-1]
                prompt = template.render(description=item.description, question=item.question, answer1=first, answer2=second)
                jobs.append(Job(
                    key=f"{model.model}\t{item.id}\t{position}",
                    build=lambda prompt=prompt: [{"role": "user", "content": prompt}],
                    meta={"model": model.model, "id": item.id, "position": position, "category": item.category, "task": item.task},
                    parse=parse,
                    retry=lambda problem: retry.render(problem=problem),
                ))
    log = SampleLog(out / "samples.jsonl")
    stats = run_jobs(client, args.judge, jobs, log, label="touchstone", parse_retries=args.parse_retries,
                     **common.worker_options(args))
    log.compact(job.key for job in jobs)
    results = summarize(release, items, predictions, log.rows)
    results["run"] = {**stats.as_dict(), "judge": args.judge}
    paths = write_outputs(out, results, build_report(json_safe(results)))
    common.say(f"touchstone: {stats.sent} judged this run ({stats.cached} from cache); "
               f"{stats.usage.get('calls', 0)} judge calls; results in {paths['results']}")
    return 0


def question_scores(rows: dict, model: str, item_id: str) -> tuple[float, float] | str:
    """(model score, reference score), each the mean over both positions; or why there is none."""
    model_scores, reference_scores = [], []
    for position in (1, 2):
        row = rows.get(f"{model}\t{item_id}\t{position}")
        if row is None or row["status"] == ERROR:
            return ERROR
        if row["status"] == UNPARSED:
            return UNPARSED
        s1, s2 = row["scores"]
        model_score, reference_score = (s1, s2) if position == 1 else (s2, s1)
        model_scores.append(model_score)
        reference_scores.append(reference_score)
    return sum(model_scores) / 2, sum(reference_scores) / 2


def summarize(release, items, predictions, rows: dict) -> dict:
    results = {"command": "touchstone", "release": release.name, "items": len(items), "models": {}}
    for model in predictions:
        scored, counts = [], {UNPARSED: 0, ERROR: 0, "no_answer": 0}
        for item in items:
            if item.id not in model.answers:
                counts["no_answer"] += 1
                continue
            outcome = question_scores(rows, model.model, item.id)
            if isinstance(outcome, str):
                counts[outcome] += 1
                continue
            scored.append({"category": item.category, "task": item.task, "model": outcome[0], "reference": outcome[1]})
        mean = sum(r["model"] for r in scored) / len(scored) if scored else None
        results["models"][model.model] = {
            "scored": len(scored), "unparsed": counts[UNPARSED], "errors": counts[ERROR], "no_answer": counts["no_answer"],
            "score": mean,
            "score_x100": mean * 100 if mean is not None else None,
            "reference_score": sum(r["reference"] for r in scored) / len(scored) if scored else None,
            "by_category": common.group_mean(scored, "category", "model"),
            "by_task": common.group_mean(scored, "task", "model"),
        }
    return results


def build_report(results: dict) -> Report:
    models = results["models"]
    report = Report(title=f"TouchStone scoring: {results['release']}", intro=[
        f"{results['items']} questions with an image description and a reference answer; each judged twice "
        "with positions swapped, scores averaged. Unreadable judge replies are counted, not averaged.",
    ])
    report.sections.append(Section("Overview", [Table(
        ["model", "score (1-10)", "score x100", "reference score", "scored", "unparsed", "errors", "no answer"],
        [[n, m["score"], m["score_x100"], m["reference_score"], m["scored"], m["unparsed"], m["errors"], m["no_answer"]]
         for n, m in models.items()],
    )]))
    categories = list(dict.fromkeys(c for m in models.values() for c in m["by_category"]))
    series = {n: {c: m["by_category"].get(c, {}).get("mean") for c in categories} for n, m in models.items()}
    report.sections.append(Section("Per category", [
        Chart("radar_categories", charts.radar(series, categories, 10, "Mean score per category")),
        Table(["category"] + list(models), [[c] + [series[n][c] for n in models] for c in categories]),
    ]))
    return report

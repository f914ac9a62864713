"""`judge`: pointwise 1-10 grades against the reference answer, per task/category, plus alignment."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import charts
from harness.commands import common
from harness.metrics import alignment_score
from harness.parsing import parse_rating
from harness.prompts import Prompts
from harness.release import load_release
from harness.report import Chart, Report, Section, Table, json_safe, number, write_outputs
from harness.runner import ERROR, OK, UNPARSED, Job, SampleLog, require_same_settings, run_jobs

DESCRIPTION = """\
Grade each model answer from 1 to 10 with a judge model that sees the question, its type, any
earlier turns, the reference answer and the answer, but not the image. The general rubric and
the task rules (counting, OCR, reasoning, writing, meme, multi-turn) live in harness/prompts/.
Reports the mean grade per task, per category and overall, and the alignment score over seed
groups (a seed and its rewrites): N / sum of each group's population standard deviation.
Replies that cannot be read are re-asked, then counted as "unparsed" and listed; they are not
part of the means, and the report says how many there were.
"""

PROMPT_FIELDS = ("task", "task_rule", "history", "question_type", "question", "reference", "answer")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("judge", help="pointwise 1-10 judging and the alignment score",
                                   description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_release_option(parser)
    common.add_llm_options(parser)
    common.add_judge_option(parser)
    common.add_predictions_option(parser)
    common.add_run_options(parser, "results/judge")
    parser.set_defaults(run=run)


def run(args) -> int:
    release = load_release(args.release)
    prompts = Prompts(args.prompts)
    template, retry = prompts.get("pointwise"), prompts.get("retry_pointwise")
    predictions = common.load_all_predictions(args.predictions, release)
    client = common.open_client(args)
    judge = common.endpoint(client, args.judge)
    items = [item for item in release.items if not item.is_mcq and item.reference_answer]
    out = Path(args.out)
    require_same_settings(out, {
        "command": "judge",
        "judge": common.endpoint_identity(judge),
        "template": template.sha256,
        "retry": retry.sha256,
        "rules": common.rules_fingerprint(prompts, release, {i.task for i in items}),
        "parse_retries": args.parse_retries,
    }, args.restart)

    def parse(text: str) -> dict:
        rating = parse_rating(text)
        return {"rating": rating.value, "reason": rating.reason}

    def correction(problem: str) -> str:
        return retry.render(problem=problem)

    template.check(PROMPT_FIELDS)
    jobs = []
    for model in predictions:
        for item in items:
            if item.id not in model.answers:
                continue
            fields = dict(
                task=item.task or "",
                task_rule=release.judge_rule(item.task) or prompts.task_rule(item.task),
                history=common.render_history(item.history),
                question_type=item.question_type or "",
                question=item.question,
                reference=item.reference_answer,
                answer=model.answers[item.id],
            )
            jobs.append(Job(
                key=f"{model.model}\t{item.id}",
                build=lambda fields=fields: [{"role": "user", "content": template.render(**fields)}],
                meta={"model": model.model, "id": item.id, "task": item.task, "category": item.category, "group": item.group},
                parse=parse,
                retry=correction,
            ))
    log = SampleLog(out / "samples.jsonl")
    stats = run_jobs(client, args.judge, jobs, log, label="judge", parse_retries=args.parse_retries,
                     **common.worker_options(args))
    log.compact(job.key for job in jobs)
    results = summarize(release, items, predictions, log.rows)
    results["skipped_without_reference"] = sum(1 for i in release.items if not i.is_mcq and not i.reference_answer)
    results["run"] = {**stats.as_dict(), "judge": args.judge}
    paths = write_outputs(out, results, build_report(json_safe(results)))
    common.say(f"judge: {stats.sent} judged this run ({stats.cached} from cache), {stats.skipped} already done; "
               f"{stats.usage.get('calls', 0)} judge calls; results in {paths['results']}")
    return 0


def summarize(release, items, predictions, rows: dict) -> dict:
    results = {"command": "judge", "release": release.name, "items": len(items), "models": {}}
    for model in predictions:
        ok_rows, unparsed, errors = [], [], []
        for item in items:
            row = rows.get(f"{model.model}\t{item.id}")
            if row is None:
                continue
            if row["status"] == OK:
                ok_rows.append(row)
            elif row["status"] == UNPARSED:
                unparsed.append(item.id)
            elif row["status"] == ERROR:
                errors.append(item.id)
        groups: dict[str, list] = {}
        for row in ok_rows:
            groups.setdefault(row["group"], []).append(row["rating"])
        alignment = alignment_score(groups)
        ratings = [row["rating"] for row in ok_rows]
        results["models"][model.model] = {
            "judged": len(ok_rows),
            "unparsed": len(unparsed),
            "unparsed_ids": unparsed,
            "errors": len(errors),
            "error_ids": errors,
            "no_answer": sum(1 for item in items if item.id not in model.answers),
            "mean": sum(ratings) / len(ratings) if ratings else None,
            "by_task": common.group_mean(ok_rows, "task", "rating"),
            "by_category": common.group_mean(ok_rows, "category", "rating"),
            "alignment": {"score": alignment.score, "groups": alignment.groups,
                          "skipped_single": alignment.skipped_small, "sigma_sum": alignment.sigma_sum},
        }
    return results


def build_report(results: dict) -> Report:
    models = results["models"]
    report = Report(title=f"Pointwise judging: {results['release']}", intro=[
        f"{results['items']} open questions with a reference answer, graded 1-10 by the judge"
        + (f" ({results['skipped_without_reference']} without a reference were skipped)" if results.get("skipped_without_reference") else "")
        + ". "
        "Means leave out unreadable judge replies (counted in 'unparsed') and answers the model never gave "
        "('no answer'); alignment = number of seed groups / sum of their score standard deviations "
        "(groups of one question are left out).",
    ])
    overview = Table(["model", "mean", "alignment", "groups", "judged", "unparsed", "errors", "no answer"], [
        [name, number(m["mean"]), number(m["alignment"]["score"]), m["alignment"]["groups"],
         m["judged"], m["unparsed"], m["errors"], m["no_answer"]]
        for name, m in models.items()
    ])
    points = {name: (number(m["mean"]), number(m["alignment"]["score"])) for name, m in models.items()}
    report.sections.append(Section("Overview", [
        overview,
        Chart("quadrant", charts.quadrant(points, "Average score vs alignment", "average score (1-10)", "alignment score"),
              "Dashed lines: means over the models; top right is high-scoring and consistent."),
    ]))
    tasks = list(dict.fromkeys(t for m in models.values() for t in m["by_task"]))
    series = {name: {t: m["by_task"].get(t, {}).get("mean") for t in tasks} for name, m in models.items()}
    report.sections.append(Section("Per task", [
        Chart("radar_tasks", charts.radar(series, tasks, 10, "Mean score per task")),
        Table(["task"] + list(models), [[t] + [series[name][t] for name in models] for t in tasks]),
    ]))
    categories = list(dict.fromkeys(c for m in models.values() for c in m["by_category"]))
    report.sections.append(Section("Per category", [Table(
        ["category"] + list(models),
        [[c] + [models[name]["by_category"].get(c, {}).get("mean") for name in models] for c in categories],
    )]))
    problems = [f"{name}: unparsed {', '.join(m['unparsed_ids'][:20])}" for name, m in models.items() if m["unparsed_ids"]]
    problems += [f"{name}: judge call failed for {', '.join(m['error_ids'][:20])} (rerun to retry)" for name, m in models.items() if m["error_ids"]]
    if problems:
        report.sections.append(Section("Problems", problems))
    return report

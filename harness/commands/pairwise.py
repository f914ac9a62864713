"""`pairwise`: MLLM-Bench votes against an anchor model, both answer orders, W/T/L, Elo, Bradley-Terry."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import charts, llm
from harness.commands import common
from harness.io import InputError
from harness.metrics import FAILED, bootstrap_elo, bradley_terry, elo_ratings, spearman, win_tie_lose
from harness.parsing import parse_vote
from harness.prompts import Prompts, Template, slug
from harness.release import Item, load_predictions, load_release
from harness.report import Chart, Report, Section, Table, json_safe, number, percent, write_outputs
from harness.runner import OK, UNPARSED, Job, SampleLog, require_same_settings, run_jobs
from harness.votes import ORDERS, battle_score, combine_sides, outcome_result, vote_side

DESCRIPTION = """\
Compare each model with an anchor model, question by question, with a judge that sees the image,
the question, its type, the per-question criteria and both answers. Every question is judged
twice: order 1 shows the anchor's answer first, order 2 the model's. The judge's last line is
its vote (Answer1, Answer2, or one of two "unable to decide" situations). The two votes are
combined: the same vote twice stands; a win against "unable to decide" is a win; one win each
is a tie; two different "unable" votes are a tie too. Reports win/tie/lose per category
(capability level) and overall, win rate (wins / all questions), Elo ratings (K=4, scale 400,
base 10, start 1000; median of bootstrap rounds over resampled battles, fixed seed) and a
Bradley-Terry fit. A question whose vote could not be read in either order is "failed": it
stays in the win-rate denominator and is listed in the report.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("pairwise", help="pairwise votes against an anchor model (win/tie/lose, Elo)",
                                   description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_release_option(parser)
    common.add_llm_options(parser)
    common.add_judge_option(parser)
    parser.add_argument("--anchor", required=True, metavar="JSONL", help="predictions of the anchor model")
    common.add_predictions_option(parser)
    parser.add_argument("--text-only", action="store_true", help="do not send the images to the judge")
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="Elo bootstrap rounds (default: 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the Elo bootstrap (default: 0)")
    common.add_run_options(parser, "results/pairwise")
    parser.set_defaults(run=run)


def render_prompt(template: Template, item: Item, answer1: str, answer2: str, has_image: bool) -> str:
    return template.render(
        has_image="yes" if has_image else "",
        question_type=item.question_type or "",
        question=item.question,
        criteria="\n".join(f"- {c}" for c in item.criteria),
        answer1=answer1,
        answer2=answer2,
    )


def judge_messages(prompt: str, images: list) -> list[dict]:
    return [llm.user_message(prompt, images=images)]


def run(args) -> int:
    release = load_release(args.release)
    prompts = Prompts(args.prompts)
    template, retry = prompts.get("pairwise"), prompts.get("retry_pairwise")
    anchor = load_predictions(args.anchor, release)
    models = common.load_all_predictions(args.predictions, release)
    if anchor.model in {m.model for m in models}:
        raise InputError(f"{args.anchor}: the anchor {anchor.model!r} is also among --predictions")
    client = common.open_client(args)
    judge = common.endpoint(client, args.judge)
    items = [item for item in release.items if not item.is_mcq]
    attach = common.check_vision(judge, release, items, args.text_only, "judge")
    out = Path(args.out)
    require_same_settings(out, {
        "command": "pairwise", "judge": common.endpoint_identity(judge), "template": template.sha256,
        "retry": retry.sha256, "images": attach, "anchor": anchor.model, "parse_retries": args.parse_retries,
    }, args.restart)

    def parse(text: str) -> dict:
        return {"vote": parse_vote(text)}

    def correction(problem: str) -> str:
        return retry.render(problem=problem)

    jobs = []
    for model in models:
        for item in items:
            if item.id not in model.answers or item.id not in anchor.answers:
                continue
            for order in ORDERS:
                first, second = (anchor, model) if order == 1 else (model, anchor)
                prompt = render_prompt(template, item, first.answers[item.id], second.answers[item.id], attach)
                images = common.image_paths(release, item) if attach else []
                jobs.append(Job(
                    key=f"{model.model}\t{item.id}\t{order}",
                    build=lambda prompt=prompt, images=images: judge_messages(prompt, images),
                    meta={"model": model.model, "id": item.id, "order": order, "category": item.category, "task": item.task},
                    parse=parse,
                    retry=correction,
                ))
    log = SampleLog(out / "samples.jsonl")
    stats = run_jobs(client, args.judge, jobs, log, label="pairwise", parse_retries=args.parse_retries,
                     with_images=attach, **common.worker_options(args))
    log.compact(job.key for job in jobs)
    results = summarize(release, items, anchor, models, log.rows, args.bootstrap, args.seed)
    results["run"] = {**stats.as_dict(), "judge": args.judge}
    paths = write_outputs(out, results, build_report(json_safe(results)))
    common.say(f"pairwise: {stats.sent} votes this run ({stats.cached} from cache), {stats.skipped} already done; "
               f"{stats.usage.get('calls', 0)} judge calls; results in {paths['results']}")
    return 0


def question_outcome(rows: dict, model: str, item_id: str) -> tuple[str, str | None]:
    """(combined outcome or FAILED, why it failed) for one model and question."""
    sides = []
    for order in ORDERS:
        row = rows.get(f"{model}\t{item_id}\t{order}")
        if row is None:
            return FAILED, "not judged"
        if row["status"] != OK:
            return FAILED, "unreadable vote" if row["status"] == UNPARSED else "judge call failed"
        sides.append(vote_side(row["vote"], order))
    return combine_sides(*sides), None


def summarize(release, items, anchor, models, rows: dict, rounds: int, seed: int) -> dict:
    results = {"command": "pairwise", "release": release.name, "anchor": anchor.model, "items": len(items), "models": {}}
    battles = []
    for model in models:
        per_level, failures, outcomes = [], {}, {}
        consistent = both_read = 0
        for item in items:
            if item.id not in model.answers:
                outcome, why = FAILED, "no answer from the model"
            elif item.id not in anchor.answers:
                outcome, why = FAILED, "no answer from the anchor"
            else:
                outcome, why = question_outcome(rows, model.model, item.id)
            result = FAILED if outcome == FAILED else outcome_result(outcome)
            per_level.append((item.category or "(none)", result))
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            if outcome == FAILED:
                failures[item.id] = why
                continue
            battles.append((model.model, anchor.model, battle_score(outcome)))
            sides = [vote_side(rows[f"{model.model}\t{item.id}\t{o}"]["vote"], o) for o in ORDERS]
            both_read += 1
            consistent += sides[0] == sides[1]
        overall = win_tie_lose(("overall", r) for _, r in per_level)["overall"]
        results["models"][model.model] = {
            **overall,
            "by_category": win_tie_lose(per_level),
            "outcomes": outcomes,
            "same_vote_both_orders": consistent / both_read if both_read else None,
            "failed_ids": failures,
        }
    if battles:
        results["elo"] = {
            "settings": {"k": 4, "scale": 400, "base": 10, "initial": 1000, "bootstrap_rounds": rounds, "seed": seed},
            "online": elo_ratings(battles),
            "bootstrap": bootstrap_elo(battles, rounds=rounds, seed=seed),
            "bradley_terry": bradley_terry(battles),
        }
        names = list(results["models"])
        if len(names) >= 2:
            win_rates = [results["models"][n]["win_rate"] for n in names]
            elo = [results["elo"]["bootstrap"][n]["median"] for n in names if n in results["elo"]["bootstrap"]]
            if len(elo) == len(names):
                results["elo"]["spearman_win_rate_vs_elo"] = spearman(win_rates, elo)
    return results


def build_report(results: dict) -> Report:
    models = results["models"]
    elo = results.get("elo", {})
    boot = elo.get("bootstrap", {})
    report = Report(title=f"Pairwise votes against {results['anchor']}: {results['release']}", intro=[
        f"{results['items']} questions, each judged in both answer orders. Win rate = wins / all questions; "
        "every outcome that is neither a win nor a loss counts as a tie; 'failed' questions (no answer, or a "
        "vote that could not be read) stay in the denominator.",
    ])
    rows = []
    for name, m in models.items():
        rating = boot.get(name, {})
        ci = rating.get("ci95")
        rows.append([name, m["win"], m["tie"], m["lose"], m["failed"], percent(m["win_rate"]),
                     rating.get("median"), f"{ci[0]:.1f} to {ci[1]:.1f}" if ci else None,
                     number(elo.get("bradley_terry", {}).get(name)), percent(m["same_vote_both_orders"])])
    if results["anchor"] in boot:
        a = boot[results["anchor"]]
        rows.append([f"{results['anchor']} (anchor)", None, None, None, None, None, a["median"],
                     f"{a['ci95'][0]:.1f} to {a['ci95'][1]:.1f}", number(elo.get("bradley_terry", {}).get(results["anchor"])), None])
    blocks = [
        Table(["model", "win", "tie", "lose", "failed", "win rate", "Elo (median)", "Elo 95% interval",
               "Bradley-Terry", "same vote in both orders"], rows),
        Chart("wtl_overall", charts.wtl_bars([(n, m) for n, m in models.items()], f"Against {results['anchor']}: all questions")),
    ]
    if "spearman_win_rate_vs_elo" in elo:
        blocks.append(f"Spearman correlation of the win-rate and Elo rankings: {elo['spearman_win_rate_vs_elo']:.3f}.")
    if elo:
        s = elo["settings"]
        blocks.append(f"Elo: K={s['k']}, scale {s['scale']}, base {s['base']}, initial {s['initial']}, "
                      f"{s['bootstrap_rounds']} bootstrap rounds, seed {s['seed']}.")
    report.sections.append(Section("Overview", blocks))
    categories = list(dict.fromkeys(c for m in models.values() for c in m["by_category"]))
    level_blocks = []
    for category in categories:
        level_rows = [(name, m["by_category"].get(category, {})) for name, m in models.items()]
        level_blocks.append(Chart(f"wtl_{slug(category) or 'none'}", charts.wtl_bars(level_rows, category)))
    level_blocks.append(Table(
        ["model"] + [f"{c} W/T/L" for c in categories],
        [[name] + [_wtl(m["by_category"].get(c)) for c in categories] for name, m in models.items()],
    ))
    report.sections.append(Section("Per category", level_blocks))
    failed = [f"{name}: {qid} ({why})" for name, m in models.items() for qid, why in list(m["failed_ids"].items())[:50]]
    if failed:
        report.sections.append(Section("Failed questions", failed))
    return report


def _wtl(row: dict | None) -> str:
    return f"{row['win']}/{row['tie']}/{row['lose']}" if row else "n/a"

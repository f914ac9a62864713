"""`pairwise`: MLLM-Bench votes against an anchor model, both answer orders, W/T/L, Elo, Bradley-Terry."""

from __future__ import annotations

import argparse

from benchforge_harness import charts
from benchforge_harness.commands import common
from benchforge_harness.commands.judging import JudgeCommand, Prepared
from benchforge_harness.io import InputError
from benchforge_harness.prompts import slug
from benchforge_harness.release import load_predictions
from benchforge_harness.report import Chart, Report, Section, Table, fmt, number, percent
from benchforge_harness.scoring.inputs import attach_images

NAME = "pairwise"

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


def anchor_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--anchor", required=True, metavar="JSONL", help="predictions of the anchor model")


def vote_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--text-only", action="store_true", help="do not send the images to the judge")
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="Elo bootstrap rounds (default: 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the Elo bootstrap (default: 0)")


def prepare(args, release, prompts, answers, client) -> Prepared:
    """The anchor's answers (never one of the models under test) and whether the judge sees the images."""
    anchor = load_predictions(args.anchor, release)
    if anchor.model in answers:
        raise InputError(f"{args.anchor}: the anchor {anchor.model!r} is also among --predictions")
    loader = common.image_loader(release)
    attach = attach_images(
        client.endpoints[args.judge], [i for i in release.items if not i.is_mcq], args.text_only, "judge", loader
    )
    return Prepared(
        settings={"images": attach, "anchor": anchor.model},
        options={
            "anchor": anchor.model,
            "anchor_answers": anchor.answers,
            "text_only": args.text_only,
            "image_loader": loader,
            "bootstrap": args.bootstrap,
            "seed": args.seed,
        },
    )


def build_report(results: dict) -> Report:
    models = results["models"]
    report = Report(
        title=f"Pairwise votes against {results['anchor']}: {results['release']}",
        intro=[
            (
                f"{results['items']} questions, each judged in both answer orders. Win rate = wins / all questions; "
                "every outcome that is neither a win nor a loss counts as a tie; 'failed' questions (no answer, or a "
                "vote that could not be read) stay in the denominator."
            ),
        ],
    )
    report.sections.append(_overview(results))
    report.sections.append(_per_category(models))
    failed = [f"{name}: {qid} ({why})" for name, m in models.items() for qid, why in list(m["failed_ids"].items())[:50]]
    if failed:
        report.sections.append(Section("Failed questions", failed))
    return report


def _overview_rows(results: dict) -> list[list]:
    """One row per model (win/tie/lose, win rate, ratings), then the anchor's ratings."""
    elo = results.get("elo", {})
    boot = elo.get("bootstrap", {})
    rows = []
    for name, m in results["models"].items():
        rating = boot.get(name, {})
        rows.append(
            [
                name,
                m["win"],
                m["tie"],
                m["lose"],
                m["failed"],
                percent(m["win_rate"]),
                rating.get("median"),
                _interval(rating.get("ci95")),
                number(elo.get("bradley_terry", {}).get(name)),
                percent(m["same_vote_both_orders"]),
            ]
        )
    if results["anchor"] in boot:
        a = boot[results["anchor"]]
        rows.append(
            [
                f"{results['anchor']} (anchor)",
                None,
                None,
                None,
                None,
                None,
                a.get("median"),
                _interval(a.get("ci95")),
                number(elo.get("bradley_terry", {}).get(results["anchor"])),
                None,
            ]
        )
    return rows


def _overview(results: dict) -> Section:
    models = results["models"]
    elo = results.get("elo", {})
    blocks = [
        Table(
            [
                "model",
                "win",
                "tie",
                "lose",
                "failed",
                "win rate",
                "Elo (median)",
                "Elo 95% interval",
                "Bradley-Terry",
                "same vote in both orders",
            ],
            _overview_rows(results),
        ),
        Chart("wtl_overall", charts.wtl_bars([(n, m) for n, m in models.items()], f"Against {results['anchor']}: all questions")),
    ]
    blocks.append(_rank_agreement_line(results))
    if elo:
        s = elo["settings"]
        blocks.append(
            f"Elo: K={s['k']:g}, scale {s['scale']:g}, base {s['base']:g}, initial {s['initial']:g}, "
            f"{s['bootstrap_rounds']} bootstrap rounds, seed {s['seed']}."
        )
    return Section("Overview", blocks)


def _per_category(models: dict) -> Section:
    categories = list(dict.fromkeys(c for m in models.values() for c in m["by_category"]))
    level_blocks = []
    for category in categories:
        level_rows = [(name, m["by_category"].get(category, {})) for name, m in models.items()]
        level_blocks.append(Chart(f"wtl_{slug(category) or 'none'}", charts.wtl_bars(level_rows, category)))
    level_blocks.append(
        Table(
            ["model"] + [f"{c} W/T/L" for c in categories],
            [[name] + [_wtl(m["by_category"].get(c)) for c in categories] for name, m in models.items()],
        )
    )
    return Section("Per category", level_blocks)


def _rank_agreement_line(results: dict) -> str:
    """The Elo sentence of the overview: the rank correlation, or why there is none (every case
    has its words: a tie, one model, no decided question, results of an older harness)."""
    elo = results.get("elo")
    if not elo:
        why = results.get("elo_undefined") or "no question was decided"
        return f"No Elo or Bradley-Terry ratings: {why}."
    rho = elo.get("spearman_win_rate_vs_elo")
    if rho is not None:
        return f"Spearman correlation of the win-rate and Elo rankings: {fmt(number(rho))}."
    why = elo.get("spearman_undefined") or (
        "a rank correlation needs at least two models" if len(results["models"]) < 2 else "not computed"
    )
    return f"Spearman correlation of the win-rate and Elo rankings: undefined ({why})."


def _interval(ci) -> str | None:
    return f"{ci[0]:.1f} to {ci[1]:.1f}" if ci and None not in ci else None


def _wtl(row: dict | None) -> str:
    return f"{row['win']}/{row['tie']}/{row['lose']}" if row else "n/a"


COMMAND = JudgeCommand(
    "pairwise",
    "pairwise votes against an anchor model (win/tie/lose, Elo)",
    DESCRIPTION,
    template="pairwise",
    report=build_report,
    noun="votes",
    options_before=anchor_option,
    options_after=vote_options,
    prepare=prepare,
)
add_parser = COMMAND.add_parser
run = COMMAND.run

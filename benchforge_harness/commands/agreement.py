"""`agreement`: how closely judge scores follow human scores (benchforge_harness/README.md, `agreement`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchforge_harness.commands import common
from benchforge_harness.io import InputError, iter_jsonl_numbered
from benchforge_harness.metrics import RANGE_RULE
from benchforge_harness.report import Report, Section, Table, json_safe
from benchforge_harness.scoring.agreement import judge_agreement

NAME = "agreement"

DESCRIPTION = (
    """\
Compare judge scores with human scores for the same answers: mean absolute error, Pearson,
Spearman (average ranks for ties) and Kendall tau-b correlations, and how often both land in
the same score range, with the fuzzy ranges {1-2, 3-5, 6-8, 9-10} and the strict ranges
{1, 2, 3, 4-5, 6, 7-8, 9-10}. --judge takes the samples.jsonl of a `judge` run (or any JSONL
with "id", optional "model" and a score field); --human a JSONL with "id", optional "model"
and the human score. A score rates one model's answer to one item, so rows pair by (model, id):
a file names the model in every row or in none (one naming it in some rows only is refused). When
only one side names models, every row of it pairs with the other side's score of its id, and
files where that is ambiguous (one side scores several models' answers to the same id, the other
does not say which model) are refused with a message. Judge rows that are not "ok" (unreadable replies) are counted and left
out; the counts of paired and unpaired rows are rows, not ids. Where r, rho or tau are undefined
(fewer than two pairs, or one side constant) the report says why. """
    + RANGE_RULE
    + "\n"
)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        NAME,
        help="judge-human agreement (MAE, Pearson, Spearman, Kendall, ranges)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--judge", required=True, metavar="JSONL", help="judge scores (e.g. results/judge/samples.jsonl)")
    parser.add_argument("--human", required=True, metavar="JSONL", help="human scores")
    parser.add_argument("--judge-field", default="rating", help="score field in the judge file (default: rating)")
    parser.add_argument("--human-field", default="score", help="score field in the human file (default: score)")
    parser.add_argument("--out", default="results/agreement", metavar="DIR", help="output folder (default: results/agreement)")
    parser.set_defaults(run=run)


def read_scores(path: str, field: str, skip_not_ok: bool) -> tuple[list[tuple[str | None, str, float]], int]:
    """Every row as (model or None, id, score), and the rows skipped as not ok."""
    scores: list[tuple[str | None, str, float]] = []
    seen: set = set()
    skipped = 0
    for lineno, row in iter_jsonl_numbered(path):
        if skip_not_ok and row.get("status", "ok") != "ok":
            skipped += 1
            continue
        item_id = row.get("id")
        if isinstance(item_id, int) and not isinstance(item_id, bool):
            item_id = str(item_id)  # ids are strings in items.jsonl; a number means the same id
        if not isinstance(item_id, str):
            raise InputError(f"{path}:{lineno}: missing 'id' (a string, or a whole number)")
        value = row.get(field)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{path}:{lineno}: '{field}' must be a number, got {value!r}")
        model = row.get("model") if isinstance(row.get("model"), str) else None
        if (model, item_id) in seen:
            named = f"model {model!r}, id {item_id!r}" if model else f"id {item_id!r}"
            raise InputError(f"{path}:{lineno}: a second score for {named}")
        seen.add((model, item_id))
        scores.append((model, item_id, float(value)))
    return scores, skipped


def run(args) -> int:
    judge, skipped = read_scores(args.judge, args.judge_field, skip_not_ok=True)
    human, _ = read_scores(args.human, args.human_field, skip_not_ok=False)
    scored = judge_agreement(judge_scores=judge, human_scores=human, judge_file=args.judge, human_file=args.human)
    results = {**scored.results, "judge_rows_not_ok": skipped}
    return common.finish(
        NAME,
        Path(args.out),
        results,
        build_report(json_safe(results)),
        [],
        f"{results['paired']} pairs of judge and human scores",
    )


COLUMNS = ["pairs", "MAE e", "Pearson r", "Spearman rho", "Kendall tau-b", "fuzzy f", "strict s"]


def _row(name: str, a: dict) -> list:
    return [name, a["n"], a["mae"], a["pearson"], a["spearman"], a["kendall_tau_b"], a["fuzzy_accuracy"], a["strict_accuracy"]]


def build_report(results: dict) -> Report:
    report = Report(
        title="Judge-human agreement",
        intro=[
            (
                f"{results['paired']} answers scored by both; {results['judge_only']} judge-only and {results['human_only']} "
                f"human-only rows unpaired; {results['judge_rows_not_ok']} judge rows without a readable score left out."
            ),
            "For scale (AlignMMBench): CritiqueVLM e 0.818, r 0.846, rho 0.838, tau 0.740, f 0.747, s 0.646; GPT-4 e 1.256, f 0.677.",
        ],
    )
    rows = [_row("all", results["overall"])] + [_row(m, a) for m, a in results["by_model"].items()]
    report.sections.append(Section("Agreement", [Table(["scope"] + COLUMNS, rows)]))
    undefined = results.get("undefined") or {}
    if undefined:
        report.sections.append(
            Section(
                "Undefined correlations",
                [
                    Table(
                        ["scope", "r, rho and tau undefined because"],
                        [[scope, next(iter(why.values()))] for scope, why in undefined.items()],
                    )
                ],
            )
        )
    if results.get("range_rule"):
        report.intro.append("Fuzzy ranges {1-2, 3-5, 6-8, 9-10}, strict {1, 2, 3, 4-5, 6, 7-8, 9-10}. " + results["range_rule"])
    return report

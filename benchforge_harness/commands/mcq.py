"""`mcq`: multiple-choice accuracy under CircularEval, with two-step choice extraction."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchforge_harness import charts, llm
from benchforge_harness.calls import ERROR, SampleLog
from benchforge_harness.commands import common
from benchforge_harness.io import InputError, write_jsonl
from benchforge_harness.prompts import Prompts
from benchforge_harness.release import load_release
from benchforge_harness.report import Chart, Report, Section, Table, json_safe, percent
from benchforge_harness.scoring.circular import circular_eval, with_answer_key
from benchforge_harness.scoring.filters import ALL_FAIL, DEFAULT_THRESHOLD, TEXT_ONLY

NAME = "mcq"

DESCRIPTION = """\
Multiple-choice scoring with CircularEval. An item with N options is asked N times, the options
rotated by one place each pass and the answer key moved with them; the item counts as solved
only if every pass is right. After the first wrong pass the rest are skipped (--all-passes runs
them anyway). Vanilla accuracy is the first pass alone.
The chosen option is read from the free-form reply in two steps: first by rules (a lone option
letter, "the answer is X", the text of exactly one option; refusals mean Z, "none of the
options"; an empty or filtered reply is a failed call, asked again next run), then, for replies the rules cannot settle, by an extractor model
(--extractor) that answers with a letter or Z. A reply still unresolved counts as wrong: there
is never a random guess. The report gives accuracy per category, subcategory and task and how
many replies needed the extractor. Items without an answer key (a private test split) are
skipped and counted. Several --model options score several models in one run, one after the
other; with --qc-filter a model is not asked about items whose filter verdict is already settled,
and --threshold moves the filter's line (a share of the models).
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        NAME,
        help="multiple-choice accuracy with CircularEval",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_release_option(parser)
    common.add_llm_options(parser)
    parser.add_argument(
        "--model", action="append", required=True, metavar="NAME", help="endpoint name of a model under test (repeat for several)"
    )
    parser.add_argument("--extractor", metavar="NAME", help="endpoint name of the choice-extractor model (optional)")
    parser.add_argument("--all-passes", action="store_true", help="run every pass even after a wrong one")
    parser.add_argument(
        "--text-only",
        action="store_true",
        help="ask without the images (the text-only quality filter: can the item be solved blind?)",
    )
    parser.add_argument(
        "--qc-filter",
        choices=(TEXT_ONLY, ALL_FAIL),
        metavar="FILTER",
        help="quality-control run: ask the models one after the other and stop asking about an item once "
        f"this filter's verdict on it is settled. {TEXT_ONLY} (needs --text-only): flagged when more "
        f"than half the models solve it; {ALL_FAIL}: flagged when no model solves it (--threshold moves "
        "that line). The report lists the flagged items and the passes saved",
    )
    parser.add_argument(
        "--threshold",
        type=share_of_models,
        metavar="SHARE",
        help=f"with --qc-filter: the filter's line, a share of the models from 0 up to (not including) 1. "
        f"{TEXT_ONLY} flags an item when more than SHARE of the models solve it (default "
        f"{DEFAULT_THRESHOLD[TEXT_ONLY]:g}); {ALL_FAIL} when at most SHARE of them do (default "
        f"{DEFAULT_THRESHOLD[ALL_FAIL]:g}: none)",
    )
    common.add_run_options(parser, "results/mcq")
    parser.set_defaults(run=run)


def share_of_models(text: str) -> float:
    """--threshold's value: a share of the models, 0 <= share < 1."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value < 1:  # NaN fails the comparison too
        raise argparse.ArgumentTypeError(
            f"expected a share of the models from 0 up to (not including) 1, such as 0.5 or 0.25; got {text!r}"
        )
    return value


def run(args) -> int:
    if args.threshold is not None and not args.qc_filter:
        raise InputError(
            f"--threshold is the line of a QC filter: give it with --qc-filter ({TEXT_ONLY} or {ALL_FAIL}), or leave it out"
        )
    release = load_release(args.release, split=args.split)
    common.say_skipped(NAME, release, with_answer_key, "mcq")
    prompts = Prompts(args.prompts, args.language)
    versions = common.prompt_versions(prompts, release, ["mcq_question", "mcq_extract", "retry_mcq_extract"])
    if len(set(args.model)) != len(args.model):
        raise InputError("the same --model is given twice")
    client = common.ready_client(args, [*args.model, *([args.extractor] if args.extractor else [])])
    out = Path(args.out)
    common.require_same_settings(
        out,
        {
            "command": NAME,
            "models": {n: common.endpoint_identity(client.endpoints[n]) for n in args.model},
            "extractor": common.endpoint_identity(client.endpoints[args.extractor]) if args.extractor else None,
            "prompts": versions,
            "text_only": args.text_only,
            "parse_retries": args.parse_retries,
            "stop_when_decided": args.qc_filter,
        },
        args.restart,
    )
    calls = SampleLog(out / "calls.jsonl")
    scored = circular_eval(
        client,
        release.items,
        models=args.model,
        sink=calls,
        extractor=args.extractor,
        text_only=args.text_only,
        all_passes=args.all_passes,
        qc_filter=args.qc_filter,
        threshold=args.threshold,
        image_loader=common.image_loader(release),
        prompts=prompts,
        parse_retries=args.parse_retries,
        **common.run_options(args),
    )
    calls.compact()
    write_jsonl(out / "samples.jsonl", scored.rows.values())
    results = scored.results
    results["release"] = release.name
    results["prompts"] = versions
    results["run"] = {
        "usage": {name: stats.usage for name, stats in scored.stats.items()},
        "extractor": args.extractor,
        "calls": results.pop("calls"),
    }
    costs = {name: llm.cost(client.endpoints[name], stats.usage) for name, stats in scored.stats.items()}
    if any(c is not None for c in costs.values()):
        results["run"]["cost"] = costs
    write_jsonl(out / "item_results.jsonl", results.pop("item_rows"))
    failures = [
        {"status": ERROR, "error": v.get("error")}
        for v in scored.rows.values()
        if v["method"] in ("model_error", "extractor_error")
    ]
    made = {name: stats.usage.get("calls", 0) for name, stats in scored.stats.items()}
    return common.finish(NAME, out, results, build_report(json_safe(results)), failures, f"model calls this run {made}")


def build_report(results: dict) -> Report:
    models = results["models"]
    report = Report(title=f"Multiple choice (CircularEval): {results['release']}", intro=[_intro(results)])
    report.sections.append(_overview(models))
    for level, title in (("by_category", "Per category"), ("by_subcategory", "Per subcategory"), ("by_task", "Per task")):
        section = _level_section(models, level, title)
        if section is not None:
            report.sections.append(section)
    read = results.get("run", {}).get("calls", {}).get("read")
    if read:
        report.sections.append(Section("How the replies were read", [read_counts_line(read)]))
    report.sections.append(_extraction(models))
    if results.get("qc"):
        report.sections.append(_qc_section(results["qc"]))
    return report


def _intro(results: dict) -> str:
    return (
        f"{results['items']} items with an answer key"
        + (
            f" ({results['skipped_without_answer_key']} without one were skipped)"
            if results["skipped_without_answer_key"]
            else ""
        )
        + ". Circular accuracy: every rotation answered right. Vanilla: the first pass only. "
        "Unresolved replies count as wrong. A pass whose model call failed for good is not a wrong answer: "
        "its item is undecided, left out of the accuracy (items = decided items) and counted apart; "
        "run the command again on the same --out to ask those calls again."
        + (" Asked without images (text-only filter)." if results["text_only"] else "")
    )


def _overview(models: dict) -> Section:
    return Section(
        "Overview",
        [
            Table(
                ["model", "circular", "vanilla", "items", "undecided (failed calls)", "passes asked", "needed extractor"],
                [
                    [
                        n,
                        percent(m["circular"]),
                        percent(m["vanilla"]),
                        m["n"],
                        f"{m['undecided']} ({m['failed_calls']})",
                        m["passes"],
                        m["needed_extractor"],
                    ]
                    for n, m in models.items()
                ],
            ),
            Chart(
                "circular_accuracy",
                charts.bars({n: (m["circular"] or 0) * 100 for n, m in models.items()}, 100, "Circular accuracy", unit="%"),
            ),
        ],
    )


def _level_section(models: dict, level: str, title: str) -> Section | None:
    """Circular / vanilla accuracy per group of one level; None when the items have no such groups."""
    names = list(dict.fromkeys(g for m in models.values() for g in m[level]))
    if names == ["(none)"]:
        return None
    return Section(
        title,
        [
            Table(
                [title.split()[-1]] + [f"{n} circular / vanilla" for n in models],
                [
                    [g]
                    + [
                        f"{percent(models[n][level].get(g, {}).get('circular'))} / {percent(models[n][level].get(g, {}).get('vanilla'))}"
                        for n in models
                    ]
                    for g in names
                ],
            )
        ],
    )


def _extraction(models: dict) -> Section:
    methods = sorted({m for model in models.values() for m in model["extraction"]})
    return Section(
        "Choice extraction",
        [
            (
                "heuristic: read by rules; heuristic_none: a refusal (Z); extractor / extractor_none: settled "
                "by the extractor model; unresolved: nobody could tell (counted wrong); *_error: a call failed (run again)."
            ),
            Table(["model"] + methods, [[n] + [m["extraction"].get(x, 0) for x in methods] for n, m in models.items()]),
        ],
    )


def _qc_section(qc: dict) -> Section:
    threshold = qc.get("threshold", DEFAULT_THRESHOLD[qc["filter"]])
    if threshold == DEFAULT_THRESHOLD[qc["filter"]]:
        rule = "more than half the models solve it" if qc["filter"] == TEXT_ONLY else "no model solves it"
    else:
        rule = f"{'more than' if qc['filter'] == TEXT_ONLY else 'at most'} a share of {threshold:g} of the models solve it"
    return Section(
        f"Quality control: {qc['filter']} filter",
        [
            (
                f"An item is flagged when {rule}. Models were asked one after the other and not about items whose verdict "
                "was already settled (the QC stop). " + pass_counts(qc["calls"])
            ),
            Table(
                ["flagged items", "undecided (a call failed)"],
                [[", ".join(qc["flagged"]) or "none", ", ".join(qc["undecided"]) or "none"]],
            ),
        ],
    )


def pass_counts(calls: dict) -> str:
    """The QC section's counts, each with its definition (scoring.filters.stop_savings)."""
    if "every_pass" not in calls:  # results.json of an earlier harness: only the counts it had
        return f"{calls['passes_asked']} passes asked of {calls['passes_without_stopping']} without any stop."
    low, high = calls["qc_stop_saved_at_least"], calls["qc_stop_saved_at_most"]
    saved = f"{low} passes" if low == high else f"at least {low} and at most {high} passes"
    return (
        f"Passes asked: {calls['passes_asked']}. The QC stop left out {calls['qc_stop_pairs']} (model, item) pair(s), "
        f"which the same run without it would have asked: it saved {saved} (a left-out model's answers are unknown, "
        "and CircularEval stops at its first wrong pass, so it would have needed from one pass to every one). "
        f"CircularEval's own stop left {calls['after_a_wrong_pass']} passes of the pairs asked, after a model's first "
        f"wrong (or failed) pass on an item. Every pass of every model on every item: {calls['every_pass']}."
    )


def read_counts_line(read: dict) -> str:
    """How the passes' replies were read (scoring.circular.READ_BY), each count with its definition."""
    return (
        f"Replies read by the rules: {read['rules']} (a letter, an option's text, a stated answer, or a refusal); "
        f"by the extractor model: {read['extractor']} (its reply read as a letter or Z; 0 without --extractor); "
        f"unread: {read['unread']} (neither: counted wrong; no extractor given, its reply unreadable, or its call "
        f"failed); no reply: {read['no_reply']} (the model's call failed for good: the item is undecided)."
    )

"""`mcq`: multiple-choice accuracy under CircularEval, with two-step choice extraction."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import charts
from harness.commands import common
from harness.io import InputError, write_jsonl
from harness.mcq import NONE_OF_THEM, CircularPass, circular_passes, format_options, heuristic_choice, parse_extractor_reply
from harness.prompts import Prompts
from harness.release import Item, load_release
from harness.report import Chart, Report, Section, Table, json_safe, percent, write_outputs
from harness.runner import ERROR, OK, Job, RunStats, SampleLog, require_same_settings, run_jobs

DESCRIPTION = """\
Multiple-choice scoring with CircularEval. An item with N options is asked N times, the options
rotated by one place each pass and the answer key moved with them; the item counts as solved
only if every pass is right. After the first wrong pass the rest are skipped (--all-passes runs
them anyway). Vanilla accuracy is the first pass alone.
The chosen option is read from the free-form reply in two steps: first by rules (a lone option
letter, "the answer is X", the text of exactly one option; refusals and empty replies mean Z,
"none of the options"), then, for replies the rules cannot settle, by an extractor model
(--extractor) that answers with a letter or Z. A reply still unresolved counts as wrong: there
is never a random guess. The report gives accuracy per category, subcategory and task and how
many replies needed the extractor. Items without an answer key (a private test split) are
skipped and counted. Several --model options score several models in one run.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("mcq", help="multiple-choice accuracy with CircularEval",
                                   description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_release_option(parser)
    common.add_llm_options(parser)
    parser.add_argument("--model", action="append", required=True, metavar="NAME",
                        help="endpoint name of a model under test (repeat for several)")
    parser.add_argument("--extractor", metavar="NAME", help="endpoint name of the choice-extractor model (optional)")
    parser.add_argument("--all-passes", action="store_true", help="run every pass even after a wrong one")
    parser.add_argument("--text-only", action="store_true",
                        help="ask without the images (the text-only quality filter: can the item be solved blind?)")
    common.add_run_options(parser, "results/mcq")
    parser.set_defaults(run=run)


def mcq_conversation(release, item: Item, shown: CircularPass, template, attach: bool) -> list[dict]:
    prompt = template.render(hint=item.hint or "", question=item.question, options=format_options(shown.options))
    return common.conversation(release, item, prompt, attach)


def run(args) -> int:
    release = load_release(args.release)
    prompts = Prompts(args.prompts)
    question_template = prompts.get("mcq_question")
    extract_template, retry = prompts.get("mcq_extract"), prompts.get("retry_mcq_extract")
    if len(set(args.model)) != len(args.model):
        raise InputError("the same --model is given twice")
    mcq_items = [item for item in release.items if item.is_mcq]
    items = [item for item in mcq_items if item.answer]
    if not items:
        raise InputError(f"{release.root}: no multiple-choice item with an answer key")
    client = common.open_client(args)
    models = {name: common.endpoint(client, name) for name in args.model}
    extractor = common.endpoint(client, args.extractor) if args.extractor else None
    attach = {name: common.check_vision(ep, release, items, args.text_only, "model") for name, ep in models.items()}
    out = Path(args.out)
    require_same_settings(out, {
        "command": "mcq", "models": {n: common.endpoint_identity(ep) for n, ep in models.items()},
        "extractor": common.endpoint_identity(extractor) if extractor else None,
        "question_template": question_template.sha256, "extract_template": extract_template.sha256,
        "retry": retry.sha256, "text_only": args.text_only, "parse_retries": args.parse_retries,
    }, args.restart)

    answers = SampleLog(out / "answers.jsonl")
    extractions = SampleLog(out / "extractions.jsonl")
    passes = {item.id: circular_passes(item.choices, item.answer) for item in items}
    verdicts: dict[str, dict] = {}  # key -> pass verdict
    usage = {name: RunStats() for name in [*models, *([extractor.name] if extractor else [])]}
    workers = common.worker_options(args)
    for k in range(max(len(p) for p in passes.values())):
        for name in models:
            alive = [item for item in items if len(passes[item.id]) > k and (args.all_passes or _still_solving(verdicts, name, item, k))]
            if not alive:
                continue
            jobs = [Job(
                key=_key(name, item, k),
                build=lambda item=item, shown=passes[item.id][k], name=name: mcq_conversation(release, item, shown, question_template, attach[name]),
                meta={"model": name, "id": item.id, "pass": k},
                parse=lambda text: {"answer": text},
            ) for item in alive]
            usage[name].add(run_jobs(client, name, jobs, answers, label=f"mcq {name} pass {k + 1}", parse_retries=0,
                                     keep_outputs=False, with_images=attach[name], **workers).as_dict())
            pending = []
            for item in alive:
                row = answers.rows.get(_key(name, item, k))
                if row is None or row["status"] != OK:
                    continue
                if heuristic_choice(row["answer"], passes[item.id][k].options) is None and extractor:
                    pending.append(_extraction_job(item, passes[item.id][k], name, k, row["answer"], extract_template, retry))
            if pending:
                usage[extractor.name].add(run_jobs(client, extractor.name, pending, extractions, label=f"mcq extract pass {k + 1}",
                                                   parse_retries=args.parse_retries, **workers).as_dict())
            for item in alive:
                verdicts[_key(name, item, k)] = _verdict(item, passes[item.id][k], name, k, answers.rows, extractions.rows)
    answers.compact()
    extractions.compact()
    write_jsonl(out / "samples.jsonl", verdicts.values())
    results = summarize(release, items, len(mcq_items) - len(items), list(models), passes, verdicts, args)
    results["run"] = {"usage": {name: stats.usage for name, stats in usage.items()}, "extractor": args.extractor}
    write_jsonl(out / "item_results.jsonl", results.pop("item_rows"))
    paths = write_outputs(out, results, build_report(json_safe(results)))
    calls = {name: stats.usage.get("calls", 0) for name, stats in usage.items()}
    common.say(f"mcq: model calls this run {calls}; results in {paths['results']}")
    return 0


def _key(model: str, item: Item, k: int) -> str:
    return f"{model}\t{item.id}\t{k}"


def _still_solving(verdicts: dict, model: str, item: Item, k: int) -> bool:
    return all(verdicts.get(_key(model, item, j), {}).get("correct") for j in range(k))


def _extraction_job(item, shown: CircularPass, model: str, k: int, reply: str, template, retry) -> Job:
    letters = "".join(shown.options)
    prompt = template.render(question=item.question, options=format_options(shown.options), output=reply,
                             letters=", ".join(letters))
    return Job(
        key=_key(model, item, k),
        build=lambda: [{"role": "user", "content": prompt}],
        meta={"model": model, "id": item.id, "pass": k},
        parse=lambda text: {"letter": parse_extractor_reply(text, letters)},
        retry=lambda problem: retry.render(problem=problem),
    )


def _verdict(item, shown: CircularPass, model: str, k: int, answer_rows: dict, extraction_rows: dict) -> dict:
    key = _key(model, item, k)
    verdict = {"key": key, "model": model, "id": item.id, "pass": k, "shown_answer": shown.answer,
               "options": shown.options, "output": None, "heuristic": None, "extractor": None,
               "extractor_outputs": None, "letter": None, "method": None, "correct": False}
    row = answer_rows.get(key)
    if row is None or row["status"] != OK:
        verdict["method"] = "model_error"
        verdict["error"] = (row or {}).get("error", "not asked")
        return verdict
    verdict["output"] = row["answer"]
    letter = heuristic_choice(row["answer"], shown.options)
    verdict["heuristic"] = letter
    if letter is not None:
        verdict["method"] = "heuristic" if letter != NONE_OF_THEM else "heuristic_none"
    else:
        extracted = extraction_rows.get(key)
        if extracted is None:
            verdict["method"] = "unresolved"
        else:
            verdict["extractor_outputs"] = extracted.get("outputs")
            if extracted["status"] == OK:
                letter = extracted["letter"]
                verdict["extractor"] = letter
                verdict["method"] = "extractor" if letter != NONE_OF_THEM else "extractor_none"
            else:
                verdict["method"] = "unresolved" if extracted["status"] != ERROR else "extractor_error"
    verdict["letter"] = letter
    verdict["correct"] = letter is not None and letter == shown.answer
    return verdict


def summarize(release, items, skipped_no_key: int, models: list[str], passes: dict, verdicts: dict, args) -> dict:
    results = {"command": "mcq", "release": release.name, "items": len(items), "skipped_without_answer_key": skipped_no_key,
               "all_passes": args.all_passes, "text_only": args.text_only, "models": {}}
    item_rows = []
    for model in models:
        rows = []
        methods: dict[str, int] = {}
        for item in items:
            item_verdicts = [verdicts.get(_key(model, item, k)) for k in range(len(passes[item.id]))]
            asked = [v for v in item_verdicts if v is not None]
            for v in asked:
                methods[v["method"]] = methods.get(v["method"], 0) + 1
            row = {
                "model": model, "id": item.id, "category": item.category, "subcategory": item.subcategory, "task": item.task,
                "vanilla": bool(asked) and asked[0]["correct"],
                "circular": len(asked) == len(item_verdicts) and all(v["correct"] for v in asked),
                "passes_run": len(asked),
                "problem": next((v["method"] for v in asked if v["method"] in ("model_error", "extractor_error")), None),
            }
            rows.append(row)
        item_rows += rows
        extractor_needed = sum(methods.get(m, 0) for m in ("extractor", "extractor_none", "unresolved", "extractor_error"))
        results["models"][model] = {
            **_accuracy(rows),
            "by_category": _accuracy_by(rows, "category"),
            "by_subcategory": _accuracy_by(rows, "subcategory"),
            "by_task": _accuracy_by(rows, "task"),
            "passes": sum(methods.values()),
            "extraction": methods,
            "needed_extractor": extractor_needed,
            "item_problems": sum(1 for r in rows if r["problem"]),
        }
    results["item_rows"] = item_rows
    return results


def _accuracy(rows: list[dict]) -> dict:
    n = len(rows)
    return {"n": n, "vanilla": sum(r["vanilla"] for r in rows) / n if n else None,
            "circular": sum(r["circular"] for r in rows) / n if n else None}


def _accuracy_by(rows: list[dict], field: str) -> dict:
    groups: dict[str, list] = {}
    for row in rows:
        groups.setdefault(row[field] or "(none)", []).append(row)
    return {name: _accuracy(members) for name, members in groups.items()}


def build_report(results: dict) -> Report:
    models = results["models"]
    report = Report(title=f"Multiple choice (CircularEval): {results['release']}", intro=[
        f"{results['items']} items with an answer key"
        + (f" ({results['skipped_without_answer_key']} without one were skipped)" if results["skipped_without_answer_key"] else "")
        + ". Circular accuracy: every rotation answered right. Vanilla: the first pass only. "
        "Unresolved replies count as wrong." + (" Asked without images (text-only filter)." if results["text_only"] else ""),
    ])
    report.sections.append(Section("Overview", [
        Table(["model", "circular", "vanilla", "items", "passes asked", "needed extractor", "items with call errors"],
              [[n, percent(m["circular"]), percent(m["vanilla"]), m["n"], m["passes"], m["needed_extractor"], m["item_problems"]]
               for n, m in models.items()]),
        Chart("circular_accuracy", charts.bars({n: (m["circular"] or 0) * 100 for n, m in models.items()}, 100,
                                               "Circular accuracy", unit="%")),
    ]))
    for level, title in (("by_category", "Per category"), ("by_subcategory", "Per subcategory"), ("by_task", "Per task")):
        names = list(dict.fromkeys(g for m in models.values() for g in m[level]))
        if names == ["(none)"]:
            continue
        report.sections.append(Section(title, [Table(
            [title.split()[-1]] + [f"{n} circular / vanilla" for n in models],
            [[g] + [f"{percent(models[n][level].get(g, {}).get('circular'))} / {percent(models[n][level].get(g, {}).get('vanilla'))}"
                    for n in models] for g in names],
        )]))
    methods = sorted({m for model in models.values() for m in model["extraction"]})
    report.sections.append(Section("Choice extraction", [
        "heuristic: read by rules; heuristic_none: refusal or empty reply (Z); extractor / extractor_none: settled "
        "by the extractor model; unresolved: nobody could tell (counted wrong); *_error: a call failed (run again).",
        Table(["model"] + methods, [[n] + [m["extraction"].get(x, 0) for x in methods] for n, m in models.items()]),
    ]))
    return report

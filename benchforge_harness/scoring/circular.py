"""Multiple choice under CircularEval, choice extraction, and the QC filters over it (benchforge_harness/README.md, `mcq`).

An item with N options is asked N times, the options rotated one place each pass; it is solved
only if every pass is right. Once a pass fails, the model's remaining passes on that item are
skipped (all_passes=True runs them anyway). Models are asked one after the other; given a QC
filter (text-only or all-fail, filters.py), the result carries each item's flag, and a model is
not asked about an item whose flag is already settled (stop_when_decided).
A model call that failed leaves the item's outcome for that model "error" (asked again next run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchforge_harness import llm
from benchforge_harness.calls import ERROR, OK, Call, RunStats, Sink, send_calls
from benchforge_harness.io import InputError
from benchforge_harness.mcq import (
    NONE_OF_THEM,
    CircularPass,
    circular_passes,
    format_options,
    heuristic_choice,
    parse_extractor_reply,
)
from benchforge_harness.parsing import ParseError
from benchforge_harness.prompts import Prompts
from benchforge_harness.release import Item
from benchforge_harness.scoring.filters import (
    ALL_FAIL,
    CALL_ERROR,
    FAILED,
    SKIPPED,
    SOLVED,
    TEXT_ONLY,
    ask_in_turn,
    check_filter,
    item_flags,
    stop_savings,
)
from benchforge_harness.scoring.inputs import ImageLoader, as_items, attach_images, conversation
from benchforge_harness.scoring.modes import Scores

ANSWER, EXTRACT = "answer", "extract"  # the two kinds of rows a circular_eval run writes to its sink
EXTRACTOR_METHODS = ("extractor", "extractor_none", "unresolved", "extractor_error")  # the rules could not read it
CALL_FAILURES = ("model_error", "extractor_error")  # a pass whose call failed for good: undecided, not wrong
# How each pass's reply was read, by its verdict's method: the counts every report shows.
READ_BY = {
    "rules": ("heuristic", "heuristic_none"),  # read by the rules (a refusal counts: "none of the options")
    "extractor": ("extractor", "extractor_none"),  # the extractor model's reply read (a letter, or Z)
    "unread": ("unresolved", "extractor_error"),  # neither: no extractor, its reply unreadable, or its call failed
    "no_reply": ("model_error",),  # the model's call failed for good: nothing to read
}


def read_counts(methods: Mapping[str, int]) -> dict[str, int]:
    """{rules, extractor, unread, no_reply}: passes by how their reply was read (READ_BY), from the
    number of passes per verdict method."""
    return {name: sum(methods.get(m, 0) for m in codes) for name, codes in READ_BY.items()}


# --------------------------------------------------------------------------- choice extraction


@dataclass(frozen=True)
class Choice:
    """The option a reply chose. letter: a shown letter, Z (none of the options) or None
    (unresolved). method: heuristic | heuristic_none | extractor | extractor_none | unresolved |
    extractor_error."""

    letter: str | None
    method: str
    extractor_outputs: tuple[str, ...] = ()
    error: str | None = None


def _extraction_prompt(
    prompts: Prompts, question: str, options: Mapping[str, str], reply: str, language: str | None
) -> tuple[str, str]:
    letters = "".join(options)
    prompt = prompts.get("mcq_extract", language).render(
        question=question, options=format_options(options), output=reply, letters=", ".join(letters)
    )
    return prompt, letters


def extract_choice(
    client: llm.LLMClient | None,
    extractor: str | None,
    question: str,
    options: Mapping[str, str],
    reply: str,
    *,
    prompts: Prompts | None = None,
    parse_retries: int = 2,
    language: str | None = None,
) -> Choice:
    """Step 1 reads the letter by rules; step 2, only when the rules cannot settle it, asks the
    extractor endpoint (a letter or Z, prompted in `language`), re-asking up to parse_retries times
    when its reply cannot be read. Never guesses: what stays unsettled is "unresolved"."""
    letter = heuristic_choice(reply, dict(options))
    if letter is not None:
        return Choice(letter, "heuristic" if letter != NONE_OF_THEM else "heuristic_none")
    if client is None or extractor is None:
        return Choice(None, "unresolved")
    prompts = prompts or Prompts()
    prompt, letters = _extraction_prompt(prompts, question, options, reply, language)
    messages = [llm.text_message("user", prompt)]
    outputs: list[str] = []
    for attempt in range(parse_retries + 1):
        try:
            text = client.chat(extractor, messages).text
        except llm.LLMError as exc:
            return Choice(None, "extractor_error", tuple(outputs), str(exc))
        outputs.append(text)
        try:
            letter = parse_extractor_reply(text, letters)
        except ParseError as exc:
            if attempt < parse_retries:
                messages = messages + [
                    llm.text_message("assistant", text),
                    llm.text_message("user", prompts.get("retry_mcq_extract", language).render(problem=str(exc))),
                ]
            continue
        return Choice(letter, "extractor" if letter != NONE_OF_THEM else "extractor_none", tuple(outputs))
    return Choice(None, "unresolved", tuple(outputs))


# --------------------------------------------------------------------------- CircularEval


def with_answer_key(item: Item) -> bool:
    """An item CircularEval scores (one without a key, from a private test split, is skipped)."""
    return item.is_mcq and bool(item.answer)


def circular_eval(
    client: llm.LLMClient,
    items: Iterable[Item | Mapping[str, Any]],
    *,
    sink: Sink,
    models: Sequence[str],
    extractor: str | None = None,
    text_only: bool = False,
    all_passes: bool = False,
    qc_filter: str | None = None,
    threshold: float | None = None,
    stop_when_decided: bool = True,
    image_loader: ImageLoader | None = None,
    prompts: Prompts | None = None,
    parse_retries: int = 2,
    workers: int | str = 1,
    reopen=None,
    progress_stream=None,
) -> Scores:
    """Ask every model every multiple-choice item under CircularEval.

    items: Items or dicts (items without choices are ignored, items without an answer key
    counted and skipped). models: endpoint names, asked in this order. extractor: endpoint name
    of the choice extractor (None: rules only). text_only: send no images. qc_filter: TEXT_ONLY
    or ALL_FAIL, whose flag on each item the result carries (`flags`), at `threshold` (a share of
    the models; None: the filter's published line); with stop_when_decided a model is not asked
    about an item whose flag is already settled (TEXT_ONLY requires text_only=True). sink: where
    the answer and extraction rows go (resumable: finished rows are not asked again).
    workers/reopen: see calls.send_calls. `rows` of the result: each pass's verdict by
    "model\titem id\tpass" (the CLI's samples.jsonl); `unasked`: the answer rows a stop saved.
    """
    threshold = _check_settings(models, qc_filter, threshold, text_only)
    prompts = prompts or Prompts()
    mcq_items = [item for item in as_items(items) if item.is_mcq]
    scored = [item for item in mcq_items if with_answer_key(item)]
    if not scored:
        raise InputError("no multiple-choice item with an answer key")
    endpoints = {name: _endpoint(client, name) for name in [*models, *([extractor] if extractor else [])]}
    circular = _CircularRun(
        client,
        scored,
        prompts=prompts,
        extractor=extractor,
        all_passes=all_passes,
        attach={name: attach_images(endpoints[name], scored, text_only, "model", image_loader) for name in models},
        image_loader=image_loader,
        parse_retries=parse_retries,
        stats={name: RunStats() for name in endpoints},
        run={"sink": sink, "workers": workers, "reopen": reopen, "progress_stream": progress_stream},
    )
    ids = [item.id for item in scored]
    outcomes = ask_in_turn(
        list(models), ids, circular.ask, filter=qc_filter, threshold=threshold, stop_when_decided=stop_when_decided
    )
    flags = item_flags(qc_filter, threshold, models, ids, outcomes) if qc_filter else {}
    passes, verdicts = circular.passes, circular.verdicts
    results = _summary(scored, list(models), passes, verdicts, outcomes, flags, qc_filter, threshold, all_passes)
    results.update(skipped_without_answer_key=len(mcq_items) - len(scored), all_passes=all_passes, text_only=text_only)
    return Scores("mcq", results, verdicts, circular.stats, outcomes, flags, circular.unasked(models))


def _check_settings(models: Sequence[str], qc_filter: str | None, threshold: float | None, text_only: bool) -> float | None:
    """The filter's threshold, once the filter, the images and the models are checked."""
    threshold = check_filter(qc_filter, threshold)
    if qc_filter == TEXT_ONLY and not text_only:
        raise InputError("the text-only filter asks the models without images: pass text_only=True")
    if qc_filter not in (None, TEXT_ONLY, ALL_FAIL):
        raise InputError(f"CircularEval decides the {TEXT_ONLY} and {ALL_FAIL} filters, not {qc_filter!r}")
    if len(set(models)) != len(models):
        raise InputError("the same model is given twice")
    return threshold


class _CircularRun:
    """One CircularEval run's state, explicit: the passes of each item, the rows the sink gave
    back, each pass's verdict and the calls per endpoint. `ask` is what ask_in_turn calls for a
    model and the items still open for it: pass after pass, the model's answers, then the
    extractor on replies the rules cannot read, then each pass's verdict."""

    def __init__(
        self, client, scored: list[Item], *, prompts, extractor, all_passes, attach, image_loader, parse_retries, stats, run
    ) -> None:
        self.client, self.prompts, self.extractor, self.all_passes = client, prompts, extractor, all_passes
        self.attach, self.image_loader, self.parse_retries = attach, image_loader, parse_retries
        self.stats: dict[str, RunStats] = stats
        self.run = run  # what send_calls takes for every call: the sink, workers, reopen, progress_stream
        self.by_id = {item.id: item for item in scored}
        # each item is asked, and its reply read, in its own language: every template found before any call
        self.question_template = {i.language: prompts.get("mcq_question", i.language) for i in scored}
        self.retry = {i.language: prompts.get("retry_mcq_extract", i.language) for i in scored}
        self.passes = {item.id: circular_passes(item.choices, item.answer) for item in scored}
        self.verdicts: dict[str, dict] = {}
        self.rows: dict[str, dict] = {}

    def ask(self, name: str, ids: list[str]) -> dict[str, str]:
        asking = [self.by_id[i] for i in ids]
        for k in range(max(len(self.passes[item.id]) for item in asking)):
            alive = [
                item
                for item in asking
                if len(self.passes[item.id]) > k and (self.all_passes or _still_solving(self.verdicts, name, item, k))
            ]
            if alive:
                self._ask_pass(name, alive, k)
        return {item.id: _outcome(self.verdicts, self.passes, name, item) for item in asking}

    def unasked(self, models: Sequence[str]) -> list[str]:
        """The answer rows a stop saved: passes no verdict was given for."""
        return [
            _row_key(ANSWER, name, item, k)
            for name in models
            for item in self.by_id.values()
            for k in range(len(self.passes[item.id]))
            if _verdict_key(name, item, k) not in self.verdicts
        ]

    def _ask_pass(self, name: str, alive: list[Item], k: int) -> None:
        answers = [self._answer_call(name, item, k) for item in alive]
        self._send(name, answers, f"mcq {name} pass {k + 1}", 0, keep_outputs=False, with_images=self.attach[name])
        pending = [call for item in alive if (call := self._extraction_call(name, item, k)) is not None]
        if pending:
            self._send(self.extractor, pending, f"mcq extract pass {k + 1}", self.parse_retries)
        for item in alive:
            self.verdicts[_verdict_key(name, item, k)] = _verdict(item, self.passes[item.id][k], name, k, self.rows)

    def _send(self, endpoint: str, calls: list[Call], label: str, parse_retries: int, **options) -> None:
        sent = send_calls(self.client, endpoint, calls, label=label, parse_retries=parse_retries, **options, **self.run)
        self.stats[endpoint].add(sent.as_dict())
        self.rows.update(sent.rows)

    def _answer_call(self, name: str, item: Item, k: int) -> Call:
        shown = self.passes[item.id][k]

        def build() -> list[dict]:  # built only when asked (a resumed run's finished calls never are)
            options = format_options(shown.options)
            question = self.question_template[item.language].render(hint=item.hint or "", question=item.question, options=options)
            return conversation(item, question, self.attach[name], self.image_loader)

        return Call(
            key=_row_key(ANSWER, name, item, k),
            build=build,
            meta={"step": ANSWER, "model": name, "id": item.id, "pass": k},
            parse=lambda text: {"answer": text},
        )

    def _extraction_call(self, name: str, item: Item, k: int) -> Call | None:
        """The extractor's call for a pass whose reply the rules cannot read (None: nothing to ask)."""
        row = self.rows.get(_row_key(ANSWER, name, item, k))
        shown = self.passes[item.id][k]
        if not (row and row["status"] == OK and self.extractor and heuristic_choice(row["answer"], shown.options) is None):
            return None
        prompt, letters = _extraction_prompt(self.prompts, item.question, shown.options, row["answer"], item.language)
        return Call(
            key=_row_key(EXTRACT, name, item, k),
            build=lambda: [llm.text_message("user", prompt)],
            meta={"step": EXTRACT, "model": name, "id": item.id, "pass": k},
            parse=lambda text: {"letter": parse_extractor_reply(text, letters)},
            retry=lambda problem: self.retry[item.language].render(problem=problem),
        )


def recorded_passes(items: Iterable[Item | Mapping[str, Any]], model: str, rows: Mapping[str, dict]) -> list[dict]:
    """Every pass of `model` that a finished run asked, read again from its sink rows (keyed as the
    run wrote them, without a store's own prefix) exactly as circular_eval read it: the shown
    options, the model's output, the letter and the method (heuristic rule or LLM extractor).
    Nothing is asked; passes the run never asked are left out."""
    found = []
    for item in as_items(items):
        if not item.is_mcq or not item.answer:
            continue
        for shown in circular_passes(item.choices, item.answer):
            if _row_key(ANSWER, model, item, shown.index) in rows:
                found.append(_verdict(item, shown, model, shown.index, rows))
    return found


def mcq_item_results(rows: Mapping[str, dict], items: Iterable[Item | Mapping[str, Any]], model: str) -> dict:
    """{item id: (1 solved | 0 failed, "solved" | "failed")} of `model`'s CircularEval outcomes, read
    again from a finished run's sink rows exactly as the run decided them; undecided items (a call
    failed for good, a pass never asked) are left out, as the accuracy leaves them out."""
    found = {}
    for item in as_items(items):
        if not with_answer_key(item):
            continue
        passes = circular_passes(item.choices, item.answer)
        verdicts = {
            _verdict_key(model, item, shown.index): _verdict(item, shown, model, shown.index, rows)
            for shown in passes
            if _row_key(ANSWER, model, item, shown.index) in rows
        }
        outcome = _outcome(verdicts, {item.id: passes}, model, item)
        if outcome in (SOLVED, FAILED):
            found[item.id] = (1.0 if outcome == SOLVED else 0.0, outcome)
    return found


def _endpoint(client, name: str) -> llm.Endpoint:
    if name not in client.endpoints:
        declared = ", ".join(sorted(client.endpoints)) or "none"
        raise llm.ConfigError(f"no endpoint named {name!r} in the models file (declared: {declared})")
    return client.endpoints[name]


def _row_key(step: str, model: str, item: Item, k: int) -> str:
    return f"{step}\t{model}\t{item.id}\t{k}"


def _verdict_key(model: str, item: Item, k: int) -> str:
    return f"{model}\t{item.id}\t{k}"


def _still_solving(verdicts: dict, model: str, item: Item, k: int) -> bool:
    return all(verdicts.get(_verdict_key(model, item, j), {}).get("correct") for j in range(k))


def _outcome(verdicts: dict, passes: dict, model: str, item: Item) -> str:
    """Failed when a pass was answered wrong; else "error" (undecided) when a pass's call failed for
    good; else solved. A failed call is not a wrong answer: it leaves its pass, and so the item, open."""
    mine = [verdicts.get(_verdict_key(model, item, k)) for k in range(len(passes[item.id]))]
    asked = [v for v in mine if v is not None]
    if any(v["method"] not in CALL_FAILURES and not v["correct"] for v in asked):
        return FAILED
    if len(asked) < len(mine) or any(v["method"] in CALL_FAILURES for v in asked):
        return CALL_ERROR
    return SOLVED


def _verdict(item: Item, shown: CircularPass, model: str, k: int, rows: dict) -> dict:
    verdict = {
        "key": _verdict_key(model, item, k),
        "model": model,
        "id": item.id,
        "pass": k,
        "shown_answer": shown.answer,
        "options": shown.options,
        "output": None,
        "heuristic": None,
        "extractor": None,
        "extractor_outputs": None,
        "letter": None,
        "method": None,
        "correct": False,
    }
    row = rows.get(_row_key(ANSWER, model, item, k))
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
        extracted = rows.get(_row_key(EXTRACT, model, item, k))
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
                if extracted["status"] == ERROR:
                    verdict["error"] = extracted.get("error")
    verdict["letter"] = letter
    verdict["correct"] = letter is not None and letter == shown.answer
    return verdict


# --------------------------------------------------------------------------- results


def _summary(items, models, passes, verdicts, outcomes, flags, qc_filter, threshold, all_passes) -> dict:
    """The numbers of a run: accuracy (circular and vanilla) per model, category, subcategory and
    task, and how each pass's choice was read. Items a QC run did not ask a model are left out of
    that model's accuracy and counted in `not_asked`. "item_rows" holds one row per model and item;
    "calls" where the passes went (filters.stop_savings: asked, left after a wrong pass, left out by
    the QC stop) and how their replies were read (READ_BY), and the extractions."""
    results = {"command": "mcq", "items": len(items), "models": {}}
    item_rows = []
    for model in models:
        rows = []
        methods: dict[str, int] = {}
        for item in items:
            outcome = outcomes[model].get(item.id)
            if outcome == SKIPPED:
                continue
            asked = [v for k in range(len(passes[item.id])) if (v := verdicts.get(_verdict_key(model, item, k))) is not None]
            for v in asked:
                methods[v["method"]] = methods.get(v["method"], 0) + 1
            first = asked[0] if asked else None
            rows.append(
                {
                    "model": model,
                    "id": item.id,
                    "category": item.category,
                    "subcategory": item.subcategory,
                    "task": item.task,
                    # None: undecided, a call failed for good (left out of the accuracy, counted apart).
                    "vanilla": None if first is None or first["method"] in CALL_FAILURES else bool(first["correct"]),
                    "circular": None if outcome == CALL_ERROR else outcome == SOLVED,
                    "passes_run": len(asked),
                    "problem": next((v["method"] for v in asked if v["method"] in CALL_FAILURES), None),
                }
            )
        item_rows += rows
        results["models"][model] = {
            **_accuracy(rows),
            "by_category": _accuracy_by(rows, "category"),
            "by_subcategory": _accuracy_by(rows, "subcategory"),
            "by_task": _accuracy_by(rows, "task"),
            "passes": sum(methods.values()),
            "extraction": methods,
            "needed_extractor": sum(methods.get(m, 0) for m in EXTRACTOR_METHODS),
            "read": read_counts(methods),
            "item_problems": sum(1 for r in rows if r["problem"]),
            "failed_calls": sum(methods.get(m, 0) for m in CALL_FAILURES),
            "not_asked": sum(1 for outcome in outcomes[model].values() if outcome == SKIPPED),
        }
    asked_passes = Counter((v["model"], v["id"]) for v in verdicts.values())
    savings = stop_savings(
        (
            len(passes[item.id]),
            None if outcomes[model].get(item.id) == SKIPPED else asked_passes[(model, item.id)],
            len(passes[item.id]) if all_passes else 1,
        )
        for model in models
        for item in items
    )
    results["calls"] = {
        "passes_asked": savings.pop("asked"),
        "every_pass": savings.pop("every_call"),
        **savings,
        "extractions": sum(1 for v in verdicts.values() if v["extractor_outputs"] or v["method"] == "extractor_error"),
        "read": read_counts(Counter(v["method"] for v in verdicts.values())),
    }
    if qc_filter:
        results["qc"] = {
            "filter": qc_filter,
            "threshold": threshold,
            "flagged": [i for i, f in flags.items() if f["flagged"]],
            "undecided": [i for i, f in flags.items() if not f["decided"]],
            "calls": results["calls"],
        }
    results["item_rows"] = item_rows
    return results


def _accuracy(rows: list[dict]) -> dict:
    """Accuracy over the decided rows only: n counts the items whose circular verdict is decided,
    undecided the items left open by calls that failed for good (asked again on resume)."""
    circular = [r["circular"] for r in rows if r["circular"] is not None]
    vanilla = [r["vanilla"] for r in rows if r["vanilla"] is not None]
    return {
        "n": len(circular),
        "vanilla": sum(vanilla) / len(vanilla) if vanilla else None,
        "circular": sum(circular) / len(circular) if circular else None,
        "undecided": len(rows) - len(circular),
    }


def _accuracy_by(rows: list[dict], field_name: str) -> dict:
    groups: dict[str, list] = {}
    for row in rows:
        groups.setdefault(row[field_name] or "(none)", []).append(row)
    return {name: _accuracy(members) for name, members in groups.items()}

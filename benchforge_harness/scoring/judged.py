"""The judged text-only filter: can an open item be answered well without its image?

Each model answers the open items without images (answer_questions), the pointwise judge grades
each answer against the reference; an item is solved by a model when its grade is at least
min_score. Models are asked in turn and, with stop_when_decided, not about items whose flag is
settled (filters.py): the same rule as CircularEval's text-only filter, over grades.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchforge_harness.calls import ERROR, OK, RunStats, Sink
from benchforge_harness.prompts import Prompts
from benchforge_harness.release import Item
from benchforge_harness.scoring.answers import answer_questions
from benchforge_harness.scoring.filters import CALL_ERROR, FAILED, JUDGED_TEXT_ONLY, SOLVED, ask_in_turn, check_filter, item_flags
from benchforge_harness.scoring.inputs import as_items
from benchforge_harness.scoring.judges import pointwise_judge, with_reference
from benchforge_harness.scoring.modes import Scores

ANSWER, JUDGE = "answer", "judge"


class _Prefixed:
    """The sink seen with a prefix on every key, so that functions keying rows by item id share it."""

    def __init__(self, sink: Sink, prefix: str):
        self.sink, self.prefix = sink, prefix

    def done_rows(self) -> dict[str, dict]:
        n = len(self.prefix)
        return {k[n:]: {**row, "key": k[n:]} for k, row in self.sink.done_rows().items() if k.startswith(self.prefix)}

    def write(self, row: dict) -> None:
        self.sink.write({**row, "key": self.prefix + row["key"]})

    def close(self) -> None:
        self.sink.close()


class _AnswerAndGrade:
    """One model's turn of judged_text_only (ask_in_turn's `ask`): answer the items, grade the
    answers; its state explicit: every row so far by "model\titem id", and the run counts by endpoint."""

    def __init__(self, client, scored: list[Item], sink: Sink, judge: str, min_score: int, prompts, parse_retries: int, run):
        self.client, self.sink, self.judge, self.min_score = client, sink, judge, min_score
        self.prompts, self.parse_retries, self.run = prompts, parse_retries, run
        self.by_id = {item.id: item for item in scored}
        self.rows: dict[str, dict] = {}
        self.stats: dict = {}

    def ask(self, model: str, ids: list[str]) -> dict[str, str]:
        asking = [self.by_id[i] for i in ids]
        answers, answered = answer_questions(
            self.client, model, asking, sink=_Prefixed(self.sink, f"{ANSWER}\t{model}\t"), text_only=True, **self.run
        )
        self.stats.setdefault(model, RunStats()).add(answered.as_dict())
        grades = self._grade(model, [item for item in asking if item.id in answers], answers) if answers else {}
        outcomes = {}
        for item in asking:
            row = self._row(model, item, answers.get(item.id), grades.get(f"{model}\t{item.id}"))
            self.rows[f"{model}\t{item.id}"] = row
            outcomes[item.id] = row["outcome"]
        return outcomes

    def _grade(self, model: str, answered: list[Item], answers: dict) -> dict[str, dict]:
        graded = pointwise_judge(
            self.client,
            answered,
            sink=_Prefixed(self.sink, f"{JUDGE}\t"),
            judge=self.judge,
            answers={model: answers},
            prompts=self.prompts,
            parse_retries=self.parse_retries,
            **self.run,
        )
        self.stats.setdefault(self.judge, RunStats()).add(graded.stats[self.judge].as_dict())
        return graded.rows

    def _row(self, model: str, item: Item, answer: str | None, grade: dict | None) -> dict:
        row = {"model": model, "id": item.id, "answer": answer, "score": None, "reason": (grade or {}).get("reason") or ""}
        if answer is None or grade is None or grade["status"] == ERROR:
            row.update(outcome=CALL_ERROR, error=(grade or {}).get("error") or "the model's answer call failed")
        elif grade["status"] != OK:
            row.update(outcome=FAILED, error=grade.get("parse_error", "the judge's grade could not be read"))
        else:
            row["score"] = int(grade["rating"])
            row.update(outcome=SOLVED if row["score"] >= self.min_score else FAILED, error="")
        row["method"] = "judged" if row["score"] is not None else ("model_error" if answer is None else "judge_error")
        return row


def judged_text_only(
    client,
    items: Iterable[Item | Mapping[str, Any]],
    *,
    sink: Sink,
    models: Sequence[str],
    judge: str,
    min_score: int = 7,
    threshold: float | None = None,
    stop_when_decided: bool = True,
    prompts: Prompts | None = None,
    parse_retries: int = 2,
    **run,
) -> Scores:
    """Ask the models in turn (without images) and grade their answers. `rows` of the result: one
    per model and item, keyed "model\\titem id": {"model", "id", "answer", "score", "reason",
    "outcome", "method" (judged | model_error | judge_error), "error"}. Sink keys:
    "answer\\tmodel\\tid" and "judge\\tmodel\\tid"."""
    threshold = check_filter(JUDGED_TEXT_ONLY, threshold)
    scored = [item for item in as_items(items) if with_reference(item)]
    asker = _AnswerAndGrade(client, scored, sink, judge, min_score, prompts, parse_retries, run)
    ids = [item.id for item in scored]
    outcomes = ask_in_turn(
        list(models), ids, asker.ask, filter=JUDGED_TEXT_ONLY, threshold=threshold, stop_when_decided=stop_when_decided
    )
    flags = item_flags(JUDGED_TEXT_ONLY, threshold, models, ids, outcomes)
    unasked = [
        f"{step}\t{model}\t{item_id}"
        for model in models
        for item_id in ids
        if f"{model}\t{item_id}" not in asker.rows
        for step in (ANSWER, JUDGE)
    ]
    results = {
        "command": JUDGED_TEXT_ONLY,
        "items": len(scored),
        "models": {
            model: {
                "solved": sum(1 for o in outcomes[model].values() if o == SOLVED),
                "failed": sum(1 for o in outcomes[model].values() if o == FAILED),
                "errors": sum(1 for o in outcomes[model].values() if o == CALL_ERROR),
            }
            for model in models
        },
        "qc": {
            "filter": JUDGED_TEXT_ONLY,
            "flagged": [i for i, f in flags.items() if f["flagged"]],
            "undecided": [i for i, f in flags.items() if not f["decided"]],
        },
    }
    return Scores(JUDGED_TEXT_ONLY, results, asker.rows, asker.stats, outcomes, flags, unasked)

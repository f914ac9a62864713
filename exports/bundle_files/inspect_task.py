"""This release as Inspect tasks:

    inspect eval inspect_task.py --model openai/<name> -M responses_api=false -T grader=openai/<judge>

`-M responses_api=false` keeps Inspect on Chat Completions, which every OpenAI-compatible server
(OPENAI_BASE_URL) offers: for a model name it does not know, Inspect otherwise uses OpenAI's
Responses API. An `openai/` grader named with `-T grader=` is always asked through Chat Completions.

Reads only this bundle's own files (items.jsonl, images/, taxonomy.json and the prompt texts in
benchforge_harness/prompts/), with the standard library and inspect_ai. Two tasks:

* `mcq` - the multiple-choice items under CircularEval. An item with N options becomes N samples
  (ids `<item>#1` ... `<item>#N`), the options rotated one place each, asked with the release's own
  question prompt (benchforge_harness/prompts/mcq_question.txt). Metric `circular`: share of items whose every
  rotation is right, grouped by the `item` metadata; `first_pass`: share right on the unrotated pass.
* `open_ended` - the open items that have a reference answer: the model answers (earlier turns as
  history, images on the first user turn), then a grader model (`-T grader=openai/<judge>`, default
  the model under test) grades the answer 1-10 with the release's rubric
  (benchforge_harness/prompts/pointwise.txt) and the task's rule (its `judge_rule` in taxonomy.json, else the
  built-in rule in benchforge_harness/prompts/rules/). Metric `rating`: mean grade of the readable replies.

Where this differs from the bundled harness (`python -m benchforge_harness mcq` / `judge`), because Inspect
runs samples independently:
* every rotation is always asked (the harness stops at an item's first wrong pass; the outcome
  is the same, only more calls are made);
* the chosen letter is read by simple rules only (a lone letter, "the answer is X", "Answer: X",
  or exactly one option's text); the harness also has finer rules and an extractor model, so a
  wordy reply the harness resolves can count as wrong here;
* a grader reply that is not one JSON object with a rating is not asked again (the harness
  re-asks it): it is left out of the mean and counted in `unreadable`;
* a model call that fails for good fails its sample (the harness leaves the item undecided).
On clean replies both give the same numbers.

A public bundle withholds some answer keys and reference answers (its README says which): the
items without one are left out of `mcq` and `open_ended`, and each task says on the console how
many it left out, of which split and why (the task's metadata `skipped` holds the same). Score
them with the private bundle, or on the benchmark's leaderboard.
"""

from __future__ import annotations

import base64
import json
import mimetypes
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ContentImage, ContentText, get_model
from inspect_ai.scorer import SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState, generate

BUNDLE = Path(__file__).resolve().parent
PROMPTS = BUNDLE / "benchforge_harness" / "prompts"
# The release's language (manifest.json); an item may name its own. English prompts sit in
# PROMPTS, each other language's in a subfolder named by its code, as the harness keeps them.
MANIFEST = BUNDLE / "manifest.json"
MANIFEST_FIELDS = json.loads(MANIFEST.read_text(encoding="utf-8")) if MANIFEST.is_file() else {}
RELEASE_LANGUAGE = MANIFEST_FIELDS.get("language") or "en"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _items(split: str | None) -> list[dict]:
    rows = []
    with open(BUNDLE / "items.jsonl", encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                row = json.loads(line)
                if split is None or row.get("split") == split:
                    rows.append(row)
    return rows


def _skipped(task_name: str, rows: list[dict], lacking: str) -> list[str]:
    """Say on the console (stderr, before Inspect's display starts) how many items the task leaves
    out for lack of `lacking`, per split, and why; returns the same lines for the task's metadata."""
    per_split = Counter(row.get("split") or "unsplit" for row in rows)
    withheld = MANIFEST_FIELDS.get("variant") == "public" and MANIFEST_FIELDS.get("withheld")
    why = (
        f"this public bundle withholds their {lacking}s; score them with the private bundle or on the benchmark's leaderboard"
        if withheld
        else f"they have no {lacking}"
    )
    lines = [f"{task_name}: {n} item(s) of the {split} split left out: {why}" for split, n in sorted(per_split.items())]
    for line in lines:
        print(line, file=sys.stderr, flush=True)
    return lines


def _prompts(row: dict):
    language = row.get("language") or RELEASE_LANGUAGE
    return PROMPTS if language == "en" else PROMPTS / language


def _render(folder: Path, name: str, **values) -> str:
    """The harness's template syntax: {{name}} inserts, {{#name}}...{{/name}} keeps a block when set."""
    text = (folder / name).read_text(encoding="utf-8")
    text = re.sub(r"\{\{#(\w+)\}\}(.*?)\{\{/\1\}\}\n?", lambda m: m.group(2) if values.get(m.group(1)) else "", text, flags=re.S)
    return re.sub(r"\{\{(\w+)\}\}", lambda m: str(values.get(m.group(1)) or ""), text).strip() + "\n"


def _image(name: str) -> ContentImage:
    kind = mimetypes.guess_type(name)[0] or "image/jpeg"
    data = base64.b64encode((BUNDLE / name).read_bytes()).decode("ascii")
    return ContentImage(image=f"data:{kind};base64,{data}")


def _conversation(row: dict, question: str, images: bool) -> list:
    pictures = [_image(name) for name in row.get("images") or []] if images else []
    messages = []
    for turn in [*(row.get("history") or []), {"role": "user", "content": question}]:
        if turn["role"] == "assistant":
            messages.append(ChatMessageAssistant(content=turn["content"]))
        elif pictures:
            messages.append(ChatMessageUser(content=[*pictures, ContentText(text=turn["content"])]))
            pictures = []
        else:
            messages.append(ChatMessageUser(content=turn["content"]))
    return messages


# ---- multiple choice under CircularEval


def _rotations(row: dict, images: bool) -> list[Sample]:
    letters = list(row["choices"])
    samples = []
    for k in range(len(letters)):
        shown = {LETTERS[j]: row["choices"][letters[(j + k) % len(letters)]] for j in range(len(letters))}
        answer = LETTERS[(letters.index(row["answer"]) - k) % len(letters)]
        options = "\n".join(f"{letter}. {text}" for letter, text in shown.items())
        prompt = _render(_prompts(row), "mcq_question.txt", hint=row.get("hint") or "", question=row["question"], options=options)
        samples.append(
            Sample(
                id=f"{row['id']}#{k + 1}",
                input=_conversation(row, prompt, images),
                choices=list(shown.values()),
                target=answer,
                metadata={"item": row["id"], "rotation": k, "options": shown, "task": row.get("task")},
            )
        )
    return samples


def read_letter(reply: str, options: dict[str, str]) -> str | None:
    """The option a reply commits to, by simple rules; None when they cannot tell."""
    text = reply.strip()
    found = re.fullmatch(r"[(\[]?([A-Z])[)\].:]?", text)
    if found and found.group(1) in options:
        return found.group(1)
    said = set(re.findall(r"(?:answer is|answer:)\s*\(?([A-Z])\b", text, flags=re.I))
    if len(said) == 1 and said <= set(options):
        return said.pop()
    named = [letter for letter, option in options.items() if text.rstrip(".").lower() == option.lower()]
    return named[0] if len(named) == 1 else None


@metric
def circular():
    """Share of items whose every rotation was answered right."""

    def compute(scores: list[SampleScore]) -> float:
        items: dict = defaultdict(list)
        for s in scores:
            items[s.sample_metadata["item"]].append(s.score.value == 1)
        return sum(all(v) for v in items.values()) / len(items) if items else 0.0

    return compute


@metric
def first_pass():
    """Share of items answered right with the options in their original order."""

    def compute(scores: list[SampleScore]) -> float:
        first = [s.score.value == 1 for s in scores if s.sample_metadata["rotation"] == 0]
        return sum(first) / len(first) if first else 0.0

    return compute


@scorer(metrics=[circular(), first_pass()])
def circular_choice():
    async def score(state: TaskState, target: Target) -> Score:
        letter = read_letter(state.output.completion, state.metadata["options"])
        return Score(value=1 if letter == target.text else 0, answer=letter, explanation=state.output.completion)

    return score


@task
def mcq(split: str | None = None, images: bool = True) -> Task:
    """Multiple-choice items with an answer key, one sample per rotation (CircularEval)."""
    rows = [row for row in _items(split) if row.get("choices")]
    skipped = _skipped("mcq", [row for row in rows if not row.get("answer")], "answer key")
    samples = [s for row in rows if row.get("answer") for s in _rotations(row, images)]
    return Task(
        dataset=MemoryDataset(samples, name="mcq"), solver=generate(), scorer=circular_choice(), metadata={"skipped": skipped}
    )


# ---- open items, graded 1-10 against the reference answer


def _rule(task_name: str | None, rules: dict[str, str], folder: Path) -> str:
    if not task_name:
        return ""
    if rules.get(task_name):
        return rules[task_name]
    builtin = folder / "rules" / (re.sub(r"[^a-z0-9]+", "-", task_name.lower()).strip("-") + ".txt")
    return builtin.read_text(encoding="utf-8").strip() if builtin.is_file() else ""


def read_rating(reply: str) -> float | None:
    """The rating of a reply holding one JSON object {"rating": 1-10, ...}; None otherwise."""
    found = re.search(r"\{.*\}", reply, flags=re.S)
    try:
        value = json.loads(found.group(0)).get("rating") if found else None
    except (ValueError, AttributeError):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 1 <= value <= 10:
        return float(value)
    return None


@metric
def rating():
    """Mean grade over the readable grader replies."""

    def compute(scores: list[SampleScore]) -> float:
        values = [s.score.value for s in scores if s.score.metadata.get("readable")]
        return sum(values) / len(values) if values else 0.0

    return compute


@metric
def unreadable():
    """Grader replies with no readable rating (left out of `rating`)."""

    def compute(scores: list[SampleScore]) -> float:
        return float(sum(1 for s in scores if not s.score.metadata.get("readable")))

    return compute


@scorer(metrics=[rating(), unreadable()])
def rubric_grade(grader: str | None, rules: dict[str, str]):
    async def score(state: TaskState, target: Target) -> Score:
        meta = state.metadata
        history = "\n".join(f"{turn['role'].title()}: {turn['content']}" for turn in meta["history"])
        folder = Path(meta["prompts"])
        prompt = _render(
            folder,
            "pointwise.txt",
            task=meta["task"] or "",
            task_rule=_rule(meta["task"], rules, folder),
            history=history,
            question_type=meta["question_type"] or "",
            question=meta["question"],
            reference=target.text,
            answer=state.output.completion,
        )
        model = get_model(grader, responses_api=False) if grader and grader.startswith("openai/") else get_model(grader)
        reply = (await model.generate(prompt)).completion
        value = read_rating(reply)
        return Score(
            value=value if value is not None else 0,
            explanation=reply,
            metadata={"readable": value is not None, "task": meta["task"]},
        )

    return score


@task
def open_ended(split: str | None = None, grader: str | None = None, images: bool = True) -> Task:
    """Open items with a reference answer, graded by `grader` with the release's rubric and rules."""
    taxonomy = json.loads((BUNDLE / "taxonomy.json").read_text(encoding="utf-8"))
    rules = {t["name"]: t["judge_rule"] for t in taxonomy.get("tasks", []) if isinstance(t, dict) and t.get("judge_rule")}
    rows = [row for row in _items(split) if not row.get("choices")]
    samples = [
        Sample(
            id=row["id"],
            input=_conversation(row, row["question"], images),
            target=row["reference_answer"],
            metadata={
                "task": row.get("task"),
                "question": row["question"],
                "history": row.get("history") or [],
                "question_type": row.get("question_type"),
                "prompts": str(_prompts(row)),
            },
        )
        for row in rows
        if row.get("reference_answer")
    ]
    skipped = _skipped("open_ended", [row for row in rows if not row.get("reference_answer")], "reference answer")
    return Task(
        dataset=MemoryDataset(samples, name="open"),
        solver=generate(),
        scorer=rubric_grade(grader, rules),
        metadata={"skipped": skipped},
    )

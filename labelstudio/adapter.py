"""The Label Studio side of an item: the labeling config we generate, item -> task, and
annotation -> item changes.

Pure functions over plain item payloads (`annotation.selectors.item_payload`) and plain Label
Studio JSON: no Django models, no network, so all of it is testable on its own. The services
that push and pull items build on it; `client` talks to the server.

Images travel inside the task as data URLs: our media is served to logged-in users only, and
Label Studio's editor loads images from the annotator's browser, so a plain media URL would
depend on a second login to benchforge. Inline images make a task self-contained.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any, Callable
from xml.etree import ElementTree

from annotation.contract import labelstudio_data
from annotation.models import CHOICE_LETTERS, MAX_CHOICES
from benchforge.errors import DomainError

MAX_CRITERIA = 3
# Predictions (our current values shown pre-filled) all carry this model version, so the
# project can be set to pre-label with it.
PREDICTION_MODEL_VERSION = "benchforge"

QUESTION_TYPES = {"open": "Open-ended", "closed": "Closed-ended", "compound": "Compound"}
CRITERION_KINDS = {
    "exact": "Exact reference",
    "soft": "Soft reference",
    "range": "Range",
    "guideline": "Evaluation guideline",
}
VERDICTS = {"ok": "OK", "needs_revision": "Needs revision"}

# The item fields an annotator can change in Label Studio (the benchmark author's fields).
OWNED_FIELDS = ("question", "question_type", "choices", "answer", "reference_answer", "criteria", "description")
FIELD_NAMES = {
    "question": "question",
    "question_type": "question type",
    "choices": "options",
    "answer": "answer key",
    "reference_answer": "reference answer",
    "criteria": "criteria",
    "description": "image description",
}

# from_name of each control of our labeling config
QUESTION = "edit_question"
OPTIONS = "edit_options"
ANSWER_KEY = "answer_key"
REFERENCE_ANSWER = "reference_answer"
QUESTION_TYPE = "question_type"
DESCRIPTION = "description"
VERDICT = "verdict"


def criterion_kind_name(n: int) -> str:
    return f"criterion_{n}_kind"


def criterion_text_name(n: int) -> str:
    return f"criterion_{n}_text"


class LabelStudioResultError(DomainError):
    """An annotation whose result we cannot read. Names the task so a person can open it."""

    status = 400
    code = "labelstudio_result"

    def __init__(self, task_id, problem: str, *, field: str = ""):
        super().__init__(f"Label Studio task {task_id}: {problem}", extra={"task_id": task_id, "field": field})
        self.task_id = task_id
        self.field = field


# ----------------------------------------------------------------------------- labeling config


def labeling_config(*, with_history: bool, with_options: bool) -> str:
    """The project's labeling config. History and options views are added only when some item
    of the project has them; every task carries every data key, so widening a project's config
    later (when a multi-turn or MCQ item joins) keeps older tasks valid."""
    view = ElementTree.Element("View")

    def add(tag: str, **attrs) -> ElementTree.Element:
        return ElementTree.SubElement(view, tag, {k: str(v) for k, v in attrs.items()})

    def header(text: str) -> None:
        add("Header", value=text, size="5")

    def choices(name: str, labels, *, required: bool = False) -> None:
        attrs = {"name": name, "toName": "question", "choice": "single-radio", "showInline": "true"}
        if required:
            attrs["required"] = "true"
        element = add("Choices", **attrs)
        for label in labels:
            ElementTree.SubElement(element, "Choice", {"value": label})

    def textarea(name: str, rows: int, placeholder: str) -> None:
        add("TextArea", name=name, toName="question", editable="true", maxSubmissions="1", rows=rows, placeholder=placeholder)

    add("Text", name="context", value="$context")
    # Every task has at least one image entry (a picture saying "no image" when the item has
    # none): the Image tag never finishes loading an empty list.
    add("Image", name="images", valueList="$images", zoom="true", zoomControl="true")
    if with_history:
        header("Conversation so far")
        # A Text, not Paragraphs: Label Studio's Paragraphs view crashes the editor on an empty list,
        # which is what every single-turn item of a mixed project would carry.
        add("Text", name="history", value="$history")
    header("Question")
    add("Text", name="question", value="$question")
    textarea(QUESTION, 3, "Correct the question here (leave as is to keep it)")
    if with_options:
        add("Text", name="options", value="$options")
        header("Options (multiple-choice items: one per line, A to D)")
        textarea(OPTIONS, 4, "One option per line")
        header("Answer key (multiple-choice items)")
        choices(ANSWER_KEY, CHOICE_LETTERS[:MAX_CHOICES])
    header("Reference answer")
    textarea(REFERENCE_ANSWER, 4, "The answer a careful expert would give")
    header("Question type")
    choices(QUESTION_TYPE, QUESTION_TYPES.values())
    for n in range(1, MAX_CRITERIA + 1):
        header(f"Criterion {n}" + (" (leave empty if not needed)" if n > 1 else ""))
        choices(criterion_kind_name(n), CRITERION_KINDS.values())
        textarea(criterion_text_name(n), 2, "What a correct answer must contain or satisfy")
    header("Image description (optional)")
    textarea(DESCRIPTION, 2, "What the image shows, for a judge who cannot see it")
    header("Verdict")
    choices(VERDICT, VERDICTS.values(), required=True)
    ElementTree.indent(view)
    return ElementTree.tostring(view, encoding="unicode")


def config_sections(payloads) -> dict[str, bool]:
    """Which optional views a set of items needs (keyword arguments of `labeling_config`)."""
    payloads = list(payloads)
    return {
        "with_history": any(p.get("history") for p in payloads),
        "with_options": any(p.get("choices") or p.get("kind") == "mcq" for p in payloads),
    }


# ----------------------------------------------------------------------------- item -> task


def data_url(content: bytes, image_format: str) -> str:
    """`image_format` is a stored image's format (jpeg, png, webp, gif, bmp, tiff): each is
    also the subtype of its MIME type."""
    return f"data:image/{image_format.lower()};base64,{base64.b64encode(content).decode('ascii')}"


def _textarea(name: str, text: str) -> dict:
    return {"from_name": name, "to_name": "question", "type": "textarea", "value": {"text": [text]}}


def _choice(name: str, label: str) -> dict:
    return {"from_name": name, "to_name": "question", "type": "choices", "value": {"choices": [label]}}


def options_block(choices) -> str:
    """Options as the annotator edits them: one per line, lettered."""
    return "\n".join(f"{letter}. {text}" for letter, text in zip(CHOICE_LETTERS, choices or []))


def synced_values(payload: dict) -> dict:
    """The fields Label Studio shows and may change, as they are in `payload`: what a task was
    last synced with, kept to tell an edit made here from one made there."""
    return {
        "question": payload.get("question") or "",
        "question_type": payload.get("question_type") or "",
        "choices": list(payload.get("choices") or []),
        "answer": payload.get("answer") or "",
        "reference_answer": payload.get("reference_answer") or "",
        "criteria": [{"kind": c.get("kind"), "text": c.get("text")} for c in payload.get("criteria") or []],
        "description": payload.get("description") or "",
    }


def prefill_result(payload: dict) -> list[dict]:
    """The item's current values as a Label Studio result, shown pre-filled to the annotator."""
    result = []
    if payload.get("question"):
        result.append(_textarea(QUESTION, payload["question"]))
    if payload.get("choices"):
        result.append(_textarea(OPTIONS, options_block(payload["choices"])))
    if payload.get("answer") and payload.get("kind") == "mcq":
        result.append(_choice(ANSWER_KEY, payload["answer"]))
    if payload.get("reference_answer"):
        result.append(_textarea(REFERENCE_ANSWER, payload["reference_answer"]))
    if payload.get("question_type") in QUESTION_TYPES:
        result.append(_choice(QUESTION_TYPE, QUESTION_TYPES[payload["question_type"]]))
    for n, criterion in enumerate((payload.get("criteria") or [])[:MAX_CRITERIA], start=1):
        if criterion.get("kind") in CRITERION_KINDS:
            result.append(_choice(criterion_kind_name(n), CRITERION_KINDS[criterion["kind"]]))
        if criterion.get("text"):
            result.append(_textarea(criterion_text_name(n), criterion["text"]))
    if payload.get("description"):
        result.append(_textarea(DESCRIPTION, payload["description"]))
    return result


def task_for_item(payload: dict, *, image_src: Callable[[dict], str]) -> dict:
    """One Label Studio task (data, meta, pre-fill) for an item payload. `image_src` turns one
    entry of payload["images"] into something an <Image> can show (we pass data URLs)."""
    task = {
        "data": labelstudio_data(payload, image_src=image_src),
        "meta": {
            "benchforge_item": payload["id"],
            "benchforge_benchmark": payload.get("benchmark", ""),
            "benchforge_version": payload.get("version"),
        },
    }
    prefill = prefill_result(payload)
    if prefill:
        task["predictions"] = [{"model_version": PREDICTION_MODEL_VERSION, "result": prefill}]
    return task


# ----------------------------------------------------------------------------- annotation -> item


@dataclass
class LabelStudioAnswer:
    """What one annotation says; None means the annotator left that part out (kept as it is)."""

    question: str | None = None
    question_type: str | None = None
    options: str | None = None
    answer: str | None = None
    reference_answer: str | None = None
    description: str | None = None
    verdict: str | None = None
    # position (1..) -> {"kind": code or None, "text": str or None}
    criteria: dict[int, dict] = field(default_factory=dict)


_CRITERION_FIELD = re.compile(r"^criterion_(\d+)_(kind|text)$")
_TEXT_FIELDS = {QUESTION: "question", OPTIONS: "options", REFERENCE_ANSWER: "reference_answer", DESCRIPTION: "description"}
_CHOICE_FIELDS = {
    QUESTION_TYPE: ("question type", QUESTION_TYPES),
    VERDICT: ("verdict", VERDICTS),
    **{criterion_kind_name(n): (f"criterion {n} kind", CRITERION_KINDS) for n in range(1, 10)},
}


def _region_text(task_id, name: str, value: dict) -> str:
    texts = value.get("text")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise LabelStudioResultError(task_id, f"the '{name}' region has no text list.")
    return "\n".join(texts)


def _region_labels(task_id, name: str, what: str, value: dict) -> list[str]:
    labels = value.get("choices")
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise LabelStudioResultError(task_id, f"the '{name}' region has no choices list.")
    if len(labels) > 1:
        raise LabelStudioResultError(task_id, f"the {what} has {len(labels)} choices; pick one.")
    return labels


def _region_code(task_id, name: str, value: dict, what: str, options: dict) -> str | None:
    """The code (`closed`, `exact`...) of the one label chosen; the code itself is accepted too."""
    labels = _region_labels(task_id, name, what, value)
    if not labels:
        return None
    wanted = labels[0].strip().lower()
    for code, shown in options.items():
        if wanted in (code.lower(), shown.lower()):
            return code
    raise LabelStudioResultError(
        task_id, f"'{labels[0]}' is not a {what}; expected one of: {', '.join(options.values())}.", field=what
    )


def parse_result(task_id, result) -> LabelStudioAnswer:
    """Read one annotation's result list. Regions of tags we did not generate are ignored (a
    project owner may add their own); a region of ours in an unexpected shape is an error."""
    if not isinstance(result, list):
        raise LabelStudioResultError(task_id, "the annotation result is not a list of regions.")
    answer = LabelStudioAnswer()
    for region in result:
        if not isinstance(region, dict):
            raise LabelStudioResultError(task_id, f"a result region is not an object: {region!r:.80}.")
        name = region.get("from_name")
        criterion = _CRITERION_FIELD.match(name) if isinstance(name, str) else None
        if name not in _TEXT_FIELDS and name not in _CHOICE_FIELDS and name != ANSWER_KEY and not criterion:
            continue
        value = region.get("value")
        if not isinstance(value, dict):
            raise LabelStudioResultError(task_id, f"the '{name}' region has no value object.")
        if criterion:
            n, part = int(criterion.group(1)), criterion.group(2)
            slot = answer.criteria.setdefault(n, {"kind": None, "text": None})
            if part == "text":
                slot["text"] = _region_text(task_id, name, value).strip() or None
            else:
                slot["kind"] = _region_code(task_id, name, value, f"criterion {n} kind", CRITERION_KINDS)
            if slot == {"kind": None, "text": None}:
                del answer.criteria[n]
        elif name in _TEXT_FIELDS:
            setattr(answer, _TEXT_FIELDS[name], _region_text(task_id, name, value))
        elif name == ANSWER_KEY:
            labels = _region_labels(task_id, name, "answer key", value)
            answer.answer = labels[0].strip().upper() if labels else None
        else:
            what, options = _CHOICE_FIELDS[name]
            setattr(answer, name, _region_code(task_id, name, value, what, options))
    return answer


def annotator(annotation: dict) -> str:
    """Who made an annotation, as Label Studio names them (an e-mail address, else the user id)."""
    name = str(annotation.get("created_username") or "").strip()
    if name:
        # Label Studio writes "email, id"; the id alone says little to a reader.
        return name.rsplit(",", 1)[0].strip() or name
    completed_by = annotation.get("completed_by")
    if isinstance(completed_by, dict):
        return str(completed_by.get("email") or completed_by.get("username") or f"user {completed_by.get('id')}")
    return f"user {completed_by}" if completed_by is not None else "unknown annotator"


def _usable(annotations) -> list[dict]:
    return [a for a in annotations or [] if isinstance(a, dict) and not a.get("was_cancelled")]


def _when(annotation: dict):
    return (annotation.get("updated_at") or annotation.get("created_at") or "", annotation.get("id") or 0)


def latest_annotation(annotations) -> dict | None:
    """The annotation that speaks for a task: the most recently updated one not skipped."""
    usable = _usable(annotations)
    return max(usable, key=_when) if usable else None


def latest_per_annotator(annotations) -> list[dict]:
    """Each annotator's latest annotation not skipped, latest first."""
    latest: dict = {}
    for annotation in sorted(_usable(annotations), key=_when):
        latest[annotator(annotation)] = annotation
    return sorted(latest.values(), key=_when, reverse=True)


# ---- what an annotation asks of an item


def same_text(a: str, b: str) -> bool:
    """Equal but for line endings and surrounding blanks: what an editor's round trip may change."""

    def norm(text: str) -> str:
        return "\n".join(line.rstrip() for line in (text or "").replace("\r\n", "\n").replace("\r", "\n").strip().split("\n"))

    return norm(a) == norm(b)


def same_value(name: str, a, b) -> bool:
    if name == "criteria":
        return len(a) == len(b) and all(x["kind"] == y["kind"] and same_text(x["text"], y["text"]) for x, y in zip(a, b))
    if name == "choices":
        return len(a) == len(b) and all(same_text(x, y) for x, y in zip(a, b))
    if name in ("question_type", "answer"):
        return (a or "") == (b or "")
    return same_text(a, b)


_LETTER_PREFIX = re.compile(r"^\s*\(?([A-Za-z])\s*[.):]\s*")


def _options(task_id, text: str) -> list[str]:
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    options = []
    for n, line in enumerate(lines):
        prefix = _LETTER_PREFIX.match(line)
        if prefix and n < len(CHOICE_LETTERS) and prefix.group(1).upper() == CHOICE_LETTERS[n]:
            line = line[prefix.end() :].strip()
        options.append(line)
    if len(options) > MAX_CHOICES:
        raise LabelStudioResultError(
            task_id,
            f"options: {len(options)} given; a multiple-choice item has at most {MAX_CHOICES} (A-{CHOICE_LETTERS[MAX_CHOICES - 1]}).",
            field="options",
        )
    return options


def _criteria(task_id, base: list[dict], given: dict[int, dict]) -> list[dict]:
    """`base` with the criteria the annotation gives, position by position; a position left out keeps its criterion."""
    criteria = [dict(c) for c in base]
    for n in sorted(given):
        kind, text = given[n]["kind"], given[n]["text"]
        if n > MAX_CRITERIA:
            raise LabelStudioResultError(
                task_id, f"criterion {n}: an item has at most {MAX_CRITERIA} criteria.", field=f"criterion {n}"
            )
        if n <= len(criteria):
            criteria[n - 1] = {"kind": kind or criteria[n - 1]["kind"], "text": text or criteria[n - 1]["text"]}
        elif n > len(criteria) + 1:
            raise LabelStudioResultError(
                task_id, f"criterion {n} is filled in but criterion {n - 1} is empty: fill them in order.", field=f"criterion {n}"
            )
        elif not text:
            raise LabelStudioResultError(task_id, f"criterion {n} has a kind but no text.", field=f"criterion {n}")
        elif not kind:
            raise LabelStudioResultError(
                task_id,
                f"criterion {n} has a text but no kind; choose one of: {', '.join(CRITERION_KINDS.values())}.",
                field=f"criterion {n}",
            )
        else:
            criteria.append({"kind": kind, "text": text})
    return criteria


def item_changes(base: dict, answer: LabelStudioAnswer, *, task_id, kind: str | None = None) -> dict:
    """What an annotation changes relative to `base` (the values the task was synced with, or an
    item payload): only fields it gives and that differ, checked field by field. What it leaves
    out stays; a field it gives out of range (empty question, a 4th criterion, an answer letter
    outside the options...) raises LabelStudioResultError naming that field. `kind` is the
    item's kind (only multiple-choice items take options and an answer key)."""
    if "id" in base:  # an item payload
        kind, base = kind or base.get("kind"), synced_values(base)
    mcq = kind == "mcq"
    proposed: dict[str, Any] = {}
    if answer.question is not None:
        if not answer.question.strip():
            raise LabelStudioResultError(
                task_id, "question: it is empty; write the question or leave it as it was.", field="question"
            )
        proposed["question"] = answer.question.strip()
    if answer.reference_answer is not None:
        if not answer.reference_answer.strip():
            raise LabelStudioResultError(
                task_id, "reference answer: it is empty; write it or leave it as it was.", field="reference answer"
            )
        proposed["reference_answer"] = answer.reference_answer.strip()
    if answer.description is not None:
        proposed["description"] = answer.description.strip()
    if answer.question_type is not None:
        proposed["question_type"] = answer.question_type
    if answer.options is not None:
        options = _options(task_id, answer.options)
        if options and not mcq:
            raise LabelStudioResultError(task_id, "options: only multiple-choice items have options.", field="options")
        if mcq:
            proposed["choices"] = options
    if answer.answer is not None:
        if not mcq:
            raise LabelStudioResultError(
                task_id, "answer key: only multiple-choice items have an answer key.", field="answer key"
            )
        proposed["answer"] = answer.answer
    if answer.criteria:
        proposed["criteria"] = _criteria(task_id, base["criteria"], answer.criteria)
    return {name: value for name, value in proposed.items() if not same_value(name, value, base[name])}


def answer_key_problem(state: dict) -> tuple[str, str] | None:
    """(field, problem) when a multiple-choice item's answer key is outside its options or
    disagrees with its reference answer ("C. Green" while the key is B)."""
    choices, key, reference = state["choices"], state["answer"], state["reference_answer"] or ""
    letters = CHOICE_LETTERS[: len(choices)]
    if key and key not in letters:
        span = f"A-{letters[-1]}" if letters else "none"
        return "answer key", f"answer key: '{key}' is not one of the options ({span})."
    if len(choices) < 2:
        return "options", f"options: a multiple-choice item needs 2 to {MAX_CHOICES} options; it would have {len(choices)}."
    if not key:
        return None
    named = None
    prefix = _LETTER_PREFIX.match(reference)
    if prefix and prefix.group(1).upper() in letters:
        named = prefix.group(1).upper()
    elif reference.strip().upper() in letters and len(reference.strip()) == 1:
        named = reference.strip().upper()
    else:
        texts = {c.strip().casefold(): letter for letter, c in zip(letters, choices)}
        named = texts.get(reference.strip().rstrip(".").casefold())
    if named and named != key:
        return (
            "answer key",
            f"answer key: it is {key} but the reference answer names option {named} ({reference.strip()[:60]!r}); "
            "make them agree.",
        )
    return None


def three_way(base: dict, current: dict, changes: dict) -> tuple[dict, dict]:
    """Split an annotation's changes (relative to `base`, the values last synced) into what to
    apply and what conflicts: a field also edited here since the sync, to another value, is a
    conflict; a field edited here only, or to the same value, is left as it is here."""
    apply, conflicts = {}, {}
    for name, value in changes.items():
        if same_value(name, current[name], base[name]):
            apply[name] = value
        elif not same_value(name, current[name], value):
            conflicts[name] = {"local": current[name], "labelstudio": value, "synced": base[name]}
    return apply, conflicts

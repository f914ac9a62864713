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
from datetime import datetime, timedelta
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
        self.problem = problem


# ----------------------------------------------------------------------------- labeling config

# The task data key (annotation.contract.labelstudio_data) that holds one entry for a
# multiple-choice item and none otherwise: the options and answer key views sit in a <Repeater>
# over it, so only multiple-choice tasks show them.
MCQ_BLOCK = "mcq"


def labeling_config(*, with_history: bool, with_options: bool) -> str:
    """The project's labeling config. History and options views are added only when some item
    of the project has them; every task carries every data key, so widening a project's config
    later (when a multi-turn or MCQ item joins) keeps older tasks valid. The options and answer
    key are shown on multiple-choice tasks only (a Repeater over the task's `mcq` list)."""
    view = ElementTree.Element("View")

    def add(tag: str, parent=None, **attrs) -> ElementTree.Element:
        return ElementTree.SubElement(view if parent is None else parent, tag, {k: str(v) for k, v in attrs.items()})

    def header(text: str, parent=None) -> None:
        add("Header", parent, value=text, size="5")

    def choices(name: str, labels, *, required: bool = False, parent=None) -> None:
        attrs = {"name": name, "toName": "question", "choice": "single-radio", "showInline": "true"}
        if required:
            attrs["required"] = "true"
        element = add("Choices", parent, **attrs)
        for label in labels:
            ElementTree.SubElement(element, "Choice", {"value": label})

    def textarea(name: str, rows: int, placeholder: str, parent=None) -> None:
        add(
            "TextArea",
            parent,
            name=name,
            toName="question",
            editable="true",
            maxSubmissions="1",
            rows=rows,
            placeholder=placeholder,
        )

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
        mcq = add("Repeater", on=f"${MCQ_BLOCK}", indexFlag="{{idx}}")
        add("Text", mcq, name="options", value="$options")
        header("Options (one per line, A to D)", mcq)
        textarea(OPTIONS, 4, "One option per line", mcq)
        header("Answer key", mcq)
        choices(ANSWER_KEY, CHOICE_LETTERS[:MAX_CHOICES], parent=mcq)
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


# ---- the fields Label Studio shows and may change, one key per value an annotator edits

SCALAR_KEYS = ("question", "question_type", "choices", "answer", "reference_answer", "description")
CRITERION_KEYS = tuple(key for n in range(1, MAX_CRITERIA + 1) for key in (criterion_kind_name(n), criterion_text_name(n)))
KEYS = SCALAR_KEYS + CRITERION_KEYS
KEY_NAMES = {
    "question": "question",
    "question_type": "question type",
    "choices": "options",
    "answer": "answer key",
    "reference_answer": "reference answer",
    "description": "image description",
    **{criterion_kind_name(n): f"criterion {n} kind" for n in range(1, MAX_CRITERIA + 1)},
    **{criterion_text_name(n): f"criterion {n} text" for n in range(1, MAX_CRITERIA + 1)},
}
CHOICE_KEYS = {"question_type", "answer", *(criterion_kind_name(n) for n in range(1, MAX_CRITERIA + 1))}


def field_values(payload: dict) -> dict:
    """What a task shows of an item, one key per value an annotator can change: the scalar fields
    and each criterion's kind and text by position (absent ones empty). The unit of every sync
    record (baseline, pre-fill) and of the three-way merge, so that changing criterion 1's text
    says nothing about its kind or about criterion 2."""
    values = {
        "question": payload.get("question") or "",
        "question_type": payload.get("question_type") or "",
        "choices": list(payload.get("choices") or []),
        "answer": payload.get("answer") or "",
        "reference_answer": payload.get("reference_answer") or "",
        "description": payload.get("description") or "",
    }
    criteria = list(payload.get("criteria") or [])
    for n in range(1, MAX_CRITERIA + 1):
        criterion = criteria[n - 1] if n <= len(criteria) else {}
        values[criterion_kind_name(n)] = criterion.get("kind") or ""
        values[criterion_text_name(n)] = criterion.get("text") or ""
    return values


def empty_value(key: str):
    return [] if key == "choices" else ""


def prefill_result(payload: dict) -> list[dict]:
    """The item's current values as a Label Studio result, shown pre-filled to the annotator."""
    result = []
    if payload.get("question"):
        result.append(_textarea(QUESTION, payload["question"]))
    mcq = payload.get("kind") == "mcq"
    if payload.get("choices") and mcq:  # only multiple-choice tasks have the options view
        result.append(_textarea(OPTIONS, options_block(payload["choices"])))
    if payload.get("answer") and mcq:
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
    # Controls (from_name) whose region the editor kept as our pre-annotation gave it (its
    # `origin` is still "prediction"): the annotator did not touch them.
    untouched: set[str] = field(default_factory=set)


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
        if region.get("origin") == "prediction":
            answer.untouched.add(name)
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


def latest_per_annotator(annotations) -> list[dict]:
    """Each annotator's latest annotation not skipped, oldest first (the order they are merged in,
    so that with "the latest wins" the latest one does)."""
    latest: dict = {}
    for annotation in sorted(_usable(annotations), key=_when):
        latest[annotator(annotation)] = annotation
    return sorted(latest.values(), key=_when)


# ---- what an annotation asks of an item


def same_text(a: str, b: str) -> bool:
    """Equal but for line endings and surrounding blanks: what an editor's round trip may change."""

    def norm(text: str) -> str:
        return "\n".join(line.rstrip() for line in (text or "").replace("\r\n", "\n").replace("\r", "\n").strip().split("\n"))

    return norm(a) == norm(b)


def same(key: str, a, b) -> bool:
    """Whether two values of one key are the same for the sync (text compared as `same_text`)."""
    if key == "choices":
        a, b = a or [], b or []
        return len(a) == len(b) and all(same_text(x, y) for x, y in zip(a, b))
    if key in CHOICE_KEYS:
        return (a or "") == (b or "")
    return same_text(a or "", b or "")


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


def given_values(answer: LabelStudioAnswer, *, task_id, kind: str | None) -> dict:
    """The values an annotation gives, by key: only what the annotator filled in and touched
    (a region still as our pre-annotation made it is left out, and so is an emptied field: an
    annotation never deletes). Raises LabelStudioResultError naming the field for a value out
    of range (an empty question, a 4th criterion, options or an answer key on an item that is
    not multiple-choice...). `kind` is the item's kind."""
    mcq = kind == "mcq"
    touched = lambda name: name not in answer.untouched  # noqa: E731
    given: dict[str, Any] = {}
    for name, key, what in ((QUESTION, "question", "question"), (REFERENCE_ANSWER, "reference_answer", "reference answer")):
        value = getattr(answer, key)
        if value is not None and touched(name):
            if not value.strip():
                raise LabelStudioResultError(task_id, f"{what}: it is empty; write it or leave it as it was.", field=what)
            given[key] = value.strip()
    if answer.description is not None and touched(DESCRIPTION) and answer.description.strip():
        given["description"] = answer.description.strip()
    if answer.question_type is not None and touched(QUESTION_TYPE):
        given["question_type"] = answer.question_type
    if answer.options is not None and touched(OPTIONS):
        options = _options(task_id, answer.options)
        if options and not mcq:
            raise LabelStudioResultError(task_id, "options: only multiple-choice items have options.", field="options")
        if options:
            given["choices"] = options
    if answer.answer is not None and touched(ANSWER_KEY):
        if not mcq:
            raise LabelStudioResultError(
                task_id, "answer key: only multiple-choice items have an answer key.", field="answer key"
            )
        given["answer"] = answer.answer
    for n, slot in sorted(answer.criteria.items()):
        if n > MAX_CRITERIA:
            raise LabelStudioResultError(
                task_id, f"criterion {n}: an item has at most {MAX_CRITERIA} criteria.", field=f"criterion {n}"
            )
        if slot["kind"] is not None and touched(criterion_kind_name(n)):
            given[criterion_kind_name(n)] = slot["kind"]
        if slot["text"] is not None and touched(criterion_text_name(n)):
            given[criterion_text_name(n)] = slot["text"]
    return given


def proposals(given: dict, seen: dict) -> dict:
    """What the annotator changed: the values given that differ from the pre-fill they started
    from (`seen`). A value left as the pre-fill showed it, even a stale one, is no change."""
    return {key: value for key, value in given.items() if not same(key, value, seen.get(key, empty_value(key)))}


def prefill_values(task_id, result, *, kind: str | None) -> dict:
    """The values a pre-annotation (a prediction's result) shows, by key (absent ones empty)."""
    answer = parse_result(task_id, result or [])
    answer.untouched.clear()
    values = {key: empty_value(key) for key in KEYS}
    values.update(given_values(answer, task_id=task_id, kind=kind))
    return values


@dataclass
class Merge:
    """The three-way merge of an annotation's proposals against the baseline and the item now."""

    apply: dict = field(default_factory=dict)  # changed in Label Studio only: to apply here
    agreed: dict = field(default_factory=dict)  # both sides changed it to the same value
    conflicts: dict = field(default_factory=dict)  # key -> {"base", "here", "labelstudio"}


def merge(base: dict, here: dict, changes: dict) -> Merge:
    """Three-way, key by key, against `base` (what both sides last agreed on): a key only Label
    Studio changed is applied, one only benchforge changed stays, one both changed to different
    values is a conflict. A proposal equal to the baseline changes nothing."""
    result = Merge()
    for key, value in changes.items():
        agreed = base.get(key, empty_value(key))
        if same(key, value, agreed):
            continue
        if same(key, here[key], agreed):
            result.apply[key] = value
        elif same(key, here[key], value):
            result.agreed[key] = value
        else:
            result.conflicts[key] = {"base": agreed, "here": here[key], "labelstudio": value}
    return result


def criteria_of(values: dict, *, task_id) -> list[dict]:
    """The criteria list of a state by key, checked: filled in order, each with a kind and a text."""
    criteria, gap = [], None
    for n in range(1, MAX_CRITERIA + 1):
        kind, text = values[criterion_kind_name(n)], (values[criterion_text_name(n)] or "").strip()
        if not kind and not text:
            gap = gap or n
            continue
        problem = None
        if gap:
            problem = f"criterion {n} is filled in but criterion {gap} is empty: fill them in order."
        elif not text:
            problem = f"criterion {n} has a kind but no text."
        elif not kind:
            problem = f"criterion {n} has a text but no kind; choose one of: {', '.join(CRITERION_KINDS.values())}."
        if problem:
            raise LabelStudioResultError(task_id, problem, field=f"criterion {n}")
        criteria.append({"kind": kind, "text": text})
    return criteria


def item_changes(here: dict, state: dict, *, task_id) -> dict:
    """The item fields (annotation.contract names) to write to go from `here` to `state`, both by key."""
    changes = {key: state[key] for key in SCALAR_KEYS if not same(key, state[key], here[key])}
    if any(not same(key, state[key], here[key]) for key in CRITERION_KEYS):
        changes["criteria"] = criteria_of(state, task_id=task_id)
    return changes


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


# ---- which pre-fill an annotation started from


def _moment(text) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None


def started_from(annotation: dict, prefills: list[dict]) -> dict:
    """The pre-fill (one of `prefills`, the task's current one first, then older ones, each
    {"prediction": id, "at": when Label Studio made it, ...}) an annotation was started from:
    the one it names (`parent_prediction`: Label Studio forgets it when the prediction is
    replaced), else the latest one made before its annotator opened the task (created_at less
    the lead time), else the oldest one known (the most conservative reading)."""
    parent = annotation.get("parent_prediction")
    if parent:
        for prefill in prefills:
            if prefill.get("prediction") == parent:
                return prefill
    created = _moment(annotation.get("created_at"))
    if created is not None:
        opened = created - timedelta(seconds=float(annotation.get("lead_time") or 0))
        for prefill in prefills:
            made = _moment(prefill.get("at"))
            if made is not None and made <= opened:
                return prefill
    return prefills[-1]

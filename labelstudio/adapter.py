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
from dataclasses import dataclass, field
from typing import Any, Callable
from xml.etree import ElementTree

from annotation.contract import labelstudio_data
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

REFERENCE_ANSWER = "reference_answer"
QUESTION_TYPE = "question_type"
VERDICT = "verdict"


def criterion_kind_name(n: int) -> str:
    return f"criterion_{n}_kind"


def criterion_text_name(n: int) -> str:
    return f"criterion_{n}_text"


class LabelStudioResultError(DomainError):
    """An annotation whose result we cannot read. Names the task so a person can open it."""

    status = 400
    code = "labelstudio_result"

    def __init__(self, task_id, problem: str):
        super().__init__(f"Label Studio task {task_id}: {problem}", extra={"task_id": task_id})
        self.task_id = task_id


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
    add("Image", name="images", valueList="$images", zoom="true", zoomControl="true")
    if with_history:
        header("Conversation so far")
        # A Text, not Paragraphs: Label Studio's Paragraphs view crashes the editor on an empty list,
        # which is what every single-turn item of a mixed project would carry.
        add("Text", name="history", value="$history")
    header("Question")
    add("Text", name="question", value="$question")
    if with_options:
        add("Text", name="options", value="$options")
    header("Reference answer")
    textarea(REFERENCE_ANSWER, 4, "The answer a careful expert would give")
    header("Question type")
    choices(QUESTION_TYPE, QUESTION_TYPES.values())
    for n in range(1, MAX_CRITERIA + 1):
        header(f"Criterion {n}" + (" (leave empty if not needed)" if n > 1 else ""))
        choices(criterion_kind_name(n), CRITERION_KINDS.values())
        textarea(criterion_text_name(n), 2, "What a correct answer must contain or satisfy")
    header("Verdict")
    choices(VERDICT, VERDICTS.values(), required=True)
    ElementTree.indent(view)
    return ElementTree.tostring(view, encoding="unicode")


def config_sections(payloads) -> dict[str, bool]:
    """Which optional views a set of items needs (keyword arguments of `labeling_config`)."""
    payloads = list(payloads)
    return {
        "with_history": any(p.get("history") for p in payloads),
        "with_options": any(p.get("choices") for p in payloads),
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


def prefill_result(payload: dict) -> list[dict]:
    """The item's current values as a Label Studio result, shown pre-filled to the annotator."""
    result = []
    if payload.get("reference_answer"):
        result.append(_textarea(REFERENCE_ANSWER, payload["reference_answer"]))
    if payload.get("question_type") in QUESTION_TYPES:
        result.append(_choice(QUESTION_TYPE, QUESTION_TYPES[payload["question_type"]]))
    for n, criterion in enumerate((payload.get("criteria") or [])[:MAX_CRITERIA], start=1):
        if criterion.get("kind") in CRITERION_KINDS:
            result.append(_choice(criterion_kind_name(n), CRITERION_KINDS[criterion["kind"]]))
        if criterion.get("text"):
            result.append(_textarea(criterion_text_name(n), criterion["text"]))
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
    """What one annotation says; None means the annotator left that part untouched."""

    reference_answer: str | None = None
    question_type: str | None = None
    verdict: str | None = None
    # position (1..3) -> {"kind": code or None, "text": str or None}
    criteria: dict[int, dict] = field(default_factory=dict)


_POSITIONS = range(1, MAX_CRITERIA + 1)
_TEXT_FIELDS = {REFERENCE_ANSWER} | {criterion_text_name(n) for n in _POSITIONS}
_CHOICE_FIELDS = {
    QUESTION_TYPE: ("question type", QUESTION_TYPES),
    VERDICT: ("verdict", VERDICTS),
    **{criterion_kind_name(n): (f"criterion {n} kind", CRITERION_KINDS) for n in _POSITIONS},
}


def _region_text(task_id, name: str, value: dict) -> str | None:
    texts = value.get("text")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise LabelStudioResultError(task_id, f"the '{name}' region has no text list.")
    return "\n".join(t.strip() for t in texts if t.strip()) or None


def _region_code(task_id, name: str, value: dict) -> str | None:
    """The code (`closed`, `exact`...) of the one label chosen; the code itself is accepted too."""
    labels = value.get("choices")
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise LabelStudioResultError(task_id, f"the '{name}' region has no choices list.")
    what, options = _CHOICE_FIELDS[name]
    if len(labels) > 1:
        raise LabelStudioResultError(task_id, f"the {what} has {len(labels)} choices; pick one.")
    if not labels:
        return None
    wanted = labels[0].strip().lower()
    for code, shown in options.items():
        if wanted in (code.lower(), shown.lower()):
            return code
    raise LabelStudioResultError(task_id, f"'{labels[0]}' is not a {what}; expected one of: {', '.join(options.values())}.")


def parse_result(task_id, result) -> LabelStudioAnswer:
    """Read one annotation's result list. Regions of tags we did not generate are ignored (a
    project owner may add their own); a region of ours in an unexpected shape is an error."""
    if not isinstance(result, list):
        raise LabelStudioResultError(task_id, "the annotation result is not a list of regions.")
    values = {}  # field name -> text or code (None: left empty)
    for region in result:
        if not isinstance(region, dict):
            raise LabelStudioResultError(task_id, f"a result region is not an object: {region!r:.80}.")
        name = region.get("from_name")
        if name not in _TEXT_FIELDS and name not in _CHOICE_FIELDS:
            continue
        value = region.get("value")
        if not isinstance(value, dict):
            raise LabelStudioResultError(task_id, f"the '{name}' region has no value object.")
        values[name] = _region_text(task_id, name, value) if name in _TEXT_FIELDS else _region_code(task_id, name, value)
    return LabelStudioAnswer(
        reference_answer=values.get(REFERENCE_ANSWER),
        question_type=values.get(QUESTION_TYPE),
        verdict=values.get(VERDICT),
        criteria={
            n: {"kind": values.get(criterion_kind_name(n)), "text": values.get(criterion_text_name(n))}
            for n in _POSITIONS
            if criterion_kind_name(n) in values or criterion_text_name(n) in values
        },
    )


def latest_annotation(annotations) -> dict | None:
    """The annotation that speaks for a task: the most recently updated one not skipped."""
    usable = [a for a in annotations or [] if isinstance(a, dict) and not a.get("was_cancelled")]
    if not usable:
        return None
    return max(usable, key=lambda a: (a.get("updated_at") or a.get("created_at") or "", a.get("id") or 0))


def item_changes(payload: dict, answer: LabelStudioAnswer, *, task_id) -> dict:
    """Field changes (the `changes` of annotation.services.update_item) an answer asks of an
    item: only fields the annotator filled in and that differ from the item's current values.

    Criteria are replaced as a whole when any criterion text was given; a criterion whose kind
    was left empty keeps the kind the item has at that position."""
    changes: dict[str, Any] = {}
    if answer.reference_answer and answer.reference_answer != (payload.get("reference_answer") or ""):
        changes["reference_answer"] = answer.reference_answer
    if answer.question_type and answer.question_type != payload.get("question_type"):
        changes["question_type"] = answer.question_type
    current = [{"kind": c.get("kind"), "text": c.get("text")} for c in payload.get("criteria") or []]
    given = {n: c for n, c in sorted(answer.criteria.items()) if c.get("text")}
    if given:
        criteria = []
        for n, criterion in given.items():
            kind = criterion["kind"] or (current[n - 1]["kind"] if n <= len(current) else None)
            if kind is None:
                raise LabelStudioResultError(
                    task_id, f"criterion {n} has a text but no kind; choose one of: {', '.join(CRITERION_KINDS.values())}."
                )
            criteria.append({"kind": kind, "text": criterion["text"]})
        if criteria != current:
            changes["criteria"] = criteria
    return changes

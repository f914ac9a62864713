"""The one shape of an item: its fields, and every conversion other parts need.

Whoever lists an item's fields asks this module: the editor's form parsing and the services
(which fields exist, which are text, which a rewrite reads through its seed), the API payload,
the history snapshot and its diff rendering, the data of a Label Studio task, a release's
items.jsonl row (the harness's schema, `benchforge_harness/release.py`) and an MMBench TSV row.
"""

import base64
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from benchforge_harness import CHOICE_LETTERS as HARNESS_LETTERS

from .models import CHOICE_LETTERS, Criterion, Item
from .workflow import STATUS_LABELS


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    text: bool = False  # free text: line breaks normalised, judged empty when only spaces
    seed_only: bool = False  # a rewrite reads it through its seed; never stored on the rewrite
    child: bool = False  # stored in rows of its own (images, criteria), not on the item
    max_chars: int = 0  # text fields: the longest text an item may hold (every save and import)


# Text limits, in characters. Real benchmarks stay far below them (the shared fixtures: questions
# up to 312 characters, reference answers up to 2,811, a history turn up to 1,218, an item's
# criteria together up to 1,730; MMBench options are a line, its hints a paragraph), so they leave
# ten times room or more, while a runaway cell (a 100 MB question) is refused on its row instead of
# reaching prompts, token estimates and the API.
QUESTION_MAX_CHARS = 20_000
REFERENCE_MAX_CHARS = 50_000
OPTION_MAX_CHARS = 2_000
CRITERION_MAX_CHARS = 10_000
TURN_MAX_CHARS = 50_000
MAX_TURNS = 100

FIELDS = (
    Field("task", _("Task")),
    Field("kind", _("Kind")),
    Field("question_type", _("Question type")),
    Field("question", _("Question"), text=True, max_chars=QUESTION_MAX_CHARS),
    Field("history", _("Dialogue history")),
    Field("incoherent", _("Incoherent")),
    Field("hint", _("Hint"), text=True, max_chars=QUESTION_MAX_CHARS),
    Field("choices", _("Options")),
    Field("answer", _("Answer key"), text=True, max_chars=100),
    Field("reference_answer", _("Reference answer"), text=True, seed_only=True, max_chars=REFERENCE_MAX_CHARS),
    Field("description", _("Image description"), text=True, max_chars=QUESTION_MAX_CHARS),
    Field("images", _("Images"), seed_only=True, child=True),
    Field("criteria", _("Criteria"), seed_only=True, child=True),
)
EDITABLE_FIELDS = tuple(f.name for f in FIELDS)
SCALAR_FIELDS = tuple(f.name for f in FIELDS if not f.child and f.name != "task")
TEXT_FIELDS = tuple(f.name for f in FIELDS if f.text)
TEXT_LIMITS = {f.name: f.max_chars for f in FIELDS if f.text}
SEED_ONLY_FIELDS = tuple(f.name for f in FIELDS if f.seed_only)
FIELD_LABELS = {**{f.name: f.label for f in FIELDS}, "status": _("Status")}
ROLES_IN_TURN = ("user", "assistant")


def too_long(label: str, text: str, limit: int) -> str:
    """The problem of a text over its limit ('' when it fits): names the field, its size, the limit."""
    if len(text) <= limit:
        return ""
    return _("%(label)s is %(n)s characters long; the limit is %(limit)s.") % {
        "label": label,
        "n": f"{len(text):,}",
        "limit": f"{limit:,}",
    }


# The harness's words for what the platform calls the question type.
RELEASE_QUESTION_TYPES = {
    Item.QuestionType.OPEN: "open-ended",
    Item.QuestionType.CLOSED: "closed-ended",
    Item.QuestionType.COMPOUND: "compound",
}


# ---- the item as it is stored ----------------------------------------------------------------


def item_snapshot(item: Item) -> dict:
    """All editable fields of an item, images and criteria included, plus its status: what a
    history row keeps and what a 409 compares."""
    snapshot = {name: getattr(item, name) for name in SCALAR_FIELDS}
    snapshot.update(
        task=item.task_id,
        images=[link.image_id for link in item.item_images.all()],
        criteria=[{"kind": c.kind, "text": c.text} for c in item.criteria.all()],
        status=item.status,
    )
    return {name: snapshot[name] for name in (*EDITABLE_FIELDS, "status")}


def field_as_text(field: str, value, task_names: dict[int, str]) -> str:
    """A readable rendering of one snapshot field, for diffs and the conflict panel."""
    if field == "task":
        return task_names.get(value, f"task #{value}")
    if field == "kind":
        return str(Item.Kind(value).label) if value in Item.Kind.values else str(value)
    if field == "question_type":
        return str(Item.QuestionType(value).label) if value in Item.QuestionType.values else str(value)
    if field == "status":
        return str(STATUS_LABELS.get(value, value))
    if field == "incoherent":
        return "yes" if value else "no"
    if field == "history":
        return "\n".join(f"{t.get('role')}: {t.get('content')}" for t in value or [])
    if field == "choices":
        return "\n".join(f"{letter}. {text}" for letter, text in zip(CHOICE_LETTERS, value or []))
    if field == "criteria":
        labels = dict(Criterion.Kind.choices)
        return "\n".join(
            f"{n}. [{labels.get(c.get('kind'), c.get('kind'))}] {c.get('text')}" for n, c in enumerate(value or [], 1)
        )
    if field == "images":
        return ", ".join(f"#{i}" for i in value or [])
    return "" if value is None else str(value)


# ---- the item as every consumer sees it ------------------------------------------------------


def media_url(name: str) -> str:
    """Images are served by the app's permission-checked /media/ route, never by a storage URL."""
    return f"/media/{name}"


def item_payload(item: Item) -> dict:
    """The item as every consumer (API, editor, Label Studio, rewrite, QC, exports) sees it. A
    rewrite shows its seed's images, reference answer and criteria (shared, never copied). Load
    items with `annotation.selectors.with_payload_data` to read them in a fixed number of queries."""
    source = item.seed if item.seed_id else item
    return {
        "id": item.pk,
        "benchmark": item.benchmark.slug,
        "task": item.task.slug,
        "category": item.task.category.path,
        "kind": item.kind,
        "question_type": item.question_type,
        "question": item.question,
        "history": item.history,
        "incoherent": item.incoherent,
        "hint": item.hint,
        "choices": item.choices,
        "answer": item.answer,
        "reference_answer": source.reference_answer,
        "criteria": [{"kind": c.kind, "text": c.text} for c in source.criteria.all()],
        "description": item.description or source.description,
        "images": [
            {
                "id": link.image.pk,
                "sha256": link.image.sha256,
                "url": media_url(link.image.file.name),
                "width": link.image.width,
                "height": link.image.height,
            }
            for link in source.item_images.all()
        ],
        "seed_id": item.seed_id,
        "external_id": item.external_id,
        "is_external": item.is_external,
        "status": item.status,
        "version": item.version,
        "author": item.author.username if item.author_id else None,
        "assignee": item.assignee.username if item.assignee_id else None,
        "updated_at": item.updated_at.isoformat(),
        "submitted_at": item.submitted_at.isoformat() if item.submitted_at else None,
    }


def options_text(payload: dict) -> str:
    """The hint and the lettered options as one text (for readers that show them as a block)."""
    lines = [f"Hint: {payload['hint']}"] if payload.get("hint") else []
    lines += [f"{letter}. {choice}" for letter, choice in zip(CHOICE_LETTERS, payload.get("choices") or [])]
    return "\n".join(lines)


# Label Studio's <Image valueList> never finishes loading an empty list (the editor spins on a
# null image): an item without an image shows this small picture saying so instead.
LABELSTUDIO_NO_IMAGE = "data:image/svg+xml;base64," + base64.b64encode(
    b'<svg xmlns="http://www.w3.org/2000/svg" width="320" height="60" viewBox="0 0 320 60">'
    b'<rect width="320" height="60" fill="#f2f2f2"/>'
    b'<text x="160" y="36" font-family="sans-serif" font-size="16" text-anchor="middle" fill="#555">'
    b"This item has no image</text></svg>"
).decode("ascii")


def labelstudio_data(payload: dict, *, image_src) -> dict:
    """The `data` of a Label Studio task for an item: what the annotator reads. `image_src` turns
    one entry of payload["images"] into something an <Image> tag can show (a data URL). The
    editable fields' current values travel as the task's pre-annotation (labelstudio.adapter)."""
    context = f"Task: {payload.get('task', '')}"
    if payload.get("category"):
        context += f" ({payload['category']})"
    history = "\n\n".join(
        f"{str(turn.get('role', '')).capitalize()}: {turn.get('content', '')}" for turn in payload.get("history") or []
    )
    return {
        "context": context,
        "images": [image_src(image) for image in payload.get("images") or []] or [LABELSTUDIO_NO_IMAGE],
        "question": payload.get("question", ""),
        "history": history or "(no earlier turns)",
        "options": options_text(payload),
        # One entry on a multiple-choice item, none otherwise: the labeling config shows the options
        # and answer key views once per entry (a Repeater), so only on multiple-choice tasks.
        "mcq": [{"kind": "mcq"}] if payload.get("kind") == Item.Kind.MCQ else [],
    }


# ---- releases: the harness's items.jsonl and the MMBench TSV --------------------------------------


def release_id(item: Item) -> str:
    """An item's id in a release: its id in the benchmark it came from (external items), else ours.
    Stable from one release to the next, so results of different versions can be compared."""
    return item.external_id or str(item.pk)


def image_name(image) -> str:
    """Where a release keeps an image: by content hash, so it is stored once and verifiable."""
    return f"images/{image.sha256}.{image.file.name.rsplit('.', 1)[-1]}"


def release_row(item: Item, *, split: str | None = None, withhold: frozenset[str] = frozenset()) -> dict:
    """The item as one items.jsonl line in the harness's schema (benchforge_harness/release.py). `withhold`
    names what a public bundle keeps private: "answer", "reference_answer", "criteria"."""
    payload = item_payload(item)
    source = item.seed if item.seed_id else item
    category = item.task.category
    top, middle = (category.parent, category) if category.parent_id else (category, None)
    mcq = item.kind == Item.Kind.MCQ
    row = {
        "id": release_id(item),
        "question": item.question,
        "seed_id": release_id(item.seed) if item.seed_id else None,
        "category": top.name,
        "subcategory": middle.name if middle else None,
        "task": item.task.name,
        "question_type": "multiple-choice" if mcq else RELEASE_QUESTION_TYPES.get(item.question_type, item.question_type),
        "history": [{"role": t["role"], "content": t["content"]} for t in item.history],
        "images": [image_name(link.image) for link in source.item_images.all()],
        "reference_answer": payload["reference_answer"] or None,
        "criteria": [c["text"] for c in payload["criteria"]],
        "description": payload["description"] or None,
        "hint": item.hint or None,
        "choices": dict(zip(HARNESS_LETTERS, item.choices)) if mcq else None,
        "answer": item.answer or None if mcq else None,
        "split": split,
        "meta": {
            "benchforge_id": item.pk,
            "kind": item.kind,
            "incoherent": item.incoherent,
            "criteria_kinds": [c["kind"] for c in payload["criteria"]],
            "version": item.version,
        },
    }
    for name in withhold:
        row[name] = [] if name == "criteria" else None
    if "criteria" in withhold:
        row["meta"]["criteria_kinds"] = []
    return row


MMBENCH_COLUMNS = ("index", "question", "hint", "A", "B", "C", "D", "answer", "category", "l2-category", "split", "image")


def mmbench_row(item: Item, *, index: int, image: str, split: str | None = None, withhold_answer: bool = False) -> dict:
    """A multiple-choice item as an MMBench TSV row (see mmbench_row_of_release)."""
    if item.kind != Item.Kind.MCQ:
        raise ValueError(f"item #{item.pk} is not multiple-choice: it has no MMBench row")
    row = release_row(item, split=split, withhold=frozenset({"answer"}) if withhold_answer else frozenset())
    return mmbench_row_of_release(row, index=index, image=image)


def mmbench_row_of_release(row: dict, *, index: int, image: str) -> dict:
    """A multiple-choice release row (release_row) as an MMBench TSV row: the one place that says
    the format. `image` is the base64 of its image, or the index (as text) of an earlier row whose
    image it shares; unused options stay empty; the leaf task is the category and the category
    above it the l2-category. A frozen release's rows are all an export has, hence rows, not items."""
    if not row.get("choices"):
        raise ValueError(f"release row {row.get('id')} is not multiple-choice: it has no MMBench row")
    options = list(row["choices"].values()) + [""] * (len(CHOICE_LETTERS) - len(row["choices"]))
    return {
        "index": index,
        "question": row["question"],
        "hint": row.get("hint") or "",
        **dict(zip(CHOICE_LETTERS, options)),
        "answer": row.get("answer") or "",
        "category": row.get("task") or "",
        "l2-category": row.get("subcategory") or row.get("category") or "",
        "split": row.get("split") or "",
        "image": image,
    }

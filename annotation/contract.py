"""The one shape of an item: its fields, and (as the pipeline grows) its conversions to the API
payload, the history snapshot, the Label Studio task, a release's items.jsonl row and an MMBench
TSV row. Everything that lists an item's fields asks this module."""

from .models import Item

EDITABLE_FIELDS = (
    "task",
    "kind",
    "question_type",
    "question",
    "history",
    "incoherent",
    "hint",
    "choices",
    "answer",
    "reference_answer",
    "description",
    "images",
    "criteria",
)
SCALAR_FIELDS = (
    "kind",
    "question_type",
    "question",
    "history",
    "incoherent",
    "hint",
    "choices",
    "answer",
    "reference_answer",
    "description",
)
TEXT_FIELDS = ("question", "hint", "answer", "reference_answer", "description")
# A rewrite reads these through its seed : they are never stored on the rewrite.
SEED_ONLY_FIELDS = ("images", "reference_answer", "criteria")
ROLES_IN_TURN = ("user", "assistant")


def item_snapshot(item: Item) -> dict:
    """All editable fields of an item, images and criteria included, plus its status."""
    return {
        "task": item.task_id,
        "kind": item.kind,
        "question_type": item.question_type,
        "question": item.question,
        "history": item.history,
        "incoherent": item.incoherent,
        "hint": item.hint,
        "choices": item.choices,
        "answer": item.answer,
        "reference_answer": item.reference_answer,
        "description": item.description,
        "images": [link.image_id for link in item.item_images.all()],
        "criteria": [{"kind": c.kind, "text": c.text} for c in item.criteria.all()],
        "status": item.status,
    }

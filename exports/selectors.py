"""Reads for releases that other parts of the platform ask for (the navigation's count)."""

from annotation.models import Item
from annotation.workflow import ACCEPTED, QC_PASSED, REWRITTEN
from benchforge.permissions import is_researcher


def waiting_for(user, benchmark):
    """The navigation's Release count, for researchers (they build releases): items that passed
    every stage the benchmark uses and are in no frozen release yet."""
    if not is_researcher(user):
        return None
    return Item.objects.filter(benchmark=benchmark, status__in=(ACCEPTED, REWRITTEN, QC_PASSED))


# ---- the diff page ------------------------------------------------------------------------------

FIELD_LABELS = {
    "question": "Question",
    "reference_answer": "Reference answer",
    "criteria": "Criteria",
    "answer": "Answer key",
    "choices": "Choices",
    "hint": "Hint",
    "history": "Dialogue history",
    "description": "Image description",
    "images": "Images",
    "task": "Task",
    "category": "Category",
    "subcategory": "Subcategory",
    "question_type": "Question type",
    "split": "Split",
    "seed_id": "Seed",
}


def shown_value(value) -> str:
    """A row's value as text a person reads: lists one per line, choices as "A. text", turns as "role: text"."""
    if value is None or value == "" or value == [] or value == {}:
        return ""
    if isinstance(value, dict):
        return "\n".join(f"{key}. {text}" for key, text in value.items())
    if isinstance(value, list):
        return "\n".join(f"{v.get('role', '')}: {v.get('content', '')}" if isinstance(v, dict) else str(v) for v in value)
    return str(value)


def task_label(row: dict) -> str:
    """A release row's task with its category: "Counting (Perception & Understanding)"."""
    where = " / ".join(part for part in (row.get("category"), row.get("subcategory")) if part)
    return f"{row.get('task') or '—'} ({where})" if where else row.get("task") or "—"


def diff_entry(entry: dict) -> dict:
    row = entry["row"]
    return {
        "id": entry["id"],
        "item_id": entry["item_id"],
        "question": row.get("question") or "",
        "task": task_label(row),
        "fields": [
            {
                "label": FIELD_LABELS.get(f["field"], f["field"].replace("_", " ").capitalize()),
                "old": shown_value(f["old"]),
                "new": shown_value(f["new"]),
            }
            for f in entry.get("fields", ())
        ],
    }

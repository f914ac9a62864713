"""A run's cleaned benchmark: its items without those QC took out, as an MMBench TSV (the same
columns as the import, annotation.contract.mmbench_row) or JSONL (the release row of each item),
and the list of what was taken out and why. Written a row at a time (a view streams it)."""

from __future__ import annotations

import base64
import csv
import io
import json
from collections.abc import Iterator

from django.core.files.storage import default_storage

from annotation.contract import MMBENCH_COLUMNS, mmbench_row, release_row
from annotation.models import Item
from annotation.selectors import with_payload_data
from benchforge.errors import DomainError
from benchforge.inputs import is_digits

from .models import QCItem, QCRun
from .selectors import REASONS

CHUNK = 200
UNDECIDED = "flagged by the filter and not decided yet"


def _kept(entry: QCItem) -> bool:
    return not (entry.flagged and entry.done) or entry.decision in (QCItem.Decision.KEEP, QCItem.Decision.FIX)


def _items(run: QCRun) -> Iterator[Item]:
    ids = [e.item_id for e in QCItem.objects.filter(run=run).order_by("item_id") if _kept(e)]
    for start in range(0, len(ids), CHUNK):
        chunk = Item.objects.filter(pk__in=ids[start : start + CHUNK]).select_related("external_source").order_by("pk")
        yield from with_payload_data(chunk)


def removed(run: QCRun) -> list[dict]:
    """What the cleaned benchmark leaves out: items removed by a decision, and flagged items
    nobody decided yet (they are not clean either)."""
    rows = []
    for entry in QCItem.objects.filter(run=run, flagged=True, done=True).select_related("item", "decided_by").order_by("item_id"):
        if _kept(entry):
            continue
        rows.append(
            {
                "item": entry.item_id,
                "external_id": entry.item.external_id,
                "reason": REASONS.get(run.filter, run.filter) if entry.decision else UNDECIDED,
                "decision": entry.decision,
                "note": entry.note,
                "solved_by": entry.solved_by,
                "failed_by": entry.failed_by,
                "decided_by": entry.decided_by.username if entry.decided_by_id else None,
                "decided_at": entry.decided_at.isoformat() if entry.decided_at else None,
            }
        )
    return rows


def _line(values) -> str:
    out = io.StringIO()
    csv.writer(out, delimiter="\t", lineterminator="\n").writerow(values)
    return out.getvalue()


def tsv_lines(run: QCRun) -> Iterator[str]:
    """The cleaned multiple-choice items as MMBench TSV lines, header first. An image already
    written is referred to by the index of its first row, as the format does."""
    if not run.is_mcq:
        raise DomainError("A judged run checks open items: export it as JSONL (the TSV holds multiple-choice items only).")
    yield _line(MMBENCH_COLUMNS)
    first_row: dict[int, int] = {}
    used: set[int] = set()
    next_index = 0
    for item in _items(run):
        index = int(item.external_id) if is_digits(item.external_id) and int(item.external_id) not in used else None
        if index is None:
            while next_index in used:
                next_index += 1
            index = next_index
        used.add(index)
        images = [link.image for link in (item.seed or item).item_images.all()]
        values = []
        for image in images:
            if image.pk in first_row:
                values.append(str(first_row[image.pk]))
            else:
                with default_storage.open(image.file.name, "rb") as handle:
                    values.append(base64.b64encode(handle.read()).decode())
                first_row[image.pk] = index
        image_value = values[0] if len(values) == 1 else (json.dumps(values) if values else "")
        split = item.external_source.split if hasattr(item, "external_source") else ""
        row = mmbench_row(item, index=index, image=image_value, split=split)
        yield _line([row[column] for column in MMBENCH_COLUMNS])


def jsonl_lines(run: QCRun) -> Iterator[str]:
    """The cleaned items as JSON lines in the harness's release schema."""
    for item in _items(run):
        yield json.dumps(release_row(item), ensure_ascii=False) + "\n"

"""A cleaned benchmark: the items of one run, or of several runs combined (every finished run of a
benchmark, all filters), without those QC took out, as an MMBench TSV (the same columns as the
import, annotation.contract.mmbench_row) or JSONL (the release row of each item), and the list of
what was taken out and why. Written a row at a time (a view streams it).

Combined, an item is out when its latest decision in any of the runs is "remove", or when one of
the runs flagged it and nobody decided it in any of them; an item kept (or fixed) in one run stays
in, even if another run flagged it again (the decision survives re-runs)."""

from __future__ import annotations

import base64
import csv
import io
import json
from collections.abc import Iterator

from django.core.files.storage import default_storage
from django.utils.translation import gettext as _

from annotation.contract import MMBENCH_COLUMNS, mmbench_row, release_row
from annotation.models import Item
from annotation.selectors import with_payload_data
from benchforge.errors import DomainError
from benchforge.inputs import is_digits

from .models import QCItem, QCRun
from .selectors import REASONS

CHUNK = 200
UNDECIDED = "flagged by the filter and not decided yet"


def _runs(runs) -> list[QCRun]:
    return [runs] if isinstance(runs, QCRun) else list(runs)


def _entries(runs: list[QCRun]):
    return QCItem.objects.filter(run__in=runs).select_related("run", "item", "decided_by").order_by("item_id", "run__number")


def _out(runs: list[QCRun]) -> dict[int, tuple[QCItem, str]]:
    """Item id -> (the entry that takes it out, its reason key), for every item left out."""
    by_item: dict[int, list[QCItem]] = {}
    for entry in _entries(runs):
        by_item.setdefault(entry.item_id, []).append(entry)
    out = {}
    for item_id, entries in by_item.items():
        decided = sorted((e for e in entries if e.decision), key=lambda e: (e.decided_at is None, e.decided_at, e.pk))
        if decided:
            latest = decided[-1]
            if latest.decision == QCItem.Decision.REMOVE:
                out[item_id] = (latest, "removed")
            continue
        flagged = [e for e in entries if e.flagged and e.done]
        if flagged:
            out[item_id] = (flagged[0], "undecided")
    return out


def _items(runs: list[QCRun], *, mcq_only: bool = False) -> Iterator[Item]:
    out = _out(runs)
    ids = sorted({e.item_id for e in QCItem.objects.filter(run__in=runs).only("item_id")} - set(out))
    for start in range(0, len(ids), CHUNK):
        chunk = Item.objects.filter(pk__in=ids[start : start + CHUNK]).select_related("external_source").order_by("pk")
        if mcq_only:
            chunk = chunk.filter(kind=Item.Kind.MCQ)
        yield from with_payload_data(chunk)


def removed(runs) -> list[dict]:
    """What the cleaned benchmark leaves out: items removed by a decision, and flagged items
    nobody decided yet (they are not clean either)."""
    rows = []
    for item_id, (entry, why) in sorted(_out(_runs(runs)).items()):
        run = entry.run
        rows.append(
            {
                "item": item_id,
                "external_id": entry.item.external_id,
                "run": run.number,
                "reason": REASONS.get(run.filter, run.filter) if why == "removed" else UNDECIDED,
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


def tsv_lines(runs) -> Iterator[str]:
    """The cleaned multiple-choice items as MMBench TSV lines, header first. An image already
    written is referred to by the index of its first row, as the format does."""
    runs = _runs(runs)
    if not any(run.is_mcq for run in runs):
        raise DomainError(_("A judged run checks open items: export it as JSONL (the TSV holds multiple-choice items only)."))
    yield _line(MMBENCH_COLUMNS)
    first_row: dict[int, int] = {}
    used: set[int] = set()
    next_index = 0
    for item in _items(runs, mcq_only=True):
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


def jsonl_lines(runs) -> Iterator[str]:
    """The cleaned items as JSON lines in the harness's release schema."""
    for item in _items(_runs(runs)):
        yield json.dumps(release_row(item), ensure_ascii=False) + "\n"

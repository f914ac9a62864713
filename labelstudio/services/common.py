"""What push, pull and decisions share: a job's per-item report, the rule for items past review."""

from __future__ import annotations

from annotation.services import change_status, requeue_for_author
from annotation.workflow import ACCEPTED, ANSWERED, QC_FLAGGED, REVISION, STATUS_LABELS, WORK_IN_PROGRESS

from ..models import LabelStudioLink, LabelStudioTask

PULL_ACTION = "labelstudio"  # ItemRevision.action of an edit (or status change) that came from Label Studio
MAX_EARLIER_PREFILLS = 10  # older pre-annotations kept per task, for annotations started before a refresh
Reviewed = LabelStudioLink.Reviewed

# How a change reaches an item, by the item's status (see `review_route`).
AS_IS = "as_is"  # a draft or an item sent back: work in progress, changed like any edit
WAITS = "waits"  # answered (submitted, not reviewed yet): the next review round reads the new version
SENT_BACK = "sent_back"  # reviewed and accepted (or flagged by QC): back to its author, then reviewed again


class Report:
    """A job's per-item entries, each tagged with the count(s) it adds to; the counts are read back
    from every entry of the job, so a resumed push or pull reports all its runs did."""

    def __init__(self, run, *counts: str):
        self.run = run
        self.names = counts

    def add(self, count: str | list[str], key: str, outcome: str, message: str, data: dict | None = None) -> None:
        self.run.record(key, outcome, message, {**(data or {}), "count": count})

    def add_many(self, rows) -> None:
        """[(count, key, outcome, message, data)] in one transaction (the quiet entries of a large project)."""
        self.run.record_many(
            [(key, outcome, message, {**(data or {}), "count": count}) for count, key, outcome, message, data in rows]
        )

    @property
    def counts(self) -> dict[str, int]:
        tally = self.run.tally(lambda outcome, data: data.get("count"))
        return {name: tally[name] for name in self.names}


def review_route(item, rule: str) -> str | None:
    """How a change from Label Studio may reach `item` under the project's rule for items past
    review, or None when it may not (it waits for the researcher's decision): drafts and items sent
    back take it as any edit; with the rule REVIEW an answered item takes it and is reviewed with it,
    an accepted (or QC-flagged) one takes it and goes back to its author for another review. An item
    in review is never changed under its reviewers (they may have judged the version they read), nor
    one further down the pipeline (rewritten, QC passed, released) or rejected."""
    if item.status in WORK_IN_PROGRESS:
        return AS_IS
    if rule != Reviewed.REVIEW:
        return None
    if item.status == ANSWERED:
        return WAITS
    if item.status in (ACCEPTED, QC_FLAGGED):
        return SENT_BACK
    return None


def after_change(item, route: str, *, user, note: str):
    """Finish a change applied under `route`: an item that was reviewed goes back to its author."""
    if route != SENT_BACK:
        return item
    item = change_status(
        item,
        REVISION,
        user=user,
        action=PULL_ACTION,
        note=f"Sent back for another review: {note}",
    )
    requeue_for_author(item, by=user)
    return item


def status_label(status: str) -> str:
    return str(STATUS_LABELS.get(status, status)).lower()


def save_sync_state(row: LabelStudioTask, prefills: list[dict], *fields: str) -> None:
    """Write back the baseline and the earlier pre-annotations' baselines (`prefills`, as
    `LabelStudioTask.prefills()` gave them, changed), with the other `fields` of the row."""
    row.baseline = prefills[0]["base"]
    row.earlier = prefills[1 : 1 + MAX_EARLIER_PREFILLS]
    row.save(update_fields=["baseline", "earlier", *fields])


def agree(prefills: list[dict], key: str, value) -> None:
    """Both sides now hold `value` for `key`: the baseline of every pre-annotation moves to it."""
    for prefill in prefills:
        prefill["base"][key] = value

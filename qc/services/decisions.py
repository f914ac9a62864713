"""Deciding a flagged item: remove it, keep it, or fix it. Who decided, when and why is kept on the
run's entry; the item's status moves only through annotation's transition table:
  remove  stays qc_flagged (out of every release; `selectors.removed_items` lists it and why)
  keep    qc_flagged -> qc_passed (the flag was wrong)
  fix     qc_flagged -> qc_passed, and the editor opens so a researcher corrects it
"""

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.models import Item
from annotation.services import change_status, lock_item
from annotation.workflow import QC_FLAGGED, QC_PASSED
from benchforge import permissions
from benchforge.concurrency import lock, retried
from benchforge.errors import Conflict, DomainError

from ..models import QCItem, QCRun

Decision = QCItem.Decision
DECISION_ACTION = "qc_decided"


@retried
def decide(entry: QCItem, *, user, decision: str, note: str = "") -> QCItem:
    """Record a decision on a flagged item of a run and move the item's status to match."""
    permissions.require_researcher(user, "Deciding on a QC flag")
    if decision not in Decision.values:
        raise DomainError(
            _("Unknown decision '%(decision)s'; use one of: %(decisions)s.")
            % {"decision": decision, "decisions": ", ".join(Decision.values)}
        )
    note = (note or "").strip()
    if decision == Decision.REMOVE and not note and not entry.flagged:
        raise DomainError(_("Removing an item the filter did not flag needs a note saying why."))
    with transaction.atomic():
        # The item's status is what a decision changes: lock it (then the entry) and read both after
        # the locks, so a decision given meanwhile by someone else is seen and the last one stands whole.
        item = lock_item(entry.item_id)
        entry = lock(QCItem, entry.pk)
        entry.run = QCRun.objects.get(pk=entry.run_id)
        if item.status not in (QC_FLAGGED, QC_PASSED):
            raise Conflict(
                _("Item #%(item)s is '%(status)s' now: only items in QC (flagged or passed) can be decided here.")
                % {"item": item.pk, "status": item.status_label}
            )
        # the item's history keeps the decision's code (the same words in English), in no one's language
        why = f"QC run {entry.run.number}: {decision}" + (f" ({note})" if note else "")
        if decision == Decision.REMOVE and item.status != QC_FLAGGED:
            change_status(item, QC_FLAGGED, user=user, action=DECISION_ACTION, note=why)
        elif decision in (Decision.KEEP, Decision.FIX) and item.status != QC_PASSED:
            change_status(item, QC_PASSED, user=user, action=DECISION_ACTION, note=why)
        entry.decision, entry.note, entry.decided_by, entry.decided_at = decision, note, user, timezone.now()
        entry.save(update_fields=["decision", "note", "decided_by", "decided_at"])
    entry.item = Item.objects.get(pk=entry.item_id)
    return entry

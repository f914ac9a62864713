"""Screening: accepting and rejecting images with the protocol's reasons."""

from django.utils import timezone
from django.utils.translation import gettext

from benchforge.errors import DomainError

from ..models import Benchmark, Image

SCREEN_ACTIONS = ("accept", "reject", "reset")


def screen_images(benchmark: Benchmark, image_ids, *, action: str, user, reason: str = "", note: str = "") -> int:
    """Accept, reject (with a protocol reason) or reset images; returns how many changed."""
    if action not in SCREEN_ACTIONS:
        raise DomainError(
            gettext("Unknown action '%(action)s'; use one of %(actions)s.")
            % {"action": action, "actions": ", ".join(SCREEN_ACTIONS)}
        )
    ids = {int(i) for i in image_ids}
    if not ids:
        raise DomainError(gettext("Select at least one image."))
    images = Image.objects.filter(benchmark=benchmark, pk__in=ids)
    if images.count() != len(ids):
        raise DomainError(gettext("Some selected images do not exist in this benchmark; reload the page."), code="not_found")
    note = note.strip()
    if action == "reject":
        if reason not in Image.RejectReason.values:
            raise DomainError(
                gettext("Choose a rejection reason: %(reasons)s.")
                % {"reasons": "; ".join(f"{v} ({label})" for v, label in Image.RejectReason.choices)}
            )
        if reason == Image.RejectReason.OTHER and not note:
            raise DomainError(gettext("Rejecting for 'other' needs a note saying why."))
        fields = {"status": Image.Status.REJECTED, "reject_reason": reason, "reject_note": note}
    elif action == "accept":
        fields = {"status": Image.Status.ACCEPTED, "reject_reason": "", "reject_note": ""}
    else:
        fields = {"status": Image.Status.PENDING, "reject_reason": "", "reject_note": ""}
    return images.update(screened_by=user, screened_at=timezone.now(), **fields)

"""Verifying rewrites: approve (the rewrite becomes an accepted item of its seed), reject with a
reason, edit, and rewrites written by hand. An approval is final; a rejection can be reconsidered
(approved, or edited back to pending). Reviewers and researchers who are members verify; a
rewrite someone wrote by hand or edited is approved by another verifier."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.models import Item
from annotation.services import change_status, create_item, lock_item
from annotation.workflow import ACCEPTED, REWRITTEN
from benchforge import permissions
from benchforge.concurrency import lock
from benchforge.errors import Conflict, DomainError, NotAllowed

from ..models import Rewrite
from ..parsing import normalized
from ..similarity import similarity

REWRITTEN_ACTION = "rewritten"  # ItemRevision.action of items made or moved by verification
MAX_LENGTH = 4000
VERIFIABLE_SEED_STATUSES = (ACCEPTED, REWRITTEN)


def similarity_to_seed(text: str, question: str) -> float:
    return similarity(text, question)


def refresh_similarities(seed_id: int) -> None:
    """Each rewrite's highest similarity to another rewrite of the same seed (any batch, by hand too),
    under the seed's lock: whoever else writes these rows holds it too, so nobody waits in a circle."""
    with transaction.atomic():
        lock_item(seed_id)
        rows = list(Rewrite.objects.filter(seed_id=seed_id).order_by("pk").only("id", "text", "similarity_siblings"))
        changed = []
        for row in rows:
            best = max((similarity(row.text, other.text) for other in rows if other.pk != row.pk), default=0.0)
            if best != row.similarity_siblings:
                row.similarity_siblings = best
                changed.append(row)
        if changed:
            Rewrite.objects.bulk_update(changed, ["similarity_siblings"])


def check_verifier(user, seed: Item) -> None:
    if not permissions.may_review(user):
        raise NotAllowed(_("Verifying rewrites needs the reviewer or researcher role."))
    if not permissions.is_member(user, seed.benchmark):
        raise NotAllowed(_("You are not a member of this benchmark."))


def _locked(rewrite: Rewrite) -> Rewrite:
    """The rewrite's seed, then the rewrite, locked (parents first) and read now: verifications of one
    seed's rewrites take turns, so two approvals never both move the seed and two edits never update
    the same siblings' similarities in opposite orders."""
    seed = lock_item(Rewrite.objects.values_list("seed_id", flat=True).get(pk=rewrite.pk))
    current = lock(Rewrite, rewrite.pk)
    current.seed = seed
    return current


def _approved_already(current: Rewrite, user) -> Item:
    """An approval is final: the same verifier approving again gets its item (a double click); anyone
    else is told who approved it."""
    if current.decided_by_id == user.pk:
        return current.item
    who = current.decided_by.username if current.decided_by_id else "someone"
    raise Conflict(
        _("Rewrite #%(rewrite)s is already approved by %(who)s (item #%(item)s); an approval is final.")
        % {"rewrite": current.pk, "who": who, "item": current.item_id},
        extra={"existing": {"item": current.item_id}},
    )


def _clean_text(text: str) -> str:
    text = (text or "").replace("\r\n", "\n").strip()
    if not text:
        raise DomainError(_("A rewrite cannot be empty."))
    if len(text) > MAX_LENGTH:
        raise DomainError(_("A rewrite is at most %(max)s characters.") % {"max": f"{MAX_LENGTH:,}"})
    return text


def _check_seed(seed: Item) -> None:
    if seed.status not in VERIFIABLE_SEED_STATUSES:
        raise Conflict(
            _(
                "Seed item #%(item)s is '%(status)s' now: its rewrites can be verified only while it is accepted "
                "(or already rewritten)."
            )
            % {"item": seed.pk, "status": seed.status_label},
            code="seed_moved",
        )


def approve(rewrite: Rewrite, *, user) -> Item:
    """The rewrite becomes an accepted item: the seed's question replaced, its task, kind and
    options kept, its reference answer, criteria and images read through the seed; authored by
    the verifier. The seed's first approval moves it from accepted to rewritten."""
    with transaction.atomic():
        current = _locked(rewrite)
        seed = current.seed
        check_verifier(user, seed)
        if current.state == Rewrite.State.APPROVED:
            return _approved_already(current, user)
        permissions.require(permissions.own_work_refusal(user, current.writer_ids, f"Rewrite #{current.pk}"))
        _check_seed(seed)
        # The item is the work of whoever wrote its words (by hand or by editing), else of the verifier.
        writer = current.edited_by if current.edited and current.edited_by_id else None
        if writer is None and current.source == Rewrite.Source.MANUAL:
            writer = current.created_by
        item = create_item(
            seed.benchmark,
            task=seed.task,
            user=user,
            author=writer or user,
            seed=seed,
            status=ACCEPTED,
            action=REWRITTEN_ACTION,
            kind=seed.kind,
            question_type=seed.question_type,
            question=current.text,
            hint=seed.hint,
            choices=seed.choices,
            answer=seed.answer,
        )
        if seed.status == ACCEPTED:
            change_status(seed, REWRITTEN, user=user, action=REWRITTEN_ACTION, note=f"first approved rewrite: item #{item.pk}")
        current.state, current.item = Rewrite.State.APPROVED, item
        current.reason, current.comment = "", ""
        current.decided_by, current.decided_at = user, timezone.now()
        current.save(update_fields=["state", "item", "reason", "comment", "decided_by", "decided_at"])
    return item


def reject(rewrite: Rewrite, *, user, reason: str, comment: str = "") -> Rewrite:
    if reason not in Rewrite.Reason.values:
        raise DomainError(
            _("Choose a reason: %(reasons)s.") % {"reasons": ", ".join(str(label) for label in Rewrite.Reason.labels)}
        )
    comment = (comment or "").strip()
    if reason == Rewrite.Reason.OTHER and not comment:
        raise DomainError(_("Rejecting for another reason needs a comment saying what is wrong."))
    with transaction.atomic():
        current = _locked(rewrite)
        check_verifier(user, current.seed)
        if current.state == Rewrite.State.APPROVED:
            raise Conflict(
                _("Rewrite #%(rewrite)s is approved (item #%(item)s); an approval is final.")
                % {"rewrite": current.pk, "item": current.item_id}
            )
        current.state, current.reason, current.comment = Rewrite.State.REJECTED, reason, comment[:2000]
        current.decided_by, current.decided_at = user, timezone.now()
        current.save(update_fields=["state", "reason", "comment", "decided_by", "decided_at"])
    return current


def edit(rewrite: Rewrite, *, user, text: str) -> Rewrite:
    """Correct a rewrite's text before approving it (a rejected one goes back to pending)."""
    text = _clean_text(text)
    with transaction.atomic():
        current = _locked(rewrite)
        check_verifier(user, current.seed)
        if current.state == Rewrite.State.APPROVED:
            raise Conflict(
                _("Rewrite #%(rewrite)s is approved; an approval is final: edit item #%(item)s instead.")
                % {"rewrite": current.pk, "item": current.item_id}
            )
        if text == current.text:
            return current
        if not current.edited:
            current.original_text = current.text
        current.text, current.edited, current.edited_by = text, True, user
        current.similarity_seed = similarity_to_seed(text, current.seed.question)
        current.state, current.reason, current.comment = Rewrite.State.PENDING, "", ""
        current.save(
            update_fields=["text", "original_text", "edited", "edited_by", "similarity_seed", "state", "reason", "comment"]
        )
        refresh_similarities(current.seed_id)
    current.refresh_from_db()
    return current


def add_manual(seed: Item, *, user, text: str) -> Rewrite:
    """A rewrite written by hand (for a seed the model could not rewrite, or one more); it is
    verified like the others."""
    text = _clean_text(text)
    with transaction.atomic():
        seed = lock_item(seed)
        check_verifier(user, seed)
        if seed.seed_id is not None:
            raise DomainError(
                _("Item #%(item)s is itself a rewrite: add rewrites to its seed #%(seed)s.")
                % {"item": seed.pk, "seed": seed.seed_id}
            )
        if seed.kind == Item.Kind.MULTI_TURN:
            raise DomainError(_("Multi-turn items are not rewritten."))
        _check_seed(seed)
        key = normalized(text)
        if key == normalized(seed.question):
            raise DomainError(_("That is the seed question itself, not a rewrite."))
        if any(normalized(t) == key for t in Rewrite.objects.filter(seed=seed).values_list("text", flat=True)):
            raise Conflict(_("This seed already has that rewrite."), code="duplicate")
        rewrite = Rewrite.objects.create(
            seed=seed,
            source=Rewrite.Source.MANUAL,
            text=text,
            similarity_seed=similarity_to_seed(text, seed.question),
            created_by=user,
        )
        refresh_similarities(seed.pk)
    rewrite.refresh_from_db()
    return rewrite

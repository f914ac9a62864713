"""The one transition table of an Item's life (docs/architecture.md). Services call `check_transition`
before changing a status; an illegal move raises IllegalTransition (a 409 with a message)."""

from django.utils.translation import gettext_lazy as _

from benchforge.errors import IllegalTransition

DRAFT = "draft"
ANSWERED = "answered"
IN_REVIEW = "in_review"
REVISION = "revision"
ACCEPTED = "accepted"
REWRITTEN = "rewritten"
QC_PASSED = "qc_passed"
QC_FLAGGED = "qc_flagged"
RELEASED = "released"
REJECTED = "rejected"

STATUS_CHOICES = [
    (DRAFT, _("Draft")),
    (ANSWERED, _("Answered")),
    (IN_REVIEW, _("In review")),
    (REVISION, _("Needs revision")),
    (ACCEPTED, _("Accepted")),
    (REWRITTEN, _("Rewritten")),
    (QC_PASSED, _("QC passed")),
    (QC_FLAGGED, _("QC flagged")),
    (RELEASED, _("Released")),
    (REJECTED, _("Rejected")),
]
STATUS_LABELS = dict(STATUS_CHOICES)
# Annotators and reviewers edit work in progress only; researchers may also correct items
# further down the pipeline (never released ones).
WORK_IN_PROGRESS = (DRAFT, REVISION)

TRANSITIONS: dict[str, frozenset[str]] = {
    DRAFT: frozenset({ANSWERED}),
    ANSWERED: frozenset({DRAFT, IN_REVIEW}),
    # Back to ANSWERED: the round closed before anyone reviewed it (it waits for the next round).
    IN_REVIEW: frozenset({REVISION, ACCEPTED, REJECTED, ANSWERED}),
    REVISION: frozenset({ANSWERED}),
    # REVISION and REJECTED: expert verification overturns an acceptance. RELEASED: a release
    # may take accepted items directly when the benchmark skips QC.
    ACCEPTED: frozenset({REWRITTEN, QC_PASSED, QC_FLAGGED, REVISION, REJECTED, RELEASED}),
    REWRITTEN: frozenset({QC_PASSED, QC_FLAGGED, RELEASED}),
    QC_PASSED: frozenset({RELEASED, QC_FLAGGED}),
    QC_FLAGGED: frozenset({QC_PASSED, REVISION}),
    RELEASED: frozenset(),
    # Out of the release set for good; its task's quota gap shows, and a new item replaces it.
    REJECTED: frozenset(),
}


def check_transition(current: str, target: str) -> None:
    if target not in TRANSITIONS.get(current, frozenset()):
        allowed = sorted(str(STATUS_LABELS[s]) for s in TRANSITIONS.get(current, ()))
        hint = f" From '{STATUS_LABELS.get(current, current)}' it can go to: {', '.join(allowed)}." if allowed else ""
        raise IllegalTransition(
            f"An item cannot move from '{STATUS_LABELS.get(current, current)}' to '{STATUS_LABELS.get(target, target)}'.{hint}"
        )

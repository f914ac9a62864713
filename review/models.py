"""Review rounds: which items a round covers, who reviews each, what each reviewer said and what
the round decided. Item statuses change only through annotation's transition table."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

# Reason codes of a review, by what they are about (the protocol of docs/methods.md sections 4-5).
REASONS = {
    gettext_noop("reference answer"): {
        "factual_error": _("Factual error (contradicts the image)"),
        "not_following": _("Does not follow the instruction"),
        "incomplete": _("Incomplete (a judge could not grade without the image)"),
        "common_sense": _("Common-sense mistake"),
    },
    gettext_noop("question"): {
        "unclear": _("Unclear"),
        "no_image_needed": _("Answerable without the image"),
        "sensitive": _("Sensitive"),
    },
    gettext_noop("criteria"): {
        "criteria_missing": _("Missing"),
        "criteria_wrong_type": _("Wrong type"),
        "criteria_wrong": _("Wrong"),
    },
    gettext_noop("collection guideline"): {
        "recency": _("Recency"),
        "license": _("License"),
        "clarity": _("Image clarity"),
        "cohesion": _("Instruction-image cohesion"),
    },
}
# Lazy: each label reads in the language of the request that shows it.
REASON_LABELS = {
    code: format_lazy("{}: {}", _(group), label) for group, codes in REASONS.items() for code, label in codes.items()
}


class ReviewRound(models.Model):
    class Kind(models.TextChoices):
        CROSS = "cross", _("Cross-review")
        EXPERT = "expert", _("Expert verification")

    class Rule(models.TextChoices):
        UNANIMOUS = "unanimous", _("Unanimous (accepted only if every reviewer accepts)")
        MAJORITY = "majority", _("Majority (the most common verdict; a tie needs revision)")
        ANY_REJECT = "any_reject", _("Any reject (one reject rejects, else one revision sends it back)")

    class Status(models.TextChoices):
        OPENING = "opening", _("Opening")
        OPEN = "open", _("Open")
        CLOSED = "closed", _("Closed")

    benchmark = models.ForeignKey("curation.Benchmark", on_delete=models.CASCADE, related_name="review_rounds")
    number = models.PositiveIntegerField()
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.CROSS)
    rule = models.CharField(max_length=12, choices=Rule.choices, default=Rule.MAJORITY)
    reviewers_per_item = models.PositiveSmallIntegerField(default=1)
    # {"tasks": [ids], "authors": [ids], "sample_per_task": n or null, "seed": n}: what the round was opened over.
    scope = models.JSONField(default=dict, blank=True)
    # Annotators learn who reviewed their items once the round closes, unless this is off.
    reveal_reviewers = models.BooleanField(default=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPENING)
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    closed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["benchmark", "number"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "number"], name="unique_round_number")]

    def __str__(self):
        return f"{self.get_kind_display()} round {self.number}"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN


class RoundItem(models.Model):
    """An item in a round, and what the round decided about it."""

    class Outcome(models.TextChoices):
        ACCEPTED = "accepted", _("Accepted")
        REVISION = "revision", _("Needs revision")
        REJECTED = "rejected", _("Rejected")
        UNREVIEWED = "unreviewed", _("Not reviewed (round closed)")

    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="entries")
    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="round_entries")
    version = models.PositiveIntegerField(help_text="the item's version when the round took it")
    note = models.TextField(
        blank=True, help_text="why the item is in the round, shown to its reviewers (e.g. an item analysis flag)"
    )
    outcome = models.CharField(max_length=12, choices=Outcome.choices, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["round", "id"]
        constraints = [models.UniqueConstraint(fields=["round", "item"], name="unique_round_item")]
        indexes = [models.Index(fields=["round", "outcome"])]


class Review(models.Model):
    """One reviewer's verdict on one item of a round (empty until they give it)."""

    class Verdict(models.TextChoices):
        ACCEPT = "accept", _("Accept")
        REVISION = "revision", _("Needs revision")
        REJECT = "reject", _("Reject")

    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="reviews")
    entry = models.ForeignKey(RoundItem, on_delete=models.CASCADE, related_name="reviews")
    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reviews")
    assigned_at = models.DateTimeField(auto_now_add=True)
    verdict = models.CharField(max_length=8, choices=Verdict.choices, blank=True)
    reasons = models.JSONField(default=list, blank=True)
    comment = models.TextField(blank=True)
    item_version = models.PositiveIntegerField(null=True, blank=True, help_text="the version the verdict judged")
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["assigned_at", "id"]
        constraints = [models.UniqueConstraint(fields=["entry", "reviewer"], name="one_review_per_reviewer_and_item")]
        indexes = [
            models.Index(fields=["reviewer", "submitted_at"]),
            models.Index(fields=["round", "submitted_at"]),
            # A reviewer's queue (pending_reviews) from partial indexes of the pending reviews alone:
            # without them Postgres read all of the reviewer's reviews, given ones included (40 ms at
            # 6,000 each). The second holds the queue's order (selectors.PENDING_ORDER), so a page is
            # read from it rather than sorted.
            models.Index(fields=["reviewer", "assigned_at", "id"], condition=Q(verdict=""), name="review_pending_by_reviewer"),
            models.Index(fields=["reviewer", "round", "item", "id"], condition=Q(verdict=""), name="review_pending_in_order"),
        ]

    @property
    def is_done(self) -> bool:
        return bool(self.verdict)

    @property
    def reason_labels(self) -> list[str]:
        return [str(REASON_LABELS.get(code, code)) for code in self.reasons]

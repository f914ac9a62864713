"""Items (questions) of a benchmark, their images, criteria, edit history and assignments.

The field names are a contract other apps code against: annotation/contract.py lists them.
Writes go through annotation.services (validation, optimistic locking, history).
"""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from .workflow import DRAFT, RELEASED, STATUS_CHOICES, STATUS_LABELS, WORK_IN_PROGRESS

MAX_CRITERIA = 3
MAX_CHOICES = 4
CHOICE_LETTERS = "ABCD"


class Item(models.Model):
    """One question of a benchmark: a seed written on accepted images, an approved rewrite of a
    seed (`seed` set: images, reference answer and criteria are read through the seed), or an
    item imported from an external benchmark."""

    class Kind(models.TextChoices):
        SINGLE_TURN = "single_turn", _("Single-turn")
        MULTI_TURN = "multi_turn", _("Multi-turn (dialogue history)")
        MCQ = "mcq", _("Multiple choice")

    class QuestionType(models.TextChoices):
        OPEN = "open", _("Open-ended")
        CLOSED = "closed", _("Closed-ended")
        COMPOUND = "compound", _("Compound (open and closed parts)")

    benchmark = models.ForeignKey("curation.Benchmark", on_delete=models.CASCADE, related_name="items")
    task = models.ForeignKey("curation.Task", on_delete=models.PROTECT, related_name="items")
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.SINGLE_TURN)
    question_type = models.CharField(max_length=10, choices=QuestionType.choices, default=QuestionType.OPEN)
    question = models.TextField(blank=True)
    history = models.JSONField(
        default=list, blank=True, help_text='Turns before the question: [{"role": "user"|"assistant", "content": "..."}].'
    )
    incoherent = models.BooleanField(
        default=False, help_text="An earlier assistant turn is wrong and the question points it out."
    )
    hint = models.TextField(blank=True)
    choices = models.JSONField(default=list, blank=True, help_text="2-4 option texts; index 0 is A.")
    answer = models.CharField(max_length=1, blank=True, help_text="Letter of the correct option; empty when unknown.")
    reference_answer = models.TextField(blank=True)
    description = models.TextField(blank=True, help_text="Fine-grained description of the image(s) for text-only judges.")
    # RESTRICT: a seed cannot be deleted on its own while rewrites read through it; deleting
    # the seed together with its rewrites (one queryset) is allowed.
    seed = models.ForeignKey("self", null=True, blank=True, on_delete=models.RESTRICT, related_name="rewrites")
    is_external = models.BooleanField(default=False)
    external_id = models.CharField(
        max_length=100, blank=True, help_text="Id in the source benchmark (e.g. an AlignMMBench question_id)."
    )
    status = models.CharField(max_length=16, choices=STATUS_CHOICES, default=DRAFT, db_index=True)
    version = models.PositiveIntegerField(default=1)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="authored_items"
    )
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="assigned_items"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    withheld = models.JSONField(
        default=list,
        blank=True,
        help_text="fields a frozen release keeps private (annotation.withholding.FIELDS); set when it is frozen",
    )

    class Meta:
        ordering = ["id"]
        # The items list's filters (none, status, task, author) each have an index ending in the id: its
        # rows (newest first) and its capped count read the index alone. At a million items the count
        # of an author's drafts had read 26,000 table pages (180 ms), a task's 31 ms, after every submit.
        indexes = [
            models.Index(fields=["benchmark", "id"], name="item_per_benchmark"),
            models.Index(fields=["benchmark", "status", "id"], name="item_per_status"),
            models.Index(fields=["benchmark", "task", "status", "id"], name="item_per_task"),
            models.Index(fields=["benchmark", "author", "status", "id"], name="item_per_author"),
            models.Index(fields=["benchmark", "kind"]),
            # The few imported items: counting them (the dashboard's QC panel) reads only them.
            models.Index(fields=["benchmark"], condition=Q(is_external=True), name="item_external_per_benchmark"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["benchmark", "external_id"], condition=~Q(external_id=""), name="unique_item_external_id_per_benchmark"
            ),
        ]

    def __str__(self):
        return f"Item #{self.pk}"

    @property
    def is_rewrite(self) -> bool:
        return self.seed_id is not None

    # The facts benchforge.permissions reads (it knows no workflow of its own).
    @property
    def is_released(self) -> bool:
        return self.status == RELEASED

    @property
    def is_work_in_progress(self) -> bool:
        return self.status in WORK_IN_PROGRESS

    @property
    def status_label(self) -> str:
        return str(STATUS_LABELS.get(self.status, self.status))


class ItemImage(models.Model):
    """An item's images, in the order the question refers to them."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="item_images")
    image = models.ForeignKey("curation.Image", on_delete=models.PROTECT, related_name="item_links")
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["order", "id"]
        constraints = [models.UniqueConstraint(fields=["item", "image"], name="unique_item_image")]


class Criterion(models.Model):
    """One of an item's 1-3 per-sample grading criteria (MLLM-Bench)."""

    class Kind(models.TextChoices):
        EXACT = "exact", _("Exact reference")
        SOFT = "soft", _("Soft reference")
        RANGE = "range", _("Range")
        GUIDELINE = "guideline", _("Evaluation guideline")

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="criteria")
    order = models.PositiveSmallIntegerField(validators=[MinValueValidator(1), MaxValueValidator(MAX_CRITERIA)])
    kind = models.CharField(max_length=10, choices=Kind.choices)
    text = models.TextField()

    class Meta:
        ordering = ["order"]
        constraints = [
            models.UniqueConstraint(fields=["item", "order"], name="unique_criterion_order"),
            models.CheckConstraint(condition=Q(order__gte=1) & Q(order__lte=MAX_CRITERIA), name="criterion_order_1_to_3"),
        ]


class ItemRevision(models.Model):
    """One row per item version: a full snapshot of the editable fields (images and criteria
    included) after the write that produced that version."""

    class Action:
        # Not a choices list on purpose: other apps add their own verbs (reviewed, rewritten, ...).
        CREATED = "created"
        EDITED = "edited"
        SUBMITTED = "submitted"
        RETURNED = "returned"
        IMPORTED = "imported"
        REVIEWED = "reviewed"  # a status change a review decided (the review app's)

    # What the history page calls each verb, the other apps' included; an unknown verb shows as stored.
    ACTION_LABELS = {
        Action.CREATED: pgettext_lazy("revision", "created"),
        Action.EDITED: pgettext_lazy("revision", "edited"),
        Action.SUBMITTED: pgettext_lazy("revision", "submitted"),
        Action.RETURNED: pgettext_lazy("revision", "returned to draft"),
        Action.IMPORTED: pgettext_lazy("revision", "imported"),
        Action.REVIEWED: pgettext_lazy("revision", "reviewed"),
        "rewritten": pgettext_lazy("revision", "rewritten"),
        "qc_flagged": pgettext_lazy("revision", "flagged by QC"),
        "qc_decided": pgettext_lazy("revision", "QC decision"),
        "labelstudio": pgettext_lazy("revision", "from Label Studio"),
    }

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    snapshot = models.JSONField()
    action = models.CharField(max_length=32)
    note = models.TextField(blank=True)
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["item_id", "-version"]
        constraints = [models.UniqueConstraint(fields=["item", "version"], name="unique_item_revision_version")]
        indexes = [models.Index(fields=["action", "changed_at"])]

    @property
    def action_label(self) -> str:
        return self.ACTION_LABELS.get(self.action, self.action)


class Assignment(models.Model):
    """A piece of work for an annotator: write the seed item of `image` for `task`, or work on
    an existing `item`. An annotator's queue is their open assignments, oldest first."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        DONE = "done", "Done"

    benchmark = models.ForeignKey("curation.Benchmark", on_delete=models.CASCADE, related_name="assignments")
    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    task = models.ForeignKey("curation.Task", on_delete=models.CASCADE, related_name="assignments")
    image = models.ForeignKey("curation.Image", null=True, blank=True, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, null=True, blank=True, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    assigned_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["assignee", "status", "created_at"]),
            models.Index(fields=["benchmark", "status"]),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(image__isnull=False) | Q(item__isnull=False), name="assignment_has_image_or_item"),
            # One seed per image per task: an image is never handed out twice for the same task.
            models.UniqueConstraint(
                fields=["task", "image"], condition=Q(image__isnull=False), name="one_assignment_per_image_and_task"
            ),
            models.UniqueConstraint(
                fields=["item"], condition=Q(status="open") & Q(item__isnull=False), name="one_open_assignment_per_item"
            ),
        ]

    def __str__(self):
        target = f"item #{self.item_id}" if self.item_id else f"image #{self.image_id}"
        return f"{target} for {self.task} -> {self.assignee}"

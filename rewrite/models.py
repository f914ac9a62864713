"""Rewrite batches: prompt templates (versioned), batches run as jobs, each seed's state in a batch,
every raw reply, and the rewrites parsed from them (or written by hand) with their verification."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class PromptTemplate(models.Model):
    """A named prompt of a benchmark; its text lives in numbered versions (an edit adds one, so a
    batch always says exactly which text it sent)."""

    class Language(models.TextChoices):
        ZH = "zh", _("Chinese")
        EN = "en", _("English")

    benchmark = models.ForeignKey("curation.Benchmark", on_delete=models.CASCADE, related_name="rewrite_templates")
    name = models.CharField(max_length=100)
    language = models.CharField(max_length=2, choices=Language.choices, default=Language.ZH)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "name"], name="unique_rewrite_template_name")]

    def __str__(self):
        return self.name

    @property
    def latest(self):
        return self.versions.order_by("-number").first()


class TemplateVersion(models.Model):
    template = models.ForeignKey(PromptTemplate, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    text = models.TextField()
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["template_id", "-number"]
        constraints = [models.UniqueConstraint(fields=["template", "number"], name="unique_template_version_number")]

    def __str__(self):
        return f"{self.template.name} v{self.number}"


class RewriteBatch(models.Model):
    """Seeds rewritten by one endpoint with one template version, as one job."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        FINISHED = "finished", _("Finished")
        FAILED = "failed", _("Failed (resumable)")

    benchmark = models.ForeignKey("curation.Benchmark", on_delete=models.CASCADE, related_name="rewrite_batches")
    number = models.PositiveIntegerField()
    endpoint = models.CharField(max_length=200, help_text="name in the models file")
    model = models.CharField(max_length=200, blank=True, help_text="the endpoint's model when the batch started")
    template_version = models.ForeignKey(TemplateVersion, on_delete=models.PROTECT, related_name="batches")
    n = models.PositiveSmallIntegerField(default=5, help_text="rewrites asked per seed")
    include_mcq = models.BooleanField(default=False)
    params = models.JSONField(default=dict, blank=True, help_text="request params (temperature, ...)")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    estimate = models.JSONField(default=dict, blank=True, help_text="calls, prompt_tokens, completion_tokens, cost")
    usage = models.JSONField(default=dict, blank=True, help_text="requests, tokens and cost actually paid")
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "number"], name="unique_rewrite_batch_number")]

    def __str__(self):
        return f"Rewrite batch {self.number}"


class BatchSeed(models.Model):
    """One seed item in a batch, and where it stands."""

    class State(models.TextChoices):
        PENDING = "pending", _("Pending")
        DONE = "done", _("Rewritten")
        MANUAL = "manual", _("Needs a manual rewrite")

    batch = models.ForeignKey(RewriteBatch, on_delete=models.CASCADE, related_name="seeds")
    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="rewrite_batch_seeds")
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    valid = models.PositiveSmallIntegerField(default=0, help_text="usable rewrites parsed so far")

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["batch", "item"], name="unique_batch_seed")]
        indexes = [models.Index(fields=["batch", "state"])]


class RawReply(models.Model):
    """A reply exactly as the model sent it, and what parsing left out of it."""

    class Attempt(models.IntegerChoices):
        FIRST = 1, _("First request")
        RETRY = 2, _("Corrective retry")

    batch_seed = models.ForeignKey(BatchSeed, on_delete=models.CASCADE, related_name="replies")
    attempt = models.PositiveSmallIntegerField(choices=Attempt.choices)
    text = models.TextField()
    dropped = models.JSONField(default=list, blank=True, help_text='[{"line", "reason"}] left out by parsing')
    refusal = models.BooleanField(default=False)
    usage = models.JSONField(default=dict, blank=True)
    cached = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["batch_seed_id", "attempt"]
        constraints = [models.UniqueConstraint(fields=["batch_seed", "attempt"], name="unique_raw_reply_attempt")]


class Rewrite(models.Model):
    """One candidate rewrite of a seed, from a reply or written by hand, and its verification.
    An approved rewrite becomes an item (`item`) whose seed is the seed."""

    class State(models.TextChoices):
        PENDING = "pending", _("To verify")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")

    class Source(models.TextChoices):
        LLM = "llm", _("Model")
        MANUAL = "manual", _("Written by hand")

    class Reason(models.TextChoices):
        MEANING = "meaning_changed", _("Meaning changed")
        FLUENCY = "not_fluent", _("Not fluent")
        SEED = "too_similar_seed", _("Too similar to the seed")
        SIBLING = "too_similar_sibling", _("Too similar to another rewrite")
        OTHER = "other", _("Other")

    seed = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="rewrite_candidates")
    batch = models.ForeignKey(RewriteBatch, null=True, blank=True, on_delete=models.CASCADE, related_name="rewrites")
    reply = models.ForeignKey(RawReply, null=True, blank=True, on_delete=models.CASCADE, related_name="rewrites")
    position = models.PositiveSmallIntegerField(default=0, help_text="order within its reply")
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.LLM)
    text = models.TextField()
    original_text = models.TextField(blank=True, help_text="the text before a reviewer edited it")
    edited = models.BooleanField(default=False)
    edited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    similarity_seed = models.FloatField(default=0.0)
    similarity_siblings = models.FloatField(default=0.0, help_text="highest similarity to another rewrite of the seed")
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    reason = models.CharField(max_length=24, choices=Reason.choices, blank=True)
    comment = models.TextField(blank=True)
    item = models.OneToOneField(
        "annotation.Item", null=True, blank=True, on_delete=models.SET_NULL, related_name="rewrite_source"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["seed_id", "id"]
        indexes = [models.Index(fields=["seed", "state"]), models.Index(fields=["batch", "state"])]
        constraints = [
            # A reply's rewrites are written once, even when a resumed job meets the reply again.
            models.UniqueConstraint(
                fields=["reply", "position"], condition=Q(reply__isnull=False), name="unique_rewrite_position"
            ),
        ]

    def __str__(self):
        return f"Rewrite #{self.pk} of item #{self.seed_id}"

    @property
    def writer_ids(self) -> set[int]:
        """The people whose words the text is (who wrote it by hand, who last edited it): they never
        approve it themselves. A model's unedited text has none."""
        ids = {self.edited_by_id if self.edited else None, self.created_by_id if self.source == self.Source.MANUAL else None}
        return ids - {None}

    @property
    def near_copy(self) -> bool:
        from .similarity import is_near_copy

        return is_near_copy(self.similarity_seed) or is_near_copy(self.similarity_siblings)

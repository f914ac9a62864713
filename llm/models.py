from django.db import models


class CachedReply(models.Model):
    """One paid, non-empty model reply, keyed by the harness cache_key (endpoint identity,
    messages, params): any worker on any host that asks the same thing gets it without a request."""

    key = models.CharField(max_length=64, primary_key=True)
    value = models.JSONField(help_text="the harness reply dict: text, usage, finish_reason, model")
    provider = models.CharField(max_length=32, blank=True)
    base_url = models.CharField(max_length=500, blank=True)
    model = models.CharField(max_length=200, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    # Which job run paid for it: a resumed job counts a reply its killed run paid for but never
    # recorded in its actual cost (plain integers: the cache outlives jobs).
    paid_by_job = models.BigIntegerField(null=True, blank=True)
    paid_in_run = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self):
        return f"{self.model} reply {self.key[:12]}"


class LLMBatch(models.Model):
    """A batch of chat calls to one endpoint, run by one job or split over several part jobs
    (so several workers take it at once); the calls live in LLMCall."""

    label = models.CharField(max_length=200, blank=True)
    endpoint = models.CharField(max_length=200)
    estimate = models.JSONField(
        default=dict, blank=True, help_text="calls, prompt_tokens, completion_tokens, cost (null: no prices)"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-created_at", "-id")
        verbose_name_plural = "LLM batches"

    def __str__(self):
        return self.label or f"LLM batch #{self.pk}"


class LLMCall(models.Model):
    """One chat call of a batch: its request, and what came of it (written with the job entry
    of the call, in one transaction)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        OK = "ok", "Answered"
        ERROR = "error", "Failed"

    batch = models.ForeignKey(LLMBatch, on_delete=models.CASCADE, related_name="calls")
    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="llm_calls")
    key = models.CharField(max_length=512)
    endpoint = models.CharField(max_length=200)
    messages = models.JSONField()
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    reply = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=64, blank=True)
    usage = models.JSONField(default=dict, blank=True, help_text="prompt_tokens, completion_tokens of the reply")
    cached = models.BooleanField(default=False, help_text="answered from the response cache")
    error = models.TextField(blank=True)
    error_status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="last HTTP status of a failed call")
    attempts = models.PositiveIntegerField(default=0, help_text="HTTP requests made for it, over every run")
    request_key = models.CharField(max_length=64, blank=True, help_text="its response cache key")
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("id",)
        constraints = (models.UniqueConstraint(fields=("batch", "key"), name="unique_llm_call_key"),)
        indexes = (models.Index(fields=("job", "status")),)

    def __str__(self):
        return f"{self.key} ({self.status})"


class Usage(models.Model):
    """The usage and cost ledger: what one run of a job spent at one endpoint, counted by the
    platform client (llm.ledger): a request before it is sent, its reply's tokens once the reply is
    cached (written with the next request, or when the client closes). Every job that calls a
    model (LLM batches, rewrite, QC, leaderboard scoring) is billed here, whichever way it asks;
    its pages read it (llm.selectors.usage_of).

    A reply answered from the response cache is a cache hit: no request and no tokens, whoever
    paid for it first (a resumed run that finds what its killed run paid for is not billed again:
    the killed run was, when the request left and its reply was cached)."""

    # No database constraint: call threads bump this while the job's own thread may hold its row.
    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, db_constraint=False, related_name="+")
    run = models.PositiveIntegerField()
    endpoint = models.CharField(max_length=200)
    requests = models.PositiveIntegerField(default=0, help_text="HTTP requests sent, retries included")
    cache_hits = models.PositiveIntegerField(default=0, help_text="calls answered from the response cache")
    retries = models.PositiveIntegerField(default=0, help_text="requests sent again after a failed attempt")
    failures = models.PositiveIntegerField(default=0, help_text="calls that failed for good")
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "usage"
        constraints = (models.UniqueConstraint(fields=("job", "run", "endpoint"), name="unique_usage_row"),)

    def __str__(self):
        return f"job {self.job_id} run {self.run}: {self.requests} requests to {self.endpoint}"

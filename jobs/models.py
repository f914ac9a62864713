from django.conf import settings
from django.db import models


class Job(models.Model):
    """One long-running piece of work (an import, a rewrite batch, a QC run...).

    Progress lives here so any web process can show it, whichever worker runs the job.
    Per-unit outcomes are JobEntry rows keyed by the unit, which is what makes jobs resumable.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=64)
    benchmark = models.ForeignKey("curation.Benchmark", null=True, blank=True, on_delete=models.CASCADE, related_name="jobs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="jobs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def percent(self) -> int:
        if not self.total:
            return 100 if self.is_finished else 0
        return min(100, round(100 * self.done / self.total))

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)


class JobEntry(models.Model):
    """What happened to one unit of a job (a file, a URL, an item)."""

    class Outcome(models.TextChoices):
        OK = "ok", "OK"
        SKIPPED = "skipped", "Skipped"
        ERROR = "error", "Error"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="entries")
    key = models.CharField(max_length=512)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    message = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["job", "key"], name="unique_job_entry_key")]

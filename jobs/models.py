from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .reports import shown


class Job(models.Model):
    """One long-running piece of work (an import, a rewrite batch, a QC run...).

    Progress lives here so any web process can show it, whichever worker runs the job. Per-unit
    outcomes are JobEntry rows keyed by the unit, which is what makes jobs resumable. The life of
    a job (claim, heartbeat, finish, resume, cancel) is in jobs.runner and jobs.services only.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        CANCELLED = "cancelled", _("Cancelled")

    FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    kind = models.CharField(max_length=64)
    # The benchmark the job works in, by id only: jobs sits below curation and declares no relation
    # to it. Curation deletes a benchmark's jobs with it; jobs.registry looks the benchmark up.
    benchmark_id = models.PositiveBigIntegerField(null=True, blank=True, db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="jobs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    # The interface language of whoever started it, when they did (jobs.runner writes its report in it).
    language = models.CharField(max_length=16, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The run that owns the job now: a worker whose token no longer matches stops at its next step.
    run_token = models.CharField(max_length=32, blank=True)
    runs = models.PositiveIntegerField(default=0, help_text="how many times a worker started (or resumed) it")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    # Each run: {"run": n, "worker": who ran it, "started_at": iso time, "recovered": bool} (a
    # recovered run was started by the sweeper after its worker was lost, not by a person).
    run_log = models.JSONField(default=list, blank=True)
    # Times the job was re-queued automatically because its worker was lost (jobs.services.recover_lost);
    # a person's Resume starts the count again.
    recoveries = models.PositiveIntegerField(default=0)
    # Set while a queued job could not be handed to the job queue (the broker was unreachable):
    # no worker holds it; it is sent again when a worker starts, or resumed from its page.
    unsent_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["benchmark_id", "kind", "-created_at"], name="jobs_job_benchma_562bfd_idx")]

    def __str__(self):
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def percent(self) -> int:
        if not self.total:
            return 100 if self.status == self.Status.SUCCEEDED else 0
        return min(100, round(100 * self.done / self.total))

    @property
    def succeeded(self) -> bool:
        return self.status == self.Status.SUCCEEDED

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def is_interrupted(self) -> bool:
        """Running, but its worker has not been heard from for the heartbeat timeout: it died."""
        if self.status != self.Status.RUNNING:
            return False
        limit = timedelta(seconds=settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT)
        return self.heartbeat_at is None or self.heartbeat_at < timezone.now() - limit

    @property
    def recovers_automatically(self) -> bool:
        """An interrupted job the workers' sweeper will re-queue (it has recoveries left)."""
        return self.recoveries < settings.BENCHFORGE_JOB_MAX_RECOVERIES

    @property
    def is_unsent(self) -> bool:
        """Queued, but never handed to the job queue (it was unreachable): nobody will run it."""
        return self.status == self.Status.QUEUED and self.unsent_since is not None

    @property
    def state(self) -> str:
        """The status a person sees: the stored one, "interrupted" or "unsent"."""
        return "interrupted" if self.is_interrupted else "unsent" if self.is_unsent else self.status

    @property
    def state_label(self) -> str:
        if self.is_unsent:
            return _("Not sent")
        return _("Interrupted") if self.is_interrupted else self.get_status_display()

    @property
    def kind_label(self) -> str:
        from . import registry  # the kinds other apps register (after the models load)

        return registry.label(self.kind)

    @property
    def shown_message(self) -> str:
        return shown(self.message)

    @property
    def can_resume(self) -> bool:
        return self.status in (self.Status.FAILED, self.Status.CANCELLED) or self.is_interrupted or self.is_unsent

    @property
    def can_cancel(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)


class JobEntry(models.Model):
    """What happened to one unit of a job (a file, a URL, a row, a call)."""

    class Outcome(models.TextChoices):
        OK = "ok", _("OK")
        SKIPPED = "skipped", _("Skipped")
        ERROR = "error", _("Error")

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="entries")
    key = models.CharField(max_length=512)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    message = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["job", "key"], name="unique_job_entry_key")]

    @property
    def shown_key(self) -> str:
        return shown(self.key)

    @property
    def shown_message(self) -> str:
        return shown(self.message)

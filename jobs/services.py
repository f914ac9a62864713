"""Job bookkeeping. Tasks call these; they never hold a transaction open across units, so
progress is visible at once and a crashed job resumes from its recorded entries."""

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .models import Job, JobEntry


def create_job(kind: str, *, user=None, benchmark=None, total: int = 0, params: dict | None = None) -> Job:
    return Job.objects.create(kind=kind, created_by=user, benchmark=benchmark, total=total, params=params or {})


def start_job(job_id: int, *, total: int | None = None) -> Job:
    updates = {"status": Job.Status.RUNNING, "started_at": timezone.now(), "finished_at": None}
    if total is not None:
        updates["total"] = total
    Job.objects.filter(pk=job_id).update(**updates)
    return Job.objects.get(pk=job_id)


def job_progress(job_id: int, done: int, total: int | None = None, message: str = "") -> None:
    updates = {"done": done}
    if total is not None:
        updates["total"] = total
    if message:
        updates["message"] = message
    Job.objects.filter(pk=job_id).update(**updates)


def record_entry(job_id: int, key: str, outcome: str, message: str = "", data: dict | None = None) -> JobEntry:
    """Record (or overwrite, on a resumed run) the outcome of one unit and count it as done once."""
    with transaction.atomic():
        entry, created = JobEntry.objects.update_or_create(
            job_id=job_id, key=key[:512], defaults={"outcome": outcome, "message": message, "data": data or {}}
        )
        if created:
            Job.objects.filter(pk=job_id).update(done=F("done") + 1)
    return entry


def finished_keys(job_id: int) -> set[str]:
    """Units that need no more work on a resumed run (errors are retried)."""
    return set(
        JobEntry.objects.filter(job_id=job_id)
        .exclude(outcome=JobEntry.Outcome.ERROR)
        .values_list("key", flat=True)
    )


def finish_job(job_id: int, *, succeeded: bool = True, message: str = "", result: dict | None = None) -> Job:
    job = Job.objects.get(pk=job_id)
    job.status = Job.Status.SUCCEEDED if succeeded else Job.Status.FAILED
    job.finished_at = timezone.now()
    if message:
        job.message = message
    if result is not None:
        job.result = result
    job.save(update_fields=["status", "finished_at", "message", "result"])
    return job


def run_tracked(job_id: int, work) -> Job:
    """Run `work(job)` as the body of a job: marks it running, and failed with the error's
    message if it raises (the exception is not re-raised: the job row is the report)."""
    job = start_job(job_id)
    try:
        result = work(job)
    except Exception as exc:  # the job's own message is what the user sees
        return finish_job(job_id, succeeded=False, message=f"{type(exc).__name__}: {exc}")
    job.refresh_from_db()
    return finish_job(job_id, succeeded=True, result=result if isinstance(result, dict) else None)

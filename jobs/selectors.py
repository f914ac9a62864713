from django.shortcuts import get_object_or_404

from benchforge import permissions

from .models import Job


def visible_jobs(user):
    """Researchers see every job; others the jobs they started or of benchmarks they belong to."""
    qs = Job.objects.select_related("benchmark", "created_by")
    if permissions.is_researcher(user):
        return qs
    return (qs.filter(created_by=user) | permissions.visible(qs, user, via="benchmark__")).distinct()


def get_job_for(user, job_id: int) -> Job:
    return get_object_or_404(visible_jobs(user), pk=job_id)


def job_entries(job: Job, *, outcome: str = ""):
    """What happened to each unit of the job (rows of an import, files, calls), in the order recorded."""
    entries = job.entries.order_by("id")
    return entries.filter(outcome=outcome) if outcome else entries


def jobs_list(user, *, benchmark: str = "", kind: str = "", state: str = ""):
    """Visible jobs, newest first, filtered by benchmark slug, kind and status ("interrupted" is a
    running job whose heartbeat stopped, and is filtered after the query)."""
    qs = visible_jobs(user)
    if benchmark:
        qs = qs.filter(benchmark__slug=benchmark)
    if kind:
        qs = qs.filter(kind=kind)
    if state in Job.Status.values:
        qs = qs.filter(status=state)
    elif state == "interrupted":
        qs = qs.filter(status=Job.Status.RUNNING)
    return qs.order_by("-created_at", "-id")

from django.shortcuts import get_object_or_404

from benchforge import permissions

from . import registry
from .models import Job, JobEntry


def visible_jobs(user):
    """Researchers see every job; others the jobs they started or of benchmarks they belong to."""
    qs = Job.objects.select_related("created_by")
    if permissions.is_researcher(user):
        return qs
    return qs.filter(created_by=user) | permissions.visible_by_id(qs, user)


def get_job_for(user, job_id: int) -> Job:
    return get_object_or_404(visible_jobs(user), pk=job_id)


def find_job(job_id, *, kind: str, benchmark=None) -> Job | None:
    """The job numbered `job_id` of that kind (and benchmark, or its id, when given), or None."""
    jobs = Job.objects.select_related("created_by").filter(pk=job_id, kind=kind)
    if benchmark is not None:
        jobs = jobs.filter(benchmark_id=getattr(benchmark, "pk", benchmark))
    return jobs.first()


def get_job(job_id) -> Job | None:
    return Job.objects.select_related("created_by").filter(pk=job_id).first()


def jobs_of(benchmark, *, kind: str = "", kind_prefix: str = "", params: dict | None = None):
    """A benchmark's (or a benchmark id's) jobs (of a kind, or of kinds starting with kind_prefix;
    whose params hold `params`), newest first."""
    jobs = Job.objects.filter(benchmark_id=getattr(benchmark, "pk", benchmark))
    if kind:
        jobs = jobs.filter(kind=kind)
    if kind_prefix:
        jobs = jobs.filter(kind__startswith=kind_prefix)
    for name, value in (params or {}).items():
        jobs = jobs.filter(**{f"params__{name}": value})
    return jobs.order_by("-created_at", "-id")


def jobs_where(*, kind: str, params: dict):
    """Jobs of a kind whose params hold `params` (every benchmark), oldest first."""
    jobs = Job.objects.filter(kind=kind)
    for name, value in params.items():
        jobs = jobs.filter(**{f"params__{name}": value})
    return jobs.order_by("id")


def entry_rows(job: Job, *, data_key: str, keys=None) -> list[tuple[str, str, str, dict]]:
    """(key, outcome, message, data) of the job's entries whose data holds `data_key` (only `keys`, when given)."""
    rows = JobEntry.objects.filter(job_id=job.pk, data__has_key=data_key).values_list("key", "outcome", "message", "data")
    return [row for row in rows if keys is None or row[0] in keys]


def recorded_rows(job_id, *, prefix: str = "") -> list[tuple[str, dict]]:
    """(key, data) of the job's units recorded ok whose key starts with `prefix` (e.g. a score's
    judge calls), in the order recorded."""
    rows = JobEntry.objects.filter(job_id=job_id, key__startswith=prefix, outcome=JobEntry.Outcome.OK).order_by("id")
    return list(rows.values_list("key", "data"))


def failed_unit_data(job_ids) -> list[dict]:
    """The data of every unit of the jobs whose last outcome is an error (failed now, after every run)."""
    rows = JobEntry.objects.filter(job_id__in=list(job_ids), outcome=JobEntry.Outcome.ERROR)
    return [data or {} for data in rows.values_list("data", flat=True)]


def job_entries(job: Job, *, outcome: str = ""):
    """What happened to each unit of the job (rows of an import, files, calls), in the order recorded."""
    entries = job.entries.order_by("id")
    return entries.filter(outcome=outcome) if outcome else entries


def jobs_list(user, *, benchmark: str = "", kind: str = "", state: str = ""):
    """Visible jobs, newest first, filtered by benchmark slug, kind and status ("interrupted" is a
    running job whose heartbeat stopped, and is filtered after the query)."""
    qs = visible_jobs(user)
    if benchmark:
        qs = qs.filter(benchmark_id__in=registry.benchmark_ids_with_slug(benchmark))
    if kind:
        qs = qs.filter(kind=kind)
    if state in Job.Status.values:
        qs = qs.filter(status=state)
    elif state == "interrupted":
        qs = qs.filter(status=Job.Status.RUNNING)
    return qs.order_by("-created_at", "-id")


def with_benchmarks(jobs):
    """`jobs` as a list, each with `.benchmark` set (None when it has none), found in one lookup."""
    jobs = list(jobs)
    found = registry.benchmarks_by_id(job.benchmark_id for job in jobs)
    for job in jobs:
        job.benchmark = found.get(job.benchmark_id)
    return jobs


# Which job tells a piece of work's state when it has several (a QC run's parts): the first found in this order.
_TELLING = ("failed", "interrupted", "cancelled", "unsent", "running", "queued")


def work_state(jobs, *, label: str, code: str) -> dict:
    """What a person sees of work done by jobs (a QC run, a rewrite batch, a build): its jobs'
    state, the one truth about whether it runs: while a job is not finished, or when one failed,
    was cancelled or lost its worker, that job's state with its reason; once every job succeeded,
    the work's own `label` and `code`. `resumable`: Resume applies to that job (a researcher's
    action). Returns {"label", "code", "reason", "resumable", "job"}."""
    jobs = [job for job in jobs if job is not None]
    by_state = {}
    for job in jobs:
        by_state.setdefault(job.state, job)
    job = next((by_state[state] for state in _TELLING if state in by_state), None)
    if job is None:
        return {"label": label, "code": code, "reason": "", "resumable": False, "job": None}
    shows_reason = job.status in (Job.Status.FAILED, Job.Status.CANCELLED) or job.is_interrupted
    return {
        "label": job.state_label,
        "code": job.state,
        "reason": job.shown_message if shows_reason else "",
        "resumable": job.can_resume,
        "job": job,
    }

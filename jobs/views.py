from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.utils.translation import gettext

from benchforge import permissions
from benchforge.roles import ANNOTATOR, role_required

from . import registry, reports, services
from .models import Job, JobEntry
from .selectors import get_job_for, jobs_list, with_benchmarks


@role_required(ANNOTATOR)
def job_detail(request, job_id):
    """A job's progress and per-unit report; researchers resume or cancel it here (POST)."""
    job = get_job_for(request.user, job_id)
    if request.method == "POST":
        refusal = permissions.researcher_refusal(request.user, "Resuming or cancelling a job")
        if refusal:
            raise PermissionDenied(refusal)
        action = request.POST.get("action")
        if action == "resume":
            services.resume(job, user=request.user)
            messages.success(request, gettext("Job #%(id)s resumed: it continues after the units already done.") % {"id": job.pk})
        elif action == "cancel":
            services.cancel(job, user=request.user)
            messages.success(request, gettext("Job #%(id)s cancelled; what it had done stays done.") % {"id": job.pk})
        else:
            messages.error(request, gettext("Unknown action: choose resume or cancel."))
        return redirect("job-detail", job_id=job.pk)
    [job] = with_benchmarks([job])
    entries = job.entries.all()
    outcome = request.GET.get("outcome", "")
    if outcome in JobEntry.Outcome.values:
        entries = entries.filter(outcome=outcome)
    page = Paginator(entries, 100).get_page(request.GET.get("page"))
    return render(
        request,
        "jobs/job_detail.html",
        {
            "job": job,
            "page": page,
            "outcome": outcome,
            "result_rows": result_rows(job.result),
            "benchmark": _member_benchmark(request.user, job.benchmark),
        },
    )


def result_rows(result: dict | None) -> list[tuple[str, str]]:
    """A job's result as (label, value) rows for people: "files_in_no_task_folder" reads "Files in
    no task folder", and a nested count such as {"rewrite": {"kept": 5}} reads "kept: 5". Pairs,
    not the dict: a key named like a dict method ("items") would shadow it in the template."""

    def shown(value) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{reports.result_word(k)}: {shown(v)}" for k, v in value.items())
        if isinstance(value, list | tuple):
            return ", ".join(shown(v) for v in value)
        return reports.shown(str(value))

    return [(reports.result_label(key), shown(value)) for key, value in sorted((result or {}).items())]


def _member_benchmark(user, benchmark):
    """The benchmark whose navigation a job page keeps: only for its members."""
    return benchmark if benchmark is not None and permissions.is_member(user, benchmark) else None


@role_required(ANNOTATOR)
def job_progress(request, job_id):
    job = get_job_for(request.user, job_id)
    return render(request, "jobs/_progress.html", {"job": job})


@role_required(ANNOTATOR)
def job_list(request):
    filters = {
        "benchmark": request.GET.get("benchmark", ""),
        "kind": request.GET.get("kind", ""),
        "state": request.GET.get("state", ""),
    }
    rows = jobs_list(request.user, **filters)
    if filters["state"] == "interrupted":
        rows = [job for job in rows[:2000] if job.is_interrupted]
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    page.object_list = with_benchmarks(page.object_list)
    listed_ids = registry.benchmark_ids_with_slug(filters["benchmark"]) if filters["benchmark"] else []
    listed = next(iter(registry.benchmarks_by_id(listed_ids).values()), None)
    return render(
        request,
        "jobs/job_list.html",
        {
            "benchmark": _member_benchmark(request.user, listed),
            "page": page,
            "filters": filters,
            "kinds": [(name, registry.label(name)) for name in registry.names()],
            "states": [*Job.Status.choices, ("interrupted", gettext("Interrupted"))],
        },
    )

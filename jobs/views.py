from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.shortcuts import redirect, render

from benchforge import permissions
from benchforge.roles import ANNOTATOR, role_required

from . import registry, services
from .models import Job, JobEntry
from .selectors import get_job_for, jobs_list


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
            messages.success(request, f"Job #{job.pk} resumed: it continues after the units already done.")
        elif action == "cancel":
            services.cancel(job, user=request.user)
            messages.success(request, f"Job #{job.pk} cancelled; what it had done stays done.")
        else:
            messages.error(request, "Unknown action: choose resume or cancel.")
        return redirect("job-detail", job_id=job.pk)
    entries = job.entries.all()
    outcome = request.GET.get("outcome", "")
    if outcome in JobEntry.Outcome.values:
        entries = entries.filter(outcome=outcome)
    page = Paginator(entries, 100).get_page(request.GET.get("page"))
    return render(
        request, "jobs/job_detail.html", {"job": job, "page": page, "outcome": outcome, "kind_label": registry.label(job.kind)}
    )


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
    return render(
        request,
        "jobs/job_list.html",
        {
            "page": page,
            "filters": filters,
            "kinds": [(name, registry.label(name)) for name in registry.names()],
            "states": [*Job.Status.choices, ("interrupted", "Interrupted")],
        },
    )

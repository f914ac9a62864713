from django.core.paginator import Paginator
from django.shortcuts import render

from benchforge.roles import ANNOTATOR, role_required

from .selectors import get_job_for


@role_required(ANNOTATOR)
def job_detail(request, job_id):
    job = get_job_for(request.user, job_id)
    entries = job.entries.all()
    outcome = request.GET.get("outcome")
    if outcome:
        entries = entries.filter(outcome=outcome)
    page = Paginator(entries, 100).get_page(request.GET.get("page"))
    return render(request, "jobs/job_detail.html", {"job": job, "page": page, "outcome": outcome})


@role_required(ANNOTATOR)
def job_progress(request, job_id):
    job = get_job_for(request.user, job_id)
    return render(request, "jobs/_progress.html", {"job": job})

"""The researcher's Label Studio page of a benchmark: connection, push, projects, pull."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from annotation.selectors import items_of
from benchforge.roles import RESEARCHER, role_required
from curation.selectors import get_benchmark_for

from . import services
from .forms import ConnectionForm, PullForm, PushForm
from .selectors import connection_status, get_link_for, last_pull_job, projects_of

PROJECTS_PER_PAGE = 20


def _errors_of(form) -> str:
    return " ".join(e for errors in form.errors.values() for e in errors)


@role_required(RESEARCHER)
def labelstudio_page(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    status = connection_status(benchmark)
    connection = status["connection"]
    page = Paginator(projects_of(benchmark), PROJECTS_PER_PAGE).get_page(request.GET.get("page"))
    for link in page:
        link.last_pull = last_pull_job(link)
    return render(
        request,
        "labelstudio/page.html",
        {
            "benchmark": benchmark,
            "status": status,
            "page": page,
            "connection_form": ConnectionForm(initial={"url": connection.url, "token_env": connection.token_env}),
            "push_form": PushForm(benchmark=benchmark, initial={"title": f"{benchmark.name} review"}),
            "pull_form": PullForm(),
        },
    )


@role_required(RESEARCHER)
@require_POST
def labelstudio_connection(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = ConnectionForm(request.POST)
    if form.is_valid():
        services.save_connection(benchmark, user=request.user, **form.cleaned_data)
        messages.success(request, gettext("Label Studio connection saved."))
    else:
        messages.error(request, _errors_of(form))
    return redirect("labelstudio", slug=benchmark.slug)


@role_required(RESEARCHER)
@require_POST
def labelstudio_push(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = PushForm(request.POST, benchmark=benchmark)
    if not form.is_valid():
        messages.error(request, _errors_of(form))
        return redirect("labelstudio", slug=benchmark.slug)
    items = items_of(benchmark, task=form.cleaned_data["task"], status=form.cleaned_data["status"])
    job = services.start_push(benchmark, items, project_title=form.cleaned_data["title"], user=request.user)
    return redirect("job-detail", job_id=job.pk)


@role_required(RESEARCHER)
@require_POST
def labelstudio_pull(request, slug, link_id):
    link = get_link_for(request.user, slug, link_id)
    form = PullForm(request.POST)
    if not form.is_valid():
        messages.error(request, _errors_of(form))
        return redirect("labelstudio", slug=link.benchmark.slug)
    job = services.start_pull(link, user=request.user, **form.cleaned_data)
    return redirect("job-detail", job_id=job.pk)


@role_required(RESEARCHER)
@require_POST
def labelstudio_unlink(request, slug, link_id):
    link = get_link_for(request.user, slug, link_id)
    services.unlink(link, user=request.user)
    messages.success(
        request,
        gettext("Unlinked '%(title)s': benchforge forgot the project; nothing was deleted in Label Studio.")
        % {"title": link.title},
    )
    return redirect("labelstudio", slug=link.benchmark.slug)

"""The researcher's Label Studio page of a benchmark: connection, push, projects, pull."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from annotation.selectors import items_of
from benchforge.errors import DomainError
from benchforge.inputs import is_digits
from benchforge.roles import RESEARCHER, role_required
from curation.selectors import get_benchmark_for

from . import services
from .forms import ConnectionForm, PullForm, PushForm, ReviewedForm
from .selectors import connection_status, decision_cards, get_link_for, last_pull_job, projects_of, waiting_task, waiting_tasks

PROJECTS_PER_PAGE = 20
DECISIONS_PER_PAGE = 20


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
            "reviewed_choices": ReviewedForm.base_fields["reviewed"].choices,
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


@role_required(RESEARCHER)
@require_POST
def labelstudio_refresh(request, slug, link_id):
    link = get_link_for(request.user, slug, link_id)
    job = services.start_refresh(link, user=request.user)
    return redirect("job-detail", job_id=job.pk)


@role_required(RESEARCHER)
@require_POST
def labelstudio_reviewed(request, slug, link_id):
    link = get_link_for(request.user, slug, link_id)
    form = ReviewedForm(request.POST)
    if form.is_valid():
        services.set_reviewed_rule(link, form.cleaned_data["reviewed"], user=request.user)
        messages.success(request, gettext("Saved what pulls of '%(title)s' do with reviewed items.") % {"title": link.title})
    else:
        messages.error(request, _errors_of(form))
    return redirect("labelstudio", slug=link.benchmark.slug)


@role_required(RESEARCHER)
def labelstudio_decisions(request, slug, link_id):
    """What the project's pulls could not apply by themselves, to decide key by key."""
    link = get_link_for(request.user, slug, link_id)
    if request.method == "POST":
        row = waiting_task(link, request.POST.get("task"))
        choices = {key: (request.POST.get(f"how_{key}", ""), request.POST.get(f"value_{key}", "")) for key in row.pending}
        try:
            done = services.decide(row, choices, user=request.user)
        except DomainError as exc:
            messages.error(request, gettext("Task %(task)s: %(problem)s") % {"task": row.task_id, "problem": exc.message})
        else:
            messages.success(
                request,
                gettext("Task %(task)s: decided %(n)s value(s); item #%(item)s is at version %(version)s.")
                % {"task": row.task_id, "n": len(done["decided"]), "item": row.item_id, "version": done["item"].version},
            )
        page = request.POST.get("page") or ""
        return redirect(
            reverse("labelstudio-decisions", args=[link.benchmark.slug, link.pk]) + (f"?page={page}" if is_digits(page) else "")
        )
    page = Paginator(waiting_tasks(link), DECISIONS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "labelstudio/decisions.html",
        {"benchmark": link.benchmark, "link": link, "page": page, "cards": decision_cards(page)},
    )

"""QC pages (researchers): runs (estimate, then start), a run's report with its chart, its flagged
items, the keyboard adjudication page, the cleaned benchmark's exports, and external imports."""

import json
import re

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext, ngettext

from annotation.contract import item_payload
from annotation.models import Item
from annotation.selectors import with_payload_data
from benchforge.errors import DomainError
from benchforge.inputs import accepts_uploads, optional_id
from benchforge.navigation import changes_work_only
from benchforge.roles import RESEARCHER, role_required
from curation.selectors import benchmarks_for, get_benchmark_for
from jobs.selectors import get_job_for, with_benchmarks
from llm.client import LLMConfigError, load_models

from . import export, selectors, services
from .forms import DecisionForm, ImportForm, RunForm
from .models import QCItem


def _endpoints() -> tuple[dict, str]:
    try:
        return load_models(), ""
    except LLMConfigError as exc:
        return {}, exc.message


@role_required(RESEARCHER)
def qc_home(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    endpoints, problem = _endpoints()
    form = RunForm(request.POST or None, benchmark=benchmark, endpoints=endpoints)
    estimate = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        options = {
            "filter": data["filter"],
            "models": data["models"],
            "tasks": list(data["tasks"]),
            "item_ids": data["items"],
            "extractor": data["extractor"],
            "judge": data["judge"],
        }
        try:
            if request.POST.get("action") == "start":
                run = services.start_run(
                    benchmark,
                    user=request.user,
                    threshold=data["threshold"],
                    min_score=data["min_score"] or 7,
                    early_stop=data["early_stop"],
                    parts=data["parts"] or 1,
                    **options,
                )
                messages.success(
                    request,
                    ngettext("QC run %(number)s started (%(n)s job).", "QC run %(number)s started (%(n)s jobs).", run.parts)
                    % {"number": run.number, "n": run.parts},
                )
                return redirect("qc-run", slug=slug, number=run.number)
            estimate = services.estimate(benchmark, **options)
        except DomainError as exc:
            messages.error(request, exc.message)
    page = Paginator(selectors.runs_of(benchmark), 25).get_page(request.GET.get("page"))
    for r in page:
        r.state = selectors.run_state(r)
    return render(
        request,
        "qc/home.html",
        {"benchmark": benchmark, "form": form, "page": page, "estimate": estimate, "models_problem": problem},
    )


@role_required(RESEARCHER)
def run_detail(request, slug, number):
    benchmark = get_benchmark_for(request.user, slug)
    run = selectors.get_run(benchmark, number)
    report = selectors.report(run)
    return render(
        request,
        "qc/run.html",
        {
            "benchmark": benchmark,
            "run": run,
            "report": report,
            "state": selectors.run_state(run),
            "decisions": [(QCItem.Decision(code).label, n) for code, n in report["decisions"].items()],
            "jobs": selectors.run_jobs(run),
            "next_item": selectors.next_undecided(run),
        },
    )


@role_required(RESEARCHER)
def flagged_list(request, slug, number):
    benchmark = get_benchmark_for(request.user, slug)
    run = selectors.get_run(benchmark, number)
    undecided = request.GET.get("undecided") == "1"
    page = Paginator(selectors.flagged_entries(run, undecided_only=undecided), 50).get_page(request.GET.get("page"))
    page.object_list = selectors.mark_earlier_decisions(run, page.object_list)
    return render(request, "qc/flagged.html", {"benchmark": benchmark, "run": run, "page": page, "undecided": undecided})


@role_required(RESEARCHER)
@changes_work_only
def adjudicate(request, slug, number, item_id):
    benchmark = get_benchmark_for(request.user, slug)
    run = selectors.get_run(benchmark, number)
    entry = selectors.get_entry(run, item_id)
    if request.method == "POST":
        form = DecisionForm(request.POST)
        if form.is_valid():
            try:
                entry = services.decide(entry, user=request.user, **form.cleaned_data)
            except DomainError as exc:
                messages.error(request, exc.message)
                return redirect("qc-item", slug=slug, number=number, item_id=item_id)
            messages.success(
                request,
                gettext("Item #%(id)s: %(decision)s.") % {"id": item_id, "decision": entry.get_decision_display().lower()},
            )
            if entry.decision == entry.Decision.FIX:
                return redirect("item-edit", slug=slug, item_id=item_id)
            following = selectors.next_undecided(run, after_item=item_id)
            if following is None:
                return redirect("qc-run", slug=slug, number=number)
            return redirect("qc-item", slug=slug, number=number, item_id=following)
        messages.error(
            request, gettext("Not saved: %(errors)s") % {"errors": " ".join(e for errors in form.errors.values() for e in errors)}
        )
    item = with_payload_data(Item.objects.filter(pk=entry.item_id)).get()
    before, after = selectors.neighbours(run, entry)
    return render(
        request,
        "qc/adjudicate.html",
        {
            "benchmark": benchmark,
            "run": run,
            "entry": entry,
            "item": item,
            "payload": item_payload(item),
            "models": selectors.answers_by_model(run, entry.item_id),
            "previous_url": reverse("qc-item", args=[slug, number, before]) if before else "",
            "next_url": reverse("qc-item", args=[slug, number, after]) if after else "",
        },
    )


@role_required(RESEARCHER)
def export_run(request, slug, number, fmt):
    benchmark = get_benchmark_for(request.user, slug)
    run = selectors.get_run(benchmark, number)
    name = f"{benchmark.slug}-qc{run.number}-clean"
    runs = [run]
    if request.GET.get("combine") == "all":  # every finished run of the benchmark, all filters
        runs = selectors.finished_runs(benchmark)
        if not runs:
            return HttpResponse(
                gettext("No finished QC run to combine yet: wait until a run finishes, then export."),
                status=409,
                content_type="text/plain; charset=utf-8",
            )
        name = f"{benchmark.slug}-qc-all-clean"
    if fmt == "removed":
        response = HttpResponse(json.dumps(export.removed(runs), indent=1), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{name.removesuffix("-clean")}-removed.json"'
        return response
    if fmt == "tsv":
        lines = export.tsv_lines(runs)
        try:  # the first line is where a run that cannot be a TSV says so
            first = next(lines)
        except DomainError as exc:
            return HttpResponse(exc.message, status=exc.status, content_type="text/plain; charset=utf-8")
        response = StreamingHttpResponse(_chain(first, lines), content_type="text/tab-separated-values; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}.tsv"'
        return response
    response = StreamingHttpResponse(export.jsonl_lines(runs), content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}.jsonl"'
    return response


def _chain(first, rest):
    yield first
    yield from rest


@role_required(RESEARCHER)
@accepts_uploads("data_file")
def import_page(request):
    benchmarks = benchmarks_for(request.user).order_by("name")
    form = ImportForm(request.POST or None, request.FILES or None, benchmarks=benchmarks)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = services.start_import(
                user=request.user, file=data["file"], format=data["format"], name=data["name"], benchmark=data["benchmark"]
            )
        except DomainError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, gettext("Import started (job #%(id)s).") % {"id": job.pk})
            return redirect(f"{reverse('qc-import')}?job={job.pk}")
    job = errors = None
    job_id = optional_id(request.GET.get("job"))
    if job_id is not None:
        [job] = with_benchmarks([get_job_for(request.user, job_id)])
        errors = Paginator(selectors.import_errors(job), 100).get_page(request.GET.get("page"))
        for entry in errors:  # the row's key ("line 12") said in the page's language
            line = re.fullmatch(r"line (\d+)", entry.key)
            entry.where = gettext("line %(line)s") % {"line": line[1]} if line else entry.key
    extra_query = f"&job={job.pk}" if job else ""
    return render(request, "qc/import.html", {"form": form, "job": job, "errors": errors, "extra_query": extra_query})

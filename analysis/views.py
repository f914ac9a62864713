"""The item analysis page of a frozen release (researchers: it shows answers, keys and references
of every split), its actions (recompute, choose k, open a review round on items, leave items out of
the next release or take them back) and its exports (CSV, Parquet, the anchor split)."""

from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_POST

from benchforge.errors import DomainError
from benchforge.roles import RESEARCHER, role_required
from curation.selectors import get_benchmark_for
from exports import selectors as exports

from . import exporting, selectors, services, statistics
from .models import Flag, ItemStat

PAGE_SIZE = 50


def _release(request, slug, version):
    benchmark = get_benchmark_for(request.user, slug)
    return benchmark, exports.get_release(benchmark, version)


def _method(request, release) -> str:
    methods = services.analysed_methods()
    asked = request.GET.get("method") or request.POST.get("method")
    if asked in methods:
        return asked
    existing = [a.method for a in selectors.analyses_of(release)]
    return existing[0] if existing else methods[0]


@role_required(RESEARCHER)
def release_analysis(request, slug, version):
    benchmark, release = _release(request, slug, version)
    method = _method(request, release)
    analysis = next((a for a in selectors.analyses_of(release) if a.method == method), None)
    if analysis is not None:
        analysis.release = release  # read once
    task, flag = request.GET.get("task", ""), request.GET.get("flag", "")
    sort = request.GET.get("sort", "order")
    descending = request.GET.get("dir") == "desc"
    context = {
        "benchmark": benchmark,
        "release": release,
        "method": method,
        "methods": [(m, m == method) for m in services.analysed_methods()],
        "analysis": analysis,
        "scored": selectors.models_scored(release, method),
        "min_models": statistics.MIN_MODELS,
        "flag_choices": Flag.choices,
        "task": task,
        "flag": flag,
        "sort": sort,
        "descending": descending,
    }
    if analysis is not None and analysis.computed_at:
        page = Paginator(
            selectors.item_rows(analysis, task=task, flag=flag, sort=sort, descending=descending), PAGE_SIZE
        ).get_page(request.GET.get("page"))
        left_out = selectors.left_out_keys(analysis, [row.item_id for row in page])
        context.update(
            page=page,
            rows=[_row(row, left_out) for row in page],
            tasks=selectors.tasks_of(analysis),
            query=urlencode(
                {
                    k: v
                    for k, v in {
                        "method": method,
                        "task": task,
                        "flag": flag,
                        "sort": sort,
                        "dir": "desc" if descending else "",
                    }.items()
                    if v
                }
            ),
            filters=urlencode({k: v for k, v in {"method": method, "task": task, "flag": flag}.items() if v}),
            flag_counts=[(code, label, analysis.summary.get("flags", {}).get(code, 0)) for code, label in Flag.choices],
            validation=(analysis.split.get("about") or {}).get("validation"),
            split_about=analysis.split.get("about") or {},
            anchors=len(analysis.split.get("anchors", [])),
        )
    return render(request, "analysis/release.html", context)


def _row(stat: ItemStat, left_out: dict) -> dict:
    fields = {
        "n_models": stat.n_models,
        "discrimination": stat.discrimination,
        "ratings": stat.ratings,
        "disagreement": stat.disagreement,
    }
    return {
        "stat": stat,
        "reasons": selectors.reasons(stat.flags, fields),
        "left_out": left_out.get(stat.item_id),
        "results": [(label, value, shown, stat.answers.get(label, "")) for label, (value, shown) in stat.results.items()],
    }


def _back(slug, version, request):
    url = reverse("release-analysis", args=[slug, version])
    query = request.POST.get("query", "")
    return redirect(f"{url}?{query}" if query else url)


@role_required(RESEARCHER)
@require_POST
def start(request, slug, version):
    _benchmark, release = _release(request, slug, version)
    method = _method(request, release)
    k = request.POST.get("k", "").strip()
    try:
        analysis = services.request_analysis(release, method, user=request.user, k=int(k) if k else None)
    except ValueError:
        messages.error(request, gettext("The number of anchor items is a whole number."))
        return _back(slug, version, request)
    except DomainError as exc:
        messages.error(request, exc.message)
        return _back(slug, version, request)
    messages.success(request, gettext("Item analysis is being computed (job #%(job)s).") % {"job": analysis.job_id})
    return _back(slug, version, request)


@role_required(RESEARCHER)
@require_POST
def act(request, slug, version):
    """An action on the items ticked on the page, or on every item the page's filter shows ("all")."""
    _benchmark, release = _release(request, slug, version)
    analysis = selectors.get_analysis(release, _method(request, release))
    if request.POST.get("scope") == "all":
        keys = list(
            selectors.item_rows(analysis, task=request.POST.get("task", ""), flag=request.POST.get("flag", "")).values_list(
                "key", flat=True
            )
        )
    else:
        keys = request.POST.getlist("items")
    action = request.POST.get("action")
    try:
        _act(request, analysis, action, keys)
    except DomainError as exc:
        messages.error(request, exc.message)
    return _back(slug, version, request)


def _act(request, analysis, action: str, keys: list[str]) -> None:
    if action == "review":
        review_round = services.open_review(analysis, keys, user=request.user)
        messages.success(
            request,
            gettext("Review round %(n)s is opening on %(items)s item(s), with their flags shown to the reviewers.")
            % {"n": review_round.number, "items": len(keys)},
        )
    elif action == "leave_out":
        made = services.leave_out(analysis, keys, user=request.user, reason=request.POST.get("reason", ""))
        messages.success(
            request,
            ngettext(
                "%(n)s item will be left out of the releases built from now on.",
                "%(n)s items will be left out of the releases built from now on.",
                made,
            )
            % {"n": made},
        )
    elif action == "take_back":
        taken = services.take_back(analysis, keys, user=request.user)
        messages.success(request, gettext("%(n)s item(s) go back into the next release.") % {"n": taken})
    else:
        raise DomainError(gettext("Choose an action: review, leave out or take back."))


@role_required(RESEARCHER)
def export(request, slug, version, kind):
    _benchmark, release = _release(request, slug, version)
    analysis = selectors.get_analysis(release, _method(request, release))
    left_out = set(selectors.left_out_for_build(release.benchmark))
    name = f"{release.top}-{analysis.method}-items"
    if kind == "csv":
        response = HttpResponse(exporting.csv_text(analysis, left_out), content_type="text/csv; charset=utf-8")
    elif kind == "parquet":
        response = HttpResponse(exporting.parquet_bytes(analysis, left_out), content_type="application/vnd.apache.parquet")
    else:
        raise Http404(gettext("Item figures come as .csv or .parquet."))
    response["Content-Disposition"] = f'attachment; filename="{name}.{kind}"'
    return response


@role_required(RESEARCHER)
def split(request, slug, version):
    _benchmark, release = _release(request, slug, version)
    analysis = selectors.get_analysis(release, _method(request, release))
    if not analysis.split:
        raise Http404(gettext("No anchor split chosen yet."))
    response = HttpResponse(selectors.split_download(analysis), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{selectors.split_name(analysis.method)}.json"'
    return response

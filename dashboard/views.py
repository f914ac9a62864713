"""The list of benchmarks and a benchmark's dashboard: reads from every stage, writes nothing."""

from django.conf import settings
from django.core.cache import cache
from django.core.paginator import Paginator
from django.shortcuts import render
from django.utils import timezone

from annotation.selectors import item_counts_by_task_and_status, submission_progress
from annotation.workflow import STATUS_CHOICES
from benchforge.roles import ANNOTATOR, role_required
from curation.selectors import benchmarks_for, get_benchmark_for, tasks_of
from qc.selectors import qc_overview
from review.selectors import review_overview


@role_required(ANNOTATOR)
def home(request):
    benchmarks = benchmarks_for(request.user).prefetch_related("tasks")
    page = Paginator(benchmarks, 25).get_page(request.GET.get("page"))
    return render(request, "dashboard/home.html", {"page": page})


def _recent(benchmark, part: str, compute):
    """A part of the dashboard as counted at most BENCHFORGE_DASHBOARD_CACHE_SECONDS ago: each part
    reads a whole table of the benchmark (at 100,000 items, the parts together took a second of
    database and Python time), and everyone who opens the dashboard needs no recount of their own."""
    seconds = settings.BENCHFORGE_DASHBOARD_CACHE_SECONDS
    if seconds <= 0:
        return compute(benchmark)
    key = f"dashboard:{benchmark.pk}:{part}:{timezone.localdate().isoformat()}"
    value = cache.get(key)
    if value is None:
        value = compute(benchmark)
        cache.set(key, value, seconds)
    return value


@role_required(ANNOTATOR)
def dashboard(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    counts = _recent(benchmark, "counts", item_counts_by_task_and_status)
    rows = []
    for task in tasks_of(benchmark):
        per_status = counts.get(task.pk, {})
        total = sum(per_status.values())
        rows.append(
            {
                "task": task,
                "statuses": [per_status.get(key, 0) for key, _ in STATUS_CHOICES],
                "total": total,
                "percent": min(100, round(100 * total / task.quota)) if task.quota else 0,
            }
        )
    totals = [sum(r["statuses"][i] for r in rows) for i in range(len(STATUS_CHOICES))]
    return render(
        request,
        "dashboard/dashboard.html",
        {
            "benchmark": benchmark,
            "rows": rows,
            "status_labels": [label for _, label in STATUS_CHOICES],
            "totals": totals,
            "grand_total": sum(totals),
            "progress": _recent(benchmark, "progress", submission_progress),
            "review": _recent(benchmark, "review", review_overview),
            "qc": qc_overview(benchmark),
        },
    )

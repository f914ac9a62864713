"""The list of benchmarks and a benchmark's dashboard: reads from every stage, writes nothing."""

import time

from django.conf import settings
from django.core.paginator import Paginator
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.translation import get_language

from annotation.selectors import item_counts_by_task_and_status, submission_progress
from annotation.workflow import STATUS_CHOICES
from benchforge import after_response, navigation, permissions
from benchforge.roles import ANNOTATOR, role_required, user_role
from benchforge.throttling import cache_claim, cache_delete, cache_get, cache_set
from curation.selectors import benchmarks_for, get_benchmark_for, status_counts, tasks_of
from qc.selectors import qc_overview
from review.selectors import review_overview
from rewrite.selectors import rewrite_panel


@role_required(ANNOTATOR)
def home(request):
    benchmarks = benchmarks_for(request.user).prefetch_related("tasks")
    page = Paginator(benchmarks, 25).get_page(request.GET.get("page"))
    return render(request, "dashboard/home.html", {"page": page})


class RecentCounts:
    """The dashboard's parts as counted a short while ago: each part reads a whole table of the
    benchmark (at 1,000,000 items the parts together take about two seconds of database time), and
    everyone who opens the dashboard needs no recount of their own.

    A part is due every BENCHFORGE_DASHBOARD_CACHE_SECONDS, or every SPACING times as long as it
    took to count if that is longer: recounts take at most about one percent of the database's
    time whatever the benchmark's size (at a million items they had slowed every page for the
    seconds they ran, every half minute). When a part is due, one request recounts it while the
    others show the last count (kept KEPT_ROUNDS periods): a due recount never stalls every worker
    at once. That request shows the last count too and leaves the recount for after its response
    (benchforge.after_response): nobody waits for a recount but the first view of a part.
    `counted_at` is when the oldest part shown was counted, so the page can say how fresh it is."""

    KEPT_ROUNDS = 10
    SPACING = 100

    def __init__(self, benchmark):
        self.benchmark = benchmark
        self.seconds = settings.BENCHFORGE_DASHBOARD_CACHE_SECONDS
        self.counted_at = timezone.now()

    OUTAGE = "the dashboard counts afresh until it is back"

    def _period(self, took: float) -> float:
        return max(self.seconds, self.SPACING * took)

    def get(self, part: str, compute):
        if self.seconds <= 0:
            return compute(self.benchmark)
        key = f"dashboard:{self.benchmark.pk}:{part}:{timezone.localdate().isoformat()}"
        cached = cache_get(key, consequence=self.OUTAGE)
        if cached is None:
            return self._shown(self._recount(key, compute))
        took = cached[2] if len(cached) > 2 else 0.0
        if (timezone.now() - cached[1]).total_seconds() < self._period(took):
            return self._shown(cached)
        claim = f"{key}:recount"
        if not cache_claim(claim, 2 * self._period(took) + 60, consequence=self.OUTAGE):
            return self._shown(cached)  # another request is recounting it
        if after_response.in_request():
            # The request that claimed it shows the last count too: it recounts once its response is sent.
            after_response.after_response(lambda: self._recount(key, compute, claim))
            return self._shown(cached)
        return self._shown(self._recount(key, compute, claim))

    def _recount(self, key: str, compute, claim: str = ""):
        try:
            started = time.perf_counter()
            value = compute(self.benchmark)
            took = time.perf_counter() - started
            counted = (value, timezone.now(), took)
            cache_set(key, counted, self._period(took) * self.KEPT_ROUNDS, consequence=self.OUTAGE)
        finally:
            if claim:
                cache_delete(claim, consequence=self.OUTAGE)
        return counted

    def _shown(self, cached):
        value, counted_at = cached[:2]
        self.counted_at = min(self.counted_at, counted_at)
        return value


def summary_cards(recent: RecentCounts, rows, totals, progress) -> dict:
    """The numbers a dashboard opens with: images collected and accepted against the tasks'
    quota, items per stage (stages with items only), and the pace of the last days."""
    images = recent.get("images", status_counts)  # a count over every image of the benchmark
    quota = sum(row["task"].quota or 0 for row in rows)
    submitted = sum(row["total"] for row in progress["tasks"])
    days = len(progress["days"]) or 1
    return {
        "images_collected": sum(images.values()),
        "images_accepted": images.get("accepted", 0),
        "images_pending": images.get("pending", 0),
        "quota": quota,
        "accepted_percent": min(100, round(100 * images.get("accepted", 0) / quota)) if quota else 0,
        "stages": [(label, n) for (_, label), n in zip(STATUS_CHOICES, totals) if n],
        "items": sum(totals),
        "submitted": submitted,
        "days": days,
        "per_day": round(submitted / days, 1),
        "active_people": sum(1 for person in progress["people"] if person["total"]),
    }


def next_steps(user, benchmark) -> dict | None:
    """What a researcher does first in a new benchmark (no images yet): members, taxonomy, upload."""
    if not permissions.is_researcher(user) or benchmark.images.exists():
        return None
    return {"members": benchmark.members.count() <= 1}


def _counts_context(benchmark, recent: RecentCounts) -> dict:
    counts = recent.get("counts", item_counts_by_task_and_status)
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
    # The per-task table shows only stages some item is in: a new benchmark is not 13 x 12 zeros.
    shown = [i for i, n in enumerate(totals) if n]
    for row in rows:
        row["statuses"] = [row["statuses"][i] for i in shown]
    progress = recent.get("progress", submission_progress)
    # The pace per task lists the tasks with submissions in the period.
    progress = {**progress, "tasks": [row for row in progress["tasks"] if row["total"]]}
    return {
        "benchmark": benchmark,
        "rows": rows,
        "status_labels": [STATUS_CHOICES[i][1] for i in shown],
        "totals": [totals[i] for i in shown],
        "grand_total": sum(totals),
        "cards": summary_cards(recent, rows, totals, progress),
        "progress": progress,
        "review": recent.get("review", review_overview),
        "rewrite": recent.get("rewrite", rewrite_panel),
        "qc": recent.get("qc", qc_overview),
    }


def counts_html(request, benchmark, recent: RecentCounts) -> str:
    """The dashboard's counts (cards, the task table, the stages' panels, the pace) rendered. The
    same for every member of one role in one language and the costliest part of the page, so it is
    kept rendered until the benchmark's setup changes (its task names, say) or its oldest count is
    due a recount: never older than the counts it shows. A team's submits and verdicts leave it (its
    counts are RecentCounts', which no write drops): rendering it after each had made the dashboard
    the costliest page after a write."""

    def render_part():
        return render_to_string("dashboard/_counts.html", _counts_context(benchmark, recent), request=request), recent.counted_at

    if recent.seconds <= 0:
        return render_part()[0]
    html, counted_at = navigation.kept_for_benchmark(
        benchmark.pk,
        f"dashboard:{get_language()}:{user_role(request.user)}",
        render_part,
        on=navigation.SETUP,
        consequence="the dashboard renders its counts afresh",
        keep_for=lambda: max(1.0, recent.seconds - (timezone.now() - recent.counted_at).total_seconds()),
    )
    recent.counted_at = min(recent.counted_at, counted_at)
    return html


@role_required(ANNOTATOR)
def dashboard(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    recent = RecentCounts(benchmark)
    shared = counts_html(request, benchmark, recent)
    return render(
        request,
        "dashboard/dashboard.html",
        {
            "benchmark": benchmark,
            "counts_html": shared,
            "counted_at": recent.counted_at if recent.seconds > 0 else None,
            "next_steps": next_steps(request.user, benchmark),
            "recount_seconds": recent.seconds,
        },
    )

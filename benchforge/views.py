from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template import loader
from django.utils import timezone

from annotation.selectors import item_counts_by_task_and_status, submission_progress
from annotation.workflow import STATUS_CHOICES
from curation.selectors import benchmarks_for, get_benchmark_for, tasks_of

from .auth import active_lockouts, lift_lockout
from .roles import ANNOTATOR, RESEARCHER, role_required


@role_required(ANNOTATOR)
def home(request):
    benchmarks = benchmarks_for(request.user).prefetch_related("tasks")
    page = Paginator(benchmarks, 25).get_page(request.GET.get("page"))
    return render(request, "benchforge/home.html", {"page": page})


@role_required(ANNOTATOR)
def dashboard(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    counts = item_counts_by_task_and_status(benchmark)
    rows = []
    for task in tasks_of(benchmark):
        per_status = counts.get(task.pk, {})
        total = sum(per_status.values())
        rows.append({
            "task": task,
            "statuses": [per_status.get(key, 0) for key, _ in STATUS_CHOICES],
            "total": total,
            "percent": min(100, round(100 * total / task.quota)) if task.quota else 0,
        })
    totals = [sum(r["statuses"][i] for r in rows) for i in range(len(STATUS_CHOICES))]
    return render(request, "benchforge/dashboard.html", {
        "benchmark": benchmark, "rows": rows, "status_labels": [label for _, label in STATUS_CHOICES],
        "totals": totals, "grand_total": sum(totals), "progress": submission_progress(benchmark),
    })


# ---- login lockouts ------------------------------------------------------------------------------

@role_required(RESEARCHER)
def lockouts(request):
    """Researchers: usernames and addresses locked after repeated failed logins, and lifting them."""
    if request.method == "POST":
        kind, value = request.POST.get("kind"), request.POST.get("value", "")
        removed = lift_lockout(username=value if kind == "username" else "", ip_address=value if kind == "address" else "")
        messages.success(request, f"Lockout of {kind} '{value}' lifted ({removed} record(s) cleared).")
        return redirect("lockouts")
    return render(request, "benchforge/lockouts.html", {
        "rows": active_lockouts(), "limit": settings.AXES_FAILURE_LIMIT, "cooloff": settings.AXES_COOLOFF_TIME,
    })


# ---- error pages: JSON under /api/, a page with navigation and the reason elsewhere ---------------

ERROR_TITLES = {400: "Bad request", 403: "Not allowed", 404: "Not found"}


def _error(request, status: int, reason: str):
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": reason, "code": {400: "bad_request", 403: "forbidden", 404: "not_found"}[status]},
                            status=status)
    return render(request, "errors/error.html", {"status": status, "title": ERROR_TITLES[status], "reason": reason},
                  status=status)


def bad_request(request, exception=None):
    return _error(request, 400, "The request could not be understood (malformed or too large). Go back and try again.")


def permission_denied(request, exception=None):
    reason = str(exception) if exception and str(exception) else "Your account does not have access to this page."
    return _error(request, 403, reason)


def page_not_found(request, exception=None):
    return _error(request, 404, "There is nothing at this address, or it belongs to a benchmark you are not a member of.")


def server_error(request):
    """Rendered without the request's context processors: the failure may be the database."""
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": "Server error: the request could not be finished. Try again; if it persists, "
                                       "report the time of the request.", "code": "server_error"}, status=500)
    body = loader.get_template("errors/500.html").render({"when": timezone.now().strftime("%Y-%m-%d %H:%M:%S")})
    return HttpResponse(body, status=500)

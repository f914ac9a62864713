"""Reads: a job's LLM call entries and their summary, batches and their calls."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count, Q, Sum

from harness.llm import Endpoint, cost
from jobs.models import Job, JobEntry

from .models import LLMBatch, LLMCall, SentRequests

FIRST_ERRORS = 3


def job_llm_entries(job: Job, *, keys: set[str] | None = None) -> list[tuple[str, str, str, dict]]:
    """(key, outcome, message, data) of the job's entries that record an LLM call."""
    rows = JobEntry.objects.filter(job_id=job.pk, data__has_key="llm").values_list("key", "outcome", "message", "data")
    return [row for row in rows if keys is None or row[0] in keys]


def sent_requests(job_ids: Iterable[int], *, endpoint: str | None = None) -> int:
    """HTTP requests the jobs sent (to `endpoint`, or to any), over every run, counted as they were
    sent: those whose worker died before recording them included."""
    rows = SentRequests.objects.filter(job_id__in=list(job_ids))
    if endpoint is not None:
        rows = rows.filter(endpoint=endpoint)
    return rows.aggregate(n=Sum("requests"))["n"] or 0


def sent_by_run(job_ids: Iterable[int]) -> dict[tuple[int, int], dict[str, int]]:
    """Per (job id, run number), the requests sent to each endpoint."""
    out: dict[tuple[int, int], dict[str, int]] = {}
    for job_id, run_no, endpoint, n in SentRequests.objects.filter(job_id__in=list(job_ids)).values_list(
        "job_id", "run", "endpoint", "requests"
    ):
        out.setdefault((job_id, run_no), {})[endpoint] = n
    return out


def job_usage(jobs: Iterable[Job], endpoint: Endpoint | None, *, calls: int) -> dict:
    """summarize_entries over every call entry of the jobs, with the requests they sent."""
    jobs = list(jobs)
    rows = [row for job in jobs for row in job_llm_entries(job)]
    sent = sent_requests([job.pk for job in jobs], endpoint=endpoint.name if endpoint is not None else None)
    return summarize_entries(rows, endpoint, calls=calls, sent=sent)


def summarize_entries(
    rows: Iterable[tuple[str, str, str, dict]], endpoint: Endpoint | None, *, calls: int, sent: int | None = None
) -> dict:
    """Totals over call entries (each holds its cumulative attempts and paid tokens over every run):
    calls, ok, errors, not_recorded, answered_from_cache, requests (HTTP, retries included),
    prompt_tokens and completion_tokens paid for, cost at the endpoint's prices (None: no prices),
    first_errors (the first few distinct reasons). `sent`: the requests counted as they were sent
    (sent_requests); requests is never fewer, since a worker that died with calls in flight never
    recorded their attempts, though the endpoint received (and bills) them."""
    ok = errors = cached = requests = prompt = completion = 0
    first_errors: list[str] = []
    for _key, outcome, message, data in rows:
        info = data.get("llm") or {}
        requests += int(info.get("attempts", 0))
        prompt += int(info.get("paid_prompt_tokens", 0))
        completion += int(info.get("paid_completion_tokens", 0))
        if outcome == JobEntry.Outcome.OK:
            ok += 1
            cached += bool(info.get("cached"))
        elif outcome == JobEntry.Outcome.ERROR:
            errors += 1
            if len(first_errors) < FIRST_ERRORS and message[:300] not in first_errors:
                first_errors.append(message[:300])
    usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    price = cost(endpoint, usage) if endpoint is not None else None
    return {
        "calls": calls,
        "ok": ok,
        "errors": errors,
        "not_recorded": max(0, calls - ok - errors),
        "answered_from_cache": cached,
        "requests": max(requests, sent or 0),
        **usage,
        "cost": round(price, 6) if price is not None else None,
        "first_errors": first_errors,
    }


def batch_jobs(batch: LLMBatch):
    return Job.objects.filter(kind="llm_batch", params__batch=batch.pk).order_by("id")


def batch_overview(batch: LLMBatch, endpoint: Endpoint | None) -> dict:
    """A batch over all its part jobs: progress by call status, the estimate, and the actual
    usage and cost so far (from the recorded calls of every run)."""
    counts = LLMCall.objects.filter(batch=batch).aggregate(
        calls=Count("id"),
        ok=Count("id", filter=Q(status=LLMCall.Status.OK)),
        errors=Count("id", filter=Q(status=LLMCall.Status.ERROR)),
    )
    parts = list(batch_jobs(batch))
    summary = job_usage(parts, endpoint, calls=counts["calls"])
    return {
        "id": batch.pk,
        "label": batch.label,
        "endpoint": batch.endpoint,
        "created_at": batch.created_at,
        "calls": counts["calls"],
        "ok": counts["ok"],
        "errors": counts["errors"],
        "pending": counts["calls"] - counts["ok"] - counts["errors"],
        "estimate": batch.estimate,
        "actual": {
            key: summary[key] for key in ("requests", "answered_from_cache", "prompt_tokens", "completion_tokens", "cost")
        },
        "jobs": [{"id": job.pk, "state": job.state, "done": job.done, "total": job.total} for job in parts],
    }


def batch_calls(batch: LLMBatch, *, status: str = ""):
    calls = LLMCall.objects.filter(batch=batch)
    if status in LLMCall.Status.values:
        calls = calls.filter(status=status)
    return calls.order_by("id")

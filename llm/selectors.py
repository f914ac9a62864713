"""Reads: what jobs spent (the usage ledger), a job's LLM call entries and their summary, batches
and their calls."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.db.models import Count, Q, Sum

from benchforge.errors import DomainError
from benchforge_harness.llm import Endpoint, cost
from jobs.runner import ERROR, OK
from jobs.selectors import entry_rows, jobs_where

from .models import LLMBatch, LLMCall, Usage

FIRST_ERRORS = 3


def job_llm_entries(job, *, keys: set[str] | None = None) -> list[tuple[str, str, str, dict]]:
    """(key, outcome, message, data) of the job's entries that record an LLM call."""
    return entry_rows(job, data_key="llm", keys=keys)


LEDGER_FIELDS = ("requests", "cache_hits", "retries", "failures", "prompt_tokens", "completion_tokens")


def usage_by_run(job_ids: Iterable[int]) -> dict[tuple[int, int], dict[str, dict[str, int]]]:
    """The ledger's rows: per (job id, run number), per endpoint, what that run spent."""
    out: dict[tuple[int, int], dict[str, dict[str, int]]] = {}
    for row in Usage.objects.filter(job_id__in=list(job_ids)).values("job_id", "run", "endpoint", *LEDGER_FIELDS):
        out.setdefault((row["job_id"], row["run"]), {})[row["endpoint"]] = {f: row[f] for f in LEDGER_FIELDS}
    return out


def sent_requests(job_ids: Iterable[int], *, endpoint: str | None = None) -> int:
    """HTTP requests the jobs sent (to `endpoint`, or to any), over every run, counted as they were
    sent: those whose worker died before recording them included."""
    rows = Usage.objects.filter(job_id__in=list(job_ids))
    if endpoint is not None:
        rows = rows.filter(endpoint=endpoint)
    return rows.aggregate(n=Sum("requests"))["n"] or 0


def _price(endpoint: Endpoint | None, counts: dict) -> float | None:
    price = cost(endpoint, counts) if endpoint is not None else None
    return round(price, 6) if price is not None else None


def usage_of(job_ids: Iterable[int], endpoints: Mapping[str, Endpoint] | None = None) -> dict:
    """What the jobs spent, from the ledger, over every run: {"endpoints": {name: counts},
    "total": counts}, counts being requests (HTTP, retries included), cache_hits, retries,
    failures, prompt_tokens, completion_tokens and cost at the endpoint's prices (None: the
    endpoint declares none, or is no longer declared; a total with one None is None).
    `endpoints`: the declared endpoints (default: the models file)."""
    if endpoints is None:
        from .client import load_models

        try:
            endpoints = load_models()
        except DomainError:  # no models file any more: the counts stand, the prices are unknown
            endpoints = {}
    rows = (
        Usage.objects.filter(job_id__in=list(job_ids))
        .values("endpoint")
        .annotate(**{f: Sum(f) for f in LEDGER_FIELDS})
        .order_by("endpoint")
    )
    per_endpoint = {}
    for row in rows:
        counts = {f: int(row[f] or 0) for f in LEDGER_FIELDS}
        per_endpoint[row["endpoint"]] = {**counts, "cost": _price(endpoints.get(row["endpoint"]), counts)}
    total = {f: sum(c[f] for c in per_endpoint.values()) for f in LEDGER_FIELDS}
    prices = [c["cost"] for c in per_endpoint.values()]
    total["cost"] = None if any(p is None for p in prices) else round(sum(prices), 6)
    return {"endpoints": per_endpoint, "total": total}


def job_usage(jobs: Iterable, endpoint: Endpoint | None, *, calls: int) -> dict:
    """summarize_entries over every call entry of the jobs, with what the ledger billed them."""
    jobs = list(jobs)
    rows = [row for job in jobs for row in job_llm_entries(job)]
    return summarize_entries(rows, endpoint, calls=calls, jobs=jobs)


def summarize_entries(
    rows: Iterable[tuple[str, str, str, dict]], endpoint: Endpoint | None, *, calls: int, jobs: Iterable = ()
) -> dict:
    """Totals over call entries and the jobs' ledger: calls, ok, errors, not_recorded,
    answered_from_cache, then from the jobs' ledger (llm.ledger) at `endpoint` (None: at any): requests (HTTP,
    retries included), prompt_tokens and completion_tokens paid for, cost at the endpoint's
    prices (None: no prices); first_errors (the first few distinct reasons)."""
    ok = errors = cached = 0
    first_errors: list[str] = []
    for _key, outcome, message, data in rows:
        info = data.get("llm") or {}
        if outcome == OK:
            ok += 1
            cached += bool(info.get("cached"))
        elif outcome == ERROR:
            errors += 1
            if len(first_errors) < FIRST_ERRORS and message[:300] not in first_errors:
                first_errors.append(message[:300])
    ledger = usage_of([job.pk for job in jobs], {endpoint.name: endpoint} if endpoint is not None else {})
    # At the endpoint when it is known; else everything the jobs spent (the cost is then unknown).
    spent = ledger["endpoints"].get(endpoint.name, dict.fromkeys(LEDGER_FIELDS, 0)) if endpoint is not None else ledger["total"]
    usage = {"prompt_tokens": spent["prompt_tokens"], "completion_tokens": spent["completion_tokens"]}
    return {
        "calls": calls,
        "ok": ok,
        "errors": errors,
        "not_recorded": max(0, calls - ok - errors),
        "answered_from_cache": cached,
        "requests": spent["requests"],
        **usage,
        "cost": _price(endpoint, usage),
        "first_errors": first_errors,
    }


def batch_jobs(batch: LLMBatch):
    return jobs_where(kind="llm_batch", params={"batch": batch.pk})


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

"""LLM batches: estimate, start, run (as a job of its own, or inside another job's runner).

    estimate(calls, endpoint=...)                -> {calls, prompt_tokens, completion_tokens, cost}
    start_batch(calls, endpoint=..., user=...)   -> Job (kind "llm_batch"; calls stored as LLMCall rows)
    start_batch_in_parts(calls, endpoint=..., parts=N, ...) -> LLMBatch (N jobs: N workers at once)
    run_calls(run, calls, endpoint=..., on_result=...) -> summary   (inside any job's runner)

Every call is a unit of its job: a call recorded ok is never asked again when the job resumes,
a call that failed is asked again, and a call that was answered but not recorded (the worker died
in between) is answered by the shared cache. What the calls spent is in the usage ledger
(llm.ledger, written by the client as requests leave and replies are kept), so a reply paid for by
a killed run and recovered from the cache is billed once, to the run that paid for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from benchforge import permissions
from benchforge.errors import DomainError
from benchforge_harness.llm import (
    DEFAULT_COMPLETION_TOKENS,
    IMAGE_TOKENS,
    RESERVED_PARAMS,
    Endpoint,
    LLMClient,
    LLMError,
    check_messages,
)
from benchforge_harness.scoring import Estimate
from jobs import services as jobs
from jobs.runner import ERROR, OK, JobRun

if TYPE_CHECKING:
    from jobs.models import Job

from .client import check_endpoints, get_client, get_endpoint, load_models
from .context import serial_db
from .engine import Call, CallResult, PlatformClient, run_concurrently
from .models import LLMBatch, LLMCall
from .selectors import job_llm_entries, job_usage, summarize_entries

BATCH_JOB = "llm_batch"
MAX_KEY_LENGTH = 512  # a job entry's key
CHUNK = 200  # stored calls read at a time

__all__ = ["BATCH_JOB", "Call", "CallResult", "estimate", "run_batch_job", "run_calls", "start_batch", "start_batch_in_parts"]


# ---------------------------------------------------------------- calls in, estimate


def _as_call(item: Any, index: int | None = None) -> Call:
    """A Call from a Call or a mapping {"key", "messages", "params"}; with an index, the key may be
    left out (it becomes the call's position)."""
    if isinstance(item, Call):
        return item
    where = f"call {index + 1}" if index is not None else "a call"
    if not isinstance(item, Mapping):
        raise DomainError(f"{where}: expected {{'key', 'messages', 'params'}}, got {type(item).__name__}.")
    key = item.get("key")
    if key is None and index is not None:
        key = f"{index + 1:06d}"
    if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY_LENGTH:
        raise DomainError(f"{where}: key must be a non-empty text of at most {MAX_KEY_LENGTH} characters.")
    params = item.get("params") or {}
    if not isinstance(params, Mapping):
        raise DomainError(f"call {key!r}: params must be an object (temperature, max_tokens, ...).")
    return Call(key=key, messages=item.get("messages"), params=dict(params))


def _checked_calls(calls: Iterable, endpoint: Endpoint) -> list[Call]:
    """Every call valid for the endpoint, with unique keys; the first problem is a DomainError."""
    checked, seen = [], set()
    for index, item in enumerate(calls):
        call = _as_call(item, index)
        if call.key in seen:
            raise DomainError(f"call {call.key!r}: the key is used twice; each call of a batch needs its own key.")
        seen.add(call.key)
        try:
            check_messages(endpoint, call.messages)
        except LLMError as exc:
            raise DomainError(f"call {call.key!r}: {exc}") from None
        reserved = sorted(set(call.params) & set(RESERVED_PARAMS))
        if reserved:
            raise DomainError(
                f"call {call.key!r}: {', '.join(reserved)} cannot be passed as params "
                "(the endpoint decides the model; streaming is not supported)."
            )
        try:
            json.dumps([call.messages, call.params])
        except (TypeError, ValueError) as exc:
            raise DomainError(f"call {call.key!r}: messages and params must be JSON data ({exc}).") from None
        checked.append(call)
    return checked


def _estimate(endpoint: Endpoint, calls: list[Call], expected_completion_tokens: int, image_tokens: int) -> dict:
    """The batch's calls in the one estimate (benchforge_harness.scoring.Estimate), priced at `endpoint`."""
    plan = Estimate(image_tokens=image_tokens)
    plan.add_requests(endpoint.name, (call.messages for call in calls), completion_tokens=expected_completion_tokens)
    priced = plan.priced(lambda _name: endpoint)
    return {key: priced[key] for key in ("calls", "prompt_tokens", "completion_tokens", "cost")}


def estimate(
    calls: Iterable,
    *,
    endpoint: str,
    expected_completion_tokens: int = DEFAULT_COMPLETION_TOKENS,
    image_tokens: int = IMAGE_TOKENS,
) -> dict:
    """What a batch would use and cost if every call were paid (the harness's rough token rule:
    see benchforge_harness/llm/cost.py): {"calls", "prompt_tokens", "completion_tokens", "cost"}; cost is None
    when the endpoint declares no prices (input_cost_per_mtok / output_cost_per_mtok)."""
    target = get_endpoint(endpoint)
    return _estimate(target, _checked_calls(calls, target), expected_completion_tokens, image_tokens)


# ---------------------------------------------------------------- starting a batch


def start_batch(
    calls: Iterable,
    *,
    endpoint: str,
    user=None,
    benchmark=None,
    label: str = "",
    expected_completion_tokens: int = DEFAULT_COMPLETION_TOKENS,
) -> Job:
    """Store the calls and queue one job that asks them (kind "llm_batch"). The endpoint, its key
    and every call are checked first; the job's result shows the estimate from the start and the
    actual usage and cost when it ends. Returns the job (as it ended, when jobs run inline)."""
    _, [job] = _create_batch(
        calls,
        endpoint=endpoint,
        parts=1,
        user=user,
        benchmark=benchmark,
        label=label,
        expected_completion_tokens=expected_completion_tokens,
    )
    return job


def start_batch_in_parts(
    calls: Iterable,
    *,
    endpoint: str,
    parts: int,
    user=None,
    benchmark=None,
    label: str = "",
    expected_completion_tokens: int = DEFAULT_COMPLETION_TOKENS,
) -> LLMBatch:
    """As start_batch, split into `parts` jobs of consecutive calls, so that as many workers ask
    them at once (within the endpoint's bound, shared by all). Each part resumes on its own."""
    batch, _ = _create_batch(
        calls,
        endpoint=endpoint,
        parts=parts,
        user=user,
        benchmark=benchmark,
        label=label,
        expected_completion_tokens=expected_completion_tokens,
    )
    return batch


def _create_batch(calls, *, endpoint, parts, user, benchmark, label, expected_completion_tokens) -> tuple[LLMBatch, list]:
    if user is not None:
        permissions.require_researcher(user, "Running an LLM batch")
    if not isinstance(parts, int) or parts < 1:
        raise DomainError("parts must be a whole number of at least 1.")
    target = get_endpoint(endpoint)
    check_endpoints(LLMClient(load_models()), [endpoint])
    checked = _checked_calls(calls, target)
    if not checked:
        raise DomainError("An LLM batch needs at least one call.")
    parts = min(parts, len(checked))
    size, extra = divmod(len(checked), parts)
    with transaction.atomic():
        batch = LLMBatch.objects.create(
            label=label[:200], endpoint=endpoint, estimate=_estimate(target, checked, expected_completion_tokens, IMAGE_TOKENS)
        )
        created, start = [], 0
        for part in range(parts):
            chunk = checked[start : start + size + (part < extra)]
            start += len(chunk)
            part_estimate = _estimate(target, chunk, expected_completion_tokens, IMAGE_TOKENS)
            job = jobs.create_job(
                BATCH_JOB,
                user=user,
                benchmark=benchmark,
                total=len(chunk),
                params={
                    "batch": batch.pk,
                    "part": part + 1,
                    "parts": parts,
                    "endpoint": endpoint,
                    "label": label[:200],
                    "estimate": part_estimate,
                },
            )
            # The estimate is on the job page before the job runs (the runner's result replaces it).
            jobs.show_result(job, _result_for_display(endpoint, part_estimate, None, target))
            LLMCall.objects.bulk_create(
                [
                    LLMCall(batch=batch, job=job, key=call.key, endpoint=endpoint, messages=call.messages, params=call.params)
                    for call in chunk
                ],
                batch_size=500,
            )
            created.append(job)
        for job in created:
            jobs.enqueue(job)
    for job in created:
        job.refresh_from_db()
    return batch, created


# ---------------------------------------------------------------- running calls inside a job


def _entry_data(result: CallResult, endpoint: str, before: dict) -> dict:
    """What a call's entry keeps of it (what was spent is in the usage ledger, not here)."""
    info = {
        "endpoint": endpoint,
        "request_key": result.trace.request_key,
        "cached": result.cached,
        "attempts": int(before.get("attempts", 0)) + result.attempts,  # over every run
        **result.usage,
    }
    if result.error is not None:
        info.update(status=result.error.status, transient=result.error.transient)
    return info


def run_calls(
    run: JobRun,
    calls: Iterable,
    *,
    endpoint: str,
    on_result: Callable[[CallResult], dict | None] | None = None,
    total: int | None = None,
    client: PlatformClient | None = None,
    on_group: Callable[[], None] | None = None,
) -> dict:
    """Ask `calls` (Call objects or {"key", "messages", "params"} mappings, consumed lazily) inside
    the runner of any job, concurrently up to the endpoint's bound across every worker, and return
    when all are recorded. Each call is a unit of `run`: keys in run.done_keys() are not asked.

    on_result(result) runs for each finished call in this thread, inside the transaction that
    records the call's entry: write what the reply means there (a Rewrite, a QC answer), so both
    commit together. It may return a dict, added to the entry's data; a DomainError it raises
    records the call as an error with that message (its writes are rolled back). A failed call
    (result.ok False, result.error an LLMError with the reason) is recorded as an error after
    on_result saw it. total: also set the job's total.

    on_group(), when given, makes on_result a reader only: it runs without a savepoint of its own
    (a DomainError it raises records the call as an error, and it must not have written), and
    on_group() runs once per group of finished calls, in the group's transaction, just before
    their entries are recorded: write there, in bulk, what on_result collected (the rewrite
    runner does, to spend a few queries per group instead of several per call).

    Returns the summary over these calls and every run of the job (see selectors.summarize_entries):
    calls, ok, errors, not_recorded, answered_from_cache, requests, prompt_tokens,
    completion_tokens, cost (None without prices), first_errors.
    """
    own_client = client is None
    if client is None:
        client = get_client(payer=(run.job.pk, run.job.runs))
    try:
        check_endpoints(client, [endpoint])
        target = client.endpoints[endpoint]
        if total is not None:
            run.set_total(total)
        recorder = _Recorder(run, endpoint, on_result, on_group)
        run_concurrently(
            client,
            endpoint,
            recorder.todo(calls),
            threads=target.max_concurrency,
            on_results=recorder.record,
            on_idle=recorder.idle,
            stop_timeout=target.timeout + 5,
        )
        client.settle_usage()  # the summary reads the ledger
        keys = recorder.keys
        return summarize_entries(job_llm_entries(run.job, keys=keys), target, calls=len(keys), jobs=[run.job])
    finally:
        if own_client:
            client.close()


class _Recorder:
    """run_calls' side of the engine, its state explicit: the keys done before (never asked again),
    what earlier runs recorded of each call, and every key this run was given."""

    def __init__(self, run: JobRun, endpoint: str, on_result, on_group) -> None:
        self.run, self.endpoint, self.on_result, self.on_group = run, endpoint, on_result, on_group
        self.done = run.done_keys()
        self.before = {key: data["llm"] for key, _outcome, _message, data in job_llm_entries(run.job)}
        self.keys: set[str] = set()

    def todo(self, calls: Iterable):
        """The calls not done yet, read lazily; every key given is kept for the summary."""
        for item in calls:
            call = _as_call(item)
            self.keys.add(call.key)
            if call.key not in self.done:
                yield call

    def record(self, group: list[CallResult]) -> None:
        """A group of finished calls: what each means (on_result), then their entries, in one transaction."""
        with serial_db(), transaction.atomic():
            rows = [self._row(result) for result in group]
            if self.on_group is not None:
                self.on_group()
            self.run.record_many(rows)

    def _row(self, result: CallResult) -> tuple:
        data = {"llm": _entry_data(result, self.endpoint, self.before.get(result.call.key, {}))}
        if result.ok:
            outcome, message = OK, "answered from the cache" if result.cached else ""
        else:
            outcome, message = ERROR, str(result.error)
        if self.on_result is not None:
            try:
                if self.on_group is not None:
                    extra = self.on_result(result)
                else:
                    with transaction.atomic():
                        extra = self.on_result(result)
            except DomainError as exc:
                outcome, message = ERROR, exc.message
            else:
                if isinstance(extra, dict):
                    data.update(extra)
        return result.call.key, outcome, message, data

    def idle(self) -> None:
        with serial_db():
            self.run.checkpoint()


# ---------------------------------------------------------------- the llm_batch job kind


def _cost_text(value) -> float | str:
    return value if value is not None else "unknown"


def _result_for_display(endpoint: str, estimate: dict, summary: dict | None, target: Endpoint | None) -> dict:
    """The job's result: flat, so the job page shows it as a table; "unknown" where the endpoint
    declares no prices."""
    result = {
        "endpoint": endpoint,
        "calls": estimate.get("calls", 0),
        "estimated_prompt_tokens": estimate.get("prompt_tokens", 0),
        "estimated_completion_tokens": estimate.get("completion_tokens", 0),
        "estimated_cost": _cost_text(estimate.get("cost")),
    }
    if summary is not None:
        result.update(
            {
                "ok": summary["ok"],
                "errors": summary["errors"],
                "answered_from_cache": summary["answered_from_cache"],
                "requests": summary["requests"],
                "prompt_tokens": summary["prompt_tokens"],
                "completion_tokens": summary["completion_tokens"],
                "cost": _cost_text(summary["cost"]),
            }
        )
    return result


def run_batch_job(run: JobRun) -> dict:
    """Runner of "llm_batch": ask this job's pending and failed calls; the result holds the
    estimate and the actual usage and cost. When calls failed, the job fails with their reasons
    (and stays resumable: resuming asks only those)."""
    endpoint = run.params["endpoint"]
    rows = LLMCall.objects.filter(job_id=run.job.pk)
    total = rows.count()
    ids = dict(rows.exclude(status=LLMCall.Status.OK).order_by("id").values_list("key", "pk"))
    estimate_ = run.params.get("estimate") or {}
    cost_text = f"{estimate_.get('cost'):g}" if estimate_.get("cost") is not None else "unknown (no prices declared)"
    run.say(
        f"{len(ids)} of {total} calls to ask {endpoint!r}; estimated {estimate_.get('prompt_tokens', 0):,} prompt + "
        f"{estimate_.get('completion_tokens', 0):,} completion tokens, cost {cost_text}."
    )

    def store(result: CallResult) -> None:
        error = result.error
        LLMCall.objects.filter(pk=ids[result.call.key]).update(
            status=LLMCall.Status.OK if result.ok else LLMCall.Status.ERROR,
            reply=result.text,
            finish_reason=(result.response.finish_reason or "") if result.ok else "",
            usage=result.usage,
            cached=result.cached,
            error=str(error) if error is not None else "",
            error_status=error.status if error is not None else None,
            attempts=F("attempts") + result.attempts,
            request_key=result.trace.request_key,
            answered_at=timezone.now() if result.ok else None,
        )

    def pending():
        # Messages (images inline) are read a chunk at a time, as the calls are sent.
        pks = list(ids.values())
        for start in range(0, len(pks), CHUNK):
            chunk = LLMCall.objects.filter(pk__in=pks[start : start + CHUNK]).order_by("id")
            for key, messages, params in chunk.values_list("key", "messages", "params"):
                yield Call(key, messages, params)

    run_calls(run, pending(), endpoint=endpoint, on_result=store, total=total)
    target = load_models().get(endpoint)
    summary = job_usage([run.job], target, calls=total)
    result = _result_for_display(endpoint, estimate_, summary, target)
    run.say(
        f"{summary['ok']} of {total} calls answered ({summary['answered_from_cache']} from the cache), {summary['errors']} "
        f"failed; {summary['requests']:,} requests, {summary['prompt_tokens']:,} prompt + {summary['completion_tokens']:,} "
        f"completion tokens paid, cost {_cost_text(summary['cost'])}."
    )
    if summary["errors"]:
        reasons = "; ".join(summary["first_errors"])
        run.fail(
            f"{summary['errors']} of {total} calls failed ({reasons}). Resume the job to ask them again: "
            f"the {summary['ok']} answered calls are not asked again.",
            result=result,  # the usage shows on the failed job
        )
    return result

"""LLM batches as jobs, end to end against the loopback server through the real openai and
zai-sdk SDKs: results and usage per call, estimate before and actual cost after, rate limits,
server errors, timeouts and empty replies as per-call failures with their reason, and resuming
without a repeated paid call. Jobs run inline (when the transaction commits)."""

import pytest

from benchforge.errors import DomainError, NotAllowed
from benchforge_harness.llm import estimate_usage, user_message
from jobs import services as jobs
from jobs.models import Job, JobEntry
from llm import services
from llm.models import CachedReply, LLMBatch, LLMCall
from llm.selectors import batch_jobs, batch_overview, usage_of
from tests.fakes.llm_server import Completion, Fault, prompt_tokens
from tests.llm.conftest import KEY_ENV, calls_for
from tests.llm.probe import PROBE

# Call threads use their own database connections: the test's data must be committed.
pytestmark = pytest.mark.django_db(transaction=True)


def fake_usage(calls: list[dict], reply: str) -> dict:
    """What the fake server reports for these calls answered with `reply`."""
    prompt = sum(prompt_tokens({"messages": call["messages"]}) for call in calls)
    return {"prompt_tokens": prompt, "completion_tokens": len(calls) * len(reply.split())}


@pytest.mark.parametrize("provider", ["openai", "zhipuai"])
def test_a_batch_runs_as_a_job_with_estimate_before_and_cost_after(provider, declare, fake_llm, researcher):
    declare(
        provider=provider,
        model="vlm",
        max_concurrency=4,
        input_cost_per_mtok=2.0,
        output_cost_per_mtok=8.0,
        params={"temperature": 0.2},
    )
    fake_llm.script("vlm", lambda body: "B because " + body["messages"][0]["content"].split(":")[0])
    calls = calls_for(12, max_tokens=50)
    before = services.estimate(calls, endpoint="ep")
    usage = estimate_usage([c["messages"] for c in calls])
    assert before == {**usage, "cost": round((usage["prompt_tokens"] * 2 + usage["completion_tokens"] * 8) / 1e6, 6)}

    job = services.start_batch(calls, endpoint="ep", user=researcher, label="rewrites")

    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.kind == "llm_batch" and job.created_by == researcher and job.done == job.total == 12
    assert job.message.startswith("12 of 12 calls answered (0 from the cache), 0 failed; 12 requests, ")
    bodies = fake_llm.requests("vlm")
    assert len(bodies) == 12 and all(b["temperature"] == 0.2 and b["max_tokens"] == 50 for b in bodies)
    rows = list(LLMCall.objects.filter(job=job).order_by("key"))
    assert [r.status for r in rows] == ["ok"] * 12 and rows[3].reply == "B because question 3"
    assert rows[3].usage == {"prompt_tokens": 6, "completion_tokens": 4} and rows[3].attempts == 1 and not rows[3].cached
    paid = fake_usage(calls, "B because question 1")
    assert job.result == {
        "endpoint": "ep", "calls": 12, "estimated_prompt_tokens": before["prompt_tokens"],
        "estimated_completion_tokens": before["completion_tokens"], "estimated_cost": before["cost"],
        "ok": 12, "errors": 0, "answered_from_cache": 0, "requests": 12, **paid,
        "cost": round((paid["prompt_tokens"] * 2 + paid["completion_tokens"] * 8) / 1e6, 6),
    }  # fmt: skip
    # Every reply is in the shared cache with the endpoint it came from and what it cost.
    cached = CachedReply.objects.get(key=rows[0].request_key)
    assert (cached.provider, cached.model, cached.base_url) == (provider, "vlm", fake_llm.base_url(provider))
    assert (cached.prompt_tokens, cached.completion_tokens, cached.paid_by_job) == (6, 4, job.pk)
    assert cached.value["text"] == rows[0].reply and cached.created_at


def test_the_glm_path_goes_through_zai_sdk_to_the_paas_url(declare, fake_llm, researcher):
    from benchforge_harness.llm import glm_sdk

    assert glm_sdk()[0].__module__.startswith("zai")
    declare(provider="zhipuai", model="glm-4")
    fake_llm.script("glm-4", "你好")
    job = services.start_batch(calls_for(3), endpoint="ep", user=researcher)
    assert job.status == Job.Status.SUCCEEDED and set(LLMCall.objects.values_list("reply", flat=True)) == {"你好"}
    assert all(h["authorization"].startswith("Bearer ") for h in fake_llm.request_headers("glm-4"))


def test_without_prices_the_cost_is_unknown_before_and_after(declare, fake_llm, researcher):
    declare()
    fake_llm.script("m", "ok")
    assert services.estimate(calls_for(2), endpoint="ep")["cost"] is None
    job = services.start_batch(calls_for(2), endpoint="ep", user=researcher)
    assert job.result["estimated_cost"] == "unknown" and job.result["cost"] == "unknown"
    assert job.result["prompt_tokens"] > 0


def test_the_estimate_shows_on_the_job_before_it_runs(declare, fake_llm, researcher, settings, monkeypatch):
    from benchforge.celery import app

    settings.BENCHFORGE_JOB_RUNNER = "celery"  # nothing consumes the queue: the job stays queued
    sent = []
    monkeypatch.setattr(app, "send_task", lambda *args, **kwargs: sent.append(args))  # no broker in this test
    declare(input_cost_per_mtok=1.0, output_cost_per_mtok=1.0)
    job = services.start_batch(calls_for(5), endpoint="ep", user=researcher)
    assert job.status == Job.Status.QUEUED and len(sent) == 1
    estimate = services.estimate(calls_for(5), endpoint="ep")
    assert job.result == {
        "endpoint": "ep",
        "calls": 5,
        "estimated_prompt_tokens": estimate["prompt_tokens"],
        "estimated_completion_tokens": estimate["completion_tokens"],
        "estimated_cost": estimate["cost"],
    }
    assert fake_llm.requests() == []


def test_a_429_burst_is_retried_and_counted_in_the_requests(declare, fake_llm, researcher):
    declare(max_concurrency=2, max_retries=3)
    fake_llm.script("m", [Fault.rate_limited(retry_after=0), Fault.rate_limited(retry_after=0), Fault.rate_limited(), "fine"])
    job = services.start_batch(calls_for(6), endpoint="ep", user=researcher)
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert len(fake_llm.requests("m")) == 9 and job.result["requests"] == 9 and job.result["ok"] == 6
    assert sum(LLMCall.objects.values_list("attempts", flat=True)) == 9


def test_failed_calls_fail_the_job_with_their_reason_and_a_resume_asks_only_them(declare, fake_llm, researcher):
    declare(max_concurrency=1, max_retries=1)
    fake_llm.script("m", ["ok", "ok", Fault.server_error(503), Fault.server_error(503), "ok"])
    job = services.start_batch(calls_for(4), endpoint="ep", user=researcher)

    assert job.status == Job.Status.FAILED and job.can_resume
    assert job.message.startswith("1 of 4 calls failed (endpoint 'ep' (m at http://127.0.0.1:")
    assert "HTTP 503" in job.message and "gave up after 2 attempts" in job.message and "Resume the job" in job.message
    failed = LLMCall.objects.get(status="error")
    assert failed.key == "c0002" and failed.error_status == 503 and failed.attempts == 2 and "HTTP 503" in failed.error
    assert job.result["errors"] == 1 and job.result["ok"] == 3 and job.result["requests"] == 5  # the result still shows
    assert JobEntry.objects.get(job=job, key="c0002").outcome == "error"

    jobs.resume(job, user=researcher)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.runs == 2
    assert len(fake_llm.requests("m")) == 6  # only the failed call was asked again
    failed.refresh_from_db()
    assert failed.status == "ok" and failed.attempts == 3 and failed.error == ""
    assert job.result["requests"] == 6 and job.result["errors"] == 0 and job.result["ok"] == 4


def test_a_timeout_after_the_retries_is_a_failed_call_with_its_reason(declare, fake_llm, researcher):
    declare(timeout=0.3, max_retries=0)
    fake_llm.script("m", lambda body: Fault.hang() if "question 1:" in str(body) else "ok")
    job = services.start_batch(calls_for(3), endpoint="ep", user=researcher)
    assert job.status == Job.Status.FAILED
    failed = LLMCall.objects.get(status="error")
    assert failed.key == "c0001" and "no answer within timeout = 0.3s" in failed.error and failed.error_status is None


@pytest.mark.parametrize("reply, reason", [
    (Completion(None, "content_filter"), "withheld by the provider's content filter"),
    (Completion("  ", "stop"), "the reply has no content"),
])  # fmt: skip
def test_an_empty_or_filtered_reply_is_a_failed_call_and_never_cached(reply, reason, declare, fake_llm, researcher):
    declare()
    fake_llm.script("m", reply)
    job = services.start_batch(calls_for(2), endpoint="ep", user=researcher)
    assert job.status == Job.Status.FAILED
    assert all(reason in error for error in LLMCall.objects.values_list("error", flat=True))
    assert not CachedReply.objects.exists()
    fake_llm.script("m", "a real answer")
    jobs.resume(job, user=researcher)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and len(fake_llm.requests("m")) == 4  # asked again: nothing was cached
    assert CachedReply.objects.count() == 2


def test_the_bound_holds_for_a_batch_in_one_process(declare, fake_llm, researcher):
    declare(max_concurrency=3)
    fake_llm.script("m", "ok")
    fake_llm.set_latency(0.05)
    job = services.start_batch(calls_for(24), endpoint="ep", user=researcher)
    assert job.status == Job.Status.SUCCEEDED and fake_llm.max_in_flight("m") == 3


def test_a_second_batch_of_the_same_calls_is_answered_by_the_cache(declare, fake_llm, researcher):
    declare(input_cost_per_mtok=1.0, output_cost_per_mtok=1.0)
    fake_llm.script("m", "ok")
    services.start_batch(calls_for(5), endpoint="ep", user=researcher)
    again = services.start_batch(calls_for(5), endpoint="ep", user=researcher)
    assert len(fake_llm.requests("m")) == 5
    assert again.result["answered_from_cache"] == 5 and again.result["requests"] == 0 and again.result["cost"] == 0.0
    assert set(LLMCall.objects.filter(job=again).values_list("cached", flat=True)) == {True}


def test_a_batch_in_parts_is_one_job_per_part(declare, fake_llm, researcher, monkeypatch):
    monkeypatch.setattr(services, "CHUNK", 2)  # stored calls are read a few at a time
    declare(input_cost_per_mtok=1.0)
    fake_llm.script("m", "ok")
    batch = services.start_batch_in_parts(calls_for(7), endpoint="ep", parts=3, user=researcher, label="split")
    parts = list(batch_jobs(batch))
    assert [job.total for job in parts] == [3, 2, 2] and [job.params["part"] for job in parts] == [1, 2, 3]
    assert all(job.status == Job.Status.SUCCEEDED for job in parts) and len(fake_llm.requests("m")) == 7
    overview = batch_overview(batch, None)
    assert (overview["calls"], overview["ok"], overview["pending"], overview["actual"]["requests"]) == (7, 7, 0, 7)
    assert (
        batch.estimate["calls"] == 7
        and sum(job.result["estimated_prompt_tokens"] for job in parts) == batch.estimate["prompt_tokens"]
    )


# ---------------------------------------------------------------- checked before any job exists


def test_problems_are_refused_before_a_job_is_created(declare, fake_llm, researcher, annotator, monkeypatch, settings, tmp_path):
    declare()
    with pytest.raises(DomainError, match=r"No LLM endpoint named 'nope' .* \(declared: ep\)"):
        services.start_batch(calls_for(1), endpoint="nope", user=researcher)
    with pytest.raises(NotAllowed):
        services.start_batch(calls_for(1), endpoint="ep", user=annotator)
    with pytest.raises(DomainError, match="the key is used twice"):
        services.start_batch(calls_for(1) * 2, endpoint="ep", user=researcher)
    with pytest.raises(DomainError, match="vision = false, so it cannot take images"):
        services.start_batch([{"messages": [user_message("look", images=[_png()])]}], endpoint="ep", user=researcher)
    with pytest.raises(DomainError, match="model cannot be passed as params"):
        services.start_batch([{"messages": [user_message("hi")], "params": {"model": "other"}}], endpoint="ep", user=researcher)
    with pytest.raises(DomainError, match="at least one call"):
        services.start_batch([], endpoint="ep", user=researcher)
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(DomainError, match=f"the environment variable {KEY_ENV} is not set"):
        services.start_batch(calls_for(1), endpoint="ep", user=researcher)
    settings.BENCHFORGE_MODELS = tmp_path / "missing.toml"
    with pytest.raises(DomainError, match="the models file .*missing.toml does not exist"):
        services.estimate(calls_for(1), endpoint="ep")
    (tmp_path / "bad.toml").write_text("[models.x]\nprovider = 'openai'\n")
    settings.BENCHFORGE_MODELS = tmp_path / "bad.toml"
    with pytest.raises(DomainError, match="not usable: .*missing model, api_key_env"):
        services.estimate(calls_for(1), endpoint="x")
    assert not Job.objects.exists() and not LLMBatch.objects.exists() and fake_llm.requests() == []


def test_images_go_to_a_vision_endpoint_and_count_in_the_estimate(declare, fake_llm, researcher):
    declare(vision=True)
    fake_llm.script("m", "a red square")
    calls = [{"key": "img", "messages": [user_message("what is it?", images=[_png()])]}]
    assert services.estimate(calls, endpoint="ep")["prompt_tokens"] > 1000  # 1000 per image
    job = services.start_batch(calls, endpoint="ep", user=researcher)
    assert job.status == Job.Status.SUCCEEDED
    [body] = fake_llm.requests("m")
    assert body["messages"][0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")


def _png() -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 0, 0)).save(out, "PNG")
    return out.getvalue()


# ---------------------------------------------------------------- another job kind's runner


def test_another_runner_writes_its_results_with_each_call_and_resumes_without_paying_twice(declare, fake_llm, researcher):
    declare(max_concurrency=4, input_cost_per_mtok=1.0, output_cost_per_mtok=1.0)
    fake_llm.script("m", lambda body: "answer to " + body["messages"][0]["content"])
    fake_llm.set_latency(0.02)
    ledger = jobs.create_job(PROBE, params={"n": 0, "ledger": 0, "endpoint": "ep", "prefix": "x"})  # holds side effects
    job = jobs.start_job(
        PROBE, user=researcher, params={"n": 40, "ledger": ledger.pk, "endpoint": "ep", "prefix": "item", "crash_after": 10}
    )
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "the first run dies here" in job.message
    recorded = set(JobEntry.objects.filter(job=job).values_list("key", flat=True))
    asked_first = {b["messages"][0]["content"] for b in fake_llm.requests("m")}
    assert len(recorded) <= 10 < len(asked_first) < 40  # the crashed group is not recorded; calls not started were dropped
    # Calls answered but not recorded (the crashed group, those in flight) are in the cache.
    assert CachedReply.objects.count() == len(asked_first) > len(recorded)

    jobs.resume(job, user=researcher)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.message
    bodies = [b["messages"][0]["content"] for b in fake_llm.requests("m")]
    assert len(bodies) == len(set(bodies)) == 40  # no call paid twice
    effects = [key.split(" | ")[0] for key in JobEntry.objects.filter(job=ledger).values_list("key", flat=True)]
    assert sorted(effects) == [f"probe-{n:03d}" for n in range(40)]  # each reply's effect written exactly once
    entry = JobEntry.objects.get(job=job, key="probe-005")
    assert entry.data["seen_in_run"] == 1 and entry.data["llm"]["attempts"] == 1  # the hook's data joins the entry
    # The actual cost counts every paid call once, including those recovered from the cache.
    paid = sum(prompt_tokens({"messages": [{"role": "user", "content": b}]}) for b in bodies)
    assert job.result["prompt_tokens"] == paid and job.result["requests"] == 40 and job.result["calls"] == 40
    assert job.result["ok"] == 40 and job.result["cost"] == round((paid + job.result["completion_tokens"]) / 1e6, 6)
    # Those the first run paid for and never recorded are cache hits of the resumed run, not billed again.
    recovered = usage_of([job.pk])["total"]["cache_hits"]
    assert recovered == len(asked_first) - len(recorded) and job.result["answered_from_cache"] == recovered


def test_a_domain_error_in_the_runner_records_that_call_as_failed(declare, fake_llm, researcher):
    declare()
    fake_llm.script("m", lambda body: "refuse" if body["messages"][0]["content"].endswith(" 2") else "fine")
    ledger = jobs.create_job(PROBE, params={"n": 0, "ledger": 0, "endpoint": "ep", "prefix": "x"})
    job = jobs.start_job(PROBE, user=researcher, params={"n": 4, "ledger": ledger.pk, "endpoint": "ep", "prefix": "item"})
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.result["errors"] == 1 and job.result["ok"] == 3
    entry = JobEntry.objects.get(job=job, key="probe-002")
    assert entry.outcome == "error" and entry.message == "the reply says refuse: not a usable rewrite"
    assert JobEntry.objects.filter(job=ledger).count() == 3  # its writes were rolled back, the others kept


def test_a_cancelled_job_stops_asking_and_resumes_where_it_stopped(declare, fake_llm, researcher, settings):
    settings.BENCHFORGE_JOB_HEARTBEAT_SECONDS = 0  # every recorded group looks at the job's status
    declare(max_concurrency=2)
    fake_llm.set_latency(0.02)
    fake_llm.script("m", "ok")
    ledger = jobs.create_job(PROBE, params={"n": 0, "ledger": 0, "endpoint": "ep", "prefix": "x"})
    job = jobs.start_job(
        PROBE, user=researcher, params={"n": 30, "ledger": ledger.pk, "endpoint": "ep", "prefix": "c", "cancel_after": 5}
    )
    job.refresh_from_db()
    assert job.status == Job.Status.CANCELLED and 5 <= len(fake_llm.requests("m")) < 15
    jobs.resume(job, user=researcher)
    job.refresh_from_db()
    bodies = [b["messages"][0]["content"] for b in fake_llm.requests("m")]
    assert job.status == Job.Status.SUCCEEDED and len(bodies) == len(set(bodies)) == 30
    assert JobEntry.objects.filter(job=ledger).count() == 30

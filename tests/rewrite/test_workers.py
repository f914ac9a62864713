"""A rewrite batch on a real Celery worker (Redis broker and limiter, Postgres), killed mid-batch
(SIGKILL) and resumed: no seed gets its rewrites twice and no answered call is asked again."""

import threading
import time
import uuid

import pytest

from jobs.models import Job
from rewrite import services
from rewrite.models import BatchSeed, RawReply, Rewrite
from tests.jobs.workers import kill_with_every_counted_request_sent, wait_for
from tests.llm.conftest import KEY_ENV
from tests.rewrite.conftest import five, question_of

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


class Arrivals:
    """The reply script: five rewrites of whatever was asked, noting when each question arrived."""

    def __init__(self):
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = {}

    def __call__(self, body):
        question = question_of(body)
        with self.lock:
            self.times.setdefault(question, []).append(time.monotonic())
        return five(question)


@pytest.fixture
def workers(celery_workers, declare):
    prefix = f"bf-test-{uuid.uuid4().hex[:8]}"
    models = declare(max_concurrency=4)
    celery_workers.env.update(
        {
            "BENCHFORGE_MODELS": str(models),
            KEY_ENV: "id.secret",
            "BENCHFORGE_LLM_REDIS_PREFIX": prefix,
            "BENCHFORGE_LLM_SLOT_LEASE_SECONDS": "3",
            "LOG_LEVEL": "WARNING",
        }
    )
    yield celery_workers
    import redis

    client = redis.Redis.from_url(celery_workers.env["CELERY_BROKER_URL"])
    for name in client.scan_iter(match=f"{prefix}:*"):
        client.delete(name)


def test_a_killed_worker_resumes_without_duplicate_rewrites_or_a_repeated_paid_call(
    workers, fake_llm, make_seed, zh_template, researcher, settings, api_for
):
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT = 3
    seeds = [make_seed(f"图中第{i}排有几只猫？") for i in range(120)]
    arrivals = Arrivals()
    fake_llm.script("glm-4", arrivals)
    fake_llm.set_latency(0.05)
    first = workers.start()
    batch = services.start_batch(seeds[0].benchmark, user=researcher, endpoint="glm", template_version=zh_template)
    job = batch.job
    wait_for(lambda: RawReply.objects.filter(batch_seed__batch=batch).count() >= 30, what="30 seeds rewritten")
    kill_with_every_counted_request_sent(workers, first, fake_llm=fake_llm, job=job, latency=0.05)
    killed_at = time.monotonic()  # the worker is dead now: nothing it sent can come after this
    answered_before = set(RawReply.objects.filter(batch_seed__batch=batch).values_list("batch_seed__item__question", flat=True))
    assert len(answered_before) < 120

    api = api_for(researcher)
    wait_for(lambda: api.get(f"/api/v1/jobs/{job.pk}/").json()["state"] == "interrupted", timeout=30, what="interrupted")
    assert api.post(f"/api/v1/jobs/{job.pk}/resume/").status_code == 200
    workers.start()
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=120, what="the resumed job")
    job.refresh_from_db()
    batch.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.runs == 2, job.message
    assert batch.status == "finished" and set(BatchSeed.objects.filter(batch=batch).values_list("state", flat=True)) == {"done"}

    # Each seed: one reply, five rewrites, none twice.
    assert RawReply.objects.filter(batch_seed__batch=batch).count() == 120
    pairs = list(Rewrite.objects.filter(batch=batch).values_list("seed_id", "text"))
    assert len(pairs) == len(set(pairs)) == 600
    # No recorded call was asked again; the only repeats were in flight when the worker died.
    repeated = {q: t for q, t in arrivals.times.items() if len(t) > 1}
    assert not set(repeated) & answered_before
    assert len(repeated) <= 4 and all(
        times[0] <= killed_at for times in repeated.values()
    )  # asked before the kill (no lower bound: under load a reply can take seconds)
    assert len(fake_llm.requests("glm-4")) == 120 + len(repeated) and fake_llm.max_in_flight("glm-4") <= 4
    # The batch's usage counts every request received, those in flight when the worker died too
    # (counted just before sending, and killed with none between its count and its send).
    received = len(fake_llm.requests("glm-4"))
    assert batch.usage["requests"] == received, (received, batch.usage)


def test_a_killed_worker_s_batch_finishes_by_itself_on_the_next_worker(
    workers, fake_llm, make_seed, zh_template, researcher, settings
):
    """No one presses Resume: the next worker's sweeper re-queues the batch its dead worker held."""
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT = 3
    workers.env.update({"BENCHFORGE_JOB_HEARTBEAT_TIMEOUT": "3", "BENCHFORGE_JOB_RECOVERY_BACKOFF": "0.5"})
    seeds = [make_seed(f"图中第{i}排有几只猫？") for i in range(80)]
    arrivals = Arrivals()
    fake_llm.script("glm-4", arrivals)
    fake_llm.set_latency(0.05)
    first = workers.start()
    batch = services.start_batch(seeds[0].benchmark, user=researcher, endpoint="glm", template_version=zh_template)
    job = batch.job
    wait_for(lambda: RawReply.objects.filter(batch_seed__batch=batch).count() >= 20, what="20 seeds rewritten")
    kill_with_every_counted_request_sent(workers, first, fake_llm=fake_llm, job=job, latency=0.05)
    workers.start()  # a worker comes back; nobody touches the batch

    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=180, what="the batch to finish by itself")
    job.refresh_from_db()
    batch.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.runs == 2 and job.recoveries == 1, job.message
    assert [r["recovered"] for r in job.run_log] == [False, True]
    assert batch.status == "finished" and set(BatchSeed.objects.filter(batch=batch).values_list("state", flat=True)) == {"done"}
    assert RawReply.objects.filter(batch_seed__batch=batch).count() == 80
    pairs = list(Rewrite.objects.filter(batch=batch).values_list("seed_id", "text"))
    assert len(pairs) == len(set(pairs)) == 400  # no duplicates
    received = len(fake_llm.requests("glm-4"))
    assert batch.usage["requests"] == received, (received, batch.usage)

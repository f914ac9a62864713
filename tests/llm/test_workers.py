"""LLM batches on real Celery workers (Redis broker and limiter, Postgres): one bound for every
worker, and a worker killed mid-batch whose job resumes without asking an answered call again."""

import threading
import time
import uuid

import pytest

from jobs.models import Job
from llm.models import LLMCall
from llm.selectors import batch_jobs
from llm.services import start_batch_in_parts
from tests.jobs.workers import wait_for

try:  # the fixture lives here until it moves to tests/conftest.py
    from tests.jobs.workers import celery_workers  # noqa: F401
except ImportError:
    pass
from tests.llm.conftest import KEY_ENV, calls_for

pytestmark = pytest.mark.services


class Arrivals:
    """A reply script that notes when each prompt reached the server."""

    def __init__(self):
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = {}

    def __call__(self, body):
        prompt = body["messages"][0]["content"]
        with self.lock:
            self.times.setdefault(prompt, []).append(time.monotonic())
        return "answer"


@pytest.fixture
def llm_workers(celery_workers, declare, settings):
    """Workers that read the test's models file and share a Redis prefix of their own."""
    prefix = f"bf-test-{uuid.uuid4().hex[:8]}"

    def configure(**endpoint):
        models = declare(**endpoint)
        celery_workers.env.update(
            {
                "BENCHFORGE_MODELS": str(models),
                KEY_ENV: "id.secret",
                "BENCHFORGE_LLM_REDIS_PREFIX": prefix,
                "BENCHFORGE_LLM_SLOT_LEASE_SECONDS": "3",
                "LOG_LEVEL": "WARNING",
            }
        )
        return celery_workers

    yield configure
    import redis

    client = redis.Redis.from_url(celery_workers.env["CELERY_BROKER_URL"])
    for name in client.scan_iter(match=f"{prefix}:*"):
        client.delete(name)


def _finished(parts):
    ids = [job.pk for job in parts]
    return Job.objects.filter(pk__in=ids, status__in=Job.FINISHED).count() == len(ids)


@pytest.mark.parametrize("provider", ["openai", "zhipuai"])
def test_two_workers_share_one_bound(provider, llm_workers, fake_llm, researcher):
    workers = llm_workers(provider=provider, model="vlm", max_concurrency=4)
    fake_llm.script("vlm", "answer")
    fake_llm.set_latency(0.1)
    workers.start()
    workers.start()
    batch = start_batch_in_parts(calls_for(80), endpoint="ep", parts=2, user=researcher)
    wait_for(lambda: _finished(batch_jobs(batch)), timeout=120, what="both parts")
    parts = list(batch_jobs(batch))
    assert [job.status for job in parts] == ["succeeded"] * 2, [job.message for job in parts]
    assert len({job.worker for job in parts}) == 2  # two workers, at once
    assert LLMCall.objects.filter(batch=batch, status="ok").count() == 80 and len(fake_llm.requests("vlm")) == 80
    assert fake_llm.max_in_flight("vlm") == 4  # each worker alone would have run 4


def test_a_killed_worker_resumes_without_asking_an_answered_call_again(llm_workers, fake_llm, researcher, settings, api_for):
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT = 3
    workers = llm_workers(max_concurrency=4)
    arrivals = Arrivals()
    fake_llm.script("m", arrivals)
    fake_llm.set_latency(0.05)
    first = workers.start()
    batch = start_batch_in_parts(calls_for(160), endpoint="ep", parts=1, user=researcher)
    [job] = batch_jobs(batch)
    wait_for(lambda: LLMCall.objects.filter(batch=batch, status="ok").count() >= 40, what="40 answered calls")
    workers.kill(first)
    killed_at = time.monotonic()  # the worker is dead now: nothing it sent can come after this
    answered_before = set(LLMCall.objects.filter(batch=batch, status="ok").values_list("key", flat=True))

    api = api_for(researcher)
    wait_for(lambda: api.get(f"/api/v1/jobs/{job.pk}/").json()["state"] == "interrupted", timeout=30, what="interrupted")
    assert api.post(f"/api/v1/jobs/{job.pk}/resume/").status_code == 200
    workers.start()
    wait_for(lambda: _finished([job]), timeout=120, what="the resumed job")
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.runs == 2, job.message
    assert LLMCall.objects.filter(batch=batch, status="ok").count() == 160

    repeated = {prompt: times for prompt, times in arrivals.times.items() if len(times) > 1}
    asked_twice = {f"c{int(prompt.split()[1].rstrip(':')):04d}" for prompt in repeated}
    assert not asked_twice & answered_before  # no recorded call was asked again
    # The only calls asked twice were in flight when the worker died: their replies went with it.
    # (No lower bound on when they were first asked: on a loaded machine a call can wait seconds
    # for its reply, and the answered-before check above already proves nothing recorded was re-sent.)
    assert len(repeated) <= 4 and all(times[0] <= killed_at for times in repeated.values())
    assert len(fake_llm.requests("m")) == 160 + len(repeated) and fake_llm.max_in_flight("m") <= 4

    # Usage counts every request the endpoint received, those of the killed run in flight too: on
    # the job and on the batch. (A request is counted just before it leaves, so a worker killed in
    # between counts one the server never saw: at most one per slot, never one too few.)
    received = len(fake_llm.requests("m"))
    on_job = api.get(f"/api/v1/jobs/{job.pk}/").json()["result"]["requests"]
    on_batch = api.get(f"/api/v1/llm/batches/{batch.pk}/").json()["actual"]["requests"]
    shown = [on_job, on_batch]
    assert all(received <= n <= received + 4 for n in shown), (received, shown)

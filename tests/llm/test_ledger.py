"""The durable count of requests sent: every request a job run pays for is counted before it is
sent, exactly, however many threads count at once. The other counts (tokens, cache hits) ride
along with the next request's write, and are all written, once, when the client closes."""

import threading

from django.db import connections

from jobs.models import Job
from llm.client import get_client
from llm.ledger import SETTLE_SECONDS, Meter, note_sent
from llm.selectors import sent_requests, usage_by_run
from tests.fakes.llm_server import Fault, prompt_tokens


def test_threads_counting_at_once_lose_no_request(postgres):
    job = Job.objects.create(kind="llm_batch")
    other = Job.objects.create(kind="llm_batch")
    start = threading.Barrier(8)

    def count(n: int) -> None:
        try:
            start.wait()  # all at once, so the first insert races
            for _ in range(n):
                note_sent((job.pk, 1), "judge")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=count, args=(25,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    note_sent((job.pk, 2), "judge")
    note_sent((job.pk, 2), "grader")
    note_sent((other.pk, 1), "judge")

    assert sent_requests([job.pk], endpoint="judge") == 201
    assert sent_requests([job.pk]) == 202
    sent = {run: {name: counts["requests"] for name, counts in rows.items()} for run, rows in usage_by_run([job.pk]).items()}
    assert sent == {(job.pk, 1): {"judge": 200}, (job.pk, 2): {"judge": 1, "grader": 1}}


def test_a_job_run_counts_each_attempt_retries_included(db, declare, fake_llm):
    """A call answered after a 500 made two requests; both are counted for the job run paying."""
    declare(max_retries=2)
    fake_llm.script("m", [Fault.server_error(500), "ok"])
    job = Job.objects.create(kind="llm_batch")
    with get_client(payer=(job.pk, 1)) as client:
        client.chat("ep", [{"role": "user", "content": "hello"}])
        client.chat("ep", [{"role": "user", "content": "hello"}])  # from the cache: nothing sent
    assert len(fake_llm.requests("m")) == 2
    assert sent_requests([job.pk], endpoint="ep") == 2


def test_tokens_and_cache_hits_ride_with_the_next_request_and_are_written_once(db, declare, fake_llm, monkeypatch):
    """A reply's tokens are written with the next request (no write of their own), everything held
    is written when the client closes, and settling again writes nothing twice."""
    monkeypatch.setattr("llm.ledger.SETTLE_SECONDS", 600)  # however slow the machine: only a request or the close writes
    declare()
    fake_llm.script("m", lambda body: "four words of reply")
    job = Job.objects.create(kind="llm_batch")

    def spent() -> dict:
        return usage_by_run([job.pk]).get((job.pk, 1), {}).get("ep", {})

    client = get_client(payer=(job.pk, 1))
    client.chat("ep", [{"role": "user", "content": "first"}])
    assert spent()["requests"] == 1 and spent()["prompt_tokens"] == 0  # the request, before it was sent
    client.chat("ep", [{"role": "user", "content": "second"}])
    first = prompt_tokens(fake_llm.requests("m")[0])
    assert (spent()["requests"], spent()["prompt_tokens"], spent()["completion_tokens"]) == (2, first, 4)
    client.chat("ep", [{"role": "user", "content": "first"}])  # from the cache: nothing sent, the hit written at once
    assert spent()["requests"] == 2 and spent()["cache_hits"] == 1  # a worker killed now has it in the ledger
    client.close()
    client.settle_usage()  # nothing held any more: nothing written twice

    everything = sum(prompt_tokens(body) for body in fake_llm.requests("m"))
    assert len(fake_llm.requests("m")) == 2
    assert {k: spent()[k] for k in ("requests", "cache_hits", "prompt_tokens", "completion_tokens")} == {
        "requests": 2,
        "cache_hits": 1,
        "prompt_tokens": everything,
        "completion_tokens": 8,
    }


def test_held_counts_are_written_once_they_have_waited(db):
    """Counts with no request to ride with (retries of calls that then failed) are written when they
    have waited SETTLE_SECONDS, not only at the end; a cache hit is written as it is served."""
    job = Job.objects.create(kind="llm_batch")
    now = [0.0]
    meter = Meter(clock=lambda: now[0])

    def spent(field) -> int:
        return usage_by_run([job.pk]).get((job.pk, 1), {}).get("ep", {}).get(field, 0)

    meter.count((job.pk, 1), "ep", {"retries": 1})
    now[0] += SETTLE_SECONDS / 2
    meter.count((job.pk, 1), "ep", {"retries": 1})
    assert spent("retries") == 0
    now[0] += SETTLE_SECONDS / 2
    meter.count((job.pk, 1), "ep", {"retries": 1})
    assert spent("retries") == 3
    meter.count((job.pk, 1), "ep", {"retries": 1})
    meter.settle()
    meter.settle()
    assert spent("retries") == 4
    meter.count((job.pk, 1), "ep", {"cache_hits": 1})
    assert spent("cache_hits") == 1  # no wait

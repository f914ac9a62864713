"""The durable count of requests sent: every request a job run pays for is counted before it is
sent, exactly, however many threads count at once."""

import threading

from django.db import connections

from jobs.models import Job
from llm.client import get_client
from llm.ledger import note_sent
from llm.selectors import sent_requests, usage_by_run
from tests.fakes.llm_server import Fault


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

"""chat_many on the platform client keeps its call threads from one batch to the next and closes
their database connections when the client closes. Threads made afresh for every batch each left
a connection open (the cache is read from the call thread): a QC run of a few dozen batches took
most of Postgres's connections."""

import time

import pytest
from django.db import connection

from benchforge_harness.llm import user_message
from llm.client import get_client
from tests.conftest import require

pytestmark = pytest.mark.django_db(transaction=True)


def open_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]


def test_batches_reuse_their_threads_and_close_their_connections(declare, fake_llm):
    require(connection.vendor == "postgresql", "Postgres via DATABASE_URL (counts its connections)")
    declare(model="m", max_concurrency=6)
    declare(name="ep2", model="m2", max_concurrency=6)
    fake_llm.script("m", lambda body: "A")
    fake_llm.script("m2", lambda body: "A")
    before = open_connections()
    client = get_client()
    try:
        for batch in range(6):
            endpoint = ("ep", "ep2")[batch % 2]
            results = client.chat_many(endpoint, [[user_message(f"batch {batch} question {n}")] for n in range(12)])
            assert all(r.text == "A" for r in results)
        # At most one connection per call thread, however many batches ran on however many endpoints.
        assert open_connections() - before <= 6
    finally:
        client.close()
    # A closed connection's server process takes a moment to leave pg_stat_activity.
    deadline = time.monotonic() + 5
    while open_connections() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert open_connections() == before


def test_results_come_back_in_input_order(declare, fake_llm):
    declare(model="m", max_concurrency=3, max_retries=0)
    fake_llm.script("m", lambda body: "fail" if "3" in str(body["messages"]) else "reply " + body["messages"][0]["content"])
    seen = []
    with get_client() as client:
        results = client.chat_many(
            "ep", [[user_message(f"q{n}")] for n in range(6)], on_result=lambda index, result: seen.append(index)
        )
    assert sorted(seen) == list(range(6))
    assert [getattr(r, "text", None) for r in results] == ["reply q0", "reply q1", "reply q2", "fail", "reply q4", "reply q5"]

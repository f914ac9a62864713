"""Work a request leaves for after its response (benchforge.after_response) runs in the web
process's background thread: the worker that sent the response is free at once, the work still
runs, in order, and a failing one neither reaches anyone nor stops the next."""

import logging
import threading

import pytest
from django.core.signals import request_finished, request_started

from benchforge import after_response

pytestmark = pytest.mark.django_db  # request_finished closes old database connections


def _request(*works) -> None:
    """What the WSGI handler does around a view that leaves `works`."""
    request_started.send(sender=None)
    for work in works:
        after_response.after_response(work)
    request_finished.send(sender=None)


def test_the_response_does_not_wait_for_the_work_it_left(settings):
    settings.BENCHFORGE_AFTER_RESPONSE = "thread"
    release, ran = threading.Event(), []
    _request(lambda: (release.wait(10), ran.append(("slow", threading.current_thread().name))))
    _request(lambda: ran.append(("next", threading.current_thread().name)))
    assert ran == []  # both requests are done; the first one's work is still waiting
    release.set()
    after_response.wait()
    assert ran == [("slow", "after-response"), ("next", "after-response")]


def test_a_failing_work_is_logged_and_the_next_one_runs(settings, caplog):
    settings.BENCHFORGE_AFTER_RESPONSE = "thread"
    ran = []
    with caplog.at_level(logging.ERROR, logger="benchforge.after_response"):
        _request(lambda: 1 / 0, lambda: ran.append("after"))
        after_response.wait()
    assert ran == ["after"]
    assert "work left for after a response failed" in caplog.text and "ZeroDivisionError" in caplog.text


def test_inline_runs_the_work_in_the_worker_before_the_next_request(settings):
    settings.BENCHFORGE_AFTER_RESPONSE = "inline"
    ran = []
    _request(lambda: ran.append(threading.current_thread().name))
    assert ran == [threading.current_thread().name]


def test_outside_a_request_the_work_runs_at_once():
    ran = []
    after_response.after_response(lambda: ran.append(1))
    assert ran == [1]


@pytest.mark.django_db(transaction=True)
def test_a_dashboard_recount_left_for_the_thread_counts_what_is_committed(settings, client_for, annotator, benchmark):
    """The recount reads the database on the thread's own connection: it sees committed rows (and
    closes its connection when it has nothing else to do)."""
    from datetime import timedelta

    from django.core.cache import cache
    from django.utils import timezone

    from benchforge import navigation
    from tests.factories import make_image

    settings.BENCHFORGE_AFTER_RESPONSE = "thread"
    settings.BENCHFORGE_DASHBOARD_CACHE_SECONDS = 30
    client = client_for(annotator)
    make_image(benchmark, status="pending")
    key = f"dashboard:{benchmark.pk}:images:{timezone.localdate().isoformat()}"
    long_ago = timezone.now() - timedelta(seconds=31)
    cache.set(key, ({"pending": 7}, long_ago), 300)  # due, and not what the table holds
    navigation.changed(benchmark.pk)
    assert "7 collected · 7 waiting for screening" in client.get(f"/b/{benchmark.slug}/").content.decode()
    after_response.wait()
    value, counted_at, _took = cache.get(key)
    assert value["pending"] == 1 and counted_at > long_ago
    assert cache.get(f"{key}:recount") is None

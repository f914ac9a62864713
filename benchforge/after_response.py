"""Work a request leaves for after its response is sent: the person who asked does not wait for it.

The WSGI server sends the response, then closes it, which sends Django's `request_finished`; the
work is then handed to one background thread of the web process (BENCHFORGE_AFTER_RESPONSE =
"thread", the default), which runs it in order with its own database connection. Run in the worker
itself instead ("inline"), a recount of a dashboard part at a million items (about two seconds of
database time) kept that sync worker from serving anyone meanwhile, and every request queued behind
it waited (issue 43). Work lost with its process (a restart) is work nobody waited for: whoever
left it must cope with it never running (the dashboard's recount claim expires and is taken again).
Outside a request (a job, a command, a test calling a service) the work runs at once.
"""

import logging
import os
import queue
import threading

from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import connections

log = logging.getLogger(__name__)
_local = threading.local()


def in_request() -> bool:
    return getattr(_local, "pending", None) is not None


def after_response(work) -> None:
    """Run `work()` once this thread's response has been sent; outside a request, now."""
    pending = getattr(_local, "pending", None)
    if pending is None:
        work()
    else:
        pending.append(work)


def _run(work) -> None:
    try:
        work()
    except Exception:  # the response is gone: nobody else can be told
        log.exception("work left for after a response failed")


class _Runner:
    """The process's background thread and its queue; started on first use, and again in a forked
    child (a thread does not survive a fork)."""

    def __init__(self):
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._pid = None

    def put(self, works) -> None:
        with self._lock:
            if self._pid != os.getpid():
                self._queue, self._pid = queue.Queue(), os.getpid()
                threading.Thread(target=self._serve, args=(self._queue,), name="after-response", daemon=True).start()
            for work in works:
                self._queue.put(work)

    @staticmethod
    def _serve(works: queue.Queue) -> None:
        while True:
            work = works.get()
            try:
                _run(work)
            finally:
                if works.empty():
                    connections.close_all()  # this thread's own: none kept open while idle
                works.task_done()

    def wait(self) -> None:
        """Until everything handed over so far has run (for tests)."""
        if self._pid == os.getpid():
            self._queue.join()


_runner = _Runner()
wait = _runner.wait


def forget_unfinished_request() -> None:
    """Leave a request this thread started and never finished. A WSGI server always closes a
    response (which finishes the request), but Django's test client finishes a streamed one only
    once it is read to the end: one left unread keeps the thread "in a request", so work it asks
    for later waits for a response that never ends (tests call this between tests)."""
    _local.pending = None


def _started(**_ignored) -> None:
    _local.pending = []


def _finished(**_ignored) -> None:
    pending, _local.pending = getattr(_local, "pending", None), None
    if not pending:
        return
    if settings.BENCHFORGE_AFTER_RESPONSE == "thread":
        _runner.put(pending)
    else:
        for work in pending:
            _run(work)


def connect() -> None:
    request_started.connect(_started, dispatch_uid="benchforge.after_response.started")
    request_finished.connect(_finished, dispatch_uid="benchforge.after_response.finished")

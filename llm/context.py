"""Per-thread context of the chat call running now, and database access from call threads.

The harness client runs a call (cache lookups, limiter slots, HTTP attempts) in the thread that
asked for it; the platform's cache and limiter read and fill the CallTrace of that thread, so the
batch machinery learns, per call, its cache key, how many HTTP attempts it took and which job run
paid for a cached reply, without reaching into the client's internals.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

from django.db import connections

from benchforge_harness.llm import Endpoint


@dataclass
class CallTrace:
    endpoint: Endpoint | None = None
    payer: tuple[int, int] | None = None  # (job id, run number) paying for requests made now
    request_key: str = ""
    attempts: int = 0  # HTTP requests made (0: answered from the cache)
    hit_payer: tuple[int, int] | None = None  # who paid for the cached reply that answered it


_local = threading.local()


def current() -> CallTrace | None:
    return getattr(_local, "trace", None)


@contextmanager
def tracing(trace: CallTrace):
    previous = current()
    _local.trace = trace
    try:
        yield trace
    finally:
        _local.trace = previous


_sqlite_lock = threading.RLock()


def serial_db():
    """Around database work done while call threads are running. SQLite takes one writer at a
    time, and the in-memory database of the test suite (shared cache) refuses a second writer at
    once instead of waiting: on SQLite, the threads of this process take turns. Postgres needs
    nothing."""
    return _sqlite_lock if connections["default"].vendor == "sqlite" else nullcontext()

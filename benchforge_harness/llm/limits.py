"""Concurrency limiters: how `max_concurrency` stays a hard bound.

An endpoint's bound holds for every caller of the same remote endpoint, not per client: the
limiter keys its slots by the endpoint's identity (provider, base_url, model), so two clients in
one process, or two names in the models file for the same model, share one set of slots. When
names sharing an identity declare different limits, the smallest limit among the endpoints
alive in the process is in force.

Limiter protocol (what LLMClient(limiter=...) takes): one method,

    slot(endpoint: Endpoint) -> context manager

which blocks until a request to `endpoint` may start and frees the slot on exit. It is called
from many threads at once. The platform plugs a Redis-backed limiter here so the bound also
holds across Celery workers on several hosts; it should key by `endpoint.identity` and honour
the smallest `max_concurrency` among the names that share an identity.

- LocalLimiter: threads of one process; `process_limiter()` is the one every client uses by
  default.
- ForkSharedLimiter: the harness's forked worker processes; made in the parent before the fork
  (one multiprocessing semaphore per identity), installed as each worker's process limiter.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager as ContextManager
from typing import Protocol

from .endpoints import Endpoint


class Limiter(Protocol):
    def slot(self, endpoint: Endpoint) -> ContextManager[None]: ...


class _Slots:
    """In-flight requests to one identity, and the limits of the endpoints that use it."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._in_flight = 0
        # Endpoint objects alive in the process -> their limit. Weak, so an endpoint dropped by
        # every client stops constraining later ones (a test's endpoint, a finished job's).
        self._limits: weakref.WeakKeyDictionary[Endpoint, int] = weakref.WeakKeyDictionary()

    def register(self, endpoint: Endpoint) -> None:
        with self._condition:
            self._limits[endpoint] = endpoint.max_concurrency

    def limit(self, endpoint: Endpoint) -> int:
        return min(endpoint.max_concurrency, *self._limits.values()) if self._limits else endpoint.max_concurrency

    @contextlib.contextmanager
    def slot(self, endpoint: Endpoint) -> Iterator[None]:
        with self._condition:
            self._limits[endpoint] = endpoint.max_concurrency
            while self._in_flight >= self.limit(endpoint):
                self._condition.wait()
            self._in_flight += 1
        try:
            yield
        finally:
            with self._condition:
                self._in_flight -= 1
                self._condition.notify()


class LocalLimiter:
    """Slots per endpoint identity for the threads of this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[tuple, _Slots] = {}

    def _for(self, endpoint: Endpoint) -> _Slots:
        with self._lock:
            slots = self._slots.get(endpoint.identity)
            if slots is None:
                slots = self._slots[endpoint.identity] = _Slots()
            return slots

    def register(self, endpoint: Endpoint) -> None:
        """Make the endpoint's limit count from now on, before its first call (LLMClient does this)."""
        self._for(endpoint).register(endpoint)

    def slot(self, endpoint: Endpoint) -> ContextManager[None]:
        return self._for(endpoint).slot(endpoint)


class ForkSharedLimiter:
    """One multiprocessing semaphore per identity, made before forking and inherited by the
    worker processes, so their requests together never exceed the bound. An endpoint the parent
    did not know falls back to the worker's own LocalLimiter. A worker killed in a call keeps its
    slot until the run ends (the semaphores live for one run)."""

    def __init__(self, endpoints: Iterable[Endpoint], context) -> None:
        limits: dict[tuple, int] = {}
        for endpoint in endpoints:
            limits[endpoint.identity] = min(endpoint.max_concurrency, limits.get(endpoint.identity, endpoint.max_concurrency))
        self._semaphores = {identity: context.BoundedSemaphore(limit) for identity, limit in limits.items()}
        self._fallback = LocalLimiter()

    def slot(self, endpoint: Endpoint) -> ContextManager[None]:
        semaphore = self._semaphores.get(endpoint.identity)
        return semaphore if semaphore is not None else self._fallback.slot(endpoint)


_process_limiter: Limiter = LocalLimiter()


def process_limiter() -> Limiter:
    """The limiter clients use when given none: shared by every LLMClient of this process."""
    return _process_limiter


def set_process_limiter(limiter: Limiter) -> None:
    """Replace the process-wide default (a forked worker installs the run's ForkSharedLimiter)."""
    global _process_limiter
    _process_limiter = limiter

"""The platform's LLM client: the endpoints of settings.BENCHFORGE_MODELS, the shared response
cache and the cross-worker concurrency bound, and harness errors turned into DomainError
messages a person can act on.

    client = get_client()                 # a harness LLMClient (PlatformClient)
    check_endpoints(client, ["judge"])    # DomainError listing every problem, before any request
    client.chat("judge", messages)        # or the batch machinery in llm.services
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connections

from benchforge.errors import DomainError
from harness.llm import ChatResponse, ConfigError, Endpoint, LLMClient, LLMError, load_endpoints

from .cache import platform_cache
from .context import CallTrace, current, tracing
from .ledger import note_sent
from .limiter import platform_limiter

_models: dict[str, tuple[tuple, dict[str, Endpoint]]] = {}
_models_lock = threading.Lock()


class LLMConfigError(DomainError):
    code = "llm_config"


def load_models() -> dict[str, Endpoint]:
    """The endpoints of the models file, read again when the file changes."""
    path = Path(settings.BENCHFORGE_MODELS)
    try:
        stat = path.stat()
    except OSError:
        raise LLMConfigError(
            f"No LLM endpoints: the models file {path} does not exist. Copy docs/models.toml.example "
            "there and edit it, or point BENCHFORGE_MODELS at your models file."
        ) from None
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _models_lock:
        known = _models.get(str(path))
        if known and known[0] == stamp:
            return known[1]
    try:
        endpoints = load_endpoints(path)
    except ConfigError as exc:
        raise LLMConfigError(f"The LLM models file is not usable: {exc}") from None
    with _models_lock:
        _models[str(path)] = (stamp, endpoints)
    return endpoints


def get_endpoint(name: str) -> Endpoint:
    endpoints = load_models()
    if name not in endpoints:
        known = ", ".join(sorted(endpoints)) or "none"
        raise LLMConfigError(f"No LLM endpoint named {name!r} in {settings.BENCHFORGE_MODELS} (declared: {known}).")
    return endpoints[name]


class _CountingLimiter:
    """Counts the HTTP attempts of the call running in this thread (each attempt takes a slot),
    and, for a call a job run pays for, counts it durably before it is sent (llm.ledger)."""

    def __init__(self, inner):
        self.inner = inner
        if hasattr(inner, "register"):
            self.register = inner.register

    @contextmanager
    def slot(self, endpoint: Endpoint):
        with self.inner.slot(endpoint):
            trace = current()
            if trace is not None:
                trace.attempts += 1
                if trace.payer is not None:
                    note_sent(trace.payer, endpoint.name)
            yield


_STOP = object()


class _CallThreads:
    """The threads chat_many runs calls on, kept from one batch to the next. Each thread opens its
    own database connection (the cache is read and written from it); threads made afresh for every
    batch left one open connection behind each, until Postgres ran out. These close theirs when
    the client closes."""

    def __init__(self, name: str):
        self.name = name
        self.todo: queue.Queue = queue.Queue()
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()

    def grow(self, size: int) -> None:
        with self.lock:
            while len(self.threads) < size:
                thread = threading.Thread(target=self._work, name=f"{self.name}-{len(self.threads)}", daemon=True)
                thread.start()
                self.threads.append(thread)

    def _work(self) -> None:
        try:
            while True:
                task = self.todo.get()
                if task is _STOP:
                    return
                task()
        finally:
            connections.close_all()

    def close(self, timeout: float = 30.0) -> None:
        with self.lock:
            threads, self.threads = self.threads, []
        for _ in threads:
            self.todo.put(_STOP)
        for thread in threads:
            thread.join(timeout=timeout)


class PlatformClient(LLMClient):
    """LLMClient with the platform's cache and limiter; each call runs with a CallTrace so the
    cache knows the endpoint it stores a reply for and which job run paid for it. Batches
    (chat_many) run on threads kept for the client's life: close the client to end them."""

    def __init__(self, endpoints, cache=None, *, limiter=None, payer: tuple[int, int] | None = None, **kwargs):
        super().__init__(
            endpoints, cache, limiter=_CountingLimiter(limiter if limiter is not None else platform_limiter()), **kwargs
        )
        self.payer = payer
        # One set for every endpoint: a run asks its models one after the other, and each thread
        # may hold a database connection (the cache), so threads per endpoint would multiply them.
        self._call_threads = _CallThreads("llm-calls")

    def chat_many(
        self,
        endpoint: str,
        requests: Iterable,
        *,
        on_result: Callable[[int, ChatResponse | LLMError], None] | None = None,
    ) -> list[ChatResponse | LLMError]:
        """As LLMClient.chat_many (results in input order, failures returned, on_result in this
        thread as calls finish), on this client's long-lived call threads."""
        state = self._state(endpoint)
        items = list(requests)
        if not items:
            return []
        threads = self._call_threads
        threads.grow(min(len(items), state.endpoint.max_concurrency))
        results: list = [None] * len(items)
        done: queue.Queue = queue.Queue()
        cancelled = threading.Event()

        def task(index: int, item) -> Callable[[], None]:
            def run() -> None:
                if cancelled.is_set():
                    done.put((index, None))
                    return
                done.put((index, self._one_of_many(endpoint, index, item)))

            return run

        for index, item in enumerate(items):
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Mapping):
                item = (item[0], dict(item[1]))
            threads.todo.put(task(index, item))
        received = 0
        try:
            while received < len(items):
                index, result = done.get()
                received += 1
                results[index] = result
                if on_result is not None and result is not None:
                    on_result(index, result)
        finally:
            if received < len(items):
                # On an error in on_result (or Ctrl-C) the calls not yet started are dropped; those
                # in flight finish (their replies reach the cache).
                cancelled.set()
                while received < len(items):
                    done.get()
                    received += 1
        return results

    def chat(self, endpoint: str, messages: list[dict], **params) -> ChatResponse:
        if current() is not None:
            return super().chat(endpoint, messages, **params)
        with tracing(CallTrace(self.endpoints.get(endpoint), self.payer)):
            return super().chat(endpoint, messages, **params)

    def close(self) -> None:
        self._call_threads.close()
        super().close()

    def traced_call(self, endpoint: str, messages: list[dict], params: dict) -> tuple[ChatResponse | LLMError, CallTrace]:
        """One call, never raising: its reply or its LLMError, and what the trace saw."""
        trace = CallTrace(self.endpoints.get(endpoint), self.payer)
        with tracing(trace):
            try:
                result = super().chat(endpoint, messages, **params)
            except LLMError as exc:
                result = exc
            except Exception as exc:  # noqa: BLE001 - one bad call must not end a batch: it is that call's failure
                result = LLMError(f"endpoint {endpoint!r}: the call failed: {type(exc).__name__}: {exc}", endpoint=endpoint)
                result.__cause__ = exc
        return result, trace


def get_client(*, payer: tuple[int, int] | None = None) -> PlatformClient:
    """A client over every endpoint of the models file (close it, or use it in a with block:
    it holds the SDKs' connection pools). `payer` is (job id, run number) of the job run whose
    calls it makes."""
    return PlatformClient(load_models(), platform_cache(), payer=payer)


def check_endpoints(client: LLMClient, names: Iterable[str]) -> None:
    """Before any request: each endpoint exists, its key variable is set, its SDK is installed."""
    try:
        client.check(names)
    except ConfigError as exc:
        raise LLMConfigError(f"Cannot call the LLM endpoint(s): {exc}. (Models file: {settings.BENCHFORGE_MODELS}.)") from None

"""The platform's one way to make LLM calls: `run_concurrently`, many chat calls at once from one
process, their results handed back to the calling thread in small groups (where the job records
them, in its own database transactions). llm.services.run_calls runs a job's calls with it, and
PlatformClient.chat_many (what the harness's scoring functions call: QC, the leaderboard) is
built on it too: inside a job every call runs on the client's call threads, nothing else.

    service -> run_concurrently (here) -> harness LLMClient.chat -> provider SDK (HTTP)
                                         plug-ins: limiter, cache, meter (the ledger)

PlatformClient is the harness LLMClient with what this module adds: the call threads and a
CallTrace around each call. Its limiter, cache and meter are plug-ins handed in by
llm.client.get_client (the Redis limiter, the shared cache, the ledger's Meter); this module
imports none of them. The client's call threads (CallThreads, kept for the client's life) take
the next call from a queue and run it through the client; the endpoint's limiter decides when a
request may really start, so the bound holds however many processes run batches. The calling
thread feeds the queue a few calls ahead (a batch is consumed lazily) and, between results, runs
`on_idle` (the job's checkpoint: cancelled? taken over?).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from django.db import connections

from benchforge_harness.llm import ChatResponse, LLMClient, LLMError

from .context import CallTrace, current, tracing

log = logging.getLogger(__name__)
_STOP = object()


@dataclass(frozen=True)
class Call:
    """One chat call: `key` names it within its job (its unit: done keys are never asked again),
    `messages` and `params` are what is sent (params override the endpoint's defaults)."""

    key: str
    messages: list
    params: dict = field(default_factory=dict)


@dataclass
class CallResult:
    call: Call
    response: ChatResponse | None
    error: LLMError | None
    trace: CallTrace

    @property
    def ok(self) -> bool:
        return self.response is not None

    @property
    def text(self) -> str:
        return self.response.text if self.response is not None else ""

    @property
    def cached(self) -> bool:
        return self.response is not None and self.response.cached

    @property
    def usage(self) -> dict:
        if self.response is None:
            return {"prompt_tokens": 0, "completion_tokens": 0}
        return {
            "prompt_tokens": self.response.usage.get("prompt_tokens", 0),
            "completion_tokens": self.response.usage.get("completion_tokens", 0),
        }

    @property
    def attempts(self) -> int:
        return self.trace.attempts if self.error is None else max(self.trace.attempts, self.error.attempts)


class CallThreads:
    """The threads a client runs its calls on, kept from one batch to the next (each opens its own
    database connection, for the cache and the ledger: threads made afresh for every batch left one
    open connection behind each, until Postgres ran out). They close theirs when the client closes."""

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
    """The harness LLMClient with the platform's plug-ins (limiter, cache, meter: see
    llm.client.get_client) and its call threads; each call runs with a CallTrace so the cache
    knows the endpoint it stores a reply for and which job run paid for it, and the meter (the
    usage ledger's Meter) bills the run that pays. Counts the meter holds are written when the
    client closes (or settle_usage() is called). Batches (chat_many) run on threads kept for the
    client's life: close the client to end them."""

    def __init__(self, endpoints, *, cache, limiter, meter, payer: tuple[int, int] | None = None, **kwargs):
        super().__init__(endpoints, cache, limiter=limiter, meter=meter, **kwargs)
        self.payer = payer
        self.meter = meter
        # One set for every endpoint: a run asks its models one after the other, and each thread
        # may hold a database connection (the cache, the ledger), so threads per endpoint would
        # multiply them.
        self.call_threads = CallThreads("llm-calls")

    def chat_many(
        self,
        endpoint: str,
        requests: Iterable,
        *,
        on_result: Callable[[int, ChatResponse | LLMError], None] | None = None,
    ) -> list[ChatResponse | LLMError]:
        """As LLMClient.chat_many (results in input order, failures returned, on_result in this
        thread as calls finish), through run_concurrently."""
        state = self._state(endpoint)
        calls = [Call(str(index), *_request(item)) for index, item in enumerate(requests)]
        if not calls:
            return []
        results = _InOrder(len(calls), on_result)
        run_concurrently(
            self,
            endpoint,
            calls,
            threads=min(len(calls), state.endpoint.max_concurrency),
            on_results=results.collect,
            stop_timeout=state.endpoint.timeout + 5,
        )
        return results.results

    def chat(self, endpoint: str, messages: list[dict], **params) -> ChatResponse:
        if current() is not None:
            return super().chat(endpoint, messages, **params)
        with tracing(CallTrace(self.endpoints.get(endpoint), self.payer)):
            return super().chat(endpoint, messages, **params)

    def settle_usage(self) -> None:
        """Write the counts the meter holds to the ledger now (before reading what a run spent)."""
        self.meter.settle()

    def close(self) -> None:
        self.call_threads.close()  # calls still running finish first: their counts are settled below
        self.settle_usage()
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
                if endpoint in self.endpoints:  # counted as the harness counts a call failed for good
                    self._state(endpoint).count(failures=1)
        return result, trace


def _request(item) -> tuple[list, dict]:
    """chat_many's request: messages, or (messages, params)."""
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Mapping):
        return item[0], dict(item[1])
    return item, {}


class _InOrder:
    """chat_many's results in input order, each also told to on_result as it comes."""

    def __init__(self, size: int, on_result) -> None:
        self.results: list = [None] * size
        self.on_result = on_result

    def collect(self, group: list[CallResult]) -> None:
        for result in group:
            index = int(result.call.key)
            self.results[index] = result.response if result.ok else result.error
            if self.on_result is not None:
                self.on_result(index, self.results[index])


def run_concurrently(
    client: PlatformClient,
    endpoint: str,
    calls: Iterable[Call],
    *,
    threads: int,
    on_results: Callable[[list[CallResult]], None],
    on_idle: Callable[[], None] = lambda: None,
    idle_every: float = 0.5,
    max_group: int = 200,
    stop_timeout: float = 30.0,
) -> None:
    """Run every call on the client's call threads (at most `threads` at once from this run);
    on_results(group) gets each group of finished calls in this thread. An exception from
    on_results or on_idle stops the run: calls not started are dropped, calls in flight finish
    (their replies reach the cache and the ledger) for up to stop_timeout seconds, and it propagates."""
    threads = max(1, threads)
    pool = client.call_threads
    pool.grow(threads)
    done: queue.Queue = queue.Queue()
    cancelled = threading.Event()

    def task(call: Call) -> Callable[[], None]:
        def run() -> None:
            if cancelled.is_set():
                done.put(None)
                return
            result, trace = client.traced_call(endpoint, call.messages, call.params)
            if isinstance(result, LLMError):
                done.put(CallResult(call, None, result, trace))
            else:
                done.put(CallResult(call, result, None, trace))

        return run

    pending = iter(calls)
    exhausted = False
    outstanding = 0
    try:
        while True:
            while not exhausted and outstanding < 2 * threads:
                call = next(pending, _STOP)
                if call is _STOP:
                    exhausted = True
                    break
                pool.todo.put(task(call))
                outstanding += 1
            if outstanding == 0:
                break
            try:
                group = [done.get(timeout=idle_every)]
            except queue.Empty:
                on_idle()
                continue
            while len(group) < max_group:
                try:
                    group.append(done.get_nowait())
                except queue.Empty:
                    break
            outstanding -= len(group)
            on_results([result for result in group if result is not None])
    finally:
        if outstanding:
            cancelled.set()  # what has not started is dropped
            deadline = time.monotonic() + stop_timeout
            while outstanding:
                try:
                    done.get(timeout=max(0.0, deadline - time.monotonic()))
                    outstanding -= 1
                except queue.Empty:
                    log.warning(
                        "%d LLM call(s) to endpoint %r still busy after %.0f s; leaving them to finish",
                        outstanding,
                        endpoint,
                        stop_timeout,
                    )
                    break

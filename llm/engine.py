"""The one concurrency engine of the platform's LLM calls: many chat calls at once from one
process, their results handed back to the calling thread in small groups (where the job records
them, in its own database transactions). llm.services.run_calls runs a job's calls with it, and
the platform client's chat_many (what the harness's scoring functions call: QC, the leaderboard)
is built on it too.

The client's call threads (CallThreads, kept for the client's life) take the next call from a
queue and run it through the client;
the endpoint's limiter decides when a request may really start, so the bound holds however many
processes run batches. The calling thread feeds the queue a few calls ahead (a batch is consumed
lazily) and, between results, runs `on_idle` (the job's checkpoint: cancelled? taken over?).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import connections

from harness.llm import ChatResponse, LLMError

from .context import CallTrace

if TYPE_CHECKING:
    from .client import PlatformClient

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

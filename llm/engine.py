"""Running many chat calls at once from one process, and handing their results back to the
calling thread in small groups (where the job records them, in its own database transactions).

Each of `threads` call threads takes the next call from a queue and runs it through the client;
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

from django.db import connections

from harness.llm import ChatResponse, LLMError

from .client import PlatformClient
from .context import CallTrace

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
    """Run every call; on_results(group) gets each group of finished calls in this thread.
    An exception from on_results or on_idle stops the run: calls not started are dropped, calls in
    flight finish (their replies reach the cache) for up to stop_timeout seconds, and it propagates."""
    threads = max(1, threads)
    todo: queue.Queue = queue.Queue()
    done: queue.Queue = queue.Queue()

    def work() -> None:
        try:
            while True:
                call = todo.get()
                if call is _STOP:
                    return
                result, trace = client.traced_call(endpoint, call.messages, call.params)
                if isinstance(result, LLMError):
                    done.put(CallResult(call, None, result, trace))
                else:
                    done.put(CallResult(call, result, None, trace))
        finally:
            connections.close_all()  # this thread's database connections (the cache's)

    workers = [threading.Thread(target=work, name=f"llm-{endpoint}-{n}", daemon=True) for n in range(threads)]
    for worker in workers:
        worker.start()
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
                todo.put(call)
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
            on_results(group)
    finally:
        while True:  # drop what has not started
            try:
                todo.get_nowait()
            except queue.Empty:
                break
        for _ in workers:
            todo.put(_STOP)
        deadline = time.monotonic() + stop_timeout
        for worker in workers:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
        stragglers = sum(worker.is_alive() for worker in workers)
        if stragglers:
            log.warning(
                "%d LLM call thread(s) of endpoint %r still busy after %.0f s; leaving them to finish",
                stragglers,
                endpoint,
                stop_timeout,
            )

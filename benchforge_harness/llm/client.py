"""LLMClient: chat calls to named endpoints, shared by the platform and the harness.

Calls go through the providers' own SDKs (providers.py), with the SDKs' retries switched off so
that the retry budget, the concurrency bound and the request rate are ours: the concurrency
bound through a limiter shared by every client of the process (limits.py, or one you pass),
the request rate per client. A cache (cache.py, or any object with get/put) answers a repeated
call without an HTTP request, so no identical call is paid twice.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Self

from .cache import Cache, cache_key
from .cost import cost
from .endpoints import RESERVED_PARAMS, Endpoint
from .errors import CacheError, ConfigError, LLMError
from .limits import Limiter, process_limiter
from .messages import check_messages
from .providers import SDK_CLIENTS, ChatResponse, SDKMissing, _SDKClient

log = logging.getLogger("benchforge_harness.llm")

BACKOFF_BASE = 0.5  # seconds; attempt n waits uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * 2**n))
BACKOFF_CAP = 30.0
USAGE_FIELDS = ("calls", "cache_hits", "retries", "failures", "prompt_tokens", "completion_tokens")


class _Pacer:
    """Spaces request starts evenly, one every 60/requests_per_minute seconds (a token bucket
    holding one token: smooth, never a burst followed by a stall), and holds every start
    while a server's Retry-After runs."""

    def __init__(self, requests_per_minute: float | None, clock: Callable[[], float], sleep: Callable[[float], None]):
        self._interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._next_start = float("-inf")
        self._hold_until = float("-inf")

    def wait(self) -> None:
        with self._lock:
            now = self._clock()
            start = max(now, self._next_start, self._hold_until)
            if self._interval:
                self._next_start = start + self._interval
        if start > now:
            self._sleep(start - now)

    def hold(self, until: float) -> None:
        with self._lock:
            self._hold_until = max(self._hold_until, until)


class _EndpointState:
    def __init__(self, endpoint: Endpoint, clock, sleep, meter=None):
        self.endpoint = endpoint
        self.meter = meter
        self.pacer = _Pacer(endpoint.requests_per_minute, clock, sleep)
        self.sdk_lock = threading.Lock()
        self.sdk: _SDKClient | None = None
        self.usage_lock = threading.Lock()
        self.usage = dict.fromkeys(USAGE_FIELDS, 0)

    def count(self, **amounts: int) -> None:
        with self.usage_lock:
            for name, amount in amounts.items():
                self.usage[name] += amount
        if self.meter is not None:  # told outside the lock: it may write somewhere slow
            self.meter(self.endpoint.name, amounts)


class LLMClient:
    """Chat calls to named endpoints. Thread-safe: share one per process (or per job).

    endpoints: name -> Endpoint (load_endpoints(path) reads a models file).
    cache: any object with get(key) -> dict | None and put(key, dict) (see cache.Cache);
        ResponseCache(path) is the SQLite one; None caches nothing.
    limiter: any object with slot(endpoint) -> context manager (see limits.Limiter); by default
        the process-wide limiter, so max_concurrency holds across every client of the process.
    meter: a callable meter(endpoint name, {field: amount}) told of every count as it is made,
        in the thread making the call (the same counts as `usage`, USAGE_FIELDS): a request is
        counted before it is sent, its tokens once its reply is in the cache. The platform keeps
        its durable usage ledger with it.
    sleep, clock, rng: injected by tests so that waits are instant and jitter predictable.
    """

    def __init__(
        self,
        endpoints: Mapping[str, Endpoint],
        cache: Cache | None = None,
        *,
        limiter: Limiter | None = None,
        meter: Callable[[str, dict[str, int]], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ):
        self.endpoints = dict(endpoints)
        self._cache = cache if cache is not None and getattr(cache, "enabled", True) else None
        self.limiter = limiter if limiter is not None else process_limiter()
        register = getattr(self.limiter, "register", None)
        for endpoint in self.endpoints.values():
            if register is not None:  # its limit counts from now, not from its first call
                register(endpoint)
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        self._rng_lock = threading.Lock()
        self._states = {name: _EndpointState(endpoint, clock, sleep, meter) for name, endpoint in self.endpoints.items()}
        self._in_flight: dict[str, threading.Event] = {}
        self._in_flight_lock = threading.Lock()

    # -- public

    def chat(self, endpoint: str, messages: list[dict], **params: Any) -> ChatResponse:
        """One chat completion. `params` (temperature, max_tokens, ...) override the endpoint's
        defaults; a None value drops a default. Raises LLMError when the call fails for good."""
        state = self._state(endpoint)
        try:
            return self._chat(state, messages, params)
        except LLMError:
            state.count(failures=1)
            raise

    def chat_many(
        self,
        endpoint: str,
        requests: Iterable[list[dict] | tuple[list[dict], dict]],
        *,
        on_result: Callable[[int, ChatResponse | LLMError], None] | None = None,
    ) -> list[ChatResponse | LLMError]:
        """Run many calls concurrently (at most the endpoint's max_concurrency in flight).
        Results come back in input order; a failed call is returned as its LLMError, never
        raised. on_result(index, result) runs in the calling thread as each call finishes."""
        state = self._state(endpoint)
        items = list(requests)
        if not items:
            return []
        results: list[ChatResponse | LLMError | None] = [None] * len(items)
        workers = min(len(items), state.endpoint.max_concurrency)
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"llm-{endpoint}")
        try:
            futures = {pool.submit(self._one_of_many, endpoint, index, item): index for index, item in enumerate(items)}
            for future in as_completed(futures):
                index = futures[future]
                results[index] = future.result()
                if on_result is not None:
                    on_result(index, results[index])
        finally:
            # On an error in on_result (or Ctrl-C) drop the calls not yet started.
            pool.shutdown(wait=True, cancel_futures=True)
        return results

    @property
    def usage(self) -> dict[str, dict[str, int]]:
        """Per endpoint: calls (HTTP requests made), cache_hits, retries, failures (calls that
        failed for good), prompt_tokens and completion_tokens (paid calls only)."""
        totals = {}
        for name, state in self._states.items():
            with state.usage_lock:
                totals[name] = dict(state.usage)
        return totals

    @property
    def costs(self) -> dict[str, float | None]:
        """Per endpoint: what its paid calls so far cost at the prices of the models file
        (None for an endpoint without prices). Cache hits cost nothing."""
        return {name: cost(self.endpoints[name], usage) for name, usage in self.usage.items()}

    def check(self, names: Iterable[str]) -> None:
        """Before a run: every named endpoint exists, its key variable is set and its provider's
        SDK is installed. Raises ConfigError listing every problem; makes no request."""
        problems = []
        for name in dict.fromkeys(names):
            if name not in self._states:
                known = ", ".join(sorted(self._states)) or "none"
                problems.append(f"no endpoint named {name!r} in the models file (declared: {known})")
                continue
            endpoint = self.endpoints[name]
            try:
                endpoint.api_key()
            except LLMError as exc:
                problems.append(str(exc))
            problem = _missing_sdk(endpoint)
            if problem:
                problems.append(f"{endpoint.label}: {problem}")
        if problems:
            raise ConfigError("; ".join(problems))

    def close(self) -> None:
        for state in self._states.values():
            with state.sdk_lock:
                if state.sdk is not None:
                    state.sdk.close()
                    state.sdk = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals

    def _state(self, name: str) -> _EndpointState:
        try:
            return self._states[name]
        except KeyError:
            known = ", ".join(sorted(self._states)) or "none"
            raise ConfigError(f"no endpoint named {name!r} in the models file (declared: {known})") from None

    def _chat(self, state: _EndpointState, messages: list[dict], params: dict) -> ChatResponse:
        endpoint = state.endpoint.name
        check_messages(state.endpoint, messages)
        reserved = sorted(set(params) & set(RESERVED_PARAMS))
        if reserved:
            raise LLMError(
                f"{state.endpoint.label}: {', '.join(reserved)} cannot be passed as params "
                "(the endpoint decides the model; streaming is not supported)",
                endpoint=endpoint,
            )
        request_params = {k: v for k, v in {**state.endpoint.params, **params}.items() if v is not None}
        if self._cache is None:
            return self._paid(state, self._fetch(state, messages, request_params))
        try:
            key = cache_key(state.endpoint, messages, request_params)
        except (TypeError, ValueError) as exc:
            raise LLMError(f"{state.endpoint.label}: messages and params must be JSON data ({exc})", endpoint=endpoint) from None
        return self._cached_fetch(state, key, messages, request_params)

    def _one_of_many(self, endpoint: str, index: int, item: Any) -> ChatResponse | LLMError:
        try:
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Mapping):
                messages, params = item
            else:
                messages, params = item, {}
            return self.chat(endpoint, messages, **params)
        except LLMError as exc:
            return exc
        except Exception as exc:  # noqa: BLE001 - one bad item must not kill the batch: report it as its result
            self._states[endpoint].count(failures=1)
            error = LLMError(f"request {index} to endpoint {endpoint!r} failed: {type(exc).__name__}: {exc}", endpoint=endpoint)
            error.__cause__ = exc
            return error

    def _cached_fetch(self, state: _EndpointState, key: str, messages: list[dict], params: dict) -> ChatResponse:
        """Answer from the cache, or fetch once: a concurrent identical call waits for the
        first one's answer instead of paying for its own."""
        while True:
            hit = self._cache_get(key)
            if hit is not None:
                state.count(cache_hits=1)
                return ChatResponse.from_cache(hit, state.endpoint.name)
            with self._in_flight_lock:
                leader = self._in_flight.get(key)
                if leader is None:
                    done = self._in_flight[key] = threading.Event()
            if leader is None:
                break
            leader.wait()  # then look again: the answer is cached, or that call failed and we try
        try:
            hit = self._cache_get(key)  # the previous leader may have finished between our two looks
            if hit is not None:
                state.count(cache_hits=1)
                return ChatResponse.from_cache(hit, state.endpoint.name)
            response = self._fetch(state, messages, params)
            try:
                self._cache.put(key, response.to_cache())
            except CacheError as exc:  # the answer is paid for: hand it back rather than lose it
                log.warning("%s", exc)
            return self._paid(state, response)
        finally:
            with self._in_flight_lock:
                del self._in_flight[key]
            done.set()

    @staticmethod
    def _paid(state: _EndpointState, response: ChatResponse) -> ChatResponse:
        """Count a paid reply's tokens: after its concurrency slot is free and after it is cached,
        so a meter that writes somewhere slow neither holds the slot nor delays the reply's
        safety (a process killed in between loses the count, never the reply)."""
        state.count(prompt_tokens=response.usage["prompt_tokens"], completion_tokens=response.usage["completion_tokens"])
        return response

    def _cache_get(self, key: str) -> dict | None:
        hit = self._cache.get(key)
        # A reply without text is never stored; one written by an older harness is a miss.
        return hit if hit is not None and str(hit.get("text") or "").strip() else None

    def _sdk(self, state: _EndpointState) -> _SDKClient:
        with state.sdk_lock:
            if state.sdk is None:
                endpoint = state.endpoint
                try:
                    if endpoint.is_demo:
                        from .demo import DemoClient

                        state.sdk = DemoClient(endpoint)
                    else:
                        state.sdk = SDK_CLIENTS[endpoint.provider](endpoint, endpoint.api_key())
                except ImportError as exc:
                    raise LLMError(f"{endpoint.label}: {_import_problem(endpoint, exc)}", endpoint=endpoint.name) from exc
            return state.sdk

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        with self._rng_lock:
            delay = self._rng.uniform(0.0, min(BACKOFF_CAP, BACKOFF_BASE * 2**attempt))
        return max(delay, retry_after) if retry_after is not None else delay

    def _fetch(self, state: _EndpointState, messages: list[dict], params: dict) -> ChatResponse:
        endpoint = state.endpoint
        sdk = self._sdk(state)
        attempts = 0
        while True:
            with self.limiter.slot(endpoint):
                state.pacer.wait()
                attempts += 1
                state.count(calls=1)
                try:
                    response = sdk.send(messages, params)
                except Exception as exc:  # noqa: BLE001 - classify() sorts every SDK error into retry or give up
                    failure, error = sdk.classify(exc), exc
                else:
                    failure = None
            if failure is None:
                return response  # its tokens are counted by the caller (_paid), once the reply is safe
            if failure.retry_after is not None:  # the server's wait applies to every call to it
                state.pacer.hold(self._clock() + failure.retry_after)
            if not failure.retryable or attempts > endpoint.max_retries:
                tried = f"after {attempts} attempts" if attempts > 1 else "on the first attempt"
                raise LLMError(
                    f"{endpoint.label}: {failure.what}; gave up {tried}: {failure.advice}",
                    endpoint=endpoint.name,
                    attempts=attempts,
                    status=failure.status,
                    transient=failure.retryable,
                ) from error
            state.count(retries=1)
            delay = self._backoff(attempts - 1, failure.retry_after)
            log.info("%s: %s; retry %d of %d in %.2fs", endpoint.label, failure.what, attempts, endpoint.max_retries, delay)
            self._sleep(delay)


def _import_problem(endpoint: Endpoint, exc: ImportError) -> str:
    if isinstance(exc, SDKMissing):
        return f"provider {endpoint.provider!r} {exc}"
    return f"provider {endpoint.provider!r} needs the {exc.name} package; install it (pip install {exc.name})"


def _missing_sdk(endpoint: Endpoint) -> str | None:
    """Why the endpoint's SDK cannot be imported, or None. Imports it (once per process)."""
    try:
        if endpoint.is_demo:
            return None
        if endpoint.provider == "openai":
            import openai  # noqa: F401
        else:
            from .providers import glm_sdk

            glm_sdk()
    except ImportError as exc:
        return _import_problem(endpoint, exc)
    return None

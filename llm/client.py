"""The platform's LLM client: the endpoints of settings.BENCHFORGE_MODELS, the shared response
cache and the cross-worker concurrency bound, and harness errors turned into DomainError
messages a person can act on.

    client = get_client()                 # a harness LLMClient (PlatformClient)
    check_endpoints(client, ["judge"])    # DomainError listing every problem, before any request
    client.chat("judge", messages)        # or the batch machinery in llm.services
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from django.conf import settings

from benchforge.errors import DomainError
from harness.llm import ChatResponse, ConfigError, Endpoint, LLMClient, LLMError, load_endpoints

from . import ledger
from .cache import platform_cache
from .context import CallTrace, current, tracing
from .engine import Call, CallResult, CallThreads, run_concurrently
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


class PlatformClient(LLMClient):
    """LLMClient with the platform's cache and limiter; each call runs with a CallTrace so the
    cache knows the endpoint it stores a reply for and which job run paid for it. Every count the
    harness makes (requests, cache hits, tokens...) of a call a job run pays for goes to the usage
    ledger through the client's ledger.Meter: a request as it is made, the rest with the next
    request or soon after, and all that is held when the client closes (or settle_usage() is
    called). Batches (chat_many) run on threads kept for the client's life: close the client to
    end them."""

    def __init__(self, endpoints, cache=None, *, limiter=None, payer: tuple[int, int] | None = None, **kwargs):
        super().__init__(
            endpoints, cache, limiter=limiter if limiter is not None else platform_limiter(), meter=self._meter, **kwargs
        )
        self.payer = payer
        self.usage_meter = ledger.Meter()
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
        thread as calls finish), through the platform's one concurrency engine (llm.engine)."""
        state = self._state(endpoint)
        results: list = []
        calls = []
        for index, item in enumerate(requests):
            messages, params = item if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Mapping) else (item, {})
            calls.append(Call(str(index), messages, dict(params)))
            results.append(None)
        if not calls:
            return []

        def collect(group: list[CallResult]) -> None:
            for result in group:
                index = int(result.call.key)
                results[index] = result.response if result.ok else result.error
                if on_result is not None:
                    on_result(index, results[index])

        run_concurrently(
            self,
            endpoint,
            calls,
            threads=min(len(calls), state.endpoint.max_concurrency),
            on_results=collect,
            stop_timeout=state.endpoint.timeout + 5,
        )
        return results

    def chat(self, endpoint: str, messages: list[dict], **params) -> ChatResponse:
        if current() is not None:
            return super().chat(endpoint, messages, **params)
        with tracing(CallTrace(self.endpoints.get(endpoint), self.payer)):
            return super().chat(endpoint, messages, **params)

    def _meter(self, endpoint: str, amounts: dict[str, int]) -> None:
        """Runs in the thread making the call (harness LLMClient's meter)."""
        trace = current()
        if trace is not None:
            trace.attempts += amounts.get("calls", 0)
        payer = trace.payer if trace is not None else self.payer
        if payer is not None:
            self.usage_meter.count(payer, endpoint, amounts)

    def settle_usage(self) -> None:
        """Write the counts the meter holds to the ledger now (before reading what a run spent)."""
        self.usage_meter.settle()

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

"""The platform's LLM client: the endpoints of settings.BENCHFORGE_MODELS, the shared response
cache and the cross-worker concurrency bound, and harness errors turned into DomainError
messages a person can act on.

    client = get_client()                 # a harness LLMClient (PlatformClient)
    check_endpoints(client, ["judge"])    # DomainError listing every problem, before any request
    client.chat("judge", messages)        # or the batch machinery in llm.services
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from benchforge.errors import DomainError
from harness.llm import ChatResponse, ConfigError, Endpoint, LLMClient, LLMError, load_endpoints

from .cache import platform_cache
from .context import CallTrace, current, tracing
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
    """Counts the HTTP attempts of the call running in this thread (each attempt takes a slot)."""

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
            yield


class PlatformClient(LLMClient):
    """LLMClient with the platform's cache and limiter; each call runs with a CallTrace so the
    cache knows the endpoint it stores a reply for and which job run paid for it."""

    def __init__(self, endpoints, cache=None, *, limiter=None, payer: tuple[int, int] | None = None, **kwargs):
        super().__init__(
            endpoints, cache, limiter=_CountingLimiter(limiter if limiter is not None else platform_limiter()), **kwargs
        )
        self.payer = payer

    def chat(self, endpoint: str, messages: list[dict], **params) -> ChatResponse:
        if current() is not None:
            return super().chat(endpoint, messages, **params)
        with tracing(CallTrace(self.endpoints.get(endpoint), self.payer)):
            return super().chat(endpoint, messages, **params)

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

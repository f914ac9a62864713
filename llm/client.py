"""The platform's LLM client: the endpoints of settings.BENCHFORGE_MODELS, the client built with
the platform's plug-ins (shared response cache, cross-worker concurrency bound, usage ledger),
and harness errors turned into DomainError messages a person can act on.

    client = get_client()                 # a harness LLMClient (llm.engine.PlatformClient)
    check_endpoints(client, ["judge"])    # DomainError listing every problem, before any request
    client.chat("judge", messages)        # or the batch machinery in llm.services
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings

from benchforge.errors import DomainError
from benchforge_harness.llm import ConfigError, Endpoint, LLMClient, load_endpoints

from . import ledger
from .cache import platform_cache
from .engine import PlatformClient
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


def get_client(*, payer: tuple[int, int] | None = None) -> PlatformClient:
    """A client over every endpoint of the models file (close it, or use it in a with block:
    it holds the SDKs' connection pools and its call threads). `payer` is (job id, run number) of
    the job run whose calls it makes. The harness client gets the platform's parts as plug-ins,
    as a scoring run gets its sink: the limiter (max_concurrency across workers and hosts), the
    shared response cache and the usage ledger's meter."""
    return PlatformClient(
        load_models(),
        cache=platform_cache(),
        limiter=platform_limiter(),
        meter=ledger.Meter(payer=payer),
        payer=payer,
    )


def check_endpoints(client: LLMClient, names: Iterable[str]) -> None:
    """Before any request: each endpoint exists, its key variable is set, its SDK is installed."""
    try:
        client.check(names)
    except ConfigError as exc:
        raise LLMConfigError(f"Cannot call the LLM endpoint(s): {exc}. (Models file: {settings.BENCHFORGE_MODELS}.)") from None

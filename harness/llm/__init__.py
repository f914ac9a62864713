"""LLM endpoints and chat calls, shared by the platform (rewrites, QC) and the harness (judges).

    endpoints.py  Endpoint, load_endpoints (the models TOML file), prices
    messages.py   text_message, user_message (images as bytes, paths or loaders)
    client.py     LLMClient: retries, Retry-After, pacing, usage, cost, preflight check
    cache.py      the cache protocol, cache_key, ResponseCache (SQLite)
    limits.py     the limiter protocol: max_concurrency across clients and processes
    providers.py  the openai and GLM (zai-sdk, or zhipuai) SDK adapters
    cost.py       token estimates before a run, cost of a usage after it

Importing this package loads no provider SDK: they are imported when a call needs them.
"""

from .cache import Cache, ResponseCache, cache_key
from .client import BACKOFF_BASE, BACKOFF_CAP, USAGE_FIELDS, LLMClient
from .cost import IMAGE_TOKENS, cost, estimate_prompt_tokens, estimate_text_tokens, estimate_usage
from .endpoints import DEFAULT_BASE_URLS, RESERVED_PARAMS, Endpoint, load_endpoints
from .errors import CacheError, ConfigError, LLMError
from .limits import ForkSharedLimiter, Limiter, LocalLimiter, process_limiter, set_process_limiter
from .messages import ROLES, Image, image_data_url, sniff_image_mime, text_message, user_message
from .providers import RETRY_AFTER_CAP, ChatResponse, glm_sdk, parse_retry_after

__all__ = [
    "BACKOFF_BASE",
    "BACKOFF_CAP",
    "DEFAULT_BASE_URLS",
    "IMAGE_TOKENS",
    "RESERVED_PARAMS",
    "RETRY_AFTER_CAP",
    "ROLES",
    "USAGE_FIELDS",
    "Cache",
    "CacheError",
    "ChatResponse",
    "ConfigError",
    "Endpoint",
    "ForkSharedLimiter",
    "Image",
    "LLMClient",
    "LLMError",
    "Limiter",
    "LocalLimiter",
    "ResponseCache",
    "cache_key",
    "cost",
    "estimate_prompt_tokens",
    "estimate_text_tokens",
    "estimate_usage",
    "glm_sdk",
    "image_data_url",
    "load_endpoints",
    "parse_retry_after",
    "process_limiter",
    "set_process_limiter",
    "sniff_image_mime",
    "text_message",
    "user_message",
]

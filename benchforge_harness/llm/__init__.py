"""LLM endpoints and chat calls, shared by the platform (rewrites, QC) and the harness (judges).

    endpoints.py  Endpoint, load_endpoints (the models TOML file), prices
    messages.py   text_message, user_message (images as bytes, paths or loaders)
    client.py     LLMClient: retries, Retry-After, pacing, usage, cost, preflight check
    cache.py      the cache protocol, cache_key, ResponseCache (SQLite)
    limits.py     the limiter protocol: max_concurrency across clients and processes
    providers.py  the openai and GLM (zai-sdk, or zhipuai) SDK adapters
    cost.py       token estimates before a run, cost of a usage after it

Importing this package loads no provider SDK: they are imported when a call needs them.
__all__ is the public part (what the CLI and the platform use); the modules are internal.
"""

from .cache import Cache, ResponseCache, cache_key
from .client import LLMClient
from .cost import DEFAULT_COMPLETION_TOKENS, IMAGE_TOKENS, cost, estimate_prompt_tokens, estimate_text_tokens, estimate_usage
from .endpoints import RESERVED_PARAMS, Endpoint, load_endpoints
from .errors import CacheError, ConfigError, LLMError
from .limits import Limiter, process_limiter
from .messages import Image, check_messages, text_message, user_message
from .providers import ChatResponse, glm_sdk

__all__ = [
    "DEFAULT_COMPLETION_TOKENS",
    "IMAGE_TOKENS",
    "RESERVED_PARAMS",
    "Cache",
    "CacheError",
    "ChatResponse",
    "ConfigError",
    "Endpoint",
    "Image",
    "LLMClient",
    "LLMError",
    "Limiter",
    "ResponseCache",
    "cache_key",
    "check_messages",
    "cost",
    "estimate_prompt_tokens",
    "estimate_text_tokens",
    "estimate_usage",
    "glm_sdk",
    "load_endpoints",
    "process_limiter",
    "text_message",
    "user_message",
]

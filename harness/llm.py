"""LLM endpoints and chat calls, shared by the platform (rewrites, QC) and the harness (judges).

Endpoints are declared in a TOML file (format: docs/models.toml.example); API keys stay in
environment variables the file names. Calls go through the providers' own SDKs (`openai`,
`zhipuai`), imported only when a call needs them, with the SDKs' retries switched off so
that the retry budget, the concurrency bound and the request rate are ours and shared by
every thread of one LLMClient. A persistent cache answers a repeated call without an HTTP
request, so no identical call is paid twice.
"""

from __future__ import annotations

import base64
import copy
import email.utils
import hashlib
import inspect
import json
import logging
import os
import random
import re
import sqlite3
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from .io import InputError

log = logging.getLogger(__name__)

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "zhipuai": "https://open.bigmodel.cn/api/paas/v4",
}
ROLES = ("system", "user", "assistant")
# The request body fields the endpoint owns; a caller cannot override them through params.
RESERVED_PARAMS = ("model", "messages", "stream")

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})  # and every 5xx
BACKOFF_BASE = 0.5   # seconds; attempt n waits uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * 2**n))
BACKOFF_CAP = 30.0
RETRY_AFTER_CAP = 120.0  # a server asking for longer is retried after this, not trusted for hours

USAGE_FIELDS = ("calls", "cache_hits", "retries", "failures", "prompt_tokens", "completion_tokens")


class ConfigError(ValueError):
    """The models file (or an Endpoint built in code) is unusable; the message names the file and key."""


class CacheError(RuntimeError):
    """The response cache file cannot be used."""


class LLMError(RuntimeError):
    """A chat call that failed for good. The message says what happened and what to do.

    endpoint: the endpoint's name; attempts: HTTP requests made for this call; status: the last
    HTTP status (None for timeouts, connection errors, bad input); transient: the failure was of
    a retryable kind (rate limit, server error, timeout) and only the retry budget ran out, so
    the same call may well succeed later.
    """

    def __init__(self, message: str, *, endpoint: str, attempts: int = 0, status: int | None = None, transient: bool = False):
        super().__init__(message)
        self.endpoint = endpoint
        self.attempts = attempts
        self.status = status
        self.transient = transient

    def __reduce__(self):  # keep the attributes across pickling (Celery results, process pools)
        return _rebuild_llm_error, (str(self), self.endpoint, self.attempts, self.status, self.transient)


def _rebuild_llm_error(message: str, endpoint: str, attempts: int, status: int | None, transient: bool) -> LLMError:
    return LLMError(message, endpoint=endpoint, attempts=attempts, status=status, transient=transient)


# ---------------------------------------------------------------------------- endpoints

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ENDPOINT_KEYS = ("provider", "base_url", "model", "api_key_env", "vision", "max_concurrency",
                  "requests_per_minute", "timeout", "max_retries", "params")
_REQUIRED_KEYS = ("provider", "model", "api_key_env")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Endpoint:
    """One model behind one API. Validated on construction; `base_url` defaults per provider."""

    name: str
    provider: str
    base_url: str | None
    model: str
    api_key_env: str
    vision: bool = False
    max_concurrency: int = 4
    requests_per_minute: float | None = None
    timeout: float = 60.0
    max_retries: int = 6
    params: dict = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        where = f"[models.{self.name}]"

        def check(ok: bool, key: str, expected: str) -> None:
            if not ok:
                raise ConfigError(f"{where} {key} = {getattr(self, key)!r}: expected {expected}")

        check(self.provider in DEFAULT_BASE_URLS, "provider", " or ".join(f'"{p}"' for p in DEFAULT_BASE_URLS))
        if self.base_url is None:
            object.__setattr__(self, "base_url", DEFAULT_BASE_URLS[self.provider])
        check(isinstance(self.base_url, str) and self.base_url.startswith(("http://", "https://")),
              "base_url", "an http:// or https:// URL")
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))
        check(isinstance(self.model, str) and bool(self.model.strip()), "model", "the provider's model name")
        check(isinstance(self.api_key_env, str) and bool(_ENV_NAME.fullmatch(self.api_key_env)),
              "api_key_env", "the NAME of the environment variable holding the key (e.g. \"ZHIPUAI_API_KEY\")")
        check(isinstance(self.vision, bool), "vision", "true or false")
        check(isinstance(self.max_concurrency, int) and not isinstance(self.max_concurrency, bool) and self.max_concurrency >= 1,
              "max_concurrency", "a whole number >= 1")
        check(self.requests_per_minute is None or (_is_number(self.requests_per_minute) and self.requests_per_minute > 0),
              "requests_per_minute", "a number > 0 (or leave it out for no limit)")
        check(_is_number(self.timeout) and self.timeout > 0, "timeout", "seconds, a number > 0")
        object.__setattr__(self, "timeout", float(self.timeout))
        check(isinstance(self.max_retries, int) and not isinstance(self.max_retries, bool) and self.max_retries >= 0,
              "max_retries", "a whole number >= 0")
        check(isinstance(self.params, dict), "params", f"a table ([models.{self.name}.params])")
        reserved = sorted(set(self.params) & set(RESERVED_PARAMS))
        if reserved:
            raise ConfigError(f"{where} params: {', '.join(reserved)} cannot be set here (the endpoint decides them)")
        object.__setattr__(self, "params", dict(self.params))

    def api_key(self) -> str:
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            raise LLMError(
                f"{self.label}: the environment variable {self.api_key_env} is not set; "
                f"set it to the API key for this endpoint (keys never go in the models file)",
                endpoint=self.name,
            )
        return key

    @property
    def label(self) -> str:
        return f"endpoint {self.name!r} ({self.model} at {self.base_url})"


def load_endpoints(path: str | os.PathLike) -> dict[str, Endpoint]:
    """Read a models file. Every problem raises ConfigError naming the file and the key."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: models file not found; create it (docs/models.toml.example shows the format)") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the models file ({exc.strerror})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None

    stray = sorted(set(data) - {"models"})
    if stray:
        raise ConfigError(f"{path}: unknown top-level key(s) {', '.join(stray)}; declare endpoints as [models.NAME] tables")
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise ConfigError(f"{path}: declares no endpoints; add a [models.NAME] table (docs/models.toml.example)")

    endpoints: dict[str, Endpoint] = {}
    for name, table in models.items():
        where = f"{path}: [models.{name}]"
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: expected a table of settings, got {type(table).__name__}")
        if "api_key" in table:
            raise ConfigError(f"{where} api_key: keys never go in the models file; put the key in an "
                              f"environment variable and name that variable with api_key_env = \"...\"")
        unknown = sorted(set(table) - set(_ENDPOINT_KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(_ENDPOINT_KEYS)}")
        missing = [key for key in _REQUIRED_KEYS if key not in table]
        if missing:
            raise ConfigError(f"{where}: missing {', '.join(missing)} (required: {', '.join(_REQUIRED_KEYS)})")
        try:
            endpoints[name] = Endpoint(name=name, **{"base_url": None, **table})
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    return endpoints


# ---------------------------------------------------------------------------- messages

_IMAGE_SIGNATURES = (
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


def sniff_image_mime(data: bytes) -> str | None:
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    for signature, mime in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return mime
    return None


def image_data_url(image: bytes | str | os.PathLike) -> str:
    """An image (bytes or a file path) as a base64 data URL; the MIME type comes from the bytes."""
    if isinstance(image, (bytes, bytearray, memoryview)):
        data, label = bytes(image), f"image bytes ({len(image)} bytes)"
    elif isinstance(image, (str, os.PathLike)):
        label = str(image)
        try:
            data = Path(image).read_bytes()
        except OSError as exc:
            raise InputError(f"{label}: cannot read the image ({exc.strerror})") from None
    else:
        raise InputError(f"an image must be bytes or a file path, got {type(image).__name__}")
    mime = sniff_image_mime(data)
    if mime is None:
        raise InputError(f"{label}: not a JPEG, PNG, GIF, WEBP or BMP image (starts with {data[:8]!r})")
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def text_message(role: str, text: str) -> dict:
    if role not in ROLES:
        raise ValueError(f"role {role!r}: expected one of {', '.join(ROLES)}")
    if not isinstance(text, str):
        raise TypeError(f"message text must be a str, got {type(text).__name__}")
    return {"role": role, "content": text}


def user_message(text: str, images: Iterable[bytes | str | os.PathLike] = ()) -> dict:
    """A user turn; images (bytes or paths) go before the text as OpenAI-style image_url parts."""
    if isinstance(images, (bytes, bytearray, memoryview, str, os.PathLike)):
        images = [images]
    message = text_message("user", text)
    parts = [{"type": "image_url", "image_url": {"url": image_data_url(image)}} for image in images]
    if parts:
        message["content"] = parts + [{"type": "text", "text": text}]
    return message


def _has_images(messages: list[dict]) -> bool:
    return any(
        isinstance(part, dict) and part.get("type") == "image_url"
        for message in messages if isinstance(message.get("content"), list)
        for part in message["content"]
    )


def _check_messages(endpoint: Endpoint, messages: Any) -> None:
    def fail(problem: str) -> None:
        raise LLMError(f"{endpoint.label}: {problem}", endpoint=endpoint.name)

    if not isinstance(messages, list) or not messages:
        fail("messages must be a non-empty list of {'role', 'content'} dicts (use user_message/text_message)")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            fail(f"message {index} must be a dict with role one of {', '.join(ROLES)}")
        if not isinstance(message.get("content"), (str, list)):
            fail(f"message {index} content must be text or a list of content parts")
    if not endpoint.vision and _has_images(messages):
        fail("declared vision = false, so it cannot take images; send text only or use a vision endpoint")


# ---------------------------------------------------------------------------- cache

def cache_key(endpoint: Endpoint, messages: list[dict], params: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of everything that decides the answer."""
    blob = json.dumps([endpoint.provider, endpoint.base_url, endpoint.model, messages, params],
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Responses by cache key in one SQLite file (WAL: several processes may share it).
    ResponseCache(None) caches nothing. Safe to use from many threads."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL, created_at REAL NOT NULL)")
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(f"{self.path}: cannot use this file as the LLM response cache ({exc}); "
                             f"delete it or choose another cache path") from None
        self._db = db

    @property
    def enabled(self) -> bool:
        return self._db is not None

    def get(self, key: str) -> dict | None:
        if self._db is None:
            return None
        try:
            with self._lock:
                row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            raise CacheError(f"{self.path}: cannot read the LLM response cache ({exc})") from None
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict) -> None:
        if self._db is None:
            return
        blob = json.dumps(value, ensure_ascii=False)
        try:
            with self._lock:
                self._db.execute("INSERT OR REPLACE INTO responses (key, value, created_at) VALUES (?, ?, ?)",
                                 (key, blob, time.time()))
        except sqlite3.Error as exc:
            raise CacheError(f"{self.path}: cannot write the LLM response cache ({exc})") from None

    def __len__(self) -> int:
        if self._db is None:
            return 0
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> "ResponseCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ---------------------------------------------------------------------------- responses and failures

@dataclass
class ChatResponse:
    text: str
    usage: dict  # prompt_tokens, completion_tokens, total_tokens (what the call cost when it was made)
    cached: bool
    finish_reason: str | None
    endpoint: str
    model: str

    def to_cache(self) -> dict:
        return {"text": self.text, "usage": self.usage, "finish_reason": self.finish_reason, "model": self.model}

    @classmethod
    def from_cache(cls, value: dict, endpoint: str) -> "ChatResponse":
        return cls(text=value["text"], usage=value["usage"], cached=True, finish_reason=value.get("finish_reason"),
                   endpoint=endpoint, model=value.get("model") or "")


class _MalformedResponse(Exception):
    """A 200 whose body is not a chat completion."""


@dataclass
class _Failure:
    """One failed HTTP attempt, classified."""

    what: str
    advice: str
    retryable: bool
    status: int | None = None
    retry_after: float | None = None


def _read_completion(body: Any, endpoint: Endpoint) -> ChatResponse:
    """Read a chat completion body, checking its shape (a garbled body is a retryable failure)."""
    if not isinstance(body, dict):
        raise _MalformedResponse(f"the body is a JSON {type(body).__name__}, not an object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _MalformedResponse("the body has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise _MalformedResponse("the first choice has no message")
    text = message.get("content")
    if text is None:
        text = ""  # a refusal or filtered answer; finish_reason says which
    if not isinstance(text, str):
        raise _MalformedResponse(f"the message content is a {type(text).__name__}, not text")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    prompt, completion = (usage.get(name) for name in ("prompt_tokens", "completion_tokens"))
    prompt = prompt if isinstance(prompt, int) else 0
    completion = completion if isinstance(completion, int) else 0
    finish_reason, model = choices[0].get("finish_reason"), body.get("model")
    return ChatResponse(
        text=text,
        usage={"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        cached=False,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        endpoint=endpoint.name,
        model=model if isinstance(model, str) and model else endpoint.model,
    )


def parse_retry_after(headers: Any) -> float | None:
    """Seconds a server asks us to wait (Retry-After as seconds or an HTTP date; retry-after-ms)."""
    if headers is None:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis:
            return min(max(float(millis) / 1000, 0.0), RETRY_AFTER_CAP)
    except ValueError:
        pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), RETRY_AFTER_CAP)


def _server_message(response: Any) -> str:
    """The error message a server put in its body, or the start of the body."""
    try:
        data = response.json()
    except Exception:  # not JSON, or the body was never read
        try:
            return response.text.strip()[:300]
        except Exception:
            return ""
    error = data.get("error") if isinstance(data, dict) else None
    for candidate in (error.get("message") if isinstance(error, dict) else error,
                      data.get("message") if isinstance(data, dict) else None):
        if isinstance(candidate, str) and candidate:
            return candidate[:300]
    return json.dumps(data, ensure_ascii=False)[:300]


# ---------------------------------------------------------------------------- provider SDKs

class _SDKClient:
    """One SDK client per endpoint, its connection pool sized to the endpoint's concurrency,
    its own retries off (max_retries=0). The SDK builds, authenticates and sends the request
    and maps HTTP errors to its exception types; we read the raw body ourselves, because the
    SDKs' response models accept a body of the wrong shape without complaint and building
    them costs a good part of the client's CPU per call."""

    timeout_errors: tuple[type[BaseException], ...]
    connection_errors: tuple[type[BaseException], ...]
    status_errors: tuple[type[BaseException], ...]

    def __init__(self, endpoint: Endpoint, api_key: str):
        self.endpoint = endpoint
        self.client, self.http_client = self._connect(endpoint, api_key)

    def _connect(self, endpoint: Endpoint, api_key: str):
        raise NotImplementedError

    def _post_chat(self, messages: list[dict], params: dict) -> bytes:
        """POST the chat completion through the SDK; return the raw response body."""
        raise NotImplementedError

    def send(self, messages: list[dict], params: dict) -> ChatResponse:
        return _read_completion(json.loads(self._post_chat(messages, params)), self.endpoint)

    def classify(self, exc: BaseException) -> _Failure:
        endpoint = self.endpoint
        where = f"[models.{endpoint.name}]"
        if isinstance(exc, (_MalformedResponse, json.JSONDecodeError, UnicodeDecodeError)):
            return _Failure(f"the server sent a body that is not a chat completion ({exc})",
                            f"check that base_url in {where} points at an OpenAI-compatible chat API", True)
        if isinstance(exc, self.timeout_errors):
            return _Failure(f"no answer within timeout = {endpoint.timeout:g}s",
                            f"raise timeout in {where} or check the service", True)
        if isinstance(exc, self.connection_errors):
            cause = exc.__cause__ or exc.__context__
            return _Failure(f"cannot connect to {endpoint.base_url} ({cause or exc})",
                            f"check base_url in {where} and the network", True)
        if isinstance(exc, self.status_errors):
            status = exc.status_code
            response = exc.response
            what = f"HTTP {status}: {_server_message(response)}"
            if status == 429:
                return _Failure(what, f"still rate limited: lower max_concurrency or requests_per_minute in {where}, "
                                      "or raise max_retries", True, status, parse_retry_after(response.headers))
            if status >= 500 or status in RETRYABLE_STATUSES:
                return _Failure(what, "the service keeps failing: check its status and try again later, "
                                      f"or raise max_retries in {where}", True, status, parse_retry_after(response.headers))
            if status in (401, 403):
                advice = f"the service refused the key: check the environment variable {endpoint.api_key_env}"
            elif status == 404:
                advice = f"check base_url and model = {endpoint.model!r} in {where}"
            elif status == 413:
                advice = "the request is too large: send fewer or smaller images"
            else:
                advice = f"the request was rejected and retrying will not help: check the messages and the params of {where}"
            return _Failure(what, advice, False, status)
        return _Failure(f"unexpected {type(exc).__name__}: {exc}", "this looks like a bug or an unsupported param; "
                        f"check the params of {where}", False)

    def close(self) -> None:
        self.http_client.close()


class _OpenAIClient(_SDKClient):
    def _connect(self, endpoint: Endpoint, api_key: str):
        import openai

        self.timeout_errors = (openai.APITimeoutError,)
        self.connection_errors = (openai.APIConnectionError,)
        self.status_errors = (openai.APIStatusError,)
        # The SDK's own Limits class (httpx or httpx2, depending on the SDK version).
        limits = type(openai.DEFAULT_CONNECTION_LIMITS)(
            max_connections=endpoint.max_concurrency, max_keepalive_connections=endpoint.max_concurrency
        )
        http_client = openai.DefaultHttpxClient(limits=limits, timeout=endpoint.timeout)
        client = openai.OpenAI(api_key=api_key, base_url=endpoint.base_url, timeout=endpoint.timeout,
                               max_retries=0, http_client=http_client)
        return client, http_client

    def _post_chat(self, messages: list[dict], params: dict) -> bytes:
        # The SDK's documented way to send a request body as is: chat.completions.create
        # would only add a typed transform of the body (an identity for JSON messages) that
        # costs a quarter of the client's CPU per call.
        body = {**params, "model": self.endpoint.model, "messages": messages}
        return self.client.post("/chat/completions", body=body, cast_to=bytes)


class _ZhipuAIClient(_SDKClient):
    # How the SDK's own raw-response wrapper asks for the unparsed response (its chat
    # resource has no with_raw_response).
    RAW_RESPONSE_HEADER = "X-Stainless-Raw-Response"
    # Keyword arguments of create() that are not request-body params.
    NOT_BODY_PARAMS = {"self", "model", "messages", "stream", "extra_headers", "extra_query", "extra_body", "timeout"}

    def _connect(self, endpoint: Endpoint, api_key: str):
        import httpx
        import zhipuai

        self.timeout_errors = (zhipuai.APITimeoutError,)
        self.connection_errors = (zhipuai.APIConnectionError,)
        self.status_errors = (zhipuai.APIStatusError,)
        limits = httpx.Limits(max_connections=endpoint.max_concurrency, max_keepalive_connections=endpoint.max_concurrency)
        http_client = httpx.Client(limits=limits, timeout=endpoint.timeout)
        client = zhipuai.ZhipuAI(api_key=api_key, base_url=endpoint.base_url, timeout=endpoint.timeout,
                                 max_retries=0, http_client=http_client)
        parameters = inspect.signature(client.chat.completions.create).parameters.items()
        self.body_params = {name for name, p in parameters if p.kind is p.KEYWORD_ONLY} - self.NOT_BODY_PARAMS
        return client, http_client

    def _post_chat(self, messages: list[dict], params: dict) -> bytes:
        # Through create(), which adapts requests to GLM (sampling bounds, bare base64
        # images); params it does not name go in extra_body. It rewrites image parts in
        # place, so it gets a copy of the messages.
        named = {k: v for k, v in params.items() if k in self.body_params}
        extra = {k: v for k, v in params.items() if k not in self.body_params}
        response = self.client.chat.completions.create(
            model=self.endpoint.model, messages=copy.deepcopy(messages), extra_body=extra or None,
            extra_headers={self.RAW_RESPONSE_HEADER: "true"}, **named,
        )
        return response.http_response.content


_SDK_CLIENTS = {"openai": _OpenAIClient, "zhipuai": _ZhipuAIClient}


# ---------------------------------------------------------------------------- pacing

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
    def __init__(self, endpoint: Endpoint, clock, sleep):
        self.endpoint = endpoint
        self.slots = threading.BoundedSemaphore(endpoint.max_concurrency)
        self.pacer = _Pacer(endpoint.requests_per_minute, clock, sleep)
        self.sdk_lock = threading.Lock()
        self.sdk: _SDKClient | None = None
        self.usage_lock = threading.Lock()
        self.usage = dict.fromkeys(USAGE_FIELDS, 0)

    def count(self, **amounts: int) -> None:
        with self.usage_lock:
            for name, amount in amounts.items():
                self.usage[name] += amount


# ---------------------------------------------------------------------------- the client

class LLMClient:
    """Chat calls to named endpoints. Thread-safe: share one per process (or per job) so the
    concurrency bound and the request rate of each endpoint hold across all its callers."""

    def __init__(self, endpoints: Mapping[str, Endpoint], cache: ResponseCache | None = None, *,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                 rng: random.Random | None = None):
        self.endpoints = dict(endpoints)
        self._cache = cache if cache is not None and cache.enabled else None
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        self._rng_lock = threading.Lock()
        self._states = {name: _EndpointState(endpoint, clock, sleep) for name, endpoint in self.endpoints.items()}
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

    def chat_many(self, endpoint: str, requests: Iterable[list[dict] | tuple[list[dict], dict]], *,
                  on_result: Callable[[int, ChatResponse | LLMError], None] | None = None) -> list[ChatResponse | LLMError]:
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

    def close(self) -> None:
        for state in self._states.values():
            with state.sdk_lock:
                if state.sdk is not None:
                    state.sdk.close()
                    state.sdk = None

    def __enter__(self) -> "LLMClient":
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
        _check_messages(state.endpoint, messages)
        reserved = sorted(set(params) & set(RESERVED_PARAMS))
        if reserved:
            raise LLMError(f"{state.endpoint.label}: {', '.join(reserved)} cannot be passed as params "
                           "(the endpoint decides the model; streaming is not supported)", endpoint=endpoint)
        request_params = {k: v for k, v in {**state.endpoint.params, **params}.items() if v is not None}
        if self._cache is None:
            return self._fetch(state, messages, request_params)
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
        except Exception as exc:  # one bad item must not kill the batch: report it as its result
            self._states[endpoint].count(failures=1)
            error = LLMError(f"request {index} to endpoint {endpoint!r} failed: {type(exc).__name__}: {exc}", endpoint=endpoint)
            error.__cause__ = exc
            return error

    def _cached_fetch(self, state: _EndpointState, key: str, messages: list[dict], params: dict) -> ChatResponse:
        """Answer from the cache, or fetch once: a concurrent identical call waits for the
        first one's answer instead of paying for its own."""
        while True:
            hit = self._cache.get(key)
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
            hit = self._cache.get(key)  # the previous leader may have finished between our two looks
            if hit is not None:
                state.count(cache_hits=1)
                return ChatResponse.from_cache(hit, state.endpoint.name)
            response = self._fetch(state, messages, params)
            try:
                self._cache.put(key, response.to_cache())
            except CacheError as exc:  # the answer is paid for: hand it back rather than lose it
                log.warning("%s", exc)
            return response
        finally:
            with self._in_flight_lock:
                del self._in_flight[key]
            done.set()

    def _sdk(self, state: _EndpointState) -> _SDKClient:
        with state.sdk_lock:
            if state.sdk is None:
                endpoint = state.endpoint
                try:
                    state.sdk = _SDK_CLIENTS[endpoint.provider](endpoint, endpoint.api_key())
                except ImportError as exc:
                    raise LLMError(f"{endpoint.label}: provider {endpoint.provider!r} needs the {exc.name} package; "
                                   f"install it (pip install {exc.name})", endpoint=endpoint.name) from exc
            return state.sdk

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        with self._rng_lock:
            delay = self._rng.uniform(0.0, min(BACKOFF_CAP, BACKOFF_BASE * 2 ** attempt))
        return max(delay, retry_after) if retry_after is not None else delay

    def _fetch(self, state: _EndpointState, messages: list[dict], params: dict) -> ChatResponse:
        endpoint = state.endpoint
        sdk = self._sdk(state)
        attempts = 0
        while True:
            with state.slots:
                state.pacer.wait()
                attempts += 1
                state.count(calls=1)
                try:
                    response = sdk.send(messages, params)
                except Exception as exc:
                    failure, error = sdk.classify(exc), exc
                else:
                    state.count(prompt_tokens=response.usage["prompt_tokens"],
                                completion_tokens=response.usage["completion_tokens"])
                    return response
            if failure.retry_after is not None:  # the server's wait applies to every call to it
                state.pacer.hold(self._clock() + failure.retry_after)
            if not failure.retryable or attempts > endpoint.max_retries:
                tried = f"after {attempts} attempts" if attempts > 1 else "on the first attempt"
                raise LLMError(f"{endpoint.label}: {failure.what}; gave up {tried}: {failure.advice}",
                               endpoint=endpoint.name, attempts=attempts, status=failure.status,
                               transient=failure.retryable) from error
            state.count(retries=1)
            delay = self._backoff(attempts - 1, failure.retry_after)
            log.info("%s: %s; retry %d of %d in %.2fs", endpoint.label, failure.what, attempts, endpoint.max_retries, delay)
            self._sleep(delay)

"""Provider SDKs: send a chat request, read the reply, classify a failure.

OpenAI-compatible endpoints go through the `openai` SDK; GLM endpoints (provider "zhipuai")
through Zhipu's `zai-sdk`, or the older `zhipuai` package when only that is installed. Both are
imported only when a call needs them.
"""

from __future__ import annotations

import copy
import email.utils
import inspect
import json
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from .endpoints import Endpoint

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})  # and every 5xx
RETRY_AFTER_CAP = 120.0  # a server asking for longer is retried after this, not trusted for hours


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
    def from_cache(cls, value: dict, endpoint: str) -> ChatResponse:
        return cls(
            text=value["text"],
            usage=value["usage"],
            cached=True,
            finish_reason=value.get("finish_reason"),
            endpoint=endpoint,
            model=value.get("model") or "",
        )


class _MalformedResponse(Exception):
    """A 200 whose body is not a chat completion."""


class _EmptyReply(Exception):
    """A well-formed completion that carries no answer: filtered, or empty content."""

    def __init__(self, finish_reason: str | None):
        super().__init__(finish_reason)
        self.finish_reason = finish_reason


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
    if text is not None and not isinstance(text, str):
        raise _MalformedResponse(f"the message content is a {type(text).__name__}, not text")
    finish_reason = choices[0].get("finish_reason")
    finish_reason = finish_reason if isinstance(finish_reason, str) else None
    # No answer is not an answer: it must never be scored, nor cached as if it were one.
    if finish_reason == "content_filter" or not (text or "").strip():
        raise _EmptyReply(finish_reason)
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    prompt, completion = (usage.get(name) for name in ("prompt_tokens", "completion_tokens"))
    prompt = prompt if isinstance(prompt, int) else 0
    completion = completion if isinstance(completion, int) else 0
    model = body.get("model")
    return ChatResponse(
        text=text,
        usage={"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        cached=False,
        finish_reason=finish_reason,
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
    except Exception:  # noqa: BLE001 - not JSON, or the body was never read
        try:
            return response.text.strip()[:300]
        except Exception:  # noqa: BLE001 - an error message is a courtesy, never a second failure
            return ""
    error = data.get("error") if isinstance(data, dict) else None
    for candidate in (
        error.get("message") if isinstance(error, dict) else error,
        data.get("message") if isinstance(data, dict) else None,
    ):
        if isinstance(candidate, str) and candidate:
            return candidate[:300]
    return json.dumps(data, ensure_ascii=False)[:300]


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
        if isinstance(exc, _EmptyReply):
            if exc.finish_reason == "content_filter":
                return _Failure(
                    "the reply was withheld by the provider's content filter (finish_reason content_filter)",
                    "retrying sends the same request: check the item's text and images, or score it with "
                    "another model; it counts as a failed call",
                    False,
                )
            return _Failure(
                f"the reply has no content (finish_reason {exc.finish_reason or 'missing'})",
                f"check that model = {endpoint.model!r} in {where} is a chat model and that max_tokens "
                "leaves room for an answer; it counts as a failed call",
                False,
            )
        if isinstance(exc, (_MalformedResponse, json.JSONDecodeError, UnicodeDecodeError)):
            return _Failure(
                f"the server sent a body that is not a chat completion ({exc})",
                f"check that base_url in {where} points at an OpenAI-compatible chat API",
                True,
            )
        if isinstance(exc, self.timeout_errors):
            return _Failure(
                f"no answer within timeout = {endpoint.timeout:g}s", f"raise timeout in {where} or check the service", True
            )
        if isinstance(exc, self.connection_errors):
            cause = exc.__cause__ or exc.__context__
            return _Failure(
                f"cannot connect to {endpoint.base_url} ({cause or exc})", f"check base_url in {where} and the network", True
            )
        if isinstance(exc, self.status_errors):
            status = exc.status_code
            response = exc.response
            what = f"HTTP {status}: {_server_message(response)}"
            if status == 429:
                return _Failure(
                    what,
                    f"still rate limited: lower max_concurrency or requests_per_minute in {where}, or raise max_retries",
                    True,
                    status,
                    parse_retry_after(response.headers),
                )
            if status >= 500 or status in RETRYABLE_STATUSES:
                return _Failure(
                    what,
                    f"the service keeps failing: check its status and try again later, or raise max_retries in {where}",
                    True,
                    status,
                    parse_retry_after(response.headers),
                )
            if status in (401, 403):
                advice = f"the service refused the key: check the environment variable {endpoint.api_key_env}"
            elif status == 404:
                advice = f"check base_url and model = {endpoint.model!r} in {where}"
            elif status == 413:
                advice = "the request is too large: send fewer or smaller images"
            else:
                advice = f"the request was rejected and retrying will not help: check the messages and the params of {where}"
            return _Failure(what, advice, False, status)
        return _Failure(
            f"unexpected {type(exc).__name__}: {exc}",
            f"this looks like a bug or an unsupported param; check the params of {where}",
            False,
        )

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
        client = openai.OpenAI(
            api_key=api_key, base_url=endpoint.base_url, timeout=endpoint.timeout, max_retries=0, http_client=http_client
        )
        return client, http_client

    def _post_chat(self, messages: list[dict], params: dict) -> bytes:
        # The SDK's documented way to send a request body as is: chat.completions.create
        # would only add a typed transform of the body (an identity for JSON messages) that
        # costs a quarter of the client's CPU per call.
        body = {**params, "model": self.endpoint.model, "messages": messages}
        return self.client.post("/chat/completions", body=body, cast_to=bytes)


class SDKMissing(ImportError):
    """No SDK for a provider is installed; the message says what to install."""


def glm_sdk():
    """The GLM SDK to use: `zai-sdk` (import zai) when installed, else the older `zhipuai`.
    Returns (client class, module with the error classes). A release's harness may meet either."""
    try:
        from zai import ZhipuAiClient
        from zai.core import _errors as errors  # APIConnectionError is only defined there

        return ZhipuAiClient, errors
    except ImportError as zai_missing:
        if zai_missing.name not in ("zai", "zai.core"):
            raise  # zai is there but broken: say so rather than silently use another SDK
    try:
        import zhipuai

        return zhipuai.ZhipuAI, zhipuai
    except ImportError as zhipuai_missing:
        if zhipuai_missing.name != "zhipuai":
            raise
    raise SDKMissing(
        "needs zai-sdk (pip install zai-sdk) or the older zhipuai package (pip install zhipuai sniffio); neither is installed",
        name="zai",
    )


class _GLMClient(_SDKClient):
    # How the SDK's own raw-response wrapper asks for the unparsed response (its chat
    # resource has no with_raw_response). zai-sdk and zhipuai share it.
    RAW_RESPONSE_HEADER = "X-Stainless-Raw-Response"
    # Keyword arguments of create() that are not request-body params.
    NOT_BODY_PARAMS: ClassVar[set[str]] = {
        "self",
        "model",
        "messages",
        "stream",
        "extra_headers",
        "extra_query",
        "extra_body",
        "timeout",
    }

    def _connect(self, endpoint: Endpoint, api_key: str):
        import httpx

        client_class, errors = glm_sdk()
        self.timeout_errors = (errors.APITimeoutError,)
        self.connection_errors = (errors.APIConnectionError,)
        self.status_errors = (errors.APIStatusError,)
        limits = httpx.Limits(max_connections=endpoint.max_concurrency, max_keepalive_connections=endpoint.max_concurrency)
        http_client = httpx.Client(limits=limits, timeout=endpoint.timeout)
        client = client_class(
            api_key=api_key, base_url=endpoint.base_url, timeout=endpoint.timeout, max_retries=0, http_client=http_client
        )
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
            model=self.endpoint.model,
            messages=copy.deepcopy(messages),
            extra_body=extra or None,
            extra_headers={self.RAW_RESPONSE_HEADER: "true"},
            **named,
        )
        return response.http_response.content


SDK_CLIENTS = {"openai": _OpenAIClient, "zhipuai": _GLMClient}

"""The three ways an LLM call or its setup fails, each with a message a person can act on."""

from __future__ import annotations


class ConfigError(ValueError):
    """The models file (or an Endpoint built in code) is unusable; the message names the file and key."""


class CacheError(RuntimeError):
    """The response cache cannot be used."""


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

"""The shared cache (throttle counters, invalid-token counts, the dashboard's counts) is a help,
never a dependency: when it cannot be reached, each use degrades (requests go unthrottled,
counts are computed afresh), the outage is logged (once a minute), and nothing answers 500.
Every use of the cache goes through this module."""

import logging
import threading
import time

from django.core.cache import cache
from rest_framework import throttling

log = logging.getLogger(__name__)
LOG_EVERY_SECONDS = 60
_lock = threading.Lock()
_last_logged = 0.0


def _cache_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [OSError, ConnectionError, TimeoutError]
    try:
        import redis

        errors.append(redis.RedisError)
    except ImportError:  # pragma: no cover - redis is a dependency; the local-memory cache never fails
        pass
    return tuple(errors)


CACHE_ERRORS = _cache_errors()


def note_outage(exc: BaseException, consequence: str) -> None:
    global _last_logged
    with _lock:
        now = time.monotonic()
        if now - _last_logged < LOG_EVERY_SECONDS:
            return
        _last_logged = now
    log.warning("the shared cache is unreachable (%s: %s); %s", type(exc).__name__, exc, consequence)


def cache_get(key: str, default=None, *, consequence: str = "served without it"):
    try:
        return cache.get(key, default)
    except CACHE_ERRORS as exc:
        note_outage(exc, consequence)
        return default


def cache_set(key: str, value, timeout: float, *, consequence: str = "not stored") -> None:
    try:
        cache.set(key, value, timeout)
    except CACHE_ERRORS as exc:
        note_outage(exc, consequence)


def cache_delete(key: str, *, consequence: str = "left to expire") -> None:
    try:
        cache.delete(key)
    except CACHE_ERRORS as exc:
        note_outage(exc, consequence)


def cache_claim(key: str, seconds: float, *, consequence: str = "claimed without it") -> bool:
    """True for the one caller that adds `key` (for `seconds`): who does a shared piece of work.
    With the cache down every caller is told yes (each does the work, as without a cache)."""
    try:
        return bool(cache.add(key, 1, timeout=seconds))
    except CACHE_ERRORS as exc:
        note_outage(exc, consequence)
        return True


def cache_count(key: str, window: float, *, consequence: str = "not counted") -> None:
    """Add one to a counter that lives `window` seconds from its first count."""
    try:
        cache.add(key, 0, timeout=window)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=window)
    except CACHE_ERRORS as exc:
        note_outage(exc, consequence)


class _FailOpen:
    """A rate throttle that lets the request through when its counters cannot be read."""

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except CACHE_ERRORS as exc:
            note_outage(exc, "API requests are not rate-limited until it is back")
            return True


class AnonRateThrottle(_FailOpen, throttling.AnonRateThrottle):
    pass


class UserRateThrottle(_FailOpen, throttling.UserRateThrottle):
    pass


class ScopedRateThrottle(_FailOpen, throttling.ScopedRateThrottle):
    pass

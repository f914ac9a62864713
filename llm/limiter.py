"""max_concurrency as a hard bound across every worker on every host: a Redis semaphore.

The harness Limiter protocol: `slot(endpoint)` is a context manager that blocks until a request
to the endpoint may start. Slots are keyed by the endpoint's identity (provider, base_url, model),
so every name, client, process and host calling the same remote model shares one bound: the
smallest max_concurrency among the names this process knows for it (give every host the same
models file).

A slot is a member of a Redis sorted set scored by its lease expiry (Redis server time, so host
clocks do not matter). Taking one (a Lua script) drops expired leases and adds ours if fewer than
the limit are held. A holder renews its leases from a background thread every lease/3 seconds, so
a long call keeps its slot; a worker that is killed stops renewing and its slot comes back when
the lease runs out (BENCHFORGE_LLM_SLOT_LEASE_SECONDS, 30 s). Releasing a slot pushes a wake-up
on a list that waiters block on (BLPOP), so a freed slot is taken at once; waiters also look
again every `poll` seconds, which is how an expired lease is noticed.

No Django here: bench scripts and plain processes use it too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from urllib.parse import urlsplit

from benchforge_harness.llm import Endpoint, LLMError

log = logging.getLogger(__name__)

_NOW_MS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
# KEYS: slots. ARGV: token, limit, lease_ms. 1 when the slot is ours.
ACQUIRE = (
    _NOW_MS
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[3]))
  return 1
end
return 0
"""
)
# KEYS: slots, wake. ARGV: token, limit, lease_ms.
RELEASE = """
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('LPUSH', KEYS[2], '1')
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]) - 1)
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[3]))
return removed
"""
# KEYS: slots. ARGV: lease_ms, tokens... Renews the leases still alive; returns how many.
RENEW = (
    _NOW_MS
    + """
local renewed = 0
for i = 2, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) > now then
    redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i])
    renewed = renewed + 1
  end
end
redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[1]))
return renewed
"""
)


def identity_key(prefix: str, endpoint: Endpoint) -> str:
    digest = hashlib.sha256(json.dumps(list(endpoint.identity)).encode()).hexdigest()[:24]
    return f"{prefix}:slots:{digest}"


class RedisLimiter:
    """Leased slots in Redis. Thread-safe; one per process is enough (platform_limiter())."""

    def __init__(self, url: str, *, prefix: str = "benchforge:llm", lease: float = 30.0, poll: float = 0.2):
        import redis

        if lease <= 0 or poll <= 0:
            raise ValueError("lease and poll must be positive seconds")
        self.url = url
        self.prefix = prefix
        self.lease = lease
        self.poll = poll
        self._redis_module = redis
        self._errors = (redis.RedisError, OSError)
        self._limits: dict[tuple, weakref.WeakKeyDictionary] = {}
        self._setup()

    def _setup(self) -> None:
        # Per process: after a fork the child gets its own connections, lock and renewer.
        self._pid = os.getpid()
        self.redis = self._redis_module.Redis.from_url(
            self.url, socket_timeout=self.poll + 10, socket_connect_timeout=5, health_check_interval=30
        )
        self._acquire = self.redis.register_script(ACQUIRE)
        self._release = self.redis.register_script(RELEASE)
        self._renew = self.redis.register_script(RENEW)
        self._lock = threading.Lock()
        self._held: dict[str, str] = {}  # token -> slots key
        self._renewer: threading.Thread | None = None

    def _check_fork(self) -> None:
        if os.getpid() != self._pid:
            self._setup()

    # -- limits

    def register(self, endpoint: Endpoint) -> None:
        """Count this endpoint's limit for its identity from now on (LLMClient calls it)."""
        self._check_fork()
        with self._lock:
            self._limits.setdefault(endpoint.identity, weakref.WeakKeyDictionary())[endpoint] = endpoint.max_concurrency

    def limit(self, endpoint: Endpoint) -> int:
        with self._lock:
            known = self._limits.setdefault(endpoint.identity, weakref.WeakKeyDictionary())
            known[endpoint] = endpoint.max_concurrency
            return min(known.values())

    # -- slots

    @contextlib.contextmanager
    def slot(self, endpoint: Endpoint) -> Iterator[None]:
        self._check_fork()
        key = identity_key(self.prefix, endpoint)
        token = uuid.uuid4().hex
        limit = self.limit(endpoint)
        lease_ms = max(1, int(self.lease * 1000))
        try:
            while not self._acquire(keys=[key], args=[token, limit, lease_ms]):
                self.redis.blpop([key + ":wake"], timeout=self.poll)
        except self._errors as exc:
            raise LLMError(
                f"{endpoint.label}: the concurrency limiter cannot use Redis at {safe_url(self.url)} ({exc}); "
                "check that Redis is up and BENCHFORGE_LLM_LIMITER_URL",
                endpoint=endpoint.name,
                transient=True,
            ) from None
        with self._lock:
            self._held[token] = key
            self._ensure_renewer()
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(token, None)
            try:
                self._release(keys=[key, key + ":wake"], args=[token, limit, lease_ms])
            except self._errors as exc:  # the lease runs out by itself
                log.warning(
                    "%s: could not free a concurrency slot in Redis (%s); it comes back within %.0f s",
                    endpoint.label,
                    exc,
                    self.lease,
                )

    def held(self) -> int:
        with self._lock:
            return len(self._held)

    def in_use(self, endpoint: Endpoint) -> int:
        """Slots of the endpoint's identity held now, by every process (expired leases not counted)."""
        key = identity_key(self.prefix, endpoint)
        now_s, now_us = self.redis.time()
        return self.redis.zcount(key, f"({now_s * 1000 + now_us // 1000}", "+inf")

    # -- leases

    def _ensure_renewer(self) -> None:
        if self._renewer is None or not self._renewer.is_alive():
            self._renewer = threading.Thread(target=self._renew_loop, name="llm-slot-leases", daemon=True)
            self._renewer.start()

    def _renew_loop(self) -> None:
        pid = self._pid
        lease_ms = max(1, int(self.lease * 1000))
        while os.getpid() == pid:
            time.sleep(self.lease / 3)
            with self._lock:
                by_key: dict[str, list[str]] = {}
                for token, key in self._held.items():
                    by_key.setdefault(key, []).append(token)
            for key, tokens in by_key.items():
                try:
                    renewed = self._renew(keys=[key], args=[lease_ms, *tokens])
                except self._errors as exc:
                    log.warning("concurrency slots: cannot renew leases in Redis (%s); retrying", exc)
                    continue
                if renewed < len(tokens):
                    # Only when this process stalled for a whole lease (or Redis lost data): the
                    # bound may be exceeded until those calls end.
                    log.warning("concurrency slots: %d of %d leases had already run out", len(tokens) - renewed, len(tokens))


def safe_url(url: str) -> str:
    """A Redis URL without its password, for messages."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"


_limiters: dict[tuple, RedisLimiter] = {}
_limiters_lock = threading.Lock()


def platform_limiter():
    """The limiter every platform client uses: the Redis one when BENCHFORGE_LLM_LIMITER_URL is set
    (it defaults to the Celery broker when that is Redis), else the harness's process limiter (the
    embedded runtime is one process)."""
    from django.conf import settings

    from benchforge_harness.llm import process_limiter

    url = settings.BENCHFORGE_LLM_LIMITER_URL
    if not url:
        return process_limiter()
    config = (url, settings.BENCHFORGE_LLM_REDIS_PREFIX, float(settings.BENCHFORGE_LLM_SLOT_LEASE_SECONDS))
    with _limiters_lock:
        limiter = _limiters.get(config)
        if limiter is None:
            limiter = _limiters[config] = RedisLimiter(url, prefix=config[1], lease=config[2])
        return limiter

"""The shared response cache: the harness Cache protocol (get/put) over the database, or Redis.

Every worker on every host that shares the database (or the Redis named by
BENCHFORGE_LLM_CACHE_URL) finds a reply another one paid for. The harness client only ever puts
paid, non-empty replies and treats an empty cached value as a miss. Both caches are thread-safe
(Django connections and redis-py pools are per thread / shared safely); a failing read is a miss
(the call is paid again rather than failed), a failing write raises CacheError, which the client
logs while it still returns the reply.
"""

from __future__ import annotations

import json
import logging
import threading
import time

from django.conf import settings
from django.db import DatabaseError

from benchforge_harness.llm import CacheError

from .context import current, serial_db
from .limiter import safe_url

log = logging.getLogger(__name__)


def _tokens(value: dict) -> tuple[int, int]:
    usage = value.get("usage") if isinstance(value.get("usage"), dict) else {}
    return tuple(max(0, int(usage.get(name) or 0)) for name in ("prompt_tokens", "completion_tokens"))


def _note_lookup(key: str, payer) -> None:
    trace = current()
    if trace is not None:
        trace.request_key = key
        trace.hit_payer = tuple(payer) if payer and payer[0] is not None else None


def _payer() -> tuple[int | None, int | None]:
    trace = current()
    return trace.payer if trace is not None and trace.payer else (None, None)


class DatabaseCache:
    """Replies in the llm_cachedreply table."""

    enabled = True

    def get(self, key: str) -> dict | None:
        from .models import CachedReply

        try:
            with serial_db():
                row = CachedReply.objects.filter(key=key).values_list("value", "paid_by_job", "paid_in_run").first()
        except DatabaseError as exc:
            log.warning("LLM response cache: cannot read the database (%s); asking the model instead", exc)
            return None
        _note_lookup(key, row[1:] if row else None)
        return row[0] if row else None

    def put(self, key: str, value: dict) -> None:
        from .models import CachedReply

        trace = current()
        endpoint = trace.endpoint if trace is not None else None
        prompt, completion = _tokens(value)
        job, run = _payer()
        row = CachedReply(
            key=key,
            value=value,
            prompt_tokens=prompt,
            completion_tokens=completion,
            paid_by_job=job,
            paid_in_run=run,
            provider=endpoint.provider if endpoint else "",
            base_url=endpoint.base_url if endpoint else "",
            model=endpoint.model if endpoint else "",
        )
        try:
            with serial_db():
                # First writer wins: two workers that paid for the same call at once store one reply.
                CachedReply.objects.bulk_create([row], ignore_conflicts=True)
        except DatabaseError as exc:
            raise CacheError(
                f"the LLM response cache table cannot be written ({exc}); the reply was used but not cached"
            ) from None
        if trace is not None:
            trace.request_key = key

    def __len__(self) -> int:
        from .models import CachedReply

        return CachedReply.objects.count()


class RedisCache:
    """Replies under PREFIX:reply:<key> in Redis, as JSON with the same fields as the table.
    No expiry: give the Redis enough memory (or an eviction policy you accept)."""

    enabled = True

    def __init__(self, url: str, *, prefix: str = "benchforge:llm"):
        import redis

        self.url = url
        self.prefix = prefix
        self.redis = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5, health_check_interval=30)
        self._errors = (redis.RedisError, OSError)

    def _key(self, key: str) -> str:
        return f"{self.prefix}:reply:{key}"

    def get(self, key: str) -> dict | None:
        try:
            raw = self.redis.get(self._key(key))
        except self._errors as exc:
            log.warning("LLM response cache: cannot read %s (%s); asking the model instead", safe_url(self.url), exc)
            return None
        if raw is None:
            _note_lookup(key, None)
            return None
        try:
            record = json.loads(raw)
            value = record["value"]
        except (ValueError, KeyError, TypeError):
            log.warning("LLM response cache: unreadable entry %s in %s; asking the model instead", key, safe_url(self.url))
            return None
        _note_lookup(key, record.get("paid_by"))
        return value

    def put(self, key: str, value: dict) -> None:
        trace = current()
        endpoint = trace.endpoint if trace is not None else None
        prompt, completion = _tokens(value)
        job, run = _payer()
        record = {
            "value": value,
            "provider": endpoint.provider if endpoint else "",
            "base_url": endpoint.base_url if endpoint else "",
            "model": endpoint.model if endpoint else "",
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "paid_by": [job, run] if job is not None else None,
            "created_at": time.time(),
        }
        try:
            self.redis.set(self._key(key), json.dumps(record, ensure_ascii=False), nx=True)
        except self._errors as exc:
            raise CacheError(
                f"the LLM response cache at {safe_url(self.url)} cannot be written ({exc}); the reply was used but not cached"
            ) from None
        if trace is not None:
            trace.request_key = key

    def __len__(self) -> int:
        return sum(1 for _ in self.redis.scan_iter(match=self._key("*"), count=1000))


_caches: dict[tuple, object] = {}
_caches_lock = threading.Lock()


def platform_cache() -> DatabaseCache | RedisCache:
    """The cache every platform client uses: Redis when BENCHFORGE_LLM_CACHE_URL is set, else the
    database. One per process and URL (a Redis connection pool is shared by every thread)."""
    url = settings.BENCHFORGE_LLM_CACHE_URL
    if not url:
        return DatabaseCache()
    prefix = settings.BENCHFORGE_LLM_REDIS_PREFIX
    with _caches_lock:
        cache = _caches.get((url, prefix))
        if cache is None:
            cache = _caches[(url, prefix)] = RedisCache(url, prefix=prefix)
        return cache

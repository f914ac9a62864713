"""The response cache: a repeated identical call is answered without a request."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, Self

from .endpoints import Endpoint
from .errors import CacheError


def cache_key(endpoint: Endpoint, messages: list[dict], params: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of everything that decides the answer."""
    blob = json.dumps(
        [endpoint.provider, endpoint.base_url, endpoint.model, messages, params],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class Cache(Protocol):
    """What LLMClient(cache=...) needs. Any object with these two methods will do (the platform
    passes one backed by its database or Redis; the harness CLI passes a ResponseCache).

    get(key) -> the dict stored under key, or None on a miss;
    put(key, value) stores a JSON-serialisable dict (a reply: text, usage, finish_reason, model).

    Both are called from many threads at once. A key is a 64-character hex string (cache_key).
    put may raise CacheError: the client logs it and still returns the reply it paid for. Only
    successful, non-empty replies are ever put. An optional `enabled` attribute set to False
    turns the cache off.
    """

    def get(self, key: str) -> dict | None: ...

    def put(self, key: str, value: dict) -> None: ...


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
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL, created_at REAL NOT NULL)"
            )
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(
                f"{self.path}: cannot use this file as the LLM response cache ({exc}); delete it or choose another cache path"
            ) from None
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
                self._db.execute(
                    "INSERT OR REPLACE INTO responses (key, value, created_at) VALUES (?, ?, ?)", (key, blob, time.time())
                )
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

"""Sessions read from the shared cache and kept in the database (Django's cached_db), made to
survive the cache going down.

Every request reads its session: from the cache that is one GET instead of a database query built by
the ORM (issue 43: the query's Python cost is a fixed part of every page). The database stays the
record, so a cache flushed or restarted logs nobody out. Django's cached_db already tolerates a
failed cache read or save; here a failed refill after a miss and a failed delete are tolerated too,
and whether a new key is free is asked of the database alone, so the pages keep working while the
cache is down (outages are logged as the throttles log them). A copy kept in the cache lives at
most CACHED_FOR seconds: a logout whose cache delete failed leaves no usable copy for longer.
"""

from django.contrib.sessions.backends import cached_db

from benchforge.throttling import CACHE_ERRORS, note_outage

CACHED_FOR = 600


class SessionStore(cached_db.SessionStore):
    def load(self):
        try:
            data = self._cache.get(self.cache_key)
        except Exception:
            data = None  # an invalid key or the cache down: read the database
        if data is not None:
            return data
        stored = self._get_session_from_db()
        if not stored:
            return {}
        data = self.decode(stored.session_data)
        try:
            self._cache.set(self.cache_key, data, self._cached_for(self.get_expiry_age(expiry=stored.expire_date)))
        except CACHE_ERRORS as exc:
            note_outage(exc, "sessions are read from the database")
        return data

    def exists(self, session_key):
        # Whether a new key is free: the database is the record.
        return super(cached_db.SessionStore, self).exists(session_key)

    def save(self, must_create=False):
        # The database first (cached_db's parent), then the cache for at most CACHED_FOR seconds.
        super(cached_db.SessionStore, self).save(must_create)
        try:
            self._cache.set(self.cache_key, self._session, self._cached_for(self.get_expiry_age()))
        except CACHE_ERRORS as exc:
            note_outage(exc, "sessions are read from the database")

    def delete(self, session_key=None):
        super(cached_db.SessionStore, self).delete(session_key)
        session_key = session_key or self.session_key
        if session_key is None:
            return
        try:
            self._cache.delete(self.cache_key_prefix + session_key)
        except CACHE_ERRORS as exc:
            note_outage(exc, f"a deleted session's cached copy expires within {CACHED_FOR} s")

    @staticmethod
    def _cached_for(age: int) -> int:
        return max(1, min(age, CACHED_FOR))

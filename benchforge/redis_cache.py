"""Django's Redis cache backend, keeping one client object per connection pool.

Django builds a new `redis.Redis` for every cache call, and each one copies its table of about 170
reply handlers (about a thousand Python calls): with the session, the navigation's versions and the
kept counts read on every request, that was a fixed cost of every page (issue 43). A client holds no
connection of its own (the pool does), so one per pool is safe to share between threads.
"""

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class _KeptClients(RedisCacheClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = _KeptClients

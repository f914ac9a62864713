"""Sessions: read from the shared cache, kept in the database (benchforge.sessions), and the
Redis cache backend that keeps one client per pool (benchforge.redis_cache)."""

import pytest
from django.core.cache import cache
from django.test import Client

from tests.conftest import REDIS_URL, require
from tests.llm.conftest import redis_available


@pytest.fixture
def shared_redis_cache(settings):
    require(redis_available(), f"Redis at {REDIS_URL}")
    settings.CACHES = {"default": {"BACKEND": "benchforge.redis_cache.RedisCache", "LOCATION": REDIS_URL}}
    from django.core.cache import caches

    caches["default"].clear()
    yield caches["default"]
    caches["default"].clear()


def _logged_in(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


@pytest.mark.django_db
def test_a_cleared_cache_logs_nobody_out(annotator):
    browser = _logged_in(annotator)
    assert browser.get("/").status_code == 200
    cache.clear()  # a cache restarted or flushed: the database still holds the session
    response = browser.get("/")
    assert response.status_code == 200 and response.wsgi_request.user == annotator


@pytest.mark.django_db
def test_a_logged_out_session_is_gone_from_the_cache_too(annotator):
    browser = _logged_in(annotator)
    assert browser.get("/").status_code == 200  # the session is now kept in the cache as well
    cookie = browser.cookies["sessionid"].value
    assert browser.post("/accounts/logout/").status_code in (200, 302)
    replay = Client()
    replay.cookies["sessionid"] = cookie
    response = replay.get("/")
    assert response.status_code == 302 and "login" in response["Location"]


@pytest.mark.django_db
def test_a_session_is_read_from_the_cache_without_a_query(annotator, django_assert_num_queries):
    from django.conf import settings
    from django.contrib.sessions.backends.base import SessionBase
    from django.utils.module_loading import import_string

    store_class = import_string(settings.SESSION_ENGINE + ".SessionStore")
    browser = _logged_in(annotator)
    key = browser.cookies["sessionid"].value
    store_class(key).load()  # the first read after login may fill the cache
    with django_assert_num_queries(0):
        data = store_class(key).load()
    assert isinstance(store_class(key), SessionBase) and data["_auth_user_id"] == str(annotator.pk)


@pytest.mark.django_db
def test_sessions_survive_the_cache_going_down(cache_down, annotator, caplog, monkeypatch):
    from benchforge import throttling

    monkeypatch.setattr(throttling, "_last_logged", float("-inf"))  # the setup's outage was logged already
    browser = _logged_in(annotator)
    response = browser.get("/")
    assert response.status_code == 200 and response.wsgi_request.user == annotator
    assert browser.post("/accounts/logout/").status_code in (200, 302)
    assert any("the shared cache is unreachable" in record.getMessage() for record in caplog.records)


@pytest.mark.django_db
def test_the_redis_cache_keeps_one_client_and_works(shared_redis_cache, annotator):
    first = shared_redis_cache._cache.get_client()
    assert shared_redis_cache._cache.get_client() is first
    shared_redis_cache.set("a", {"b": 1}, 30)
    assert shared_redis_cache.get_many(["a", "missing"]) == {"a": {"b": 1}}
    browser = _logged_in(annotator)  # sessions kept in Redis
    assert browser.get("/").status_code == 200
    assert browser.get("/").wsgi_request.user == annotator

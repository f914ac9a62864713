"""The shared response cache: in the database by default, in Redis when configured. Replies are
found by any client of any process; only paid, non-empty replies are ever stored."""

import threading

import pytest

from benchforge_harness.llm import CacheError, Endpoint, LLMError, user_message
from llm.cache import DatabaseCache, RedisCache, platform_cache
from llm.client import get_client
from llm.context import CallTrace, tracing
from llm.models import CachedReply
from tests.conftest import require
from tests.fakes.llm_server import Completion
from tests.llm.conftest import REDIS_URL, redis_available

pytestmark = pytest.mark.django_db(transaction=True)

ENDPOINT = Endpoint(name="ep", provider="zhipuai", base_url="http://llm.test/api/paas/v4", model="glm-4v", api_key_env="K")
REPLY = {
    "text": "B",
    "usage": {"prompt_tokens": 30, "completion_tokens": 2, "total_tokens": 32},
    "finish_reason": "stop",
    "model": "glm-4v",
}


def test_the_database_cache_keeps_the_reply_its_endpoint_usage_and_payer():
    cache = DatabaseCache()
    key = "a" * 64
    with tracing(CallTrace(ENDPOINT, payer=(7, 2))):
        cache.put(key, REPLY)
    row = CachedReply.objects.get()
    assert (row.key, row.value, row.provider, row.base_url, row.model) == (key, REPLY, "zhipuai", ENDPOINT.base_url, "glm-4v")
    assert (row.prompt_tokens, row.completion_tokens, row.paid_by_job, row.paid_in_run) == (30, 2, 7, 2) and row.created_at
    trace = CallTrace()
    with tracing(trace):
        assert cache.get(key) == REPLY
    assert trace.request_key == key and trace.hit_payer == (7, 2)
    assert cache.get("b" * 64) is None
    with tracing(CallTrace(ENDPOINT, payer=(8, 1))):  # a second payer of the same call: the first reply stays
        cache.put(key, {**REPLY, "text": "C"})
    assert cache.get(key)["text"] == "B" and len(cache) == 1


def test_the_database_cache_is_shared_by_many_threads():
    cache = DatabaseCache()
    errors = []

    def work(n):
        try:
            for i in range(20):
                key = f"{(n * 100 + i) % 30:064x}"  # threads overlap on the same keys
                cache.put(key, {**REPLY, "text": key})
                assert cache.get(key)["text"] == key
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            from django.db import connections

            connections.close_all()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and CachedReply.objects.count() == 30


@pytest.mark.parametrize("provider", ["openai", "zhipuai"])
def test_a_repeated_call_is_answered_from_the_database_by_another_client(provider, declare, fake_llm):
    declare(provider=provider)
    fake_llm.script("m", "hello")
    messages = [user_message("say hello")]
    with get_client() as first:
        assert not first.chat("ep", messages).cached
    with get_client() as second:
        reply = second.chat("ep", messages)
    assert reply.cached and reply.text == "hello" and len(fake_llm.requests("m")) == 1
    row = CachedReply.objects.get()
    assert (row.provider, row.model, row.paid_by_job) == (provider, "m", None)  # no job paid: a direct call


@pytest.mark.parametrize("reply, reason", [
    (Completion(None, "content_filter"), "content filter"),
    (Completion("", "stop"), "the reply has no content"),
    (Completion("\n ", "length"), "the reply has no content"),
])  # fmt: skip
def test_a_filtered_or_empty_reply_is_a_failure_and_never_cached(reply, reason, declare, fake_llm):
    declare()
    fake_llm.script("m", reply)
    with get_client() as client:
        for _ in range(2):
            with pytest.raises(LLMError, match=reason):
                client.chat("ep", [user_message("anything")])
    assert len(fake_llm.requests("m")) == 2 and not CachedReply.objects.exists()


def test_without_a_cache_url_the_platform_caches_in_the_database(settings):
    assert isinstance(platform_cache(), DatabaseCache)
    settings.BENCHFORGE_LLM_CACHE_URL = "redis://127.0.0.1:1/0"
    assert isinstance(platform_cache(), RedisCache) and platform_cache() is platform_cache()


def test_an_unreachable_redis_cache_costs_a_request_never_the_answer(declare, fake_llm, settings, caplog):
    settings.BENCHFORGE_LLM_CACHE_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    declare()
    fake_llm.script("m", "still answered")
    with get_client() as client:
        assert client.chat("ep", [user_message("q")]).text == "still answered"
        assert client.chat("ep", [user_message("q")]).text == "still answered"
    assert len(fake_llm.requests("m")) == 2
    assert "cannot read redis://127.0.0.1:1/0" in caplog.text and "cannot be written" in caplog.text
    with pytest.raises(CacheError, match="the reply was used but not cached"):
        RedisCache("redis://127.0.0.1:1/0").put("a" * 64, REPLY)


@pytest.mark.services
def test_the_redis_cache_shares_replies_between_clients(declare, fake_llm, settings):
    require(redis_available(), f"a Redis server at {REDIS_URL}")
    settings.BENCHFORGE_LLM_CACHE_URL = REDIS_URL
    cache = platform_cache()
    try:
        declare(provider="zhipuai", model="glm-4")
        fake_llm.script("glm-4", "你好")
        messages = [user_message("hello")]
        with get_client(payer=(5, 1)) as first:
            first.chat("ep", messages)
        with get_client() as second:
            reply = second.chat("ep", messages)
        assert reply.cached and reply.text == "你好" and len(fake_llm.requests("glm-4")) == 1
        assert len(cache) == 1 and not CachedReply.objects.exists()
        [name] = cache.redis.scan_iter(match=f"{settings.BENCHFORGE_LLM_REDIS_PREFIX}:reply:*")
        import json

        record = json.loads(cache.redis.get(name))
        assert (record["provider"], record["model"], record["paid_by"], record["value"]["text"]) == (
            "zhipuai",
            "glm-4",
            [5, 1],
            "你好",
        )
        assert record["prompt_tokens"] == 1 and record["completion_tokens"] == 1 and record["created_at"] > 0
    finally:
        for name in cache.redis.scan_iter(match=f"{settings.BENCHFORGE_LLM_REDIS_PREFIX}:*"):
            cache.redis.delete(name)

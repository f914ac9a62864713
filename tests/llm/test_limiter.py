"""max_concurrency across processes: the Redis limiter, with real processes, the in-flight count
taken by the loopback server; a killed holder's slot comes back after its lease."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from benchforge_harness.llm import Endpoint, LLMClient, LLMError, process_limiter, user_message
from llm.limiter import RedisLimiter, platform_limiter
from tests.conftest import REPO_ROOT, require
from tests.llm.conftest import REDIS_URL, redis_available

CALLER = """
import json, sys
from benchforge_harness.llm import Endpoint, LLMClient, user_message
from llm.limiter import RedisLimiter
url, prefix, base_url, calls, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
endpoint = Endpoint(name="ep", provider="openai", base_url=base_url, model="m", api_key_env="K", max_concurrency=limit)
with LLMClient({"ep": endpoint}, None, limiter=RedisLimiter(url, prefix=prefix)) as client:
    results = client.chat_many("ep", [[user_message(f"{prefix} {sys.argv[6]} {n}")] for n in range(calls)])
print(json.dumps({"failed": [str(r) for r in results if isinstance(r, Exception)]}))
"""

HOLDER = """
import sys, time
from benchforge_harness.llm import Endpoint
from llm.limiter import RedisLimiter
limiter = RedisLimiter(sys.argv[1], prefix=sys.argv[2], lease=float(sys.argv[3]))
endpoint = Endpoint(name="ep", provider="openai", base_url="http://llm.test/v1", model="m", api_key_env="K", max_concurrency=2)
first, second = limiter.slot(endpoint), limiter.slot(endpoint)
first.__enter__(); second.__enter__()
print("held", flush=True)
time.sleep(600)
"""

ENDPOINT = Endpoint(name="ep", provider="openai", base_url="http://llm.test/v1", model="m", api_key_env="K", max_concurrency=2)


def _python(code: str, *args, **popen):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), K="key")
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], cwd=REPO_ROOT, env=env, **popen)


@pytest.fixture
def redis_prefix():
    require(redis_available(), f"a Redis server at {REDIS_URL}")
    prefix = f"bf-test-{uuid.uuid4().hex[:8]}"
    yield prefix
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    for name in client.scan_iter(match=f"{prefix}:*"):
        client.delete(name)


@pytest.mark.services
def test_two_processes_never_exceed_the_bound_together(fake_llm, redis_prefix):
    fake_llm.script("m", "ok")
    fake_llm.set_latency(0.05)
    # Each process alone would run 4 at once: together they must still run 4, not 8.
    procs = [
        _python(CALLER, REDIS_URL, redis_prefix, fake_llm.base_url("openai"), 40, 4, name, stdout=subprocess.PIPE, text=True)
        for name in ("a", "b")
    ]
    outputs = [json.loads(proc.communicate(timeout=120)[0]) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs) and outputs == [{"failed": []}, {"failed": []}]
    assert len(fake_llm.requests("m")) == 80
    assert fake_llm.max_in_flight("m") == 4


@pytest.mark.services
def test_a_killed_holders_slots_come_back_after_the_lease_and_a_live_holder_keeps_them(redis_prefix):
    lease = 1.5
    holder = _python(HOLDER, REDIS_URL, redis_prefix, lease, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        limiter = RedisLimiter(REDIS_URL, prefix=redis_prefix, lease=lease, poll=0.05)
        time.sleep(2.5 * lease)  # longer than a lease: the live holder renews its slots
        assert limiter.in_use(ENDPOINT) == 2
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
        killed = time.monotonic()
        assert limiter.in_use(ENDPOINT) == 2  # still leased
        with limiter.slot(ENDPOINT):
            waited = time.monotonic() - killed
            assert limiter.in_use(ENDPOINT) == 1  # the dead holder's slots are gone, ours is taken
        assert 0.3 < waited < lease + 1.0
        assert limiter.in_use(ENDPOINT) == 0
    finally:
        if holder.poll() is None:
            os.killpg(holder.pid, signal.SIGKILL)


@pytest.mark.services
def test_names_sharing_an_endpoint_share_the_smaller_bound(fake_llm, redis_prefix, monkeypatch):
    monkeypatch.setenv("K", "key")
    fake_llm.script("m", "ok")
    fake_llm.set_latency(0.05)
    base = {"provider": "openai", "base_url": fake_llm.base_url("openai"), "model": "m", "api_key_env": "K"}
    endpoints = {
        "strict": Endpoint(name="strict", max_concurrency=2, **base),
        "loose": Endpoint(name="loose", max_concurrency=5, **base),
    }
    with LLMClient(endpoints, None, limiter=RedisLimiter(REDIS_URL, prefix=redis_prefix)) as client:
        results = client.chat_many("loose", [[user_message(f"q {n}")] for n in range(20)])
    assert not any(isinstance(r, Exception) for r in results)
    assert fake_llm.max_in_flight("m") == 2


def test_an_unreachable_limiter_fails_the_call_with_what_to_check(fake_llm, monkeypatch):
    monkeypatch.setenv("K", "key")
    fake_llm.script("m", "ok")
    endpoint = Endpoint(name="ep", provider="openai", base_url=fake_llm.base_url("openai"), model="m", api_key_env="K")
    with (
        LLMClient({"ep": endpoint}, None, limiter=RedisLimiter("redis://:secret@127.0.0.1:1/0")) as client,
        pytest.raises(
            LLMError, match=r"the concurrency limiter cannot use Redis at redis://127.0.0.1:1/0 .*BENCHFORGE_LLM_LIMITER_URL"
        ) as failure,
    ):
        client.chat("ep", [user_message("q")])
    assert "secret" not in str(failure.value) and fake_llm.requests() == []


def test_the_platform_limiter_is_redis_when_configured_and_the_process_one_otherwise(settings):
    settings.BENCHFORGE_LLM_LIMITER_URL = ""
    assert platform_limiter() is process_limiter()
    settings.BENCHFORGE_LLM_LIMITER_URL = "redis://127.0.0.1:1/0"
    limiter = platform_limiter()
    assert isinstance(limiter, RedisLimiter) and platform_limiter() is limiter
    assert limiter.lease == settings.BENCHFORGE_LLM_SLOT_LEASE_SECONDS and limiter.prefix == settings.BENCHFORGE_LLM_REDIS_PREFIX


def test_the_limiter_defaults_to_the_celery_broker_when_it_is_redis():
    code = "from django.conf import settings; print(repr(settings.BENCHFORGE_LLM_LIMITER_URL))"

    def limiter_url(**env):
        full = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "BENCHFORGE_LLM_"))}
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
            cwd=REPO_ROOT,
            env={**full, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    assert limiter_url() == "''"
    assert limiter_url(CELERY_BROKER_URL="redis://broker:6379/0") == "'redis://broker:6379/0'"
    assert limiter_url(CELERY_BROKER_URL="amqp://broker//") == "''"
    assert (
        limiter_url(CELERY_BROKER_URL="redis://broker:6379/0", BENCHFORGE_LLM_LIMITER_URL="redis://slots:6379/3")
        == "'redis://slots:6379/3'"
    )

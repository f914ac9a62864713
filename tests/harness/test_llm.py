"""benchforge_harness.llm against the loopback server, through the real openai and zhipuai SDKs.

Waits (backoff, Retry-After, request pacing) go through an injected clock and sleep, so no
test really waits for them and none asserts wall-clock durations as upper bounds.
"""

import base64
import io
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import UTC

import pytest
from PIL import Image

from benchforge_harness.io import InputError
from benchforge_harness.llm import (
    ChatResponse,
    ConfigError,
    Endpoint,
    LLMClient,
    LLMError,
    ResponseCache,
    cache_key,
    load_endpoints,
    text_message,
    user_message,
)
from benchforge_harness.llm.client import BACKOFF_BASE
from tests.conftest import REPO_ROOT
from tests.fakes.llm_server import IMAGE_TOKENS, Completion, FakeLLMServer, Fault

KEY_ENV = "BENCHFORGE_TEST_LLM_KEY"
PROVIDERS = ["openai", "zhipuai"]


class FakeTime:
    """A clock that only moves when someone sleeps; every sleep is recorded."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def clock(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.now += seconds

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


class HighestJitter(random.Random):
    """Full jitter that always draws the top of its range, to expose the backoff ceiling."""

    def uniform(self, a, b):
        return b


@pytest.fixture
def fake_time():
    return FakeTime()


@pytest.fixture
def make_client(fake_llm, fake_time, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-key")
    clients = []

    def make(provider="openai", model="m", *, cache=None, real_time=False, rng=None, **settings):
        endpoint = Endpoint(
            name="ep", provider=provider, base_url=fake_llm.base_url(provider), model=model, api_key_env=KEY_ENV, **settings
        )
        timing = {} if real_time else {"sleep": fake_time.sleep, "clock": fake_time.clock}
        client = LLMClient({"ep": endpoint}, cache, rng=rng or random.Random(7), **timing)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def png_bytes(colour=(200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(out, "PNG")
    return out.getvalue()


def jpeg_bytes() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 200, 10)).save(out, "JPEG")
    return out.getvalue()


# ---------------------------------------------------------------------------- calls


@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_call_returns_text_and_usage(provider, fake_llm, make_client):
    fake_llm.script("glm", "Paris is the capital of France.")
    client = make_client(provider, "glm", params={"temperature": 0.2, "max_tokens": 50})
    messages = [text_message("system", "Answer briefly."), user_message("What is the capital of France?")]

    response = client.chat("ep", messages, max_tokens=20)

    assert response == ChatResponse(
        text="Paris is the capital of France.",
        usage={"prompt_tokens": 8, "completion_tokens": 6, "total_tokens": 14},
        cached=False,
        finish_reason="stop",
        endpoint="ep",
        model="glm",
    )
    [body] = fake_llm.requests("glm")
    assert body["model"] == "glm"
    assert body["messages"] == messages
    assert body["temperature"] == 0.2  # the endpoint's default param
    assert body["max_tokens"] == 20  # overridden by the call
    assert fake_llm.request_headers("glm")[0]["authorization"] == "Bearer test-key"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unknown_params_are_sent_in_the_body(provider, fake_llm, make_client):
    fake_llm.script("m", "ok")
    make_client(provider).chat("ep", [user_message("hi")], top_k=3)
    assert fake_llm.requests("m")[0]["top_k"] == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_image_call_sends_base64_images(provider, fake_llm, make_client, tmp_path):
    fake_llm.script("vlm", "A red square and a green square.")
    png = png_bytes()
    jpeg_path = tmp_path / "photo.jpg"
    jpeg_path.write_bytes(jpeg_bytes())
    messages = [user_message("What do you see?", [png, jpeg_path])]
    sent = json.loads(json.dumps(messages))

    response = make_client(provider, "vlm", vision=True).chat("ep", messages)

    assert response.text == "A red square and a green square."
    assert response.usage["prompt_tokens"] == 2 * IMAGE_TOKENS + 4
    [body] = fake_llm.requests("vlm")
    image_parts = [p for p in body["messages"][0]["content"] if p["type"] == "image_url"]
    urls = [p["image_url"]["url"] for p in image_parts]
    png_b64 = base64.b64encode(png).decode()
    jpeg_b64 = base64.b64encode(jpeg_path.read_bytes()).decode()
    if provider == "openai":
        assert urls == [f"data:image/png;base64,{png_b64}", f"data:image/jpeg;base64,{jpeg_b64}"]
    else:  # the zhipuai SDK strips the data-URL prefix: its API takes bare base64
        assert urls == [png_b64, jpeg_b64]
    assert body["messages"][0]["content"][-1] == {"type": "text", "text": "What do you see?"}
    assert messages == sent  # the caller's messages are never rewritten


def test_user_message_rejects_what_is_not_an_image(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    with pytest.raises(InputError, match="notes.txt: not a JPEG, PNG, GIF, WEBP or BMP image"):
        user_message("q", [notes])
    with pytest.raises(InputError, match="missing.png: cannot read the image"):
        user_message("q", [tmp_path / "missing.png"])
    assert user_message("q") == {"role": "user", "content": "q"}


def test_text_only_endpoint_refuses_images_without_a_request(fake_llm, make_client):
    fake_llm.script("m", "ok")
    with pytest.raises(LLMError, match="vision = false"):
        make_client().chat("ep", [user_message("q", [png_bytes()])])
    assert fake_llm.requests() == []


# ---------------------------------------------------------------------------- retries and failures


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_with_retry_after_is_retried_after_the_wait_the_server_asked_for(provider, fake_llm, make_client, fake_time):
    fake_llm.script("m", [Fault.rate_limited(retry_after=2), Fault.rate_limited(retry_after=3), "finally"])
    client = make_client(provider)

    assert client.chat("ep", [user_message("q")]).text == "finally"

    assert len(fake_llm.requests("m")) == 3
    # Full jitter draws at most 0.5 s then 1 s here: the server's Retry-After dominates.
    assert fake_time.sleeps == [2.0, 3.0]
    assert client.usage["ep"] == {
        "calls": 3,
        "cache_hits": 0,
        "retries": 2,
        "failures": 0,
        "prompt_tokens": 1,
        "completion_tokens": 1,
    }


def test_retry_after_header_forms():
    from datetime import datetime, timedelta
    from email.utils import format_datetime

    from benchforge_harness.llm.providers import RETRY_AFTER_CAP, parse_retry_after

    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    in_a_minute = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    assert 50 < parse_retry_after({"retry-after": in_a_minute}) <= 60
    assert parse_retry_after({"retry-after": "86400"}) == RETRY_AFTER_CAP
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_grows_exponentially_with_full_jitter(fake_llm, make_client, fake_time):
    fake_llm.script("m", [Fault.server_error(503), Fault.server_error(502), Fault.server_error(500), "ok"])
    assert make_client(rng=HighestJitter()).chat("ep", [user_message("q")]).text == "ok"
    assert fake_time.sleeps == [BACKOFF_BASE, BACKOFF_BASE * 2, BACKOFF_BASE * 4]

    fake_llm.reset()
    fake_time.sleeps.clear()
    make_client(rng=random.Random(3)).chat("ep", [user_message("q2")])
    assert len(fake_time.sleeps) == 3
    for attempt, slept in enumerate(fake_time.sleeps):
        assert 0 <= slept <= BACKOFF_BASE * 2**attempt


@pytest.mark.parametrize("provider", PROVIDERS)
def test_persistent_server_error_fails_clearly_after_exactly_the_retry_budget(provider, fake_llm, make_client, fake_time):
    fake_llm.script("m", Fault.server_error(500))
    client = make_client(provider, max_retries=3)

    with pytest.raises(LLMError) as caught:
        client.chat("ep", [user_message("q")])

    error = caught.value
    assert (error.endpoint, error.attempts, error.status, error.transient) == ("ep", 4, 500, True)
    assert "HTTP 500" in str(error) and "gave up after 4 attempts" in str(error) and "max_retries" in str(error)
    assert len(fake_llm.requests("m")) == 4  # ours only: the SDK's own retries are off
    assert len(fake_time.sleeps) == 3
    assert client.usage["ep"] == {
        "calls": 4,
        "cache_hits": 0,
        "retries": 3,
        "failures": 1,
        "prompt_tokens": 0,
        "completion_tokens": 0,
    }


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_hung_server_times_out_and_fails_after_the_budget(provider, fake_llm, make_client):
    fake_llm.script("m", Fault.hang())
    with pytest.raises(LLMError) as caught:
        make_client(provider, timeout=0.2, max_retries=1).chat("ep", [user_message("q")])
    assert caught.value.attempts == 2 and caught.value.status is None
    assert "no answer within timeout = 0.2s" in str(caught.value)
    assert len(fake_llm.requests("m")) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_non_retryable_400_fails_at_once(provider, fake_llm, make_client, fake_time):
    fake_llm.script("m", [Fault.bad_request("temperature must be at most 2"), "never reached"])
    with pytest.raises(LLMError) as caught:
        make_client(provider).chat("ep", [user_message("q")])
    error = caught.value
    assert (error.attempts, error.status, error.transient) == (1, 400, False)
    assert "temperature must be at most 2" in str(error) and "retrying will not help" in str(error)
    assert len(fake_llm.requests("m")) == 1
    assert fake_time.sleeps == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rejected_key_names_the_variable_to_check(provider, fake_llm, make_client):
    fake_llm.script("m", Fault(status=401, body={"error": {"message": "invalid api key"}}))
    with pytest.raises(LLMError, match=f"invalid api key.*check the environment variable {KEY_ENV}"):
        make_client(provider).chat("ep", [user_message("q")])
    assert len(fake_llm.requests("m")) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_bodies_are_retried(provider, fake_llm, make_client):
    fake_llm.script(
        "m",
        [Fault.malformed_body(), Fault(status=200, body={"id": "no-choices"}), Fault(status=200, body='"a bare string"'), "ok"],
    )
    client = make_client(provider)
    assert client.chat("ep", [user_message("q")]).text == "ok"
    assert len(fake_llm.requests("m")) == 4

    fake_llm.script("m", Fault.malformed_body())
    with pytest.raises(LLMError, match="not a chat completion") as caught:
        client.chat("ep", [user_message("another question")])
    assert caught.value.attempts == 7  # the default budget: 1 + max_retries 6


def test_unreachable_server_is_a_clear_connection_error(monkeypatch, fake_time):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(KEY_ENV, "k")
    endpoint = Endpoint(
        name="ep", provider="openai", base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key_env=KEY_ENV, max_retries=1
    )
    with (
        LLMClient({"ep": endpoint}, sleep=fake_time.sleep, clock=fake_time.clock) as client,
        pytest.raises(LLMError, match=f"cannot connect to http://127.0.0.1:{port}/v1") as caught,
    ):
        client.chat("ep", [user_message("q")])
    assert caught.value.attempts == 2


def test_unset_key_variable_says_which_to_set(fake_llm, make_client, monkeypatch):
    fake_llm.script("m", "ok")
    client = make_client()
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(LLMError, match=f"environment variable {KEY_ENV} is not set; set it to the API key"):
        client.chat("ep", [user_message("q")])
    assert fake_llm.requests() == []


def test_params_cannot_override_the_model_or_ask_for_streaming(fake_llm, make_client):
    fake_llm.script("m", "ok")
    client = make_client()
    for params in ({"model": "other"}, {"stream": True}):
        with pytest.raises(LLMError, match="cannot be passed as params"):
            client.chat("ep", [user_message("q")], **params)
    assert fake_llm.requests() == []


def test_llm_error_keeps_its_details_when_pickled():
    import pickle

    error = pickle.loads(pickle.dumps(LLMError("rate limited", endpoint="glm4", attempts=7, status=429, transient=True)))
    assert (str(error), error.endpoint, error.attempts, error.status, error.transient) == ("rate limited", "glm4", 7, 429, True)


def test_importing_the_module_loads_no_provider_sdk():
    code = "import sys, benchforge_harness.llm; print(sorted(m for m in ('openai', 'zai', 'zhipuai', 'httpx', 'django') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unknown_endpoint_name_is_a_config_error(make_client):
    with pytest.raises(ConfigError, match="no endpoint named 'nope'.*declared: ep"):
        make_client().chat("nope", [user_message("q")])


# ---------------------------------------------------------------------------- cache


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cache_turns_a_repeated_call_into_zero_requests_across_clients(provider, fake_llm, make_client, tmp_path):
    fake_llm.script("m", "cached answer")
    path = tmp_path / "llm-cache.sqlite3"
    messages = [user_message("What is 2 + 2?")]

    with ResponseCache(path) as cache:
        client = make_client(provider, cache=cache)
        first = client.chat("ep", messages, temperature=0.5)
        again = client.chat("ep", messages, temperature=0.5)
        assert len(fake_llm.requests("m")) == 1
        assert (first.cached, again.cached) == (False, True)
        assert again.text == first.text and again.usage == first.usage
        assert client.usage["ep"]["calls"] == 1 and client.usage["ep"]["cache_hits"] == 1

    with ResponseCache(path) as cache:  # another process or job, same file
        other = make_client(provider, cache=cache)
        assert other.chat("ep", messages, temperature=0.5).text == "cached answer"
        assert len(fake_llm.requests("m")) == 1
        assert other.usage["ep"] == {
            "calls": 0,
            "cache_hits": 1,
            "retries": 0,
            "failures": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
        }
        other.chat("ep", messages, temperature=0.9)  # different params: a different call
        assert len(fake_llm.requests("m")) == 2


def test_cached_calls_need_no_key(fake_llm, make_client, monkeypatch, tmp_path):
    fake_llm.script("m", "ok")
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        make_client(cache=cache).chat("ep", [user_message("q")])
        monkeypatch.delenv(KEY_ENV)
        assert make_client(cache=cache).chat("ep", [user_message("q")]).cached


def test_failed_calls_are_not_cached(fake_llm, make_client, tmp_path):
    fake_llm.script("m", [Fault.bad_request(), "ok"])
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        client = make_client(cache=cache)
        with pytest.raises(LLMError):
            client.chat("ep", [user_message("q")])
        assert client.chat("ep", [user_message("q")]).text == "ok"
        assert len(cache) == 1


def test_identical_concurrent_calls_are_paid_once(fake_llm, make_client, tmp_path):
    fake_llm.script("m", "shared")
    fake_llm.set_latency(0.05)
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        client = make_client(cache=cache, max_concurrency=8)
        results = client.chat_many("ep", [[user_message("same question")]] * 10)
    assert [r.text for r in results] == ["shared"] * 10
    assert len(fake_llm.requests("m")) == 1
    assert client.usage["ep"]["calls"] == 1 and client.usage["ep"]["cache_hits"] == 9


def test_cache_key_covers_what_decides_the_answer():
    endpoint = Endpoint(name="a", provider="openai", base_url="http://x/v1", model="m", api_key_env="K")
    messages = [user_message("q")]
    key = cache_key(endpoint, messages, {"temperature": 0, "max_tokens": 5})
    assert key == cache_key(endpoint, messages, {"max_tokens": 5, "temperature": 0})  # order-free
    assert len(key) == 64
    renamed = Endpoint(name="b", provider="openai", base_url="http://x/v1", model="m", api_key_env="OTHER")
    assert key == cache_key(renamed, messages, {"temperature": 0, "max_tokens": 5})  # name and key do not matter
    for changed in (
        cache_key(
            Endpoint(name="a", provider="openai", base_url="http://x/v1", model="m2", api_key_env="K"),
            messages,
            {"temperature": 0, "max_tokens": 5},
        ),
        cache_key(
            Endpoint(name="a", provider="openai", base_url="http://y/v1", model="m", api_key_env="K"),
            messages,
            {"temperature": 0, "max_tokens": 5},
        ),
        cache_key(
            Endpoint(name="a", provider="zhipuai", base_url="http://x/v1", model="m", api_key_env="K"),
            messages,
            {"temperature": 0, "max_tokens": 5},
        ),
        cache_key(endpoint, [user_message("q2")], {"temperature": 0, "max_tokens": 5}),
        cache_key(endpoint, messages, {"temperature": 0.1, "max_tokens": 5}),
    ):
        assert changed != key


def test_unusable_cache_file_is_a_clear_error(tmp_path):
    from benchforge_harness.llm import CacheError

    path = tmp_path / "cache.sqlite3"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(CacheError, match="cache.sqlite3: cannot use this file as the LLM response cache"):
        ResponseCache(path)


def test_cache_disabled_with_none_path(fake_llm, make_client):
    fake_llm.script("m", "ok")
    client = make_client(cache=ResponseCache(None))
    client.chat("ep", [user_message("q")])
    client.chat("ep", [user_message("q")])
    assert len(fake_llm.requests("m")) == 2


# ---------------------------------------------------------------------------- batches, concurrency, rate


def echo_question(body: dict) -> str:
    return "answer to " + body["messages"][-1]["content"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_chat_many_never_exceeds_the_endpoint_concurrency(provider, fake_llm, make_client):
    fake_llm.script("m", echo_question)
    fake_llm.set_latency(0.05)
    client = make_client(provider, max_concurrency=4)

    results = client.chat_many("ep", [[user_message(f"q{i}")] for i in range(40)])

    assert [r.text for r in results] == [f"answer to q{i}" for i in range(40)]  # input order
    assert fake_llm.max_in_flight("m") == 4
    assert fake_llm.connections_opened() <= 4  # one pooled SDK client per endpoint


def test_concurrency_bound_is_shared_by_every_caller_of_one_client(fake_llm, make_client):
    fake_llm.script("m", echo_question)
    fake_llm.set_latency(0.1)
    client = make_client(max_concurrency=3)
    batches = [[[user_message(f"{t}-{i}")] for i in range(9)] for t in range(3)]
    threads = [threading.Thread(target=client.chat_many, args=("ep", batch)) for batch in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fake_llm.requests("m")) == 27
    assert fake_llm.max_in_flight("m") == 3


def test_chat_many_returns_failures_as_results_and_reports_progress(fake_llm, make_client):
    def odd_items_rejected(body):
        number = int(body["messages"][0]["content"])
        return Fault.bad_request(f"item {number} is bad") if number % 2 else f"ok {number}"

    fake_llm.script("m", odd_items_rejected)
    client = make_client(max_concurrency=3)
    seen = []
    caller = threading.get_ident()

    def on_result(index, result):
        assert threading.get_ident() == caller
        seen.append(index)

    requests = [[user_message(str(i))] for i in range(6)] + ["not a message list", ([user_message("6")], {"max_tokens": 5})]
    results = client.chat_many("ep", requests, on_result=on_result)

    assert sorted(seen) == list(range(8))
    assert [r.text for r in results[0:6:2]] == ["ok 0", "ok 2", "ok 4"]
    assert all(isinstance(r, LLMError) and r.status == 400 for r in results[1:6:2])
    assert "item 3 is bad" in str(results[3])
    assert isinstance(results[6], LLMError) and "messages must be a non-empty list" in str(results[6])
    assert results[7].text == "ok 6"
    [item_7] = [body for body in fake_llm.requests("m") if body["messages"][0]["content"] == "6"]
    assert item_7["max_tokens"] == 5
    assert client.usage["ep"]["failures"] == 4


def test_an_error_in_on_result_stops_the_batch(fake_llm, make_client):
    fake_llm.script("m", "ok")

    def explode(index, result):
        raise RuntimeError("progress bar broke")

    with pytest.raises(RuntimeError, match="progress bar broke"):
        make_client(max_concurrency=1).chat_many("ep", [[user_message(str(i))] for i in range(50)], on_result=explode)
    assert len(fake_llm.requests("m")) < 50


def test_requests_per_minute_spaces_starts_evenly_without_bursts(fake_llm, make_client, fake_time):
    fake_llm.script("m", "ok")
    client = make_client(requests_per_minute=60)
    for i in range(4):
        client.chat("ep", [user_message(f"q{i}")])
    assert fake_time.sleeps == [1.0, 1.0, 1.0]

    fake_time.advance(30)  # an idle half minute earns no burst
    fake_time.sleeps.clear()
    for i in range(3):
        client.chat("ep", [user_message(f"later {i}")])
    assert fake_time.sleeps == [1.0, 1.0]


def test_requests_per_minute_holds_under_concurrency(fake_llm, make_client):
    fake_llm.script("m", "ok")
    client = make_client(requests_per_minute=1200, max_concurrency=8, real_time=True)  # one start per 50 ms
    started = time.monotonic()
    results = client.chat_many("ep", [[user_message(f"q{i}")] for i in range(6)])
    assert all(r.text == "ok" for r in results)
    assert time.monotonic() - started >= 5 * 0.05  # 6 starts need at least 5 gaps, whatever the concurrency


def test_retry_after_pauses_the_whole_endpoint(fake_llm, make_client, fake_time):
    fake_llm.script("m", lambda body: Fault.rate_limited(retry_after=5) if body["messages"][0]["content"] == "first" else "ok")
    client = make_client(max_retries=0)
    with pytest.raises(LLMError):
        client.chat("ep", [user_message("first")])
    client.chat("ep", [user_message("second")])  # another call waits out the server's Retry-After
    assert fake_time.sleeps == [5.0]


# ---------------------------------------------------------------------------- configuration


def write(tmp_path, text: str):
    path = tmp_path / "models.toml"
    path.write_text(text)
    return path


def test_example_models_file_loads():
    endpoints = load_endpoints(REPO_ROOT / "docs" / "models.toml.example")
    glm = endpoints["glm4"]
    assert (glm.provider, glm.model, glm.api_key_env, glm.vision) == ("zhipuai", "glm-4", "ZHIPUAI_API_KEY", False)
    assert (glm.max_concurrency, glm.requests_per_minute, glm.timeout, glm.max_retries) == (8, 600, 60.0, 6)
    assert glm.params == {"temperature": 0, "max_tokens": 1024}
    assert endpoints["gpt4o"].base_url == "https://api.openai.com/v1"  # the provider default
    assert endpoints["glm4v"].vision and endpoints["glm4v"].max_concurrency == 4


def test_minimal_endpoint_gets_defaults(tmp_path):
    [endpoint] = load_endpoints(write(tmp_path, '[models.a]\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\n')).values()
    assert endpoint == Endpoint(
        name="a",
        provider="openai",
        base_url="https://api.openai.com/v1",
        model="m",
        api_key_env="K",
        vision=False,
        max_concurrency=4,
        requests_per_minute=None,
        timeout=60.0,
        max_retries=6,
        params={},
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("[models.a\nprovider = 1", r"models.toml: not valid TOML"),
        ("title = 'x'\n", r"unknown top-level key\(s\) title"),
        ("", r"declares no endpoints"),
        (
            '[models.a]\nprovider = "anthropic"\nmodel = "m"\napi_key_env = "K"',
            r'\[models.a\] provider = \'anthropic\': expected "openai" or "zhipuai"',
        ),
        ('[models.a]\nprovider = "openai"\nmodel = "m"', r"\[models.a\]: missing api_key_env"),
        ('[models.a]\nprovider = "openai"\napi_key_env = "K"', r"\[models.a\]: missing model"),
        (
            '[models.a]\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\nmax_concurrency = "8"',
            r"max_concurrency = '8': expected a whole number >= 1",
        ),
        (
            '[models.a]\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\nmax_concurrency = 0',
            r"max_concurrency = 0: expected a whole number >= 1",
        ),
        (
            '[models.a]\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\nvision = "yes"',
            r"vision = 'yes': expected true or false",
        ),
        ('[models.a]\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\ntimeout = -1', r"timeout = -1: expected seconds"),
        (
            '[models.a]\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\nrequests_per_minute = true',
            r"requests_per_minute = True: expected a number > 0",
        ),
        (
            '[models.a]\nprovider = "openai"\nmodel = "m"\napi_key_env = "sk-abc123"',
            r"api_key_env = 'sk-abc123': expected the NAME",
        ),
        (
            '[models.a]\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\napi_key = "sk-1"',
            r"api_key: keys never go in the models file",
        ),
        (
            '[models.a]\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\nmax_concurency = 3',
            r"unknown key\(s\) max_concurency; allowed:",
        ),
        (
            '[models.a]\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\nbase_url = "api.openai.com"',
            r"base_url = 'api.openai.com': expected an http",
        ),
        (
            '[models.a]\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\n[models.a.params]\nmodel = "x"',
            r"params: model cannot be set here",
        ),
        ("models = 3", r"declares no endpoints"),
        ("[models]\na = 3", r"\[models.a\]: expected a table"),
    ],
)
def test_bad_models_file_names_file_and_key(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message) as caught:
        load_endpoints(write(tmp_path, text))
    assert str(tmp_path / "models.toml") in str(caught.value)


def test_missing_models_file(tmp_path):
    with pytest.raises(ConfigError, match=r"nowhere.toml: models file not found; create it \(docs/models.toml.example"):
        load_endpoints(tmp_path / "nowhere.toml")


# ---------------------------------------------------------------------------- the fake server itself


def test_fake_server_serves_many_concurrent_requests_on_one_thread():
    # The barrier makes all 64 clients send at once, and 2 s of latency leaves a loaded CI
    # machine ample time to get every one of them connected before the first reply.
    with FakeLLMServer(latency=2.0) as server:
        server.script("m", "ok")
        threads_before = threading.active_count()
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
        all_ready = threading.Barrier(64)

        def post(_):
            all_ready.wait(timeout=30)
            request = urllib.request.Request(
                server.url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.load(response)["choices"][0]["message"]["content"]

        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(64) as pool:
            assert list(pool.map(post, range(64))) == ["ok"] * 64
        assert server.max_in_flight("m") == 64
        assert threading.active_count() == threads_before  # the server added no thread per request


def test_fake_server_names_unscripted_models():
    with FakeLLMServer() as server:
        request = urllib.request.Request(
            server.url + "/v1/chat/completions", data=json.dumps({"model": "ghost", "messages": []}).encode()
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 404
        assert "model 'ghost' is not scripted" in json.load(caught.value)["error"]["message"]


def test_fake_server_runs_standalone():
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.llm_server", "--port", "0", "--reply", "standalone"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = process.stdout.readline().strip()
        request = urllib.request.Request(
            url + "/api/paas/v4/chat/completions",
            data=json.dumps({"model": "any", "messages": [{"role": "user", "content": "x"}]}).encode(),
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            reply = json.load(response)
        assert reply["choices"][0]["message"]["content"] == "standalone"
        with urllib.request.urlopen(url + "/fake/stats", timeout=10) as response:
            assert json.load(response) == {"requests": 1, "max_in_flight": 1}
    finally:
        process.terminate()
        process.wait(timeout=10)


# ---------------------------------------------------------------------------- empty replies


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "reply, what",
    [
        (Completion(None, "content_filter"), "content filter"),
        (Completion("Partial answer that was cut", "content_filter"), "content filter"),
        (Completion(None, "stop"), "no content"),
        (Completion("", "stop"), "no content"),
        (Completion("  \n", "length"), "no content"),
    ],
)
def test_a_reply_without_content_is_a_failure_and_never_cached(provider, reply, what, fake_llm, make_client, tmp_path, fake_time):
    fake_llm.script("m", reply)
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        client = make_client(provider, cache=cache)
        with pytest.raises(LLMError, match=what) as caught:
            client.chat("ep", [user_message("q")])
        error = caught.value
        assert error.transient is False and error.attempts == 1 and fake_time.sleeps == []  # not retried
        assert "counts as a failed call" in str(error)
        assert len(cache) == 0
        assert client.usage["ep"]["failures"] == 1 and client.usage["ep"]["calls"] == 1

        fake_llm.script("m", "a real answer")  # asked again, the call is made: nothing empty was stored
        assert client.chat("ep", [user_message("q")]).text == "a real answer"
        assert len(cache) == 1 and len(fake_llm.requests("m")) == 2


def test_an_empty_reply_left_in_a_cache_by_an_older_harness_is_a_miss(fake_llm, make_client):
    class DictCache:
        def __init__(self):
            self.data = {}

        def get(self, key):
            return self.data.get(key)

        def put(self, key, value):
            self.data[key] = value

    cache = DictCache()
    fake_llm.script("m", "fresh")
    client = make_client(cache=cache)
    client.chat("ep", [user_message("q")])
    [key] = cache.data
    cache.data[key] = {"text": "", "usage": {}, "finish_reason": "content_filter", "model": "m"}
    assert client.chat("ep", [user_message("q")]).text == "fresh"
    assert len(fake_llm.requests("m")) == 2


# ---------------------------------------------------------------------------- pluggable cache


def test_any_object_with_get_and_put_is_a_cache(fake_llm, make_client):
    class DictCache:
        def __init__(self):
            self.data, self.gets, self.puts = {}, 0, 0

        def get(self, key):
            self.gets += 1
            return self.data.get(key)

        def put(self, key, value):
            self.puts += 1
            self.data[key] = json.loads(json.dumps(value))  # as a database would store it

    cache = DictCache()
    fake_llm.script("m", "stored elsewhere")
    fake_llm.set_latency(0.05)
    first = make_client(cache=cache, max_concurrency=8)
    results = first.chat_many("ep", [[user_message("same")]] * 6 + [[user_message("other")]])
    assert [r.text for r in results] == ["stored elsewhere"] * 7
    assert len(fake_llm.requests("m")) == 2  # identical concurrent calls waited for the first
    assert cache.puts == 2 and len(cache.data) == 2
    second = make_client(cache=cache)  # another job, another process: same store
    assert second.chat("ep", [user_message("same")]).cached
    assert len(fake_llm.requests("m")) == 2


# ---------------------------------------------------------------------------- concurrency bound across clients


def run_batches(clients, per_client=9, endpoint="ep"):
    threads = [
        threading.Thread(target=c.chat_many, args=(endpoint, [[user_message(f"{n}-{i}")] for i in range(per_client)]))
        for n, c in enumerate(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_two_clients_of_one_endpoint_share_its_concurrency_bound(fake_llm, make_client):
    fake_llm.script("m", "ok")
    fake_llm.set_latency(0.1)
    clients = [make_client(max_concurrency=3, real_time=True) for _ in range(2)]
    run_batches(clients)
    assert len(fake_llm.requests("m")) == 18
    assert fake_llm.max_in_flight("m") == 3  # not 6: one bound per endpoint in the process


def test_names_sharing_an_endpoint_take_the_smaller_limit(fake_llm, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k")
    fake_llm.script("m", "ok")
    fake_llm.set_latency(0.1)
    wide = Endpoint(
        name="wide", provider="openai", base_url=fake_llm.base_url("openai"), model="m", api_key_env=KEY_ENV, max_concurrency=6
    )
    narrow = Endpoint(
        name="narrow", provider="openai", base_url=fake_llm.base_url("openai"), model="m", api_key_env=KEY_ENV, max_concurrency=2
    )
    with LLMClient({"wide": wide}) as a, LLMClient({"narrow": narrow}) as b:
        threads = [
            threading.Thread(target=a.chat_many, args=("wide", [[user_message(f"a{i}")] for i in range(12)])),
            threading.Thread(target=b.chat_many, args=("narrow", [[user_message(f"b{i}")] for i in range(6)])),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(fake_llm.requests("m")) == 18
    assert fake_llm.max_in_flight("m") == 2


def test_another_endpoint_identity_has_its_own_bound(fake_llm, make_client):
    fake_llm.script("m", "ok")
    fake_llm.script("m2", "ok")
    fake_llm.set_latency(0.1)
    run_batches(
        [make_client(model="m", max_concurrency=2, real_time=True), make_client(model="m2", max_concurrency=2, real_time=True)]
    )
    assert fake_llm.max_in_flight() == 4  # two models, two bounds of 2
    assert fake_llm.max_in_flight("m") == 2 and fake_llm.max_in_flight("m2") == 2


def test_a_plugged_limiter_decides_every_request(fake_llm, monkeypatch):
    """What the platform's Redis limiter does across hosts, here with a counter in one process."""
    import contextlib

    class OneAtATimeLimiter:
        def __init__(self):
            self.lock = threading.Semaphore(1)
            self.slots_given = []

        @contextlib.contextmanager
        def slot(self, endpoint):
            with self.lock:
                self.slots_given.append(endpoint.identity)
                yield

    monkeypatch.setenv(KEY_ENV, "k")
    fake_llm.script("m", "ok")
    fake_llm.set_latency(0.05)
    endpoint = Endpoint(
        name="ep", provider="openai", base_url=fake_llm.base_url("openai"), model="m", api_key_env=KEY_ENV, max_concurrency=8
    )
    limiter = OneAtATimeLimiter()
    with LLMClient({"ep": endpoint}, limiter=limiter) as client:
        client.chat_many("ep", [[user_message(f"q{i}")] for i in range(6)])
    assert fake_llm.max_in_flight("m") == 1
    assert limiter.slots_given == [("openai", fake_llm.base_url("openai"), "m")] * 6


def test_fork_shared_limiter_bounds_processes_together(fake_llm, monkeypatch):
    import multiprocessing

    from benchforge_harness.llm.limits import ForkSharedLimiter, set_process_limiter

    monkeypatch.setenv(KEY_ENV, "k")
    fake_llm.script("m", "ok")
    fake_llm.set_latency(0.05)
    endpoint = Endpoint(
        name="ep", provider="openai", base_url=fake_llm.base_url("openai"), model="m", api_key_env=KEY_ENV, max_concurrency=2
    )
    context = multiprocessing.get_context("fork")
    shared = ForkSharedLimiter([endpoint], context)

    def child(index):
        set_process_limiter(shared)
        with LLMClient({"ep": endpoint}) as client:
            results = client.chat_many("ep", [[user_message(f"{index}-{i}")] for i in range(6)])
        os._exit(0 if all(hasattr(r, "text") for r in results) else 1)

    processes = [context.Process(target=child, args=(i,)) for i in range(3)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(30)
    assert [p.exitcode for p in processes] == [0, 0, 0]
    assert len(fake_llm.requests("m")) == 18
    assert fake_llm.max_in_flight("m") == 2


# ---------------------------------------------------------------------------- prices, estimates, cost


def test_prices_are_read_and_validated(tmp_path):
    base = '[models.a]\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\n'
    [endpoint] = load_endpoints(write(tmp_path, base + "input_cost_per_mtok = 2.5\noutput_cost_per_mtok = 10\n")).values()
    assert (endpoint.input_cost_per_mtok, endpoint.output_cost_per_mtok) == (2.5, 10)
    for bad in (
        "input_cost_per_mtok = -1",
        'output_cost_per_mtok = "5"',
        "input_cost_per_mtok = nan",
        "output_cost_per_mtok = true",
    ):
        with pytest.raises(ConfigError, match=r"_cost_per_mtok = .*: expected a price per million tokens, a number >= 0"):
            load_endpoints(write(tmp_path, base + bad + "\n"))


def test_cost_of_a_usage():
    from benchforge_harness.llm import cost

    priced = Endpoint(
        name="a",
        provider="openai",
        base_url="http://x/v1",
        model="m",
        api_key_env="K",
        input_cost_per_mtok=2.0,
        output_cost_per_mtok=8.0,
    )
    assert cost(priced, {"prompt_tokens": 1_000_000, "completion_tokens": 500_000}) == pytest.approx(6.0)
    assert cost(priced, {"prompt_tokens": 1200, "completion_tokens": 300, "calls": 3}) == pytest.approx(0.0048)
    input_only = Endpoint(
        name="a", provider="openai", base_url="http://x/v1", model="m", api_key_env="K", input_cost_per_mtok=1.0
    )
    assert cost(input_only, {"prompt_tokens": 2_000_000, "completion_tokens": 7}) == pytest.approx(2.0)
    unpriced = Endpoint(name="a", provider="openai", base_url="http://x/v1", model="m", api_key_env="K")
    assert cost(unpriced, {"prompt_tokens": 10, "completion_tokens": 10}) is None


def test_token_estimates_follow_the_documented_rule():
    from benchforge_harness.llm import (
        IMAGE_TOKENS,
        estimate_prompt_tokens,
        estimate_text_tokens,
        estimate_usage,
    )
    from benchforge_harness.llm.cost import MESSAGE_OVERHEAD

    assert estimate_text_tokens("abcd" * 10) == 10  # Latin: 4 characters a token
    assert estimate_text_tokens("abcde") == 2  # rounded up
    assert estimate_text_tokens("这张图片里有几个苹果") == 10  # CJK: one a character
    assert estimate_text_tokens("苹果 apples") == 2 + 2  # "苹果" 2, " apples" 7 Latin characters -> 2
    messages = [text_message("system", "abcd" * 5), user_message("几个", [png_bytes(), png_bytes()])]
    assert estimate_prompt_tokens(messages) == 2 * MESSAGE_OVERHEAD + 5 + 2 + 2 * IMAGE_TOKENS
    assert estimate_prompt_tokens(messages, image_tokens=85) == 2 * MESSAGE_OVERHEAD + 5 + 2 + 2 * 85
    usage = estimate_usage([messages, [user_message("abcd")]], expected_completion_tokens=100)
    assert usage == {
        "calls": 2,
        "prompt_tokens": 2 * MESSAGE_OVERHEAD + 7 + 2 * IMAGE_TOKENS + MESSAGE_OVERHEAD + 1,
        "completion_tokens": 200,
    }


def test_client_reports_cost_of_paid_calls_only(fake_llm, make_client, tmp_path):
    fake_llm.script("m", "one two three four")  # 4 completion tokens
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        client = make_client(cache=cache, input_cost_per_mtok=1_000_000.0, output_cost_per_mtok=2_000_000.0)
        client.chat("ep", [user_message("five words in this prompt")])
        client.chat("ep", [user_message("five words in this prompt")])  # cached: free
        assert client.usage["ep"]["prompt_tokens"] == 5 and client.usage["ep"]["completion_tokens"] == 4
        assert client.costs == {"ep": pytest.approx(5 * 1.0 + 4 * 2.0)}
    assert make_client().costs == {"ep": None}


# ---------------------------------------------------------------------------- preflight


def test_check_names_every_problem_before_any_request(fake_llm, make_client, monkeypatch):
    client = make_client()
    client.check(["ep"])
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ConfigError) as caught:
        client.check(["ep", "ghost"])
    message = str(caught.value)
    assert f"environment variable {KEY_ENV} is not set" in message and "no endpoint named 'ghost'" in message
    assert fake_llm.requests() == []


# ---------------------------------------------------------------------------- GLM SDKs


def test_glm_calls_go_through_zai_sdk(fake_llm, make_client):
    from benchforge_harness.llm import glm_sdk

    client_class, _ = glm_sdk()
    assert client_class.__module__.startswith("zai")  # the project's GLM SDK is zai-sdk
    fake_llm.script("glm-4", "你好")
    client = make_client("zhipuai", "glm-4", params={"temperature": 0.3})
    assert client.chat("ep", [user_message("hi")]).text == "你好"
    [headers] = fake_llm.request_headers("glm-4")
    assert headers["authorization"] == "Bearer test-key"
    assert fake_llm.requests("glm-4")[0]["temperature"] == 0.3


GLM_CALL = """
import json, sys
from benchforge_harness.llm import Endpoint, LLMClient, glm_sdk, user_message
client_class, _ = glm_sdk()
endpoint = Endpoint(name="glm", provider="zhipuai", base_url=sys.argv[1], model="glm-4", api_key_env="GLM_TEST_KEY")
with LLMClient({"glm": endpoint}) as client:
    reply = client.chat("glm", [user_message("hello from an old release")])
    print(json.dumps({"sdk": client_class.__module__, "text": reply.text}))
"""

BLOCK_IMPORTS = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Block())
"""


@pytest.fixture(scope="session")
def zhipuai_only_python(tmp_path_factory):
    """A Python that has the older zhipuai SDK and neither zai-sdk nor openai: what a release's
    harness may meet. A throwaway virtualenv, installed from the package index."""
    folder = tmp_path_factory.mktemp("zhipuai-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "zhipuai>=2.1.5,<2.2", "sniffio"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return python if done.returncode == 0 else done.stderr[-2000:]


def test_glm_falls_back_to_the_older_zhipuai_package(zhipuai_only_python, fake_llm):
    from tests.conftest import require

    require(
        not isinstance(zhipuai_only_python, str),
        f"the zhipuai package from the package index (pip said: {zhipuai_only_python!s:.300})",
    )
    python = zhipuai_only_python
    absent = subprocess.run([str(python), "-c", "import zai"], capture_output=True, text=True, check=False)
    assert absent.returncode != 0  # really only zhipuai there
    fake_llm.script("glm-4", "hello from zhipuai")
    done = subprocess.run(
        [str(python), "-c", GLM_CALL, fake_llm.base_url("zhipuai")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO_ROOT), "GLM_TEST_KEY": "id.secret", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"sdk": "zhipuai._client", "text": "hello from zhipuai"}
    [body] = fake_llm.requests("glm-4")
    assert body["messages"] == [{"role": "user", "content": "hello from an old release"}]


def test_without_any_glm_sdk_the_error_names_both(fake_llm):
    fake_llm.script("glm-4", "never")
    code = BLOCK_IMPORTS.format(blocked={"zai", "zhipuai"}) + GLM_CALL
    done = subprocess.run(
        [sys.executable, "-c", code, fake_llm.base_url("zhipuai")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO_ROOT), "GLM_TEST_KEY": "k", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode != 0
    assert "needs zai-sdk (pip install zai-sdk) or the older zhipuai package (pip install zhipuai sniffio)" in done.stderr
    assert fake_llm.requests() == []

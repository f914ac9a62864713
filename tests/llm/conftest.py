"""Fixtures for the llm app: a models file pointing at the loopback server, settings without
Redis unless a test asks for it, and helpers to build calls."""

import json
import socket
import uuid
from urllib.parse import urlparse

import pytest

from benchforge_harness.llm import user_message
from tests.conftest import REDIS_URL  # this test process's own Redis database (xdist workers differ)

KEY_ENV = "BENCHFORGE_TEST_LLM_KEY"


def redis_available(url: str = REDIS_URL) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname, parsed.port or 6379), timeout=1):
            return True
    except OSError:
        return False


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def models_toml(endpoints: dict[str, dict]) -> str:
    return "".join(
        f"[models.{name}]\n" + "".join(f"{key} = {toml_value(value)}\n" for key, value in table.items()) + "\n"
        for name, table in endpoints.items()
    )


@pytest.fixture(autouse=True)
def _llm_settings(settings):
    # No Redis unless a test asks: the database cache and the process limiter.
    settings.BENCHFORGE_LLM_CACHE_URL = ""
    settings.BENCHFORGE_LLM_LIMITER_URL = ""
    settings.BENCHFORGE_LLM_REDIS_PREFIX = f"bf-test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def declare(fake_llm, tmp_path, settings, monkeypatch):
    """declare(name="ep", provider="openai", model="m", **keys): write the models file with that
    endpoint (added to those declared before) on the fake server; returns the file's path."""
    monkeypatch.setenv(KEY_ENV, "id.secret")
    path = tmp_path / "models.toml"
    declared: dict[str, dict] = {}

    def declare_(name="ep", provider="openai", model="m", **keys):
        table = {
            "provider": provider,
            "base_url": fake_llm.base_url(provider),
            "model": model,
            "api_key_env": KEY_ENV,
            "max_retries": 2,
            "timeout": 5,
        }
        table.update(keys)
        declared[name] = table
        path.write_text(models_toml(declared))
        settings.BENCHFORGE_MODELS = path
        return path

    return declare_


def calls_for(n: int, prefix: str = "question", **params) -> list[dict]:
    return [
        {"key": f"c{i:04d}", "messages": [user_message(f"{prefix} {i}: which bar is tallest?")], "params": params}
        for i in range(n)
    ]

"""Fixtures for the ledger tests, which run a QC run, a rewrite batch and a leaderboard score: the
apps' own fixtures, and a models file whose endpoints are all priced."""

import uuid

import pytest

from tests.exports.conftest import accepted, built  # noqa: F401 - a frozen release to score
from tests.llm.conftest import KEY_ENV, models_toml
from tests.rewrite.conftest import make_seed, seeds, zh_template  # noqa: F401 - seeds to rewrite

PRICES = {"input_cost_per_mtok": 1.0, "output_cost_per_mtok": 2.0}


@pytest.fixture(autouse=True)
def _llm_settings(settings):
    settings.BENCHFORGE_LLM_CACHE_URL = ""
    settings.BENCHFORGE_LLM_LIMITER_URL = ""
    settings.BENCHFORGE_LLM_REDIS_PREFIX = f"bf-ledger-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def declare(fake_llm, tmp_path, settings, monkeypatch):
    """declare(name=provider, ...): the models file with these endpoints (model = their name), priced."""
    monkeypatch.setenv(KEY_ENV, "id.secret")

    def declare_(**endpoints: str):
        tables = {
            name: {
                "provider": provider,
                "base_url": fake_llm.base_url(provider),
                "model": name,
                "api_key_env": KEY_ENV,
                "max_retries": 0,
                "timeout": 5,
                "max_concurrency": 4,
                "vision": True,
                **PRICES,
            }
            for name, provider in endpoints.items()
        }
        path = tmp_path / "models.toml"
        path.write_text(models_toml(tables))
        settings.BENCHFORGE_MODELS = path

    return declare_

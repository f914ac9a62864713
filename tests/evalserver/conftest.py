"""Fixtures for the evaluation server: a frozen release (tests/exports/conftest.py), a judge on the
loopback server, a window on its test split with a seeded hidden part."""

from datetime import timedelta

import pytest
from django.utils import timezone

from exports import services as release_services
from tests.exports.conftest import REFERENCE, accepted, built  # noqa: F401 - the release fixtures
from tests.llm.conftest import _llm_settings, declare  # noqa: F401 - the models file on the loopback server

SECRETS = ("SECRET-REFERENCE", "SECRET-CRITERION")


@pytest.fixture
def frozen(built, researcher):  # noqa: F811
    return release_services.freeze(built(), user=researcher)


@pytest.fixture
def judge(declare, fake_llm):  # noqa: F811
    declare("judge", model="judge-model", params={"temperature": 0})
    fake_llm.script("judge-model", '{"rating": 7, "reason": "JUDGE-TEXT mostly right"}')
    return "judge"


@pytest.fixture
def window(frozen, researcher, judge):
    from evalserver import services

    now = timezone.now()
    return services.open_window(
        frozen,
        user=researcher,
        title="Test phase",
        method="pointwise",
        judge=judge,
        opens_at=now - timedelta(hours=1),
        closes_at=now + timedelta(days=7),
        daily_limit=2,
        total_limit=4,
        hidden_fraction=0.5,
        split_seed=7,
    )

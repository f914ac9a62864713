"""Benchmarks created at once with one slug (the race kit, tests/races.py; Postgres only): one is
created, the others are told it exists, never a 500."""

from functools import partial

import pytest

from tests.races import race, rows, server_errors

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("postgres")]


def test_the_same_slug_created_at_once_is_one_benchmark(researcher, api_for):
    body = {"name": "Charts", "slug": "charts"}
    results = race([partial(api_for(researcher).post, "/api/v1/benchmarks/", body, format="json") for _ in range(6)])
    assert server_errors(results) == []
    created = [r for r in results if r.status == 201]
    refused = [r for r in results if r.status != 201]
    assert len(created) == 1 and rows("SELECT count(*) FROM curation_benchmark WHERE slug = 'charts'") == [(1,)]
    # Refused by the form's check when the first had committed, else by the database's constraint (409).
    assert {r.status for r in refused} <= {400, 409}, [r.body for r in refused]
    assert all("already exists" in str(r.body) for r in refused)

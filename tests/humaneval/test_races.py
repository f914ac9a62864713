"""Human evaluation under simultaneous requests (the race kit, tests/races.py; Postgres only):
studies started at once each get their own number, with every rating owed to each."""

from functools import partial

import pytest

from humaneval.models import Rating, Study
from tests.races import broken, race, rows, server_errors

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("postgres")]


def test_studies_started_at_once_are_numbered_one_after_another(scored, researcher, raters, api_for):
    body = {
        "release": scored["release"].version,
        "mode": "pointwise",
        "scores": [scored["pointwise"].pk],
        "raters": [r.username for r in raters],
        "per_task": 2,
        "ratings_per_item": 2,
    }
    clients = [api_for(researcher) for _ in range(4)]
    results = race(
        [
            partial(c.post, "/api/v1/benchmarks/demo/human-eval/studies/", body | {"seed": n}, format="json")
            for n, c in enumerate(clients)
        ]
    )
    assert server_errors(results) == []
    assert sorted(r.status for r in results) == [201] * 4, [r.body for r in results]
    assert sorted(r.json["number"] for r in results) == [1, 2, 3, 4]
    assert broken() == {}
    # Each study owes the same number of ratings (the plan's items times ratings per item).
    owed = {s.number: Rating.objects.filter(study=s).count() for s in Study.objects.all()}
    assert len(set(owed.values())) == 1 and next(iter(owed.values())) > 0, owed
    assert rows("SELECT count(DISTINCT number) FROM humaneval_study") == [(4,)]

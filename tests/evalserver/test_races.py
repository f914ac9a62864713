"""Simultaneous submits of one team never exceed its limits (the race kit, tests/races.py;
Postgres only): the quota is decided under the team's row lock."""

from functools import partial

import pytest

from evalserver.models import Submission, Team
from tests.evalserver.helpers import lines, upload
from tests.races import race, server_errors, statuses

pytestmark = [
    pytest.mark.services,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("postgres", "fresh_image_indexes"),
]


def test_simultaneous_submits_stop_at_the_daily_limit(window, fake_llm):
    from tests.evalserver.test_windows import sign_up, team_api

    _, token = sign_up(window)
    team = Team.objects.get(name="Owls")
    for trial in range(2):
        Submission.objects.filter(team=team).update(
            created_at=Submission.objects.model._meta.get_field("created_at").default().replace(year=2000)
        )
        clients = [team_api(token) for _ in range(6)]
        calls = [
            partial(
                c.post,
                f"/api/v1/eval/windows/{window.pk}/submissions/",
                {"predictions": upload(lines(window, answer=f"Three ({trial}, {n})."))},
                format="multipart",
            )
            for n, c in enumerate(clients)
        ]
        results = race(calls)
        assert server_errors(results) == [], f"trial {trial}"
        assert statuses(results) == [201, 201, 429, 429, 429, 429], f"trial {trial}: {[r.body for r in results]}"
        assert Submission.objects.filter(team=team).count() == 2 * (trial + 1)

"""Outside teams' scores stay off the owners' internal leaderboard and item analysis unless the
window opts in (docs/eval-server.md): a team's model is not the owners', and its score is on items
the owners withhold. Baselines are the owners' own scores and stay; the window's report still
links each submission's score card."""

from datetime import timedelta

import pytest
from django.utils import timezone

from analysis import selectors as analysis
from evalserver import services
from evalserver.models import Submission, Window
from exports import selectors as exports
from tests.evalserver.helpers import lines, upload

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


def submitted(window, capture) -> Submission:
    from tests.evalserver.test_windows import sign_up, team_api

    _, token = sign_up(window, name=f"Team {window.pk}", username=f"member{window.pk}")
    with capture(execute=True):
        made = team_api(token).post(
            f"/api/v1/eval/windows/{window.pk}/submissions/",
            {"predictions": upload(lines(window, model=f"outside-{window.pk}"))},
            format="multipart",
        )
    assert made.status_code == 201, made.content
    return Submission.objects.select_related("score").get(pk=made.json()["id"])


def test_by_default_a_team_score_is_not_on_the_internal_board_nor_analysed(
    window, researcher, api_for, client_for, fake_llm, django_capture_on_commit_callbacks
):
    assert window.feeds_analysis is False
    sub = submitted(window, django_capture_on_commit_callbacks)
    release = window.release
    assert sub.score.status == "done"
    board = api_for(researcher).get("/api/v1/benchmarks/demo/releases/1.0.0/leaderboard/").json()
    assert sub.score.label not in [s["label"] for s in board]
    assert sub.score.label not in client_for(researcher).get("/b/demo/releases/1.0.0/leaderboard/").content.decode()
    assert not exports.is_owners_score(sub.score, release)
    assert analysis.latest_scores(release, "pointwise") == [] and analysis.models_scored(release, "pointwise") == 0
    assert sub.score not in exports.anchor_choices(release)
    # The researchers still reach the score card from the window's report.
    card = client_for(researcher).get(f"/b/demo/releases/1.0.0/leaderboard/{sub.score_id}/")
    assert card.status_code == 200 and sub.score.label in card.content.decode()

    # A baseline (a score the owners made) stays on their board.
    from exports.models import Score

    own = Score.objects.create(
        release=release, label="own-model", method="pointwise", source="upload", status="done", created_by=researcher
    )
    services.add_baseline(window, user=researcher, score=own)
    assert [s.label for s in exports.scores_of(release)] == ["own-model"]


def test_a_window_that_opts_in_feeds_both(frozen, researcher, judge, api_for, fake_llm, django_capture_on_commit_callbacks):
    now = timezone.now()
    feeding = services.open_window(
        frozen,
        user=researcher,
        title="Shared",
        method="pointwise",
        judge=judge,
        opens_at=now - timedelta(hours=1),
        closes_at=now + timedelta(days=1),
        feeds_analysis=True,
    )
    kept = services.open_window(
        frozen,
        user=researcher,
        title="Kept apart",
        method="pointwise",
        judge=judge,
        opens_at=now - timedelta(hours=1),
        closes_at=now + timedelta(days=1),
    )
    shared, apart = submitted(feeding, django_capture_on_commit_callbacks), submitted(kept, django_capture_on_commit_callbacks)
    labels = [s["label"] for s in api_for(researcher).get("/api/v1/benchmarks/demo/releases/1.0.0/leaderboard/").json()]
    assert shared.score.label in labels and apart.score.label not in labels
    assert exports.is_owners_score(shared.score, frozen) and not exports.is_owners_score(apart.score, frozen)
    assert [s.label for s in analysis.latest_scores(frozen, "pointwise")] == [shared.score.label]


def test_a_team_score_is_no_anchor_and_no_study_subject(
    window, researcher, annotator, reviewer, api_for, fake_llm, django_capture_on_commit_callbacks
):
    """The choice lists leave team scores out; the API and the services refuse them too, by name."""
    from humaneval.forms import PlanForm

    sub = submitted(window, django_capture_on_commit_callbacks)
    assert sub.score not in PlanForm(benchmark=window.release.benchmark).fields["scores"].queryset
    assert sub.score not in exports.anchor_choices(window.release)
    api = api_for(researcher)
    pairwise = api.post(
        "/api/v1/benchmarks/demo/releases/1.0.0/leaderboard/",
        {"label": "mine", "method": "pairwise", "judge": "judge", "anchor": sub.score_id, "predictions": upload(lines(window))},
        format="multipart",
    )
    assert pairwise.status_code == 400 and "outside team" in pairwise.json()["detail"], pairwise.content
    assert sub.score.label in pairwise.json()["detail"]
    study = api.post(
        "/api/v1/benchmarks/demo/human-eval/studies/",
        {
            "release": "1.0.0",
            "mode": "pointwise",
            "scores": [sub.score_id],
            "raters": [annotator.username, reviewer.username],
            "per_task": 1,
        },
        format="json",
    )
    assert study.status_code == 400 and "outside team" in study.json()["detail"], study.content
    from tests.evalserver.test_researcher_api import WINDOWS, opening

    anchored = api.post(WINDOWS, opening(method="pairwise", anchor=sub.score_id), format="json")
    assert anchored.status_code == 400 and "outside team" in anchored.json()["detail"], anchored.content
    assert Window.objects.count() == 1
    from humaneval.models import Study

    assert not Study.objects.exists()
    assert [s.label for s in exports.scores_of(window.release)] == []  # nothing was scored either

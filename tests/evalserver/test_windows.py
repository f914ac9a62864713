"""The evaluation server end to end over pages and the API: a team signs up through the invitation
link, submits through the page and with its token, hits its daily limit, sees aggregate scores of
the shown part only, publishes; an anonymous visitor reads the public leaderboard; a refused file
stores nothing; the hidden part is revealed when the window closes."""

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from evalserver import selectors, services
from evalserver.models import Submission, Team, Window
from exports.models import Score
from tests.evalserver.conftest import SECRETS
from tests.evalserver.helpers import lines, upload

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]
PASSWORD = "correct-horse-battery-staple"


def sign_up(window, name="Owls", username="olga") -> tuple[Client, str]:
    browser = Client()
    page = browser.post(
        f"/eval/{window.pk}/join/",
        {"username": username, "password": PASSWORD, "team_name": name, "invite": window.invite_token},
        follow=True,
    )
    assert page.status_code == 200, page.content[:500]
    token = re.search(r'id="new-token">[^<]*<code>([^<]+)</code>', page.content.decode()).group(1)
    assert browser.get(f"/eval/{window.pk}/").content.decode().count(token) == 0  # shown once
    return browser, token


def team_api(token) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Team {token}")
    return api


def assert_nothing_withheld(text: str) -> None:
    for secret in (*SECRETS, "JUDGE-TEXT"):
        assert secret not in text


def test_a_team_signs_up_submits_hits_its_limit_publishes_and_the_public_sees_it(
    window, fake_llm, django_capture_on_commit_callbacks
):
    assert Client().get(f"/eval/{window.pk}/join/").status_code == 403  # invitation only
    assert Client().get(f"/eval/{window.pk}/join/?invite=wrong").status_code == 403
    browser, token = sign_up(window)
    team = Team.objects.get(name="Owls")
    with django_capture_on_commit_callbacks(execute=True):
        page = browser.post(f"/eval/{window.pk}/submit/", {"predictions": upload(lines(window)), "model": "owl-1"})
    assert page.status_code == 302
    api = team_api(token)
    with django_capture_on_commit_callbacks(execute=True):
        made = api.post(
            f"/api/v1/eval/windows/{window.pk}/submissions/",
            {"predictions": upload(lines(window, model="owl-2", answer="Three red apples."))},
            format="multipart",
        )
    assert made.status_code == 201, made.content
    assert made.json()["model"] == "owl-2"
    third = api.post(f"/api/v1/eval/windows/{window.pk}/submissions/", {"predictions": upload(lines(window))}, format="multipart")
    assert third.status_code == 429 and "today" in third.json()["detail"] and third.json()["limit"] == "daily"
    assert Submission.objects.filter(team=team).count() == 2
    assert all(s.score.status == Score.Status.DONE for s in Submission.objects.all())
    # Only the window's test items were judged, once each per submission (different answers: no cache hit).
    assert len(fake_llm.requests("judge-model")) == 2 * len(window.items)
    assert set(window.items).isdisjoint(set(window.release.items.filter(split="dev").values_list("key", flat=True)))

    # The team sees the shown part's aggregate score, per category, never an item or a judge's text.
    listed = api.get(f"/api/v1/eval/windows/{window.pk}/submissions/").json()
    assert [s["model"] for s in listed] == ["owl-2", "owl-1"]
    scores = listed[0]["scores"]
    assert scores["shown"]["text"] == "7.00 / 10" and scores["shown"]["n"] == len(window.shown_items)
    assert scores["hidden"] is None and scores["overall"] is None  # revealed when the window closes
    assert scores["shown"]["categories"]
    text = json.dumps(listed) + browser.get(f"/eval/{window.pk}/").content.decode()
    assert_nothing_withheld(text)
    assert "answer" not in json.dumps(listed)
    quota = api.get(f"/api/v1/eval/windows/{window.pk}/").json()["quota"]
    assert quota == {"daily_limit": 2, "total_limit": 4, "used_today": 2, "used_total": 2, "left_today": 0}

    # Nothing is public before the team publishes; then only what it published.
    anonymous = Client()
    board = f"/leaderboard/demo/{window.release.version}/"
    assert "owl-1" not in anonymous.get(board).content.decode()
    owl1 = Submission.objects.get(model_name="owl-1")
    published = api.post(
        f"/api/v1/eval/windows/{window.pk}/submissions/{owl1.pk}/publish/",
        {"published": True, "link": "https://example.org/paper"},
        format="json",
    )
    assert published.status_code == 200, published.content
    html = anonymous.get(board).content.decode()
    assert "owl-1" in html and "Owls" in html and "owl-2" not in html and "shown part" in html
    assert_nothing_withheld(html)
    entries = anonymous.get(board + "board.json").json()["entries"]
    assert [(e["model"], e["team"], e["scored_on"], e["score_text"]) for e in entries] == [
        ("owl-1", "Owls", "shown", "7.00 / 10")
    ]
    assert len(entries[0]["bundle_sha256"]) == 64 and entries[0]["link"] == "https://example.org/paper"
    csv = anonymous.get(board + "board.csv").content.decode()
    assert "owl-1" in csv and "owl-2" not in csv

    # A researcher hides it with a reason: off the board, the team reads why.
    from django.contrib.auth import get_user_model

    researcher = get_user_model().objects.get(username="ross")
    services.hide(owl1, user=researcher, reason="Trained on the test images")
    assert "owl-1" not in anonymous.get(board).content.decode()
    assert "Trained on the test images" in browser.get(f"/eval/{window.pk}/").content.decode()


def test_the_hidden_part_is_revealed_when_the_window_closes(window, researcher, fake_llm, django_capture_on_commit_callbacks):
    _, token = sign_up(window)
    with django_capture_on_commit_callbacks(execute=True):
        assert (
            team_api(token)
            .post(f"/api/v1/eval/windows/{window.pk}/submissions/", {"predictions": upload(lines(window))}, format="multipart")
            .status_code
            == 201
        )
    assert 0 < len(window.shown_items) < len(window.items)
    Window.objects.filter(pk=window.pk).update(closes_at=timezone.now() - timedelta(minutes=1))
    scores = team_api(token).get(f"/api/v1/eval/windows/{window.pk}/submissions/").json()[0]["scores"]
    assert scores["hidden"]["n"] == len(window.items) - len(window.shown_items)
    assert scores["overall"]["n"] == len(window.items) and scores["overall"]["text"] == "7.00 / 10"
    late = team_api(token).post(
        f"/api/v1/eval/windows/{window.pk}/submissions/", {"predictions": upload(lines(window))}, format="multipart"
    )
    assert late.status_code == 409 and "closed" in late.json()["detail"]


def test_the_shown_part_is_seeded_and_keeps_seed_groups_together(window):
    items = selectors.window_items(window)
    again = services.shown_part(items, window.hidden_fraction, window.split_seed)
    assert again == window.shown_items
    seeds = {}
    for item in items:
        seeds.setdefault(item.seed_id or item.id, set()).add(item.id in set(window.shown_items))
    assert all(len(sides) == 1 for sides in seeds.values())  # an item and its rewrites on one side


@pytest.mark.parametrize(
    "extra, problem",
    [
        ("dup", r"line \d+: .* is answered again \(first on line 1\)"),
        ("unknown", r"line \d+: id 'nope' is not an item"),
        ("dev", r"line \d+: .* is not an item of this window's split"),
        ("missing", r"1 items of the split have no line"),
        ("garbage", r"line \d+: "),
        ("long", r"line 1: the answer to .* characters, more than 20000"),
    ],
)
def test_a_refused_file_names_its_lines_and_stores_nothing(window, fake_llm, extra, problem):
    _, token = sign_up(window)
    first = window.items[0]
    dev = window.release.items.filter(split="dev").exclude(row__choices__isnull=False).first()
    rows = [{"id": key, "answer": "Three."} for key in window.items]
    if extra == "dup":
        rows.append({"id": first, "answer": "Again."})
    elif extra == "unknown":
        rows.append({"id": "nope", "answer": "x"})
    elif extra == "dev":
        rows.append({"id": window.release.items.filter(split="dev").first().key, "answer": "x"})
    elif extra == "missing":
        rows = rows[1:]
    elif extra == "long":
        rows[0]["answer"] = "x" * 20001
    data = "".join(json.dumps(r) + "\n" for r in rows) + ("{not json\n" if extra == "garbage" else "")
    del dev
    before = (Score.objects.count(), Submission.objects.count())
    refused = team_api(token).post(
        f"/api/v1/eval/windows/{window.pk}/submissions/", {"predictions": upload(data.encode()), "model": "m"}, format="multipart"
    )
    assert refused.status_code == 400, refused.content
    body = refused.json()
    assert re.search(problem, body["detail"]), body["detail"]
    assert body["problems"] and "nothing of it was kept" in body["detail"]
    assert (Score.objects.count(), Submission.objects.count()) == before
    assert fake_llm.requests("judge-model") == []


def test_an_oversized_file_is_refused_before_reading(window, settings):
    settings.BENCHFORGE_EVAL_MAX_PREDICTIONS_BYTES = 100
    _, token = sign_up(window)
    refused = team_api(token).post(
        f"/api/v1/eval/windows/{window.pk}/submissions/", {"predictions": upload(lines(window))}, format="multipart"
    )
    assert refused.status_code == 400 and "more than the limit of 100" in refused.json()["detail"]
    assert Submission.objects.count() == 0


def test_a_cost_cap_refuses_before_anything_is_sent(frozen, researcher, declare, fake_llm):
    from decimal import Decimal

    declare("judge", model="judge-model", input_cost_per_mtok=1000, output_cost_per_mtok=1000)
    now = timezone.now()
    window = services.open_window(
        frozen,
        user=researcher,
        title="Capped",
        method="pointwise",
        judge="judge",
        opens_at=now - timedelta(hours=1),
        closes_at=now + timedelta(days=1),
        cost_cap_submission=Decimal("0.0001"),
    )
    _, token = sign_up(window)
    refused = team_api(token).post(
        f"/api/v1/eval/windows/{window.pk}/submissions/", {"predictions": upload(lines(window))}, format="multipart"
    )
    assert refused.status_code == 429 and refused.json()["limit"] == "cost_submission", refused.content
    assert Submission.objects.count() == 0 and fake_llm.requests("judge-model") == []


def test_teams_see_only_their_own_window_and_submissions(
    window, frozen, researcher, judge, fake_llm, django_capture_on_commit_callbacks
):
    owls, owl_token = sign_up(window, "Owls", "olga")
    bats, bat_token = sign_up(window, "Bats", "bert")
    with django_capture_on_commit_callbacks(execute=True):
        mine = (
            team_api(owl_token)
            .post(f"/api/v1/eval/windows/{window.pk}/submissions/", {"predictions": upload(lines(window))}, format="multipart")
            .json()
        )
    assert bats.get(f"/eval/{window.pk}/").content.decode().count("team-vlm") == 0
    assert team_api(bat_token).get(f"/api/v1/eval/windows/{window.pk}/submissions/{mine['id']}/").status_code == 404
    assert (
        team_api(bat_token)
        .post(f"/api/v1/eval/windows/{window.pk}/submissions/{mine['id']}/publish/", {"published": True}, format="json")
        .status_code
        == 404
    )
    now = timezone.now()
    other = services.open_window(
        frozen,
        user=researcher,
        title="Other",
        method="pointwise",
        judge=judge,
        opens_at=now,
        closes_at=now + timedelta(days=1),
        registration=Window.Registration.OPEN,
    )
    assert owls.get(f"/eval/{other.pk}/").status_code == 404
    assert team_api(owl_token).get(f"/api/v1/eval/windows/{other.pk}/").status_code == 404
    # The platform's own pages and API are not theirs.
    for url in (
        "/",
        "/b/demo/",
        "/b/demo/releases/1.0.0/",
        "/b/demo/releases/1.0.0/leaderboard/",
        "/eval/new/",
        "/b/demo/releases/1.0.0/download/private.tar.gz/",
    ):
        assert owls.get(url).status_code in (403, 404), url
    assert team_api(owl_token).get("/api/v1/benchmarks/").status_code in (401, 403)
    assert owls.get("/api/v1/benchmarks/demo/releases/1.0.0/leaderboard/").status_code in (403, 404)
    bundle = owls.get(f"/eval/{window.pk}/bundle/")
    assert bundle.status_code == 200 and "public" in bundle["Content-Disposition"]


@pytest.mark.parametrize(
    "url",
    ["/eval/", "/eval/new/", "/eval/{pk}/", "/eval/{pk}/card/", "/eval/{pk}/bundle/", "/eval/{pk}/submit/", "/eval/{pk}/token/"],
)
def test_anonymous_visitors_are_sent_to_log_in(window, client, url):
    response = client.get(url.format(pk=window.pk))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_api_refuses_anonymous_and_bad_tokens(window, client):
    assert client.get(f"/api/v1/eval/windows/{window.pk}/").status_code == 401
    assert team_api("not-a-token").get(f"/api/v1/eval/windows/{window.pk}/").status_code == 401


def test_anonymous_requests_are_throttled(window, settings):
    settings.BENCHFORGE_EVAL_ANON_PER_MINUTE = 3
    anonymous = Client(REMOTE_ADDR="10.9.9.9")
    codes = [anonymous.get(f"/leaderboard/demo/{window.release.version}/").status_code for _ in range(5)]
    assert codes[:3] == [200, 200, 200] and codes[-1] == 429
    assert Client().get("/leaderboard/demo/9.9.9/").status_code in (404, 429)


def test_a_release_without_a_window_has_no_public_board(frozen, client):
    assert client.get("/leaderboard/demo/1.0.0/").status_code == 404


def test_researchers_see_teams_spending_and_failures(
    window, researcher, client_for, fake_llm, django_capture_on_commit_callbacks
):
    _, token = sign_up(window)
    with django_capture_on_commit_callbacks(execute=True):
        team_api(token).post(
            f"/api/v1/eval/windows/{window.pk}/submissions/", {"predictions": upload(lines(window))}, format="multipart"
        )
    page = client_for(researcher).get(f"/eval/{window.pk}/")
    report = page.context["report"]
    assert [(t["team"].name, t["members"], t["submissions"]) for t in report["teams"]] == [("Owls", ["olga"], 1)]
    assert report["teams"][0]["usage"]["total"]["requests"] == len(window.items)
    assert report["failures"] == []
    assert window.invite_token in page.content.decode()

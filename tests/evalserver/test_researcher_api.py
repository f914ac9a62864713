"""The researchers' API for windows (/api/v1/eval/windows/): listing, opening and closing with the
pages' permissions, the form's bounds and the service's rules as clear 4xx messages; a team's token
lists only its own window and never the settings or the invitation."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evalserver.models import Window
from tests.evalserver.helpers import lines, upload

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]
WINDOWS = "/api/v1/eval/windows/"


def opening(**changes) -> dict:
    closes = timezone.now() + timedelta(days=3)
    return {
        "benchmark": "demo",
        "version": "1.0.0",
        "title": "API phase",
        "method": "pointwise",
        "judge": "judge",
        "closes_at": closes.isoformat(),
        "hidden_fraction": 0.5,
        "split_seed": 3,
        **changes,
    }


def test_a_researcher_opens_lists_and_closes_a_window(frozen, judge, researcher, api_for, fake_llm):
    api = api_for(researcher)
    made = api.post(WINDOWS, opening(daily_limit=2, total_limit=5, feeds_analysis=True), format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    window = Window.objects.get(pk=body["id"])
    assert (window.title, window.daily_limit, window.total_limit, window.feeds_analysis) == ("API phase", 2, 5, True)
    assert body["release"] == "demo 1.0.0" and body["is_open"] and body["registration"] == "invite"
    assert body["items"] == len(window.items) and 0 < body["shown_items"] < body["items"]
    assert body["invite_url"].endswith(f"/eval/{window.pk}/join/?invite={window.invite_token}")
    assert "shown" not in str(body.get("items"))  # counts only: which items are hidden is never listed

    listed = api.get(WINDOWS).json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == window.pk
    assert api.get(f"{WINDOWS}{window.pk}/").json()["daily_limit"] == 2

    closed = api.post(f"{WINDOWS}{window.pk}/close/")
    assert closed.status_code == 200 and closed.json()["is_open"] is False
    window.refresh_from_db()
    assert window.is_closed and window.opens_at <= window.closes_at
    again = api.post(f"{WINDOWS}{window.pk}/close/")
    assert again.status_code == 409 and "closed at" in again.json()["detail"]


# Each bad setting and what the answer says (one frozen release for all: building one is the cost).
REFUSALS = [
    ({"closes_at": None}, 400, "closes_at"),
    ({"title": "  "}, 400, "title"),
    ({"method": "mcq"}, 400, "choose the method among"),
    ({"judge": ""}, 400, "Name the judge endpoint"),
    ({"judge": "nobody"}, 400, "nobody"),
    ({"hidden_fraction": 0.95}, 400, "hidden_fraction"),
    ({"daily_limit": 0}, 400, "daily_limit"),
    ({"daily_limit": 5, "total_limit": 2}, 400, "total limit at least the daily one"),
    ({"opens_at": "2030-01-02T00:00:00Z", "closes_at": "2030-01-01T00:00:00Z"}, 400, "close after it opens"),
    ({"split": "train"}, 400, "split"),
    ({"registration": "anyone"}, 400, "registration"),
    ({"anchor": 999999}, 400, "No score #999999"),
    ({"method": "pairwise"}, 400, "needs an anchor"),
    ({"version": "9.9.9"}, 404, "No release 9.9.9"),
    ({"benchmark": "nope"}, 404, "No such benchmark"),
    ({"cost_cap_submission": "1"}, 400, "prices"),
]


def test_opening_refuses_bad_settings_with_a_clear_message(frozen, judge, researcher, api_for):
    api, problems = api_for(researcher), []
    for changes, status, said in REFUSALS:
        data = {k: v for k, v in opening(**changes).items() if v is not None}
        refused = api.post(WINDOWS, data, format="json")
        if refused.status_code != status or said not in refused.json().get("detail", ""):
            problems.append(f"{changes}: {refused.status_code} {refused.content[:300]!r}")
    assert problems == []
    assert Window.objects.count() == 0


def test_an_unfrozen_release_takes_no_window(built, judge, researcher, api_for):
    """A window on a release not yet frozen is a state conflict (409): freeze the release first."""
    built()
    refused = api_for(researcher).post(WINDOWS, opening(), format="json")
    assert refused.status_code == 409 and "not frozen" in refused.json()["detail"]


def test_only_researchers_open_or_close_and_teams_list_only_their_window(
    window, frozen, judge, researcher, annotator, api_for, client
):
    from tests.evalserver.test_windows import sign_up, team_api

    other = api_for(researcher).post(WINDOWS, opening(title="Another"), format="json").json()
    _, token = sign_up(window)
    team = team_api(token)
    assert team.post(WINDOWS, opening(), format="json").status_code == 403
    assert api_for(annotator).post(WINDOWS, opening(), format="json").status_code == 403
    assert client.post(WINDOWS, opening(), content_type="application/json").status_code == 401
    assert Window.objects.count() == 2

    mine = team.get(WINDOWS).json()["results"]
    assert [w["id"] for w in mine] == [window.pk]
    for field in ("invite_url", "daily_limit", "hidden_fraction", "split_seed", "shown_items", "feeds_analysis"):
        assert field not in mine[0]
    detail = team.get(f"{WINDOWS}{window.pk}/").json()
    assert detail["team"] == "Owls" and detail["quota"]["left_today"] == 2 and "invite_url" not in detail
    assert team.get(f"{WINDOWS}{other['id']}/").status_code == 404
    assert api_for(annotator).get(WINDOWS).json()["count"] == 0  # a platform role is not a team
    assert api_for(annotator).get(f"{WINDOWS}{window.pk}/").status_code == 404

    assert team.post(f"{WINDOWS}{window.pk}/close/").status_code == 401  # the team token is not a platform token
    assert api_for(annotator).post(f"{WINDOWS}{window.pk}/close/").status_code == 403
    assert client.post(f"{WINDOWS}{window.pk}/close/").status_code == 401
    assert Window.objects.get(pk=window.pk).is_open


def test_closing_stops_submissions_and_reveals_the_hidden_part(
    window, researcher, api_for, fake_llm, django_capture_on_commit_callbacks
):
    from tests.evalserver.test_windows import sign_up, team_api

    _, token = sign_up(window)
    submissions = f"{WINDOWS}{window.pk}/submissions/"
    with django_capture_on_commit_callbacks(execute=True):
        assert team_api(token).post(submissions, {"predictions": upload(lines(window))}, format="multipart").status_code == 201
    assert team_api(token).get(submissions).json()[0]["scores"]["hidden"] is None
    listed = api_for(researcher).get(WINDOWS).json()["results"][0]
    assert (listed["teams"], listed["submissions"]) == (1, 1)
    assert api_for(researcher).post(f"{WINDOWS}{window.pk}/close/").status_code == 200
    scores = team_api(token).get(submissions).json()[0]["scores"]
    assert scores["hidden"]["n"] == len(window.items) - len(window.shown_items)
    late = team_api(token).post(submissions, {"predictions": upload(lines(window))}, format="multipart")
    assert late.status_code == 409 and "closed" in late.json()["detail"]


def test_the_window_page_closes_a_window_for_researchers_only(window, researcher, client_for):
    from tests.evalserver.test_windows import sign_up

    browser, _ = sign_up(window)
    assert browser.post(f"/eval/{window.pk}/close/").status_code == 403
    assert Window.objects.get(pk=window.pk).is_open
    page = client_for(researcher)
    assert 'id="close-form"' in page.get(f"/eval/{window.pk}/").content.decode()
    assert page.post(f"/eval/{window.pk}/close/").status_code == 302
    assert Window.objects.get(pk=window.pk).is_closed
    assert 'id="close-form"' not in page.get(f"/eval/{window.pk}/").content.decode()


def test_the_schema_documents_both_shapes_of_a_window(frozen, judge, researcher, api_for, window):
    """A team reads its quota, a researcher every setting: the OpenAPI schema offers both, and each
    answer has the fields of one of them."""
    schema = api_for(researcher).get("/api/schema/?format=json").json()
    detail = schema["paths"]["/api/v1/eval/windows/{id}/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    shapes = schema["components"]["schemas"][detail["$ref"].rsplit("/", 1)[1]]["oneOf"]
    fields = {
        ref["$ref"].rsplit("/", 1)[1]: set(schema["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]["properties"])
        for ref in shapes
    }
    assert set(fields) == {"TeamWindow", "ResearcherWindow"}
    answer = set(api_for(researcher).get(f"{WINDOWS}{window.pk}/").json())
    assert answer == fields["ResearcherWindow"] and "invite_url" in answer and "quota" in fields["TeamWindow"]

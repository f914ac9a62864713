"""The evaluation server end to end in headless Chromium on a live server: a researcher opens a
window on the page; an outside person signs up through the invitation link and names a team, a
teammate joins it with the join code; the team submits through the page, over the API with its
token and with `benchforge-harness submit`; simultaneous submits stop at the daily limit (exactly
the limit accepted, the rest refused with a clear message, nothing scored twice); the team
publishes one entry, the researcher adds a baseline; an anonymous visitor reads the public board;
withheld fields (the hidden part's score before the window closes, answer keys and references,
the private bundle, judge texts) reach neither the team nor the visitor; closing reveals the rest."""

import io
import json
import re
import tarfile
import urllib.error
import urllib.request
from functools import partial

import pytest
from django.core.files.storage import default_storage
from django.utils import timezone
from playwright.sync_api import expect

from benchforge_harness import cli
from benchforge_harness.commands.submit import multipart
from evalserver import selectors
from evalserver.models import Submission, Team, Window
from exports import leaderboard
from exports.models import ReleaseFile, Score
from tests.evalserver.conftest import SECRETS
from tests.evalserver.helpers import lines, upload
from tests.races import race, server_errors, statuses

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("postgres", "fresh_image_indexes"),
]
PASSWORD = "correct-horse-battery-staple"
DAILY = 5
SHOWN_RATING, HIDDEN_RATING = 9, 1  # the judge rates shown and hidden items apart, so each part's score is recognisable


def new_page(browser, live_server):
    """Another person's browser (own cookies), with the same Content-Security-Policy check as browser_page."""
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.csp_violations = []
    page.on("console", lambda msg: page.csp_violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    return page


def http(url: str, *, token: str, data: bytes | None = None, content_type: str = "") -> tuple[int, dict]:
    request = urllib.request.Request(url, data=data, headers={"Authorization": f"Team {token}"})
    if content_type:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def team_api(token):
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Team {token}")
    return api


def read(page, url: str) -> str:
    page.goto(url)
    return page.content()


def withheld(text: str, also=()) -> list[str]:
    return [s for s in (*SECRETS, "JUDGE-TEXT", *also) if s in text]


def test_a_team_signs_up_submits_three_ways_races_its_limit_publishes_and_the_public_sees_only_that(
    browser, browser_page, live_server, login_as, frozen, researcher, judge, fake_llm, tmp_path, monkeypatch, capsys
):
    # ---- the researcher opens a window on the page
    page = login_as(researcher)
    page.goto("/eval/new/")
    now = timezone.now()
    page.select_option("#id_release", str(frozen.pk))
    page.fill("#id_title", "Hidden test phase")
    page.select_option("#id_split", "test")
    page.select_option("#id_method", "pointwise")
    page.fill("#id_judge", judge)
    page.fill("#id_opens_at", (now - timezone.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M"))
    page.fill("#id_closes_at", (now + timezone.timedelta(days=7)).strftime("%Y-%m-%d %H:%M"))
    page.fill("#id_daily_limit", str(DAILY))
    page.fill("#id_total_limit", "20")
    page.fill("#id_hidden_fraction", "0.5")
    page.fill("#id_split_seed", "7")
    page.select_option("#id_registration", "invite")
    page.click("#window-form button[type=submit]")
    expect(page.locator("h1")).to_have_text("Hidden test phase")
    window = Window.objects.get()
    assert window.feeds_analysis is False and 0 < len(window.shown_items) < len(window.items)
    invite = page.locator("#invite-url").inner_text()
    assert invite.endswith(f"/eval/{window.pk}/join/?invite={window.invite_token}")

    items = selectors.window_items(window)
    hidden_refs = [i.reference_answer for i in items if i.id not in set(window.shown_items) and i.reference_answer]
    assert hidden_refs

    def rate(body):
        hidden = any(ref in json.dumps(body, ensure_ascii=False) for ref in hidden_refs)
        rating = HIDDEN_RATING if hidden else SHOWN_RATING
        return json.dumps({"rating": rating, "reason": f"JUDGE-TEXT rated {rating}"})

    fake_llm.script("judge-model", rate)

    # ---- an outside person signs up through the invitation; a teammate joins with the join code
    olga = new_page(browser, live_server)
    assert olga.goto(f"/eval/{window.pk}/join/").status == 403  # invitation only
    olga.goto(invite)
    olga.fill("#id_username", "olga")
    olga.fill("#id_password", PASSWORD)
    olga.fill("#id_team_name", "Owls")
    olga.click("#join-form button[type=submit]")
    expect(olga.locator("#team h2")).to_have_text("Team Owls")
    token = olga.locator("#new-token code").inner_text()
    team = Team.objects.get(name="Owls")
    olga.reload()
    expect(olga.locator("#new-token")).to_have_count(0)  # the token is shown once

    bert = new_page(browser, live_server)
    bert.goto(invite)
    bert.fill("#id_username", "bert")
    bert.fill("#id_password", PASSWORD)
    bert.fill("#id_join_code", team.join_code)
    bert.click("#join-form button[type=submit]")
    expect(bert.locator("#team h2")).to_have_text("Team Owls")
    assert sorted(team.memberships.values_list("user__username", flat=True)) == ["bert", "olga"]

    # ---- submitting: the page, the API (team token, over HTTP), the harness command
    answers = tmp_path / "page.jsonl"
    answers.write_bytes(lines(window, model="owl-page", answer="Three apples (page)."))
    olga.set_input_files("#submit-form input[name=predictions]", str(answers))
    olga.click("#submit-form button[type=submit]")
    expect(olga.locator(".messages")).to_contain_text("owl-page was accepted and is being scored")
    expect(olga.locator("#submissions")).to_contain_text(f"{SHOWN_RATING}.00 / 10 (shown part)")

    body, kind = multipart({}, {"predictions": ("api.jsonl", lines(window, model="owl-api", answer="Three apples (api)."))})
    status, made = http(
        f"{live_server.url}/api/v1/eval/windows/{window.pk}/submissions/", token=token, data=body, content_type=kind
    )
    assert status == 201 and made["model"] == "owl-api", made

    public = window.release.files.get(kind=ReleaseFile.Kind.PUBLIC_TAR)
    bundle = tmp_path / "bundle.tar.gz"
    with default_storage.open(public.storage_name, "rb") as handle:
        bundle.write_bytes(handle.read())
    harness_file = tmp_path / "harness.jsonl"
    harness_file.write_bytes(lines(window, model="owl-harness", answer="Three apples (harness)."))
    monkeypatch.setenv("BENCHFORGE_TEAM_TOKEN", token)
    submitted = cli.main(
        [
            "submit",
            "--server",
            live_server.url,
            "--window",
            str(window.pk),
            "--release",
            str(bundle),
            "--predictions",
            str(harness_file),
        ]
    )
    assert submitted == 0 and "accepted as submission" in capsys.readouterr().err

    # ---- simultaneous submits: exactly the rest of today's limit is accepted
    left = DAILY - 3
    calls = [
        partial(
            team_api(token).post,
            f"/api/v1/eval/windows/{window.pk}/submissions/",
            {"predictions": upload(lines(window, model=f"owl-race-{n}", answer=f"Three apples (race {n})."))},
            format="multipart",
        )
        for n in range(left + 4)
    ]
    results = race(calls)
    assert server_errors(results) == []
    assert statuses(results) == [201] * left + [429] * 4, [r.body for r in results]
    for refused in (r for r in results if r.status == 429):
        assert refused.json["limit"] == "daily" and f"used its {DAILY} submissions for today" in refused.json["detail"]
    subs = list(Submission.objects.filter(team=team).select_related("score"))
    assert len(subs) == DAILY and len({s.score_id for s in subs}) == DAILY
    assert all(s.score.status == Score.Status.DONE for s in subs)
    assert Score.objects.filter(release=window.release).count() == DAILY  # no refused file left a score behind
    # Each accepted file judged once per item (answers differ, so no reply came from the cache).
    assert len(fake_llm.requests("judge-model")) == DAILY * len(window.items)

    # The page says so too, and stores nothing.
    olga.reload()
    expect(olga.locator("#quota")).to_contain_text(f"Used today: {DAILY} of {DAILY}")
    olga.set_input_files("#submit-form input[name=predictions]", str(answers))
    olga.click("#submit-form button[type=submit]")
    expect(olga.locator(".messages")).to_contain_text(f"Your team has used its {DAILY} submissions for today (UTC)")
    assert Submission.objects.filter(team=team).count() == DAILY

    # ---- the team publishes one entry; the researcher adds a baseline
    row = olga.locator("#submissions tr", has_text="owl-page")
    row.locator("input[name=link]").fill("https://example.org/owl-paper")
    row.locator("button[type=submit]").click()
    expect(olga.locator("#submissions tr", has_text="owl-page")).to_contain_text("Unpublish")

    baseline = leaderboard.submit(
        window.release, user=researcher, label="own-baseline", method="pointwise", predictions=_all_open(window), judge=judge
    )
    assert Score.objects.get(pk=baseline.pk).status == Score.Status.DONE
    page.goto(f"/eval/{window.pk}/")
    page.select_option("#baseline-form select[name=score]", str(baseline.pk))
    page.fill("#baseline-form input[name=model]", "Baseline-VLM")
    page.click("#baseline-form button[type=submit]")
    expect(page.locator("#all-submissions")).to_contain_text("Baseline-VLM")

    # ---- what the team and an anonymous visitor can read while the window is open
    hidden_text = f"{HIDDEN_RATING}.00 / 10"
    board = f"/leaderboard/demo/{window.release.version}/"
    visitor = new_page(browser, live_server)
    visitor.goto(board)
    table = visitor.locator("#public-board")
    expect(table).to_contain_text("owl-page")
    expect(table).to_contain_text("Owls")
    expect(table).to_contain_text("Baseline-VLM")
    expect(table).to_contain_text(f"{SHOWN_RATING}.00 / 10 (shown part)")
    for unpublished in ("owl-api", "owl-harness", "owl-race-0"):
        expect(table).not_to_contain_text(unpublished)
    assert visitor.locator("#public-board a[href='https://example.org/owl-paper']").count() == 1
    assert visitor.goto(f"/eval/{window.pk}/").url.startswith(f"{live_server.url}/accounts/login/")

    seen = {
        "team page": read(olga, f"/eval/{window.pk}/"),
        "team card": read(olga, f"/eval/{window.pk}/card/"),
        "team API list": json.dumps(team_api(token).get(f"/api/v1/eval/windows/{window.pk}/submissions/").json()),
        "team API window": json.dumps(team_api(token).get(f"/api/v1/eval/windows/{window.pk}/").json()),
        "public page": read(visitor, board),
        "public JSON": visitor.request.get(board + "board.json").text(),
        "public CSV": visitor.request.get(board + "board.csv").text(),
    }
    closed_texts = [hidden_text]
    for where, text in seen.items():
        assert withheld(text, closed_texts) == [], f"{where} shows something withheld"
    listed = team_api(token).get(f"/api/v1/eval/windows/{window.pk}/submissions/").json()
    assert {s["scores"]["hidden"] is None and s["scores"]["overall"] is None for s in listed} == {True}
    assert "shown_items" not in seen["team API window"] and not re.search(r'"answers?"', seen["team API list"])
    # The team's bundle is the public one: no reference of the test split; the private bundle is refused.
    with tarfile.open(fileobj=io.BytesIO(olga.request.get(f"/eval/{window.pk}/bundle/").body())) as tar:
        packed = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()).decode(errors="replace")
    assert [ref for ref in hidden_refs if ref in packed] == []
    assert olga.request.get("/b/demo/releases/1.0.0/download/private.tar.gz/").status in (403, 404)
    assert olga.goto("/b/demo/releases/1.0.0/leaderboard/").status in (403, 404)

    # ---- the researcher closes the window: the hidden part and the whole split are revealed
    page.goto(f"/eval/{window.pk}/")
    page.click("#close-form button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("The window is closed")
    olga.goto(f"/eval/{window.pk}/")
    expect(olga.locator("#submissions tr", has_text="owl-page")).to_contain_text(f"hidden part: {hidden_text}")
    visitor.goto(board)
    expect(visitor.locator("#public-board")).not_to_contain_text("shown part")
    entries = visitor.request.get(board + "board.json").json()["entries"]
    entry = next(e for e in entries if e["model"] == "owl-page")
    assert entry["scored_on"] == "all" and entry["n"] == len(window.items)
    for person in (olga, bert, visitor):
        assert person.csp_violations == [], "a page broke its Content-Security-Policy"
        person.context.close()


def _all_open(window) -> bytes:
    """Answers to every open question of the release (what the internal leaderboard's upload asks for)."""
    from tests.exports.test_leaderboard import open_ids

    return "".join(json.dumps({"id": key, "answer": "Three (baseline)."}) + "\n" for key in open_ids(window.release)).encode()

"""The evaluation server's routes as a team account and anonymously: a crawler following every
link from the team's window page changes no table, meets no server error, reaches no page of the
platform's pipeline and reads nothing withheld; every route answers a team and an anonymous visitor
with the right refusal (tests/benchforge/test_get_is_safe.py's crawler and snapshot)."""

import pytest
from django.test import Client
from django.urls import get_resolver

from tests.benchforge.test_get_is_safe import Links, snapshot
from tests.evalserver.conftest import SECRETS
from tests.evalserver.helpers import lines, upload

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]
# Pages without login: the sign-up page and the public board.
PUBLIC = ("eval/<id:pk>/join/", "leaderboard/")


def eval_routes() -> list[str]:
    def walk(patterns, prefix=""):
        for p in patterns:
            if hasattr(p, "url_patterns"):
                yield from walk(p.url_patterns, prefix + str(p.pattern))
            else:
                yield prefix + str(p.pattern)

    return [r for r in walk(get_resolver().url_patterns) if r.startswith(("eval/", "leaderboard/", "api/v1/eval/"))]


def fill(route: str, window, sub) -> str:
    return "/" + (
        route.replace("<id:pk>", str(window.pk))
        .replace("<id:sub>", str(sub.pk))
        .replace("<slug:slug>", window.release.benchmark.slug)
        .replace("<str:version>", window.release.version)
    )


@pytest.fixture
def submitted(window, fake_llm, django_capture_on_commit_callbacks):
    from evalserver.models import Submission
    from tests.evalserver.test_windows import sign_up, team_api

    browser, token = sign_up(window)
    with django_capture_on_commit_callbacks(execute=True):
        team_api(token).post(
            f"/api/v1/eval/windows/{window.pk}/submissions/", {"predictions": upload(lines(window))}, format="multipart"
        )
    return browser, token, Submission.objects.get()


def crawl(client, start: str, limit: int = 200) -> list[tuple[int, str, str]]:
    from collections import deque
    from urllib.parse import urljoin, urlsplit

    seen, queue, visited = {start}, deque([start]), []
    while queue and len(visited) < limit:
        address = queue.popleft()
        response = client.get(address)
        body = response.content.decode(errors="replace") if not getattr(response, "streaming", False) else ""
        visited.append((response.status_code, address, body))
        if not response.get("Content-Type", "").startswith("text/html"):
            continue
        parser = Links()
        parser.feed(body)
        for href in parser.hrefs:
            parts = urlsplit(urljoin("http://testserver" + address, href))
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if (
                parts.netloc == "testserver"
                and target not in seen
                and not parts.path.startswith(("/static/", "/accounts/logout/"))
            ):
                seen.add(target)
                queue.append(target)
    return visited


def test_a_team_account_crawling_from_its_window_sees_only_its_pages(window, submitted):
    browser, _token, sub = submitted
    before = snapshot()
    visited = crawl(browser, f"/eval/{window.pk}/")
    assert snapshot() == before
    assert not [(code, url) for code, url, _ in visited if code >= 500]
    reached = [url for code, url, _ in visited if code == 200]
    assert f"/eval/{window.pk}/" in reached and f"/eval/{window.pk}/card/" in reached
    # Nothing of the pipeline answers a team: only its window, the public board and account pages.
    allowed = ("/eval/", "/leaderboard/", "/accounts/")
    assert [url for url in reached if not url.startswith(allowed)] == []
    for _code, url, body in visited:
        for secret in (*SECRETS, "JUDGE-TEXT"):
            assert secret not in body, f"{url} shows {secret}"


def test_every_route_refuses_a_team_account_and_anonymous_visitors_properly(window, submitted, researcher):
    browser, token, sub = submitted
    anonymous = Client()
    browser.raise_request_exception = anonymous.raise_request_exception = False
    researcher_only = (
        "eval/new/",
        "eval/<id:pk>/baseline/",
        "eval/<id:pk>/close/",
        "eval/<id:pk>/submissions/<id:sub>/hide/",
        "api/v1/eval/windows/<id:pk>/close/",
    )
    problems = []
    for route in eval_routes():
        url = fill(route, window, sub) + (f"?invite={window.invite_token}" if route.endswith("join/") else "")
        for method in ("get", "post"):
            team_answer = getattr(browser, method)(url)
            anon_answer = getattr(anonymous, method)(url)
            if team_answer.status_code >= 500 or anon_answer.status_code >= 500:
                problems.append(f"{method} {url}: 5xx")
            if route in researcher_only and team_answer.status_code not in (403, 405):
                problems.append(f"{method} {url}: a team got {team_answer.status_code}")
            if route.startswith("api/"):
                if anon_answer.status_code != 401:
                    problems.append(f"{method} {url}: anonymous API got {anon_answer.status_code}")
            elif route.startswith(PUBLIC):
                if anon_answer.status_code >= 500 or anon_answer.get("Location", "").startswith("/accounts/login/"):
                    problems.append(f"{method} {url}: anonymous got {anon_answer.status_code} on a public page")
            elif anon_answer.status_code != 302 or not anon_answer["Location"].startswith("/accounts/login/"):
                problems.append(f"{method} {url}: anonymous got {anon_answer.status_code}")
            for body in (team_answer, anon_answer):
                text = b"" if getattr(body, "streaming", False) else body.content
                assert not any(s.encode() in text for s in SECRETS), url
    assert problems == []

"""Reflected input never runs as script: every page is swept with payloads in its query and form
fields, and the Content-Security-Policy stops an injected script in a real browser."""

import pytest
from django.urls import get_resolver

from tests.factories import jpeg

PAYLOADS = ['<script>document.title="pwned"</script>', '"><img src=x onerror=alert(1)>']
FIELDS = [
    "image_id",
    "item",
    "task",
    "status",
    "flag",
    "outcome",
    "author",
    "benchmark",
    "assignee",
    "kind",
    "page",
    "q",
    "name",
    "slug",
    "description",
    "question",
    "version",
    "url",
    "token_env",
    "title",
    "preset",
    "action",
    "reason",
    "note",
    "images",
    "source",
    "license",
    "next",
    "open_page",
    "keep",
]


def _routes():
    def walk(patterns, prefix=""):
        for p in patterns:
            if hasattr(p, "url_patterns"):
                yield from walk(p.url_patterns, prefix + str(p.pattern))
            else:
                yield prefix + str(p.pattern)

    # Logging out would turn every later request into a login redirect that echoes nothing.
    return [r for r in walk(get_resolver().url_patterns) if not r.startswith(("admin/", "^media", "accounts/logout"))]


@pytest.fixture
def filled_routes(benchmark, draft, researcher, annotator):
    from curation import services

    image = services.ingest_image(benchmark, jpeg(7001), tasks=[benchmark.tasks.get(slug="counting")]).image
    values = {
        "slug": benchmark.slug,
        "item_id": draft.pk,
        "pk": image.pk,
        "job_id": 1,
        "assignment_id": 1,
        "link_id": 1,
        "number": 1,
        "review_id": 1,
        "task_slug": "counting",
        "version": "1.0.0",
        "kind": "public.zip",
        "sub": 1,
    }
    routes = []
    for route in _routes():
        for name, value in values.items():
            for converter in ("slug", "id", "str"):
                route = route.replace(f"<{converter}:{name}>", str(value))
        assert "<" not in route, f"no test value for a parameter of {route}: add it to this test"
        routes.append("/" + route)
    return routes


def _unescaped(response) -> list[str]:
    if not response.get("Content-Type", "").startswith("text/html"):
        return []
    body = response.content.decode(errors="replace")
    return [p for p in PAYLOADS if p in body]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_no_page_reflects_input_as_html(client_for, researcher, filled_routes, payload):
    client = client_for(researcher)
    client.raise_request_exception = False
    query = {field: payload for field in FIELDS}
    answered = 0
    for route in filled_routes:
        for response in (client.get(route, query), client.post(route, query)):
            assert response.status_code < 500, f"{route}: {response.status_code}"
            assert not _unescaped(response), f"{route} echoes the payload unescaped"
            if response.get("Content-Type", "").startswith("text/plain"):
                assert response["X-Content-Type-Options"] == "nosniff"
            answered += response.status_code != 302 or "/accounts/login/" not in response["Location"]
    assert answered == 2 * len(filled_routes)  # still logged in: every route really answered


def test_image_chip_echoes_only_as_plain_text(client_for, annotator, benchmark):
    response = client_for(annotator).get(f"/b/{benchmark.slug}/items/image-chip/", {"image_id": PAYLOADS[0]})
    assert response.status_code == 400 and response["Content-Type"].startswith("text/plain")
    assert "type the number of an accepted image" in response.content.decode()


def test_every_response_carries_the_policy(client_for, annotator, benchmark):
    for url in ("/", f"/b/{benchmark.slug}/", "/accounts/login/", "/api/v1/me/", "/no-such-page/"):
        policy = client_for(annotator).get(url)["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe-inline" not in policy
        assert "object-src 'none'" in policy and "frame-ancestors 'none'" in policy


def test_no_template_has_inline_script_or_style():
    from pathlib import Path

    from tests.conftest import REPO_ROOT

    offenders = []
    for path in Path(REPO_ROOT).glob("*/templates/**/*.html"):
        text = path.read_text()
        for marker in ("<script>", " style=", " onclick=", " onsubmit=", " onchange=", " onload=", "javascript:"):
            if marker in text:
                offenders.append(f"{path.relative_to(REPO_ROOT)}: {marker.strip()}")
    assert offenders == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_browser_runs_no_reflected_or_injected_script(login_as, make_user):
    from curation.services import load_preset

    demo = load_preset("alignmmbench", slug="demo")
    page = login_as(make_user("annotator", "anna", benchmarks=[demo]))
    # The reflected XSS of the report: the payload is shown as text, nothing runs.
    page.goto("/b/demo/items/image-chip/?image_id=" + PAYLOADS[0])
    assert page.title() != "pwned" and "<script>" in page.inner_text("body")
    # Should some template ever forget to escape: an inline script and handler inserted into a
    # real page (its real headers kept) are blocked by the policy, and the browser says so.
    page.expect_csp_violations = True

    def inject(route):
        response = route.fetch()
        html = response.text().replace(
            "</main>",
            '<script>document.title="pwned"</script><img src="/static/none.png" onerror="document.title=\'pwned\'"></main>',
        )
        route.fulfill(response=response, body=html)

    page.route("**/b/demo/", inject)
    page.goto("/b/demo/")
    page.wait_for_load_state("load")
    assert page.title() != "pwned"
    assert "script-src 'self'" in page.evaluate("fetch('/b/demo/').then(r => r.headers.get('content-security-policy'))")
    assert any("Content Security Policy" in v for v in page.csp_violations)

"""A new user's first hour, in headless Chromium on the seeded demo: each role follows every header
link, opens the items at each stage and the contamination report, and is refused one action; the
API root, Swagger UI (with a "Try it out" call) and ReDoc load. Nothing may answer 4xx/5xx (except
the refusal, which must be a styled page with navigation and the reason), log a console error,
break the Content-Security-Policy, or request anything from another host."""

import json
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from annotation.models import Item
from demo.management.commands.seed_demo import DEMO_SLUG
from tests.demo.conftest import PASSWORDS
from tests.factories import seed_demo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class Watch:
    """Everything the page reports: failed responses, console errors, requests to other hosts."""

    def __init__(self, page, origin: str):
        self.failures, self.errors, self.offsite = [], [], []
        page.on("response", lambda r: self.failures.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("request", lambda r: self.offsite.append(r.url) if self._offsite(r.url, origin) else None)

    @staticmethod
    def _offsite(url: str, origin: str) -> bool:
        return urlsplit(url).scheme in ("http", "https") and not url.startswith(origin)

    def clean(self) -> bool:
        return not (self.failures or self.errors or self.offsite)

    def report(self) -> str:
        return f"failures={self.failures} errors={self.errors} offsite={self.offsite}"


def header_links(page) -> list[str]:
    hrefs = page.locator("header a[href]:not(.skip-link)").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    return list(dict.fromkeys(h for h in hrefs if h.startswith("/")))


def walk(page, watch, role: str, demo_items: dict[str, Item]) -> list[str]:
    page.goto("/")
    page.click(f"#benchmarks a[href='/b/{DEMO_SLUG}/']")
    page.wait_for_url(f"**/b/{DEMO_SLUG}/")
    visited = []
    for href in header_links(page):
        page.goto(href)
        visited.append(href)
    for status, item in demo_items.items():
        page.goto(f"/b/{DEMO_SLUG}/items/{item.pk}/")
        expect(page.locator("main")).to_contain_text(f"#{item.pk}")
        page.goto(f"/b/{DEMO_SLUG}/items/{item.pk}/history/")
        visited.append(f"item {status}")
    page.goto(f"/b/{DEMO_SLUG}/images/contamination/")
    expect(page.locator("main")).to_contain_text("emblem-3.jpg")
    page.wait_for_load_state("networkidle")
    assert watch.clean(), f"{role}: {watch.report()}"
    return visited


@pytest.mark.parametrize("role", ["researcher", "reviewer", "annotator"])
def test_each_role_walks_the_demo_without_an_error(browser_page, login_as, live_server, demo, role):
    page = browser_page
    watch = Watch(page, live_server.url)
    login_as(demo[role], PASSWORDS[role])
    items = {item.status: item for item in Item.objects.filter(benchmark__slug=DEMO_SLUG, is_external=False).order_by("-pk")}
    # Newest first, so each stage shows the first item made for it; "rewritten": the rewrite step's seed.
    assert sorted(items) == ["accepted", "answered", "draft", "in_review", "rewritten"]
    visited = walk(page, watch, role, items)
    assert any(v.startswith(f"/b/{DEMO_SLUG}/") for v in visited) and "/api/docs/" in visited

    if role == "reviewer":
        # The demo round waits for the reviewer: the MCQ item is in their review queue.
        page.goto(f"/b/{DEMO_SLUG}/review/queue/")
        expect(page.locator("main")).to_contain_text(f"#{items['in_review'].pk}")
        assert watch.clean(), watch.report()

    # A refused action (researchers may do everything): a styled page with the navigation and
    # the reason, not a bare 403.
    if role != "researcher":
        response = page.goto(f"/b/{DEMO_SLUG}/assign/")
        assert response.status == 403
        expect(page.locator(".error-page h1")).to_have_text("Not allowed")
        expect(page.locator(".error-page")).to_contain_text("This page needs the researcher role.")
        expect(page.locator(f"header a[href='/b/{DEMO_SLUG}/']")).to_be_visible()  # the benchmark's navigation
        expect(page.locator(".error-page a[href='/']")).to_be_visible()
        assert page.locator("link[rel=stylesheet]").count() >= 1
        assert watch.offsite == []


def test_the_api_root_swagger_ui_and_redoc_load_cleanly(browser_page, login_as, live_server, demo):
    page = browser_page
    watch = Watch(page, live_server.url)
    login_as(demo["researcher"], PASSWORDS["researcher"])

    page.goto("/")
    page.click("#api-docs-link")
    page.wait_for_url("**/api/docs/")
    root = json.loads(page.context.request.get(live_server.url + "/api/v1/").text())
    assert any(row["path"] == "/api/v1/me/" for row in root["endpoints"])

    # Swagger UI: "Try it out" on GET /api/v1/me/ answers with the logged-in user (session auth).
    operation = page.locator(".opblock-get").filter(has=page.locator("[data-path='/api/v1/me/']")).first
    operation.locator(".opblock-summary").click()
    operation.locator("button.try-out__btn").click()
    operation.locator("button.execute").click()
    expect(operation.locator(".live-responses-table tbody .response-col_status").first).to_have_text("200")
    expect(operation.locator(".live-responses-table .microlight").first).to_contain_text('"username": "researcher"')

    page.goto("/api/docs/redoc/")
    expect(page.locator("#redoc-container h1").first).to_contain_text("benchforge API")
    expect(page.locator("#redoc-container")).to_contain_text("/api/v1/me/")
    page.wait_for_load_state("networkidle")
    page.goto("/api/v1/")
    assert '"endpoints"' in page.content()
    assert watch.clean(), watch.report()


@pytest.fixture
def full_demo(settings, fresh_image_indexes, tmp_path):
    """The demo as `make run` seeds it on a fresh clone: no models file, so the demo endpoints."""
    settings.BENCHFORGE_MODELS = tmp_path / "models.toml"
    return seed_demo(settings, "--demo-models")["researcher"]


def follow_header(page, href: str) -> None:
    """Go where a header link points (the menus fold on narrow screens; the link must be there)."""
    assert page.locator(f"header a[href='{href}']").count() >= 1, f"no header link to {href}"
    page.goto(href)


def test_a_fresh_demo_reaches_a_rewrite_batch_a_qc_run_a_leaderboard_score_and_a_studys_figures(
    browser_page, login_as, live_server, full_demo
):
    page = browser_page
    watch = Watch(page, live_server.url)
    login_as(full_demo, PASSWORDS["researcher"])
    base = f"/b/{DEMO_SLUG}"
    page.goto("/")
    page.click(f"#benchmarks a[href='{base}/']")
    page.wait_for_url(f"**{base}/")

    follow_header(page, f"{base}/rewrite/")
    page.click(f"main a[href='{base}/rewrite/batches/1/']")
    page.wait_for_url(f"**{base}/rewrite/batches/1/")
    expect(page.locator("#demo-output-notice")).to_contain_text("demo-strong")

    follow_header(page, f"{base}/qc/")
    page.click(f"main a[href='{base}/qc/runs/1/']")
    page.wait_for_url(f"**{base}/qc/runs/1/")
    expect(page.locator("#demo-output-notice")).to_contain_text("demo-fair")
    page.click(f"main a[href='{base}/qc/runs/1/flagged/']")
    expect(page.locator("main")).to_contain_text("qc-demo")

    follow_header(page, f"{base}/releases/")
    page.click(f"main a[href='{base}/releases/1.0.0/']")
    page.click("#leaderboard-link")
    page.wait_for_url(f"**{base}/releases/1.0.0/leaderboard/")
    expect(page.locator("#leaderboard tbody tr")).to_have_count(8)
    page.locator("#leaderboard tr[data-label='demo-strong'] a").first.click()
    page.wait_for_url(f"**{base}/releases/1.0.0/leaderboard/*/")
    expect(page.locator("#demo-output-notice")).to_be_visible()

    follow_header(page, f"{base}/human-eval/")
    page.click(f"main a[href='{base}/human-eval/1/']")
    page.wait_for_url(f"**{base}/human-eval/1/")
    expect(page.locator(".figures").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert watch.clean(), watch.report()

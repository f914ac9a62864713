"""The demo in headless Chromium at 1280x800 and 390x844, as each role: every page (each kind of
page the header and the pages link to) answers, is no wider than the screen and has no serious
or critical axe-core violation; the header fits one row per level at 1280 px; every navigation
target is visible (behind the menu button on a phone) and opens; the menu works by keyboard."""

import re
from urllib.parse import urlsplit

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.urls import Resolver404, resolve
from playwright.sync_api import expect

from demo.management.commands.seed_demo import DEMO_SLUG
from tests.demo.conftest import PASSWORDS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
# Pages of each kind visited: enough to meet the different states of a kind (items at each stage).
PER_KIND = {"desktop": 2, "phone": 1}
# Not pages: downloads, fragments htmx loads into a page, media, the admin and the API (its docs
# are vendor UIs, checked by tests/demo/test_browser_walk.py), logging out.
NOT_PAGES = re.compile(
    r"^/(accounts/logout|admin/|api/|media/|static/)|/download/|\.(svg|csv|tsv|jsonl|json|parquet|zip)$"
    r"|/progress/$|/image-chip/|/image-picker/|/feedback/$|/rewrites/$"
)
SERIOUS = ("serious", "critical")
# axe-core's script (about 550 KB), loaded into every page of a context by the browser itself: the
# library's own `Axe().run(page)` sends it over the debugging protocol again for each page checked.
AXE_SCRIPT = Axe().axe_script


@pytest.fixture
def demo(settings, fresh_image_indexes, tmp_path, live_full_demo_snapshot):
    # The fuller demo `make run` seeds with no models file: two releases (one frozen and scored,
    # so the Compare select shows), a QC run with flagged items, a rewrite batch, a rated study.
    # Seeded once per process and copied in (tests/factories.py's DemoSnapshot).
    settings.BENCHFORGE_MODELS = tmp_path / "models.toml"
    return live_full_demo_snapshot.restore(settings)


def open_page(browser, live_server, viewport, user):
    context = browser.new_context(base_url=live_server.url, viewport=viewport)
    context.set_default_timeout(10_000)
    context.add_init_script(script=AXE_SCRIPT)
    page = context.new_page()
    page.problems = []
    page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: page.problems.append(str(exc)))
    page.goto("/accounts/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", PASSWORDS[user.username])
    page.click("main button[type=submit]")
    page.wait_for_load_state()
    return page


def kind_of(path: str) -> str | None:
    try:
        return resolve(path).url_name
    except Resolver404:
        return None


def links_on(page) -> list[str]:
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    return [h for h in hrefs if h.startswith("/") and not h.startswith("//") and not NOT_PAGES.search(urlsplit(h).path)]


def axe_violations(page) -> list[dict]:
    return page.evaluate("axe.run(document, {resultTypes: ['violations']}).then(results => results.violations)")


def crawl(page, width: int, per_kind: int, header) -> tuple[list[str], list[str]]:
    """Visit the demo from the benchmark list: (pages visited, problems found). `header` checks the
    header of the pages it asks for, as they are visited."""
    todo, seen, kinds, visited, problems = ["/", f"/b/{DEMO_SLUG}/"], set(), {}, [], []
    while todo:
        url = todo.pop(0)
        path = urlsplit(url).path
        kind = kind_of(path)
        if url in seen or kind is None or kinds.get(kind, 0) >= per_kind:
            continue
        seen.add(url)
        kinds[kind] = kinds.get(kind, 0) + 1
        response = page.goto(url)
        visited.append(url)
        if response.status >= 400:
            problems.append(f"{url}: {response.status}")
            continue
        if "text/html" not in response.headers.get("content-type", ""):
            continue
        wide = page.evaluate("document.documentElement.scrollWidth")
        if wide > width:
            problems.append(f"{url}: {wide} px wide on a {width} px screen")
        for violation in axe_violations(page):
            if violation["impact"] in SERIOUS:
                node = violation["nodes"][0]
                problems.append(f"{url}: axe {violation['id']} ({violation['impact']}) at {node['target']}: {node['html'][:120]}")
        todo += links_on(page)
        problems += header.check_if_wanted(url)  # last: on a phone it opens the menu
    return visited, problems


def header_targets(page) -> list[str]:
    return page.eval_on_selector_all("header a[href]:not(.skip-link)", "els => els.map(e => e.getAttribute('href'))")


class HeaderCheck:
    """On the dashboard and on the first page of each stage: every header link can be seen (after
    the menu button on a phone), lies within the screen and opens a page; at 1280 px each level
    of the header is one row. Done on those pages as the crawl opens them (`check_if_wanted`);
    `finish` opens those the crawl did not reach, then the header targets no page has opened."""

    def __init__(self, page, name: str, width: int):
        self.page, self.name, self.width = page, name, width
        self.dashboard = f"/b/{DEMO_SLUG}/"
        self.wanted, self.checked, self.targets = {self.dashboard}, set(), set()

    def check_if_wanted(self, url: str) -> list[str]:
        if url not in self.wanted or url in self.checked:
            return []
        if url == self.dashboard:
            self.wanted.update(self.page.eval_on_selector_all(".pipeline a", "els => els.map(e => e.getAttribute('href'))"))
        self.checked.add(url)
        page, problems = self.page, []
        if self.name == "phone":
            expect(page.locator(".pipeline")).to_be_hidden()  # folded away until asked for
            page.locator("#menu-toggle").click()
            expect(page.locator("#menu-toggle")).to_have_attribute("aria-expanded", "true")
        else:
            expect(page.locator("#menu-toggle")).to_be_hidden()
            rows = page.evaluate(
                """() => ['.topbar', '.benchbar', '.stagebar'].map(s => document.querySelector(s))
                     .filter(Boolean).map(el => [el.className, Math.round(el.getBoundingClientRect().height)])"""
            )
            problems += [f"{url}: the header's {cls} wraps ({height} px high)" for cls, height in rows if height > 52]
        problems += [f"{url}: header link {href} is not within reach" for href in header_links_out_of_reach(page, self.width)]
        self.targets.update(header_targets(page))
        return problems

    def finish(self, opened: set[str]) -> list[str]:
        """`opened`: the pages this page has opened (the crawl recorded their status)."""
        problems = []
        while unchecked := sorted(self.wanted - self.checked):  # the dashboard first: it names the stages
            url = self.dashboard if self.dashboard in unchecked else unchecked[0]
            response = self.page.goto(url)
            opened = opened | {url}
            if response.status >= 400:
                problems.append(f"{url}: {response.status}")
                self.checked.add(url)
                continue
            problems += self.check_if_wanted(url)
        for target in sorted(self.targets - opened):
            response = self.page.goto(target)
            if response.status >= 400:
                problems.append(f"header link {target}: {response.status}")
        return problems


def header_links_out_of_reach(page, width: int) -> list[str]:
    """The header links that cannot be seen (Playwright's test: a box of some size, and not hidden
    by `visibility`) or that lie past either side of the screen: one question to the page for all of
    them, not two per link."""
    return page.eval_on_selector_all(
        "header a[href]:not(.skip-link)",
        f"""links => links.filter(a => {{
               const box = a.getBoundingClientRect();
               const seen = box.width > 0 && box.height > 0 && a.checkVisibility({{visibilityProperty: true}});
               return !seen || box.left < 0 || box.right > {width} + 1;
             }}).map(a => a.getAttribute('href'))""",
    )


@pytest.mark.parametrize("role", ["researcher", "reviewer", "annotator"])
@pytest.mark.timeout(1200)  # the fuller demo has more kinds of page to sweep
def test_every_demo_page_fits_both_screens_passes_axe_and_every_navigation_target_is_reachable(browser, live_server, demo, role):
    for name, viewport in VIEWPORTS.items():
        page = open_page(browser, live_server, viewport, demo[role])
        header = HeaderCheck(page, name, viewport["width"])
        visited, problems = crawl(page, viewport["width"], PER_KIND[name], header)
        problems += header.finish(set(visited))
        problems += page.problems
        page.context.close()
        assert len(visited) > (15 if role == "annotator" else 25), visited  # the whole demo, not one page
        assert problems == [], f"{role} at {name}:\n" + "\n".join(problems)


def test_the_menu_opens_and_closes_from_the_keyboard_on_a_phone(browser, live_server, demo):
    page = open_page(browser, live_server, VIEWPORTS["phone"], demo["annotator"])
    page.goto(f"/b/{DEMO_SLUG}/")
    page.keyboard.press("Tab")
    expect(page.locator(".skip-link")).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    toggle = page.locator("#menu-toggle")
    expect(toggle).to_be_focused()
    expect(page.locator(".places")).to_be_hidden()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("Tab")
    expect(page.locator(".places a").first).to_be_focused()
    page.keyboard.press("Escape")
    expect(toggle).to_be_focused()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.locator(".pipeline")).to_be_hidden()
    # The annotator's work starts from their queue: the Author stage leads there.
    toggle.click()
    page.locator(".pipeline a[data-stage=author]").click()
    page.wait_for_url(f"**/b/{DEMO_SLUG}/queue/")
    assert page.problems == []
    page.context.close()


def test_chinese_text_is_drawn_with_a_cjk_font(browser, live_server, demo):
    """The demo's default rewrite template is Chinese: the browser must draw it with a font that
    has the characters (CI installs Debian's fonts-noto-cjk; the pages name common CJK fonts)."""
    page = open_page(browser, live_server, VIEWPORTS["desktop"], demo["researcher"])
    page.goto(f"/b/{DEMO_SLUG}/rewrite/templates/")
    marked = page.evaluate(
        """() => { const all = Array.from(document.querySelectorAll('main *')).filter(el =>
               el.children.length === 0 && /[\\u4e00-\\u9fff]/.test(el.textContent));
             if (all.length) all[0].setAttribute('data-cjk-probe', ''); return all.length; }"""
    )
    assert marked, "no Chinese text on the page"
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "[data-cjk-probe]"})["nodeId"]
    fonts = [f["familyName"] for f in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]]
    assert any(re.search(r"CJK|Han Sans|Hei|PingFang|YaHei|WenQuanYi|Droid Sans Fallback", f) for f in fonts), fonts
    page.context.close()

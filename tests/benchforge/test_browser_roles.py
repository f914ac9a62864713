"""Each role logs in through the real login form in headless Chromium and sees only what it may."""

import re

import pytest
from playwright.sync_api import expect

from curation.services import load_preset

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(make_user):
    demo = load_preset("alignmmbench", slug="demo")
    load_preset("mmbench", slug="private")
    return {
        "annotator": make_user("annotator", "anna", benchmarks=[demo]),
        "reviewer": make_user("reviewer", "rita", benchmarks=[demo]),
        "researcher": make_user("researcher", "ross"),
    }


def test_wrong_password_is_refused_with_a_message(browser_page, world):
    page = browser_page
    page.goto("/accounts/login/")
    page.fill("input[name=username]", "anna")
    page.fill("input[name=password]", "not-it")
    page.click("main button[type=submit]")
    # A click does not wait for the page it posts to: reading page.content() at once can catch
    # the document between the two (an empty string). expect() waits for the answer.
    expect(page.locator("main")).to_contain_text("Wrong username or password")
    assert page.url.endswith("/accounts/login/")


def test_a_stale_login_form_gets_a_styled_page_that_says_to_reload(browser_page, world):
    # The token the form carries no longer matches the cookie: as after logging in or out in
    # another tab. Django's own page for this needs inline style, which the CSP blocks (the
    # fixture fails the test on any violation).
    page = browser_page
    page.goto("/accounts/login/")
    page.context.clear_cookies()
    page.fill("input[name=username]", "anna")
    page.fill("input[name=password]", "not-it")
    page.click("main button[type=submit]")
    expect(page.locator("h1")).to_have_text("Not allowed")
    expect(page.locator("main")).to_contain_text("Reload the page and send it again")
    page.goto("/accounts/login/")  # and the reload works
    page.fill("input[name=username]", "anna")
    page.fill("input[name=password]", "not-it")
    page.click("main button[type=submit]")
    expect(page.locator("main")).to_contain_text("Wrong username or password")


@pytest.mark.parametrize("role", ["annotator", "reviewer"])
def test_annotators_and_reviewers_see_their_benchmark_but_cannot_manage(login_as, world, role):
    page = login_as(world[role])
    assert page.locator(".role").inner_text() == role
    links = page.locator("#benchmarks a").all_inner_texts()
    assert links == ["AlignMMBench"]  # the private MMBench benchmark is not listed
    assert page.locator("text=New benchmark").count() == 0
    page.click("text=AlignMMBench")
    # A click starts a navigation without waiting for the new page: expect() waits for it.
    expect(page.locator("#stage-counts tr[data-task]")).to_have_count(13)
    assert page.locator("nav >> text=Settings").count() == 0
    page.click(".pipeline >> text=Collect")  # the taxonomy is one of the Collect stage's pages
    page.click(".stagebar >> text=Taxonomy")
    # Counting what must be absent proves nothing until the taxonomy is there: its 13 tasks, after the preset form's place.
    expect(page.locator("tr[id^='task-']")).to_have_count(13)
    assert page.locator("#preset-form").count() == 0 and page.locator("a.task-edit").count() == 0
    assert page.goto("/benchmarks/new/").status == 403
    assert page.goto("/b/private/").status == 404


def test_researcher_creates_a_benchmark_from_a_preset_and_edits_a_task(login_as, world):
    page = login_as(world["researcher"])
    assert sorted(page.locator("#benchmarks a").all_inner_texts()) == ["AlignMMBench", "MMBench"]
    page.click("text=New benchmark")
    page.fill("input[name=name]", "Touch test")
    page.select_option("select[name=preset]", "touchstone")
    page.click("main button[type=submit]")
    expect(page.locator("#stage-counts tr[data-task]")).to_have_count(27)
    page.click(".pipeline >> text=Collect")
    page.click(".stagebar >> text=Taxonomy")
    page.click("#task-email-writing a.task-edit")
    page.fill("input[name=quota]", "55")
    page.click("main button[type=submit]")
    expect(page.locator("main")).to_contain_text("Saved task")
    assert page.locator("#task-email-writing td.num").inner_text() == "55"


def test_logout_ends_the_session(login_as, world):
    page = login_as(world["annotator"])
    page.click("text=Log out")
    # The logout is a form post: a goto before its answer could cancel it.
    expect(page).to_have_url(re.compile(r"/accounts/login/$"))
    page.goto("/")
    assert "/accounts/login/" in page.url

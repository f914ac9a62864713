"""One full review loop in headless Chromium, on the keyboard where reviewers work: round 1 sends
an item back, its author fixes it, round 2 accepts it, expert verification confirms it."""

import pytest
from playwright.sync_api import expect

from annotation.models import Item
from annotation.services import create_item, submit_item, update_item
from curation.services import ingest_image, load_preset, screen_images
from review.models import ReviewRound, RoundItem
from tests.factories import complete_fields, jpeg

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(make_user):
    demo = load_preset("alignmmbench", slug="demo")
    people = {
        "anna": make_user("annotator", "anna", benchmarks=[demo]),
        "rita": make_user("reviewer", "rita", benchmarks=[demo]),
        "ross": make_user("researcher", "ross", benchmarks=[demo]),
    }
    counting = demo.tasks.get(slug="counting")
    image = ingest_image(demo, jpeg(8800), tasks=[counting]).image
    screen_images(demo, [image.pk], action="accept", user=people["ross"])
    item = create_item(demo, task=counting, user=people["anna"], assignee=people["anna"])
    item = update_item(item, complete_fields(image), expected_version=item.version, user=people["anna"])
    submit_item(item, user=people["anna"])
    return {**people, "item": item}


def open_round(page, kind="cross"):
    page.goto("/b/demo/review/")
    page.select_option("select[name=kind]", kind)
    page.click("#open-round-button")
    expect(page.locator("h1")).to_contain_text("round")


def test_one_full_loop_with_the_keyboard(login_as, world):
    item = world["item"]
    page = login_as(world["ross"])
    open_round(page)
    assert ReviewRound.objects.get(number=1).status == "open"

    # Round 1: the reviewer sends it back, with a reason and a comment, without the mouse.
    page = login_as(world["rita"])
    page.goto("/b/demo/review/")
    page.keyboard.press("n")
    expect(page.locator("#verdict-form")).to_be_visible()
    page.keyboard.press("r")  # needs revision
    page.keyboard.press("1")  # reference answer: factual error
    page.fill("textarea[name=comment]", "There are four apples, not three.")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#review-queue")).to_contain_text("Nothing to review")
    assert Item.objects.get(pk=item.pk).status == "revision"

    # The author reads the review in the editor and fixes the reference answer.
    page = login_as(world["anna"])
    page.goto(f"/b/demo/items/{item.pk}/")
    expect(page.locator("#review-feedback")).to_contain_text("There are four apples, not three.")
    page.fill("#reference-answer", "There are four red apples on the table, two on each side of the bowl.")
    page.keyboard.press("Control+Enter")  # submit for review (saves first)
    page.wait_for_url("**/queue/**")
    assert Item.objects.get(pk=item.pk).status == "answered"

    # Round 2 takes the new version; the reviewer sees what changed and accepts.
    page = login_as(world["ross"])
    open_round(page)
    page = login_as(world["rita"])
    page.goto("/b/demo/review/")
    page.keyboard.press("n")
    expect(page.locator("#changes-since")).to_contain_text("four red apples")
    expect(page.locator("#changes-since")).not_to_contain_text("Status")
    page.keyboard.press("a")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#review-queue")).to_contain_text("Nothing to review")
    assert Item.objects.get(pk=item.pk).status == "accepted"

    # Expert verification by the researcher.
    page = login_as(world["ross"])
    open_round(page, kind="expert")
    page.goto("/b/demo/review/")
    page.keyboard.press("n")
    expect(page.locator("#verdict-form")).to_be_visible()
    page.keyboard.press("a")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#review-queue")).to_contain_text("Nothing to review")
    expert = ReviewRound.objects.get(kind="expert")
    assert RoundItem.objects.get(round=expert, item=item).outcome == "accepted"
    assert Item.objects.get(pk=item.pk).status == "accepted"

    # The dashboard shows the rounds: one sent back, then one accepted, then verified.
    page.goto("/b/demo/")
    expect(page.locator("#rounds-chart")).to_be_visible()
    rows = page.locator("#rounds-chart tbody tr").all_inner_texts()
    assert [r.split("\t")[:3] for r in rows] == [["1", "0", "1"], ["2", "1", "0"], ["3 (expert)", "1", "0"]]


def test_a_shortcut_pressed_while_the_page_is_still_loading_is_not_lost(login_as, world):
    """Reviewers press N and then A or R at once. Every deferred script of the next page is held
    back here until the key is pressed: the shared shortcut listener must not depend on them."""
    page = login_as(world["ross"])
    open_round(page)
    page = login_as(world["rita"])
    page.goto("/b/demo/review/")

    held = []

    def hold_deferred_scripts(route):
        if route.request.url.endswith(("/keys.js", "/menu.js")):  # the two scripts base.html loads without defer
            route.continue_()
        else:
            held.append(route)

    page.route("**/*.js", hold_deferred_scripts)
    page.keyboard.press("n")
    expect(page.locator("#verdict-form")).to_be_visible()
    page.keyboard.press("r")
    expect(page.locator("input[name=verdict][value=revision]")).to_be_checked()
    assert held, "the page's other scripts were still loading when the key was pressed"
    for route in held:
        route.continue_()

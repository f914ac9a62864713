"""An annotator works through their queue in headless Chromium with the keyboard: a multi-turn
item and a multiple-choice item, saved with Ctrl+S and submitted with Ctrl+Enter; a stale save
shows both versions side by side and loses nothing."""

import re

import pytest

from annotation import services
from annotation.models import Item
from curation.services import ingest_image, load_preset, screen_images
from tests.factories import jpeg

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(make_user):
    demo = load_preset("alignmmbench", slug="demo")
    annotator = make_user("annotator", "anna", benchmarks=[demo])
    researcher = make_user("researcher", "ross")
    coherence, counting = demo.tasks.get(slug="coherence"), demo.tasks.get(slug="counting")
    images = []
    for seed, task in ((1, coherence), (2, counting)):
        image = ingest_image(demo, jpeg(seed=seed), original_name=f"{seed}.jpg", tasks=[task]).image
        screen_images(demo, [image.pk], action="accept", user=researcher)
        services.assign_images(demo, task=task, image_ids=[image.pk], assignee=annotator, user=researcher)
        images.append(image)
    return {"benchmark": demo, "annotator": annotator, "researcher": researcher, "images": images}


def type_into(page, selector, text):
    page.click(selector)
    page.keyboard.type(text)


def saved_version(page, version):
    page.wait_for_selector(f"#save-status >> text=Saved · version {version}")


def test_annotator_writes_a_multi_turn_and_an_mcq_item_with_the_keyboard(login_as, world):
    page = login_as(world["annotator"])
    page.goto("/b/demo/queue/")
    page.keyboard.press("n")
    page.wait_for_url(re.compile(r"/b/demo/items/\d+/$"))
    first = Item.objects.get(item_images__image=world["images"][0])
    assert page.url.endswith(f"/items/{first.pk}/")
    assert (
        page.locator(".guideline:not([hidden]) h2").inner_text() == "Coherence · 对话连贯性"
    )  # the English interface: the English name beside the Chinese

    # The viewer zooms on click.
    before = page.locator("#viewer-img").evaluate("el => el.style.transform")
    page.click("#viewer-stage")
    assert page.locator("#viewer-img").evaluate("el => el.style.transform") != before

    # A multi-turn item: one earlier exchange, then the final question.
    page.check("input[name=kind][value=multi_turn]")
    page.click("[data-action=add-exchange]")
    page.keyboard.type("What does the sign say?")  # the user turn has focus
    page.keyboard.press("Tab")
    page.keyboard.type("It says 'Fresh fruit, 5 yuan'.")
    type_into(page, "#question", "Translate your previous answer into French.")
    type_into(page, "#reference-answer", "The sign reads 'Fruits frais, 5 yuans'.")
    page.click("[data-action=add-criterion]")
    page.keyboard.type("Uses the text read in the earlier turn.")
    page.keyboard.press("Control+s")
    saved_version(page, 2)
    first.refresh_from_db()
    assert first.version == 2 and first.kind == "multi_turn"
    assert first.history == [
        {"role": "user", "content": "What does the sign say?"},
        {"role": "assistant", "content": "It says 'Fresh fruit, 5 yuan'."},
    ]
    page.wait_for_selector("#readiness >> text=Complete: ready to submit.")

    page.locator("#question").press("Control+Enter")
    page.wait_for_url(lambda url: f"/items/{first.pk}/" not in url and "/items/" in url)
    first.refresh_from_db()
    assert first.status == "answered" and first.question == "Translate your previous answer into French."
    assert [c.text for c in first.criteria.all()] == ["Uses the text read in the earlier turn."]
    assert "submitted for review" in page.content()

    # The next assignment: a multiple-choice item.
    second = Item.objects.get(item_images__image=world["images"][1])
    assert page.url.endswith(f"/items/{second.pk}/")
    page.check("input[name=kind][value=mcq]")
    type_into(page, "#question", "How many apples are on the plate?")
    for option in ("two", "three", "four"):
        page.click("[data-action=add-option]")
        page.keyboard.type(option)
    assert page.locator("#options .letter").all_inner_texts() == ["A", "B", "C"]
    page.check("#options .option:nth-child(2) input[type=radio]")
    type_into(page, "#reference-answer", "Three apples: two green ones and a red one.")
    page.click("[data-action=add-criterion]")
    page.select_option("#criteria .criterion select", "exact")
    page.locator("#criteria textarea").type("The answer is B (three).")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(re.compile(r"/b/demo/queue/$"))
    assert "Your queue is empty" in page.content()
    second.refresh_from_db()
    assert second.status == "answered" and second.kind == "mcq"
    assert second.choices == ["two", "three", "four"] and second.answer == "B"
    assert [(c.kind, c.text) for c in second.criteria.all()] == [("exact", "The answer is B (three).")]
    assert [r.action for r in second.revisions.order_by("version")][-1] == "submitted"


def test_a_stale_save_shows_both_versions_and_keeps_the_users_text(login_as, world):
    page = login_as(world["annotator"])
    page.goto("/b/demo/queue/next/")  # a GET offers the work; the button starts it
    page.click("#start-writing")
    page.wait_for_url(re.compile(r"/b/demo/items/\d+/$"))
    item = Item.objects.get(item_images__image=world["images"][0])
    # Someone else saves while the page is open.
    services.update_item(item, {"question": "Their question"}, expected_version=1, user=world["researcher"])
    type_into(page, "#question", "My question")
    page.keyboard.press("Control+s")
    page.wait_for_selector("#conflict")
    assert page.locator("#conflict pre.theirs").first.inner_text() == "Their question"
    assert page.locator("#conflict pre.mine").first.inner_text() == "My question"
    assert page.input_value("#question") == "My question"  # nothing lost
    page.click("[data-conflict=keep-mine]")
    saved_version(page, 3)
    item.refresh_from_db()
    assert item.question == "My question" and item.version == 3

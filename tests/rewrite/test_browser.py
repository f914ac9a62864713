"""A batch from start to verified in headless Chromium: the researcher estimates and starts it on
the page, a reviewer verifies it on the keyboard (approve, edit, reject with a reason, reject as
"other" with a comment, next seed), and a second reviewer approves the edit (nobody approves their
own words)."""

import re

import pytest
from playwright.sync_api import expect

from annotation.models import Item
from rewrite.models import Rewrite, RewriteBatch
from tests.rewrite.conftest import five, question_of

SELECTED = re.compile(r"\bstate-pending\b.*\bselected\b")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_batch_is_started_and_verified_with_the_keyboard(
    login_as, declare, fake_llm, make_seed, make_user, benchmark, researcher, reviewer
):
    cat = make_seed("图中有几只猫？")
    cup = make_seed("桌子上的杯子是什么颜色？")
    declare(input_cost_per_mtok=1.0, output_cost_per_mtok=2.0)
    fake_llm.script("glm-4", lambda body: five(question_of(body)))

    page = login_as(researcher)
    page.goto("/b/demo/rewrite/")
    page.click("#estimate-button")
    expect(page.locator("#estimate")).to_contain_text("2 seeds · 2 calls")
    page.click("#start-button")
    expect(page.locator("h1")).to_contain_text("Rewrite batch 1")
    expect(page.locator("#batch-state")).to_contain_text("Finished")
    expect(page.locator("#batch-seeds")).to_contain_text("Rewritten")
    assert RewriteBatch.objects.get().usage["requests"] == 2 and Rewrite.objects.count() == 10

    page = login_as(reviewer)
    page.goto("/b/demo/rewrite/")
    page.click("#verify-link")
    expect(page.locator("#seed-question")).to_have_text(cat.question)
    rows = page.locator("#rewrite-list .rewrite")
    expect(rows.nth(0)).to_have_class(SELECTED)

    page.keyboard.press("a")  # approve the first
    expect(rows.nth(0)).to_contain_text("Approved")
    expect(rows.nth(1)).to_have_class(SELECTED)  # the next still to verify

    page.keyboard.press("e")  # edit the second and save: it waits for another verifier
    expect(rows.nth(1).locator("textarea")).to_be_focused()
    rows.nth(1).locator("textarea").fill("这张图片里能数出几只猫？")
    page.keyboard.press("Control+Enter")
    expect(rows.nth(1)).to_contain_text("这张图片里能数出几只猫？")
    expect(rows.nth(1)).to_contain_text("yours: another verifier approves it")
    expect(rows.nth(1).locator(".approve-form")).to_have_count(0)

    expect(rows.nth(2)).to_have_class(SELECTED)  # the third: not fluent
    page.keyboard.press("x")
    expect(rows.nth(2).locator(".reject-form")).to_be_visible()
    page.keyboard.press("2")
    expect(rows.nth(2)).to_contain_text("Rejected: not fluent")

    expect(rows.nth(3)).to_have_class(SELECTED)  # the fourth: other, with a comment
    page.keyboard.press("x")
    page.keyboard.press("5")
    expect(rows.nth(3).locator("input[name=comment]")).to_be_focused()
    page.keyboard.type("answers the question instead of asking it")
    page.keyboard.press("Control+Enter")
    expect(rows.nth(3)).to_contain_text("Rejected: other")

    expect(rows.nth(4)).to_have_class(SELECTED)  # Esc closes an open form without acting
    page.keyboard.press("k")
    page.keyboard.press("j")
    expect(rows.nth(4)).to_have_class(SELECTED)
    page.keyboard.press("x")
    expect(rows.nth(4).locator(".reject-form")).to_be_visible()
    page.keyboard.press("Escape")
    expect(rows.nth(4).locator(".reject-form")).to_be_hidden()

    page.keyboard.press("n")
    expect(page.locator("#seed-question")).to_have_text(cup.question)

    page = login_as(make_user("reviewer", "vera", benchmarks=[benchmark]))
    page.goto("/b/demo/rewrite/verify/")
    expect(page.locator("#seed-question")).to_have_text(cat.question)
    rows = page.locator("#rewrite-list .rewrite")
    expect(rows.nth(1)).to_have_class(SELECTED)  # the edited one
    page.keyboard.press("a")
    expect(rows.nth(1)).to_contain_text("Approved")

    decided = {r.position: r for r in Rewrite.objects.filter(seed=cat)}
    assert [decided[i].state for i in range(5)] == ["approved", "approved", "rejected", "rejected", "pending"]
    assert (
        decided[1].edited
        and decided[1].text == "这张图片里能数出几只猫？"
        and decided[1].original_text == "能说说图中有几只猫吗？"
    )
    assert decided[2].reason == "not_fluent" and decided[3].reason == "other"
    assert decided[3].comment == "answers the question instead of asking it"
    made = Item.objects.filter(seed=cat).order_by("pk")
    assert [i.question for i in made] == ["请问图中有几只猫？", "这张图片里能数出几只猫？"] and all(
        i.author == reviewer for i in made
    )
    assert Item.objects.get(pk=cat.pk).status == "rewritten" and Item.objects.get(pk=cup.pk).status == "accepted"

    page.goto(f"/b/demo/items/{cat.pk}/")
    expect(page.locator("#item-rewrite-count")).to_have_text("2")

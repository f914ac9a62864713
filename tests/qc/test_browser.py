"""Adjudicating flagged items in headless Chromium, on the keyboard: the report's button (N) opens
the first flagged item, K keeps it, the next one opens, J and the arrows move, R removes."""

import pytest
from playwright.sync_api import expect

from annotation.models import Item
from annotation.workflow import QC_FLAGGED, QC_PASSED
from qc.demo import add_demo
from qc.models import QCItem, QCRun

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_flagged_item_is_adjudicated_with_the_keyboard(login_as, benchmark, researcher):
    add_demo(benchmark, {"researcher": researcher})
    run = QCRun.objects.get(benchmark=benchmark)
    first, second, third = QCItem.objects.filter(run=run, flagged=True).order_by("item_id")
    page = login_as(researcher)

    page.goto(f"/b/{benchmark.slug}/qc/runs/{run.number}/")
    expect(page.locator("#qc-chart")).to_be_visible()
    page.keyboard.press("n")
    expect(page.locator("h1")).to_contain_text(f"Item #{first.item_id}")
    expect(page.locator("#qc-answers")).to_contain_text("demo-llm-a")
    expect(page.locator("#qc-key")).to_have_text("B")

    page.fill("textarea[name=note]", "the map is needed after all")
    page.locator("textarea[name=note]").blur()
    page.keyboard.press("k")  # keep
    expect(page.locator("h1")).to_contain_text(f"Item #{second.item_id}")
    page.keyboard.press("j")  # move on without deciding
    expect(page.locator("h1")).to_contain_text(f"Item #{third.item_id}")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("h1")).to_contain_text(f"Item #{second.item_id}")
    page.keyboard.press("r")  # remove
    expect(page.locator("h1")).to_contain_text(f"Item #{third.item_id}")

    first.refresh_from_db()
    second.refresh_from_db()
    assert first.decision == "keep" and first.note == "the map is needed after all" and first.decided_by == researcher
    assert second.decision == "remove"
    assert Item.objects.get(pk=first.item_id).status == QC_PASSED
    assert Item.objects.get(pk=second.item_id).status == QC_FLAGGED

"""Releases in headless Chromium: a researcher builds and freezes one, downloads a bundle that
verifies, reads its dataset card, builds the next version and reads the diff; an annotator sees
the release without its private bundle."""

import pytest
from playwright.sync_api import expect

from annotation.models import Item
from benchforge_harness.bundle import verify
from exports.models import Release

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_image_indexes")]


def test_build_freeze_download_card_and_diff(login_as, accepted, researcher, annotator, tmp_path):
    page = login_as(researcher)
    page.on("dialog", lambda dialog: dialog.accept())  # "Freeze release …? It will never change again"
    page.goto("/b/demo/releases/")
    page.fill("input[name=version]", "1.0.0")
    page.fill("textarea[name=notes]", "First public version.")
    page.click("#build-release")
    expect(page.locator("#release-status")).to_have_text("Built (not frozen)")
    page.click("#freeze")
    expect(page.locator("#release-status")).to_have_text("Frozen")
    assert Release.objects.get(version="1.0.0").is_frozen
    assert page.locator("#rebuild").count() == 0  # a frozen release offers no way to change it

    with page.expect_download() as download:
        page.click("#downloads tr[data-kind='public.zip'] a")
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name.endswith("public.zip") and verify(saved) == []

    page.click("#card-link")
    expect(page.locator("main")).to_contain_text("Questions per task and split")
    expect(page.locator("main")).to_contain_text("First public version.")

    seed = next(i for i in accepted if i.seed_id is None and i.kind == "single_turn")
    Item.objects.filter(pk=seed.pk).update(question="How many apples are on the table, exactly?")
    page.goto("/b/demo/releases/")
    page.fill("input[name=version]", "1.1.0")
    page.click("#build-release")
    expect(page.locator("#release-status")).to_have_text("Built (not frozen)")
    page.click("#diff-button")
    expect(page.locator("#changed-count")).to_have_text("1")
    expect(page.locator("#changed")).to_contain_text("How many apples are on the table, exactly?")

    page = login_as(annotator)
    page.goto("/b/demo/releases/1.0.0/")
    expect(page.locator("#downloads")).to_contain_text("Public bundle (.zip)")
    expect(page.locator("#downloads")).not_to_contain_text("Private")
    refused = page.goto("/b/demo/releases/1.0.0/download/private.zip/")
    assert refused.status == 403
    expect(page.locator("main")).to_contain_text("private bundle")

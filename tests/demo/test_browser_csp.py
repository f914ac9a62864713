"""The item editor and the New item page in headless Chromium, for each role and item kind, used
as a person uses them (switching kind and task, adding exchanges, options, criteria and images,
browsing images in the picker, saving, creating): the browser reports no Content-Security-Policy
violation (such as "Applying inline style violates ... style-src") and no other console error."""

import pytest
from playwright.sync_api import expect

from annotation.models import Item
from demo.management.commands.seed_demo import DEMO_SLUG
from tests.demo.conftest import PASSWORDS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def console_errors(page) -> list[str]:
    errors = []
    page.on("console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: errors.append(f"{page.url}: {exc}"))
    return errors


def use_the_editor(page):
    """Everything the editor's scripts do to the page, each kind in turn."""
    form = page.locator("#item-form")
    if not form.count() or page.locator("#item-form fieldset[disabled]").count():
        return  # read-only for this user: nothing to use
    for kind in ("multi_turn", "mcq", "single_turn"):
        radio = page.locator(f"input[name=kind][value={kind}]")
        if radio.count() and radio.is_enabled():
            radio.check()
    for action in ("add-exchange", "add-option", "add-criterion"):
        button = page.locator(f"button[data-action={action}]")
        if button.count() and button.is_visible():
            button.click()
    select = page.locator("#task-select")
    if select.count() and select.is_enabled():
        values = select.locator("option").evaluate_all("os => os.map(o => o.value)")
        select.select_option(values[-1])
        select.select_option(values[0])
    browse = page.locator("#browse-images")
    if browse.count() and browse.is_visible():
        browse.click()
        expect(page.locator("#picker-q")).to_be_visible()
        page.fill("#picker-q", "1")
        page.wait_for_load_state("networkidle")
        page.keyboard.press("Escape")


@pytest.mark.parametrize("role", ["researcher", "reviewer", "annotator"])
def test_the_editor_and_new_item_pages_break_no_csp_rule_for_any_role_or_kind(browser_page, login_as, demo, role):
    page = browser_page
    errors = console_errors(page)
    login_as(demo[role], PASSWORDS[role])

    page.goto(f"/b/{DEMO_SLUG}/items/new/")
    page.wait_for_load_state("networkidle")
    if page.locator("#new-item").count():
        page.locator("#browse-images").click()
        expect(page.locator("#picker-q")).to_be_visible()
        page.locator("#image-picker .pick").first.click()
        for kind in ("mcq", "multi_turn", "single_turn"):
            page.select_option("#id_kind", kind)
        page.click("#new-item button[type=submit]")
        page.wait_for_url("**/items/*/")
        use_the_editor(page)

    items = Item.objects.filter(benchmark__slug=DEMO_SLUG).order_by("pk")
    for kind in Item.Kind.values:
        for item in items.filter(kind=kind)[:2]:
            page.goto(f"/b/{DEMO_SLUG}/items/{item.pk}/")
            page.wait_for_load_state("networkidle")
            use_the_editor(page)
            page.wait_for_load_state("networkidle")
    assert page.csp_violations == [] and errors == [], "\n".join(page.csp_violations + errors)

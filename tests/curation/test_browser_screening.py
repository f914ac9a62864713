"""Screening images with the keyboard and uploading by drag and drop, in headless Chromium."""

import base64

import pytest

from curation import services
from curation.models import Image
from tests.conftest import wait_until
from tests.factories import encode, jpeg, photo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(make_user, fresh_image_indexes):
    demo = services.load_preset("alignmmbench", slug="demo")
    counting, ocr = demo.tasks.get(slug="counting"), demo.tasks.get(slug="ocr")
    images = [
        services.ingest_image(
            demo, jpeg(3000 + i, size=(640, 520)), original_name=f"p{i}.jpg", tasks=[counting if i < 5 else ocr]
        ).image
        for i in range(9)
    ]
    return {"benchmark": demo, "images": images, "annotator": make_user("annotator", "anna", benchmarks=[demo])}


def tile(page, image_id):
    return page.locator(f'.tile[data-id="{image_id}"]')


def wait_status(page, image_id, status):
    page.wait_for_selector(f'.tile[data-id="{image_id}"][data-status="{status}"]:not(.busy)')


def focused_id(page) -> int:
    return int(page.evaluate("document.activeElement.dataset.id"))


def test_screening_with_the_keyboard_updates_in_place(login_as, world):
    page = login_as(world["annotator"])
    page.goto("/b/demo/images/")
    ids = [i.pk for i in world["images"]]
    assert [int(x) for x in page.locator(".tile").evaluate_all("tiles => tiles.map(t => t.dataset.id)")] == ids
    assert page.locator("#shortcut-legend").is_visible()
    page.evaluate("window.stillTheSamePage = true")  # lost if anything reloads the page
    assert focused_id(page) == ids[0]

    page.keyboard.press("a")  # accept; focus moves on to the next image
    wait_status(page, ids[0], "accepted")
    assert focused_id(page) == ids[1]
    page.keyboard.press("2")  # reject: personal privacy
    wait_status(page, ids[1], "rejected")
    assert tile(page, ids[1]).locator(".reason").inner_text() == "Personal privacy"

    page.keyboard.press("6")  # reject: other, asks for a note
    assert page.locator("#note-dialog").is_visible()
    page.keyboard.type("watermark across the text")
    page.keyboard.press("Enter")
    wait_status(page, ids[2], "rejected")
    assert tile(page, ids[2]).locator(".reason").inner_text() == "Other (see note): watermark across the text"

    # Moving around: hjkl and the arrows.
    assert focused_id(page) == ids[3]
    for key, expected in [("l", 4), ("h", 3), ("ArrowRight", 4), ("ArrowLeft", 3), ("h", 2), ("h", 1), ("h", 0), ("h", 0)]:
        page.keyboard.press(key)
        assert focused_id(page) == ids[expected], key
    columns = page.evaluate("""() => { const t = [...document.querySelectorAll('.tile')];
                                         return t.filter(x => x.offsetTop === t[0].offsetTop).length; }""")
    assert 1 < columns < len(ids)
    page.keyboard.press("j")
    assert focused_id(page) == ids[columns]
    page.keyboard.press("ArrowUp")
    assert focused_id(page) == ids[0]
    page.keyboard.press("u")  # back to pending
    wait_status(page, ids[0], "pending")

    # Bulk: select two images with x, accept both with one key.
    assert focused_id(page) == ids[1]  # "u" moved on too
    for _ in range(3):
        page.keyboard.press("l")
    assert focused_id(page) == ids[4]
    page.keyboard.press("x")
    page.keyboard.press("l")
    page.keyboard.press("x")
    assert page.locator('.tile[aria-selected="true"]').count() == 2
    assert "2 selected" in page.locator("#selection-count").inner_text()
    page.keyboard.press("a")
    wait_status(page, ids[4], "accepted")
    wait_status(page, ids[5], "accepted")
    assert page.locator('.tile[aria-selected="true"]').count() == 0
    assert page.locator("#count-accepted b").inner_text() == "2"
    assert page.locator("#count-rejected b").inner_text() == "2"
    wait_until(page, "document.querySelector('#task-progress tr[data-task=counting] td.accepted').textContent === '1'")
    wait_until(page, "document.querySelector('#task-progress tr[data-task=ocr] td.accepted').textContent === '1'")
    assert page.evaluate("window.stillTheSamePage") is True

    by_id = {i.pk: i for i in Image.objects.all()}
    assert [by_id[i].status for i in ids] == [
        "pending",
        "rejected",
        "rejected",
        "pending",
        "accepted",
        "accepted",
        "pending",
        "pending",
        "pending",
    ]
    assert (by_id[ids[1]].reject_reason, by_id[ids[2]].reject_reason) == ("privacy", "other")
    assert by_id[ids[2]].reject_note == "watermark across the text"
    assert all(by_id[i].screened_by == world["annotator"] for i in (ids[1], ids[2], ids[4], ids[5]))


def test_a_refused_action_says_why_and_changes_nothing(login_as, world):
    page = login_as(world["annotator"])
    page.goto("/b/demo/images/")
    first = world["images"][0].pk
    Image.objects.filter(pk=first).delete()  # someone else removed it meanwhile
    page.keyboard.press("a")
    page.wait_for_selector("#screen-message.error")
    assert "do not exist in this benchmark" in page.locator("#screen-message").inner_text()
    assert tile(page, first).get_attribute("data-status") == "pending"
    page.keyboard.press("h")
    page.keyboard.press("6")
    page.keyboard.press("Escape")  # cancelling the note rejects nothing
    assert not page.locator("#note-dialog").is_visible()
    assert Image.objects.filter(status="rejected").count() == 0


def test_bulk_buttons_and_filters(login_as, world):
    page = login_as(world["annotator"])
    page.goto("/b/demo/images/?task=ocr")
    ocr_ids = [i.pk for i in world["images"][5:]]
    assert page.locator(".tile").count() == 4
    # Thumbnails load through the access-checked media view; "o" shows the full-size file.
    wait_until(page, "[...document.querySelectorAll('.tile img')].every(i => i.complete && i.naturalWidth > 0)")
    page.keyboard.press("o")
    wait_until(page, "document.getElementById('preview-img').naturalWidth === 640")
    page.keyboard.press("Escape")
    assert not page.locator("#preview").is_visible()
    page.click("#select-page")
    page.select_option("#bulk-reason", "low_quality")
    page.click("#bulk-reject")
    for image_id in ocr_ids:
        wait_status(page, image_id, "rejected")
    assert set(Image.objects.filter(pk__in=ocr_ids).values_list("status", "reject_reason")) == {("rejected", "low_quality")}

    page.select_option("#grid-filters select[name=task]", "")  # filters apply on change
    page.wait_for_url("**/images/?task=&status=&flag=")
    assert page.locator(".tile").count() == 9
    page.select_option("#grid-filters select[name=status]", "rejected")
    page.wait_for_url("**status=rejected**")
    assert sorted(int(x) for x in page.locator(".tile").evaluate_all("t => t.map(x => x.dataset.id)")) == ocr_ids
    page.select_option("#grid-filters select[name=task]", "counting")
    page.wait_for_url("**task=counting**")
    assert page.locator(".tile").count() == 0 and "match these filters" in page.locator("#image-grid").inner_text()


def test_upload_by_file_picker_and_drag_and_drop(login_as, world, tmp_path):
    page = login_as(world["annotator"])
    page.goto("/b/demo/images/upload/")
    (tmp_path / "one.jpg").write_bytes(jpeg(3100))
    (tmp_path / "two.png").write_bytes(encode(photo((600, 600), 3101), "PNG"))
    (tmp_path / "fake.jpg").write_bytes(b"this is a text file")
    page.select_option("select[name=tasks]", ["chart"])
    page.fill("input[name=source]", "my camera")
    page.set_input_files("#upload-input", [str(tmp_path / n) for n in ("one.jpg", "fake.jpg", "two.png")])
    wait_until(
        page,
        "document.querySelectorAll('#upload-results tbody tr').length === 3 && "
        "!document.querySelector('#upload-results tr.outcome-waiting')",
    )
    outcomes = page.locator("#upload-results tbody tr").evaluate_all(
        "rows => rows.map(r => [r.dataset.name, r.children[1].textContent, r.children[2].textContent])"
    )
    assert [(name, outcome) for name, outcome, _ in outcomes] == [
        ("one.jpg", "added"),
        ("fake.jpg", "error"),
        ("two.png", "added"),
    ]
    assert "Not a readable image" in outcomes[1][2]
    assert page.locator("#upload-summary").inner_text() == "2 added, 0 already stored, 1 refused."
    new = Image.objects.filter(original_name__in=["one.jpg", "two.png"])
    assert new.count() == 2 and all(i.source == "my camera" and [t.slug for t in i.tasks.all()] == ["chart"] for i in new)

    # Dropping files on the zone (a DataTransfer built in the page) goes the same way.
    data = base64.b64encode(jpeg(3102)).decode()
    for expected in ("added", "duplicate"):
        transfer = page.evaluate_handle(
            """(b64) => {
            const dt = new DataTransfer();
            const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
            dt.items.add(new File([bytes], "dropped.jpg", {type: "image/jpeg"}));
            return dt; }""",
            data,
        )
        page.dispatch_event("#dropzone", "drop", {"dataTransfer": transfer})
        page.wait_for_selector(f'#upload-results tr[data-name="dropped.jpg"].outcome-{expected}')
    assert Image.objects.filter(original_name="dropped.jpg").count() == 1
    assert Image.objects.count() == 12


def test_near_duplicate_review_with_keys(login_as, world):
    demo = world["benchmark"]
    copy = services.ingest_image(demo, jpeg(3000, size=(640, 520), quality=60)).image
    assert copy.near_duplicate_of == world["images"][0]
    page = login_as(world["annotator"])
    page.goto("/b/demo/images/near-duplicates/")
    assert page.locator(f"#pair-{copy.pk} img").count() == 2
    page.keyboard.press("d")  # drop the newer image of the first pair
    page.wait_for_selector("text=rejected as similar content")
    copy.refresh_from_db()
    assert (copy.status, copy.reject_reason, copy.near_duplicate_resolved) == ("rejected", "similar", True)
    assert page.locator(".pair").count() == 0


def test_on_a_phone_the_first_screen_shows_images_not_the_legend_and_bulk_bar(login_as, world):
    page = login_as(world["annotator"])
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/b/demo/images/")
    assert not page.locator("#shortcut-legend").is_visible()  # no keyboard to use it with
    first = page.locator(".tile").first.bounding_box()
    assert first["y"] + first["height"] / 2 < 844, f"the first image starts at {first['y']:.0f} px"
    # Scrolling down, the bulk bar does not stay over the grid.
    page.mouse.wheel(0, 1500)
    page.wait_for_timeout(200)
    bar = page.locator("#bulk-bar").bounding_box()
    assert bar is None or bar["y"] + bar["height"] <= 0

"""The image picker on New item and in the editor: search by id or file name, filter by task, 24
a page; it lists exactly the images saving an item accepts."""

import re

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Item
from benchforge.errors import DomainError
from curation.models import Image
from curation.services import ingest_image, load_preset, screen_images
from tests.factories import jpeg, make_image

PICKER = "/b/demo/items/image-picker/"


def listed(client, **params) -> list[int]:
    html = client.get(PICKER, {"results": "1", **params}).content.decode()
    return [int(i) for i in re.findall(r'data-image-id="(\d+)"', html)]


@pytest.mark.django_db
def test_the_picker_lists_exactly_the_images_an_item_may_use(client_for, annotator, benchmark, private_benchmark, counting):
    ocr = benchmark.tasks.get(slug="ocr")
    images = [
        make_image(benchmark, tasks=[counting]),
        make_image(benchmark, tasks=[ocr]),
        make_image(benchmark, status="pending", tasks=[counting]),
        make_image(benchmark, status="rejected", tasks=[counting]),
        make_image(benchmark, contaminated=True, tasks=[counting]),
        make_image(benchmark, status="pending", contaminated=True),
        make_image(private_benchmark),  # another benchmark's accepted image
    ]
    client = client_for(annotator)
    everything = set(listed(client))
    for image in images:
        # Image by image: listed (found by its id) <=> no refusal <=> an item with it saves.
        by_id = listed(client, q=str(image.pk))
        refused = services.image_refusals(benchmark, [image.pk])
        try:
            item = services.create_item(benchmark, task=counting, user=annotator, images=[image.pk])
        except DomainError:
            saved = False
        else:
            saved = True
            item.delete()
        assert (image.pk in by_id) == (not refused) == saved == (image.pk in everything), (image.status, image.contaminated)
    assert everything == {images[0].pk, images[1].pk}


@pytest.mark.django_db
def test_search_by_id_or_file_name_filter_by_task_and_pages_of_24(client_for, annotator, benchmark, counting):
    ocr = benchmark.tasks.get(slug="ocr")
    made = [make_image(benchmark, tasks=[counting]) for _ in range(26)]
    sign = make_image(benchmark, tasks=[ocr])
    Image.objects.filter(pk=sign.pk).update(original_name="street-sign-7.jpg")
    client = client_for(annotator)
    assert len(listed(client)) == 24 and listed(client)[0] == sign.pk  # newest first
    assert listed(client, page="2") == [m.pk for m in reversed(made[:3])]
    assert listed(client, q="SIGN-7") == [sign.pk] and listed(client, q=f"#{sign.pk}") == [sign.pk]
    assert listed(client, task="ocr") == [sign.pk]
    assert sign.pk not in listed(client, task="counting") and len(listed(client, task="counting")) == 24
    assert listed(client, q="no-such-file") == []
    full = client.get(PICKER).content.decode()
    assert 'id="picker-q"' in full and '<option value="ocr">' in full and "27 usable images" in full


@pytest.mark.django_db
def test_outsiders_get_no_picker(client_for, outsider):
    assert client_for(outsider).get(PICKER).status_code == 404


# ---------------------------------------------------------------- in the browser


@pytest.fixture
def world(make_user):
    demo = load_preset("alignmmbench", slug="demo")
    annotator = make_user("annotator", "anna", benchmarks=[demo])
    researcher = make_user("researcher", "ross")
    counting = demo.tasks.get(slug="counting")
    images = []
    for seed in range(1, 4):
        image = ingest_image(demo, jpeg(seed=seed), original_name=f"fruit-{seed}.jpg", tasks=[counting]).image
        screen_images(demo, [image.pk], action="accept", user=researcher)
        images.append(image)
    return {"benchmark": demo, "annotator": annotator, "images": images, "counting": counting}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_new_item_and_the_editor_pick_images_with_the_mouse_and_keyboard(login_as, world):
    first, second, third = world["images"]
    page = login_as(world["annotator"])
    page.goto("/b/demo/items/new/")
    page.click("#browse-images")
    expect(page.locator("#image-picker .pick")).to_have_count(3)
    page.fill("#picker-q", "fruit-2")
    expect(page.locator("#image-picker .pick")).to_have_count(1)
    page.click(f"#image-picker .pick[data-image-id='{second.pk}']")
    expect(page.locator("#image-picker")).not_to_be_visible()
    assert page.input_value("#id_images") == str(second.pk)
    page.click("#browse-images")
    page.fill("#picker-q", "")
    expect(page.locator("#image-picker .pick")).to_have_count(3)
    page.keyboard.press("ArrowDown")  # from the search box to the first (newest) thumbnail: third
    page.keyboard.press("ArrowRight")  # second
    page.keyboard.press("ArrowRight")  # first
    page.keyboard.press("Enter")
    assert page.input_value("#id_images") == f"{second.pk}, {first.pk}"  # appended, in order
    page.select_option("select[name=task]", "counting")
    page.click("#new-item button[type=submit]")
    page.wait_for_url(re.compile(r"/b/demo/items/\d+/$"))
    item = Item.objects.get()
    assert [link.image_id for link in item.item_images.order_by("order")] == [second.pk, first.pk]

    # The editor: a picked image joins the image list as a chip, as a typed id would.
    page.click("#browse-images")
    page.select_option("#picker-task", "counting")
    page.click(f"#image-picker .pick[data-image-id='{third.pk}']")
    expect(page.locator(f"#image-list input[name=image][value='{third.pk}']")).to_have_count(1)
    expect(page.locator("#image-list input[name=image]")).to_have_count(3)

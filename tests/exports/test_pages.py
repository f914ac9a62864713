"""Release pages that read well: the dataset card rendered from Markdown and sanitised, the diff
as a paginated page (question, task, link, field-level old and new values, private parts hidden
from annotators), numbers apart from their labels, tasks in taxonomy order."""

import re

import pytest

from annotation.models import Item
from exports import services

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


def test_the_dataset_card_is_rendered_markdown_with_nothing_raw_getting_through(built, client_for, annotator):
    hostile = (
        "First public version.\n\n<script>alert('card')</script>\n\n[click me](javascript:alert(1))\n\n"
        '<img src=x onerror="alert(2)">\n\n**bold** and a [paper](https://example.org/paper).'
    )
    release = built(notes=hostile)
    page = client_for(annotator).get(f"/b/demo/releases/{release.version}/card/").content.decode()
    card = re.search(r'<article class="dataset-card" id="dataset-card">(.*?)</article>', page, re.S)[1]
    assert "<h1>AlignMMBench 1.0.0</h1>" in card and "<h2>Questions per task and split</h2>" in card
    assert "<table>" in card and "<th>task</th>" in card and "<pre><code>" in card  # a table, the commands as code
    assert "<strong>bold</strong>" in card and 'href="https://example.org/paper"' in card
    tags = re.findall(r"<[a-z][^>]*>", card)  # every tag the page gets, with its attributes
    assert not [t for t in tags if re.match(r"<(script|img src=.x|iframe|style)", t) or "javascript:" in t or " on" in t]
    assert "&lt;script&gt;alert('card')&lt;/script&gt;" in card.replace("&#x27;", "'")  # shown as text, never run
    assert f'src="/b/demo/releases/{release.version}/chart.svg"' in card  # the bundle's chart, served by the page
    assert "# AlignMMBench" not in card  # not raw Markdown


def test_the_diff_page_shows_each_change_with_question_task_link_and_values(
    built, accepted, researcher, annotator, client_for, benchmark
):
    first = services.freeze(built(private=["reference_answers"]), user=researcher)
    seed = next(i for i in accepted if i.seed_id is None and i.kind == "single_turn")
    Item.objects.filter(pk=seed.pk).update(question="How many apples, exactly?", reference_answer="Now SECRET-NEW.")
    Item.objects.filter(pk=accepted[-1].pk).update(status="rejected")
    second = built(version="1.1.0", private=["reference_answers"])
    changed = len(services.compare(first, second)["changed"])  # the seed, and its rewrites (they share its answer)

    page = client_for(researcher).get("/b/demo/releases/1.1.0/diff/", {"against": first.version}).content.decode()
    assert re.search(rf'id="changed-count">{changed}</p><p class="stat-label">changed', page) and changed == 3
    entry = re.search(rf'<article class="card diff-entry" data-id="{seed.pk}">(.*?)</article>', page, re.S)[1]
    assert f'href="/b/demo/items/{seed.pk}/"' in entry
    assert "计数 (感知与理解)" in entry and "How many apples, exactly?" in entry
    assert '<th scope="row">Question</th>' in entry and '<th scope="row">Reference answer</th>' in entry
    assert "Now SECRET-NEW." in entry and "SECRET-REFERENCE-0" in entry  # old and new values, researcher

    hidden = client_for(annotator).get("/b/demo/releases/1.1.0/diff/", {"against": "1.0.0"}).content.decode()
    assert "SECRET-NEW" not in hidden and "SECRET-REFERENCE" not in hidden and "Reference answer" not in hidden
    assert "How many apples, exactly?" in hidden

    removed = client_for(annotator).get("/b/demo/releases/1.1.0/diff/", {"against": "1.0.0", "show": "removed"})
    assert f'data-id="{accepted[-1].pk}"' in removed.content.decode()


def test_the_diff_is_paginated(built, accepted, researcher, client_for, monkeypatch):
    monkeypatch.setattr("exports.views.DIFF_PAGE_SIZE", 5)
    ocr = next(i.task_id for i in accepted if i.kind == "mcq")
    first = built(tasks=[ocr])  # the OCR items only: the 18 counting items are added next
    second = built(version="1.1.0")
    added = [e["id"] for e in services.compare(first, second)["added"]]
    assert len(added) == 18
    client = client_for(researcher)
    shown = []
    for number in (1, 2, 3, 4):
        page = client.get("/b/demo/releases/1.1.0/diff/", {"against": "1.0.0", "show": "added", "page": number}).content.decode()
        assert f"page {number} of 4 (18)" in page
        shown += re.findall(r'class="card diff-entry" data-id="([^"]+)"', page)
    assert shown == added  # every added item once, in order


def test_release_numbers_stand_apart_from_their_labels_and_tasks_follow_the_taxonomy(built, client_for, researcher):
    release = built()
    page = client_for(researcher).get(f"/b/demo/releases/{release.version}/").content.decode()
    assert re.search(r'<p class="stat-value">22</p><p class="stat-label">questions</p>', page)
    form = client_for(researcher).get("/b/demo/releases/").content.decode()
    options = re.findall(r'<option value="\d+"[^>]*>([^<]+)</option>', form.split('name="tasks"')[1].split("</select>")[0])
    assert options[:4] == ["Description · 描述", "Recognition · 识别", "Counting · 计数", "OCR"]  # AlignMMBench's order, not A-Z
    assert '<optgroup label="Perception &amp; Understanding">' in form
    # A group of checkboxes is named by a legend: its first box is named "Draft", not the group's label.
    group = re.search(r'<fieldset class="field-group"><legend>Item stages</legend>(.*?)</fieldset>', form, re.S)[1]
    assert re.search(r'<label for="id_statuses_0"><input[^>]*id="id_statuses_0"[^>]*>\s*Draft</label>', group)

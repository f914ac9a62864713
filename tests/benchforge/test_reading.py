"""Names, order and counts people expect: task names with their category wherever a person reads a
task, taxonomy order in every task list, each reviewer once, the review queue oldest first as it
says, images counted once, free-text search of items, complete preset tasks, a styled 404."""

import re

import pytest

from annotation.models import Criterion, Item
from annotation.services import create_item, submit_item, update_item
from curation.presets import PRESETS
from curation.services import load_preset
from review import services as review_services
from review.models import Review
from tests.factories import complete_fields, make_image

pytestmark = pytest.mark.django_db


def options_of(html: str, name: str) -> list[str]:
    select = re.search(rf'<select[^>]*name="{name}"[^>]*>(.*?)</select>', html, re.S)[1]
    return [label.strip() for label in re.findall(r"<option[^>]*>([^<]*)</option>", select) if label.strip()]


def test_every_task_list_is_in_taxonomy_order_with_its_category(make_user, client_for):
    mmbench = load_preset("mmbench", slug="mmb")
    boss = make_user("researcher", "boss", benchmarks=[mmbench])
    client = client_for(boss)
    # MMBench nests L1 > L2 > task: the first L2 category's five tasks come first, whatever their names.
    first = ["Image Style", "Image Scene", "Image Emotion", "Image Quality", "Image Topic", "Object Localization"]
    pages = {
        "/b/mmb/images/": "task",
        "/b/mmb/images/upload/": "tasks",
        "/b/mmb/items/": "task",
        "/b/mmb/review/": "tasks",
        "/b/mmb/releases/": "tasks",
        "/b/mmb/qc/": "tasks",
    }
    for path, name in pages.items():
        html = client.get(path).content.decode()
        names = [o.split(" (")[0] for o in options_of(html, name) if not o.startswith(("all", "every", "any"))]
        assert names[:6] == first, path
        assert (
            '<optgroup label="Perception / Coarse Perception">' in html or "Image Style (Perception / Coarse Perception)" in html
        )
    assert [t.name for t in mmbench.tasks.all()][:6] == first


def test_a_round_lists_each_possible_reviewer_once(benchmark, make_user, client_for):
    boss = make_user("researcher", "boss", benchmarks=[benchmark])  # a researcher who is also a member
    make_user("researcher", "outside")  # researchers review anywhere
    make_user("reviewer", "rita", benchmarks=[benchmark])
    make_user("annotator", "anna", benchmarks=[benchmark])  # may not review: not offered
    html = client_for(boss).get("/b/demo/review/").content.decode()
    assert options_of(html, "reviewers") == ["boss", "outside", "rita"]


def test_the_review_queue_is_oldest_first_as_it_says(
    benchmark, counting, make_user, client_for, django_capture_on_commit_callbacks
):
    annotator = make_user("annotator", "anna", benchmarks=[benchmark])
    boss = make_user("researcher", "boss", benchmarks=[benchmark])
    rita = make_user("reviewer", "rita", benchmarks=[benchmark])
    items = []
    for k in range(5):
        image = make_image(benchmark, tasks=[counting])
        item = create_item(benchmark, task=counting, user=annotator, assignee=annotator)
        item = update_item(item, complete_fields(image, question=f"q{k}"), expected_version=item.version, user=annotator)
        items.append(submit_item(item, user=annotator))
    with django_capture_on_commit_callbacks(execute=True):
        review_services.open_round(benchmark, user=boss, reviewers=[rita])
    # The round hands reviews out in its own order; the queue must still read oldest item first.
    Review.objects.filter(item=items[0]).update(assigned_at=Review.objects.get(item=items[-1]).assigned_at)
    page = client_for(rita).get("/b/demo/review/queue/").content.decode()
    assert "oldest first" in page
    assert [int(n) for n in re.findall(r"<td>#(\d+)</td>", page)] == [i.pk for i in items]
    assert "Counting · 计数 (Perception &amp; Understanding)" in page


def test_collection_progress_counts_each_image_once(benchmark, counting, client_for, annotator):
    ocr = benchmark.tasks.get(slug="ocr")
    make_image(benchmark, tasks=[counting, ocr])
    make_image(benchmark, tasks=[counting])
    page = client_for(annotator).get("/b/demo/images/", {"status": "rejected"}).content.decode()  # no tiles to draw
    assert re.search(r'<b id="accepted-images">2</b> accepted images', page)


def test_items_are_found_by_words_in_their_question_answer_or_criteria(benchmark, counting, annotator, client_for):
    def item(question, answer="", criterion=""):
        made = create_item(benchmark, task=counting, user=annotator, question=question, reference_answer=answer)
        if criterion:
            Criterion.objects.create(item=made, order=1, kind="exact", text=criterion)
        return made

    apples = item("How many apples are on the table?")
    pears = item("What colour is the bowl?", answer="Five ripe pears lie in a blue bowl.")
    cats = item("What is on the sofa?", criterion="Mentions the sleeping cat.")
    chinese = item("图中有几只猫？")
    rewrite = create_item(benchmark, task=counting, user=annotator, seed=pears, question="Which colour has the bowl?")

    def found(q):
        page = client_for(annotator).get("/b/demo/items/", {"q": q}).content.decode()
        return {int(n) for n in re.findall(r'<tr data-item="(\d+)"', page)}

    assert found("apples") == {apples.pk}
    assert found("pears") == {pears.pk, rewrite.pk}  # a rewrite shares its seed's answer
    assert found("cat") >= {cats.pk} and apples.pk not in found("cat")
    assert found("几只猫") == {chinese.pk}
    assert found("") == {apples.pk, pears.pk, cats.pk, chinese.pk, rewrite.pk}
    assert found("nothing-like-this") == set()
    api = client_for(annotator).get("/api/v1/benchmarks/demo/items/", {"q": "apples"}).json()
    assert [row["id"] for row in api["results"]] == [apples.pk]


def test_every_preset_task_says_what_to_collect_write_and_judge():
    for key, preset in PRESETS.items():
        for task in preset.iter_tasks():
            assert task.description and task.keywords and task.guideline, (key, task.name)
            # A Chinese guideline says as much in fewer characters; its English alias is as long as any.
            shortest = 15 if preset.language == "zh" else 40
            assert len(task.guideline) > shortest and task.guideline != task.description, (key, task.name)
            assert not task.name_en or len(task.guideline_en) > 40, (key, task.name)
    judged = {t.name for t in PRESETS["mllm-bench"].iter_tasks() if t.judge_rules}
    assert {"Object Counting", "OCR", "Joke and Meme Understanding", "Visual Storytelling"} <= judged
    assert not any(t.judge_rules for t in PRESETS["mmbench"].iter_tasks())  # multiple choice: CircularEval, no judge


def test_reloading_a_preset_fills_empty_task_texts_and_keeps_edited_ones(make_user, client_for):
    bench = load_preset("mllm-bench", slug="mllm")
    counting = bench.tasks.get(name="Object Counting")
    ocr = bench.tasks.get(name="OCR")
    bench.tasks.filter(pk=counting.pk).update(guideline="", judge_rules="", description="", collection_keywords=[])
    bench.tasks.filter(pk=ocr.pk).update(guideline="Our own OCR guideline.")
    load_preset("mllm-bench", benchmark=bench)
    counting.refresh_from_db()
    ocr.refresh_from_db()
    assert counting.guideline.startswith("Ask for a count") and counting.judge_rules and counting.collection_keywords
    assert ocr.guideline == "Our own OCR guideline."
    # The editor shows them: no empty "Guideline" or "How answers are judged" for this task.
    annotator = make_user("annotator", "ann", benchmarks=[bench])
    item = create_item(bench, task=counting, user=annotator)
    page = client_for(annotator).get(f"/b/mllm/items/{item.pk}/").content.decode()
    guide = re.search(r'<div class="guideline" id="guideline">(.*?)</div>', page, re.S)[1]
    assert "Any number other than the reference count is wrong" in guide, guide
    assert "Ask for a count of clearly countable things" in guide


def test_a_missing_page_is_styled_with_the_reason_and_the_navigation_in_development(settings, client_for, annotator, benchmark):
    settings.DEBUG = True  # `make run`: Django would show its technical page
    client = client_for(annotator)
    missing = client.get("/b/demo/releases/9.9.9/")
    html = missing.content.decode()
    assert missing.status_code == 404 and '<section class="card error-page">' in html
    assert "No release 9.9.9 of this benchmark." in html and 'data-stage="collect"' in html  # the benchmark's navigation
    nowhere = client.get("/b/demo/no-such-page/")
    assert nowhere.status_code == 404 and "There is nothing at this address" in nowhere.content.decode()
    assert "URLconf" not in nowhere.content.decode()  # not Django's technical page
    assert client.get("/api/v1/benchmarks/demo/releases/9.9.9/").json()["detail"]  # the API still answers JSON


def test_messages_name_tasks_not_slugs(benchmark, counting, client_for, researcher, annotator):
    response = client_for(researcher).post(
        "/b/demo/assign/", {"form": "evenly", "tasks": ["counting"], "assignees": [annotator.username]}, follow=True
    )
    text = response.content.decode()
    assert "Counting · 计数 (Perception &amp; Understanding), 80 short" in text and "counting (" not in text
    item = Item.objects.create(benchmark=benchmark, task=counting, author=annotator, question="q")
    assert item.task.label == "Counting · 计数 (Perception & Understanding)"

"""What a newcomer met on a first try (issue 40): each of these failed before its fix."""

import datetime
import re
from pathlib import Path

import pytest
from django.utils import timezone

from annotation import services
from annotation.models import Item, ItemRevision
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.django_db


def test_a_multiple_choice_item_is_closed_ended_and_complete_with_its_options_and_key(benchmark, counting, annotator, image):
    item = services.create_item(benchmark, task=counting, user=annotator, assignee=annotator)
    item = services.update_item(
        item,
        {"kind": "mcq", "question": "How many pears?", "choices": ["One", "Two", "Three"], "answer": "C", "images": [image.pk]},
        expected_version=item.version,
        user=annotator,
    )
    assert item.question_type == Item.QuestionType.CLOSED
    assert item.reference_answer == "C. Three"
    item = services.submit_item(item, user=annotator, expected_version=item.version)
    assert item.status == "answered"
    # The derived reference follows the key; one written by hand is kept.
    item.refresh_from_db()
    assert item.reference_answer == "C. Three"


def test_a_derived_reference_follows_a_changed_key_and_a_written_one_stays(benchmark, counting, annotator, image):
    item = services.create_item(
        benchmark, task=counting, user=annotator, kind="mcq", question="q", choices=["One", "Two"], answer="A"
    )
    assert item.reference_answer == "A. One"
    item = services.update_item(item, {"answer": "B"}, expected_version=item.version, user=annotator)
    assert item.reference_answer == "B. Two"
    item = services.update_item(
        item, {"reference_answer": "Two: both pears show."}, expected_version=item.version, user=annotator
    )
    item = services.update_item(item, {"answer": "A"}, expected_version=item.version, user=annotator)
    assert item.reference_answer == "Two: both pears show."


def test_a_new_benchmarks_overview_points_to_members_taxonomy_and_upload(client_for, make_user):
    from curation.services import load_preset

    fresh = load_preset("mmbench", slug="fresh")
    researcher = make_user("researcher", "rhea", benchmarks=[fresh])
    page = client_for(researcher).get("/b/fresh/").content.decode()
    steps = re.search(r'<ol id="next-steps">(.*?)</ol>', page, re.S)
    assert steps, "no next steps on a new benchmark's overview"
    assert (
        "create_user" in steps.group(1) and "/b/fresh/taxonomy/" in steps.group(1) and "/b/fresh/images/upload/" in steps.group(1)
    )


def test_the_language_switch_names_each_language_in_its_own_language(client_for, annotator):
    client = client_for(annotator)
    client.post("/accounts/language/", {"language": "zh-hans", "next": "/"})
    page = client.get("/").content.decode()
    switch = re.search(r'<form[^>]*id="language-switch".*?</form>', page, re.S).group(0)
    assert ">English</button>" in switch and "英文" not in switch


def test_a_chinese_date_reads_month_and_day_in_chinese(client_for, researcher, annotator, benchmark, counting):
    benchmark.members.add(researcher)
    item = services.create_item(benchmark, task=counting, user=annotator, question="q")
    ItemRevision.objects.create(
        item=item,
        version=2,
        snapshot={},
        action="submitted",
        changed_by=annotator,
        changed_at=timezone.now() - datetime.timedelta(days=3),
    )
    client = client_for(researcher)
    client.post("/accounts/language/", {"language": "zh-hans", "next": "/"})
    page = client.get(f"/b/{benchmark.slug}/").content.decode()
    assert re.search(r"\d+月\d+日", page) and not re.search(r"[一二三四五六七八九十]+月 \d", page)


def test_the_hidden_attribute_beats_the_buttons_display():
    css = (Path(REPO_ROOT) / "benchforge/static/benchforge/app.css").read_text()
    assert re.search(r"\[hidden\]\s*\{\s*display\s*:\s*none\s*!important", css)


def test_a_type_someone_set_survives_edits_that_leave_the_options_alone(benchmark, counting, annotator, image):
    """Only an edit that gives the options (or makes the item multiple-choice) derives the type; a
    later edit of the question, or a Label Studio pull of one field, keeps the type someone chose."""
    item = services.create_item(
        benchmark, task=counting, user=annotator, kind="mcq", question="q", choices=["One", "Two"], answer="A"
    )
    assert item.question_type == Item.QuestionType.CLOSED
    item = services.update_item(item, {"question_type": "open"}, expected_version=item.version, user=annotator)
    assert item.question_type == Item.QuestionType.OPEN
    item = services.update_item(item, {"question": "How many?"}, expected_version=item.version, user=annotator)
    assert item.question_type == Item.QuestionType.OPEN
    item = services.update_item(item, {"choices": ["One", "Two", "Three"]}, expected_version=item.version, user=annotator)
    assert item.question_type == Item.QuestionType.CLOSED

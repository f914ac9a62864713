"""What a labeling team relies on, against the real Label Studio server: every field a benchmark
author owns travels both ways and is checked; nothing left out is lost; who did what is kept;
the researcher chooses what a pull applies; re-pushes refresh tasks; deleted projects, concurrent
pushes and logs behave."""

import logging
import threading

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Item, ItemRevision
from annotation.services import change_status, create_item, update_item
from annotation.workflow import ANSWERED
from jobs.models import Job
from labelstudio import adapter as lsa
from labelstudio import services as lss
from labelstudio.models import LabelStudioLink

from .samples import annotate, label_studio_user, region
from .server import USERNAME

pytestmark = [pytest.mark.labelstudio, pytest.mark.django_db]


def fresh(item):
    return Item.objects.prefetch_related("criteria").get(pk=item.pk)


def push(benchmark, researcher, items, title):
    job = lss.push_items_to_labelstudio(benchmark, items, project_title=title, user=researcher)
    assert job.status == Job.Status.SUCCEEDED, job.message
    link = LabelStudioLink.objects.get(pk=job.result["link_id"])
    return link, dict(link.tasks.values_list("item_id", "task_id"))


def entries(job):
    return {e.key: e for e in job.entries.all()}


def prediction(api, task_id) -> list[dict]:
    found = api.get("/api/predictions/", params={"task": task_id}).raise_for_status().json()
    return next(p["result"] for p in found if p["model_version"] == lsa.PREDICTION_MODEL_VERSION)


@pytest.fixture
def mcq_maker(items, benchmark, researcher):
    image = items["mcq"].item_images.get().image

    def make(**fields):
        base = {
            "kind": "mcq",
            "question_type": "closed",
            "question": "How many bars?",
            "choices": ["3", "4", "5"],
            "answer": "B",
            "reference_answer": "B. 4",
            "criteria": [{"kind": "exact", "text": "B"}],
        }
        return create_item(benchmark, task=items["mcq"].task, user=researcher, images=[image.pk], **{**base, **fields})

    return make


def test_every_owned_field_travels_both_ways(ls_env, annotator_api, benchmark, researcher, items, mcq_maker):
    mcq = mcq_maker(description="Three bars on white.")
    link, task_of = push(benchmark, researcher, [mcq], "Every field")

    # There: each field pre-filled, editable.
    shown = {r["from_name"]: r["value"] for r in prediction(annotator_api, task_of[mcq.pk])}
    assert shown["edit_question"] == {"text": ["How many bars?"]}
    assert shown["edit_options"] == {"text": ["A. 3\nB. 4\nC. 5"]}
    assert shown["answer_key"] == {"choices": ["B"]}
    assert shown["reference_answer"] == {"text": ["B. 4"]} and shown["question_type"] == {"choices": ["Closed-ended"]}
    assert shown["criterion_1_kind"] == {"choices": ["Exact reference"]} and shown["criterion_1_text"] == {"text": ["B"]}
    assert shown["description"] == {"text": ["Three bars on white."]}

    # Back: every one of them.
    annotate(
        annotator_api,
        task_of[mcq.pk],
        region("edit_question", "How many bars does the chart have?"),
        region("edit_options", "A. 3\nB. 4\nC. 5\nD. 6"),
        region("answer_key", "D"),
        region("reference_answer", "D. 6"),
        region("question_type", "Compound"),
        region("criterion_1_text", "D"),
        region("criterion_2_kind", "Soft reference"),
        region("criterion_2_text", "Counts six bars."),
        region("description", "Six bars on white."),
        region("verdict", "OK"),
    )
    pulled = lss.pull_from_labelstudio(link, user=researcher)
    assert pulled.result["applied"] == 1, pulled.message
    item = fresh(mcq)
    assert item.question == "How many bars does the chart have?" and item.choices == ["3", "4", "5", "6"]
    assert item.answer == "D" and item.reference_answer == "D. 6" and item.question_type == "compound"
    assert [(c.kind, c.text) for c in item.criteria.all()] == [("exact", "D"), ("soft", "Counts six bars.")]
    assert item.description == "Six bars on white." and item.version == 2


def test_what_an_annotation_leaves_out_is_kept(ls_env, annotator_api, benchmark, researcher, items, mcq_maker):
    three = mcq_maker(
        criteria=[
            {"kind": "exact", "text": "B"},
            {"kind": "soft", "text": "Says four."},
            {"kind": "guideline", "text": "No hedging."},
        ]
    )
    link, task_of = push(benchmark, researcher, [three], "Partial")
    annotate(annotator_api, task_of[three.pk], region("criterion_2_text", "Says four bars."), region("verdict", "OK"))
    assert lss.pull_from_labelstudio(link, user=researcher).result["applied"] == 1
    item = fresh(three)
    assert [(c.kind, c.text) for c in item.criteria.all()] == [
        ("exact", "B"),
        ("soft", "Says four bars."),
        ("guideline", "No hedging."),
    ]
    assert item.question == "How many bars?" and item.choices == ["3", "4", "5"] and item.answer == "B"


def test_anything_out_of_range_is_refused_per_task_naming_the_field(ls_env, annotator_api, benchmark, researcher, mcq_maker):
    cases = {
        "answer key: 'E' is not one of the options (A-C)": [region("answer_key", "E")],
        "criterion 4: an item has at most 3 criteria": [
            region("reference_answer", "B. Four."),
            region("criterion_4_kind", "Range"),
            region("criterion_4_text", "Between 3 and 5."),
        ],
        "question: it is empty": [region("edit_question", "   "), region("reference_answer", "B. Four.")],
        "answer key: it is B but the reference answer names option C": [region("reference_answer", "C. 5")],
        "options: 5 given": [region("edit_options", "1\n2\n3\n4\n5")],
    }
    made = {problem: mcq_maker() for problem in cases}
    good = mcq_maker()
    link, task_of = push(benchmark, researcher, [*made.values(), good], "Out of range")
    for problem, regions in cases.items():
        annotate(annotator_api, task_of[made[problem].pk], *regions, region("verdict", "OK"))
    annotate(annotator_api, task_of[good.pk], region("reference_answer", "B. Four bars."), region("verdict", "OK"))

    pulled = lss.pull_from_labelstudio(link, user=researcher)
    assert pulled.result["errors"] == len(cases) and pulled.result["applied"] == 1, pulled.message
    found = entries(pulled)
    for problem, item in made.items():
        entry = found[f"item {item.pk}"]
        assert entry.outcome == "error" and problem in entry.message, entry.message
        assert entry.message.startswith(f"Label Studio task {task_of[item.pk]}:")
        after = fresh(item)  # nothing of that task applied
        assert after.version == 1 and after.reference_answer == "B. 4" and after.question == "How many bars?"
    assert fresh(good).reference_answer == "B. Four bars."


def test_the_annotator_is_recorded_and_an_unchanged_prefill_changes_nothing(ls_env, annotator_api, benchmark, researcher, items):
    single = items["single"]
    update_item(single, {"reference_answer": "Sales rise.  \r\nEvery year.\n"}, expected_version=1, user=researcher)
    other = fresh(items["two_images"])
    link, task_of = push(benchmark, researcher, [single, other], "Who did what")
    ann = label_studio_user(annotator_api, "ann")

    # Accepting the pre-annotation as it is (what the editor submits) changes nothing.
    annotate(annotator_api, task_of[single.pk], *prediction(annotator_api, task_of[single.pk]), region("verdict", "OK"))
    annotate(
        annotator_api, task_of[other.pk], region("reference_answer", "The left chart."), region("verdict", "OK"), by=ann["id"]
    )
    revisions = ItemRevision.objects.filter(item=single).count()
    pulled = lss.pull_from_labelstudio(link, user=researcher)
    assert pulled.result["unchanged"] == 1 and pulled.result["applied"] == 1, pulled.message
    assert fresh(single).version == 2 and ItemRevision.objects.filter(item=single).count() == revisions

    revision = ItemRevision.objects.get(item=other, version=2)
    assert revision.changed_by == researcher and revision.action == "labelstudio"
    assert "ann@example.com" in revision.note and f"task {task_of[other.pk]}" in revision.note
    assert link.tasks.get(item=other).annotator.endswith("ann@example.com")
    assert USERNAME in link.tasks.get(item=single).annotator


def test_accepted_only_and_disagreements_are_the_researchers_choice(ls_env, annotator_api, benchmark, researcher, items):
    single, two = items["single"], items["two_images"]
    link, task_of = push(benchmark, researcher, [single, two], "Choices")
    ann, bob = label_studio_user(annotator_api, "ann2"), label_studio_user(annotator_api, "bob")
    annotate(annotator_api, task_of[single.pk], region("reference_answer", "Not ready."), region("verdict", "Needs revision"))
    annotate(annotator_api, task_of[two.pk], region("reference_answer", "Left."), region("verdict", "OK"), by=ann["id"])
    annotate(annotator_api, task_of[two.pk], region("reference_answer", "Right."), region("verdict", "OK"), by=bob["id"])

    flagged = lss.pull_from_labelstudio(link, user=researcher, apply=lss.ACCEPTED, several=lss.FLAG)
    assert flagged.result["not_accepted"] == 1 and flagged.result["disagreements"] == 1, flagged.message
    assert flagged.result["applied"] == 0
    entry = entries(flagged)[f"item {two.pk}"]
    assert "annotators disagree on reference answer" in entry.message and "'Left.'" in entry.message
    assert "'Right.'" in entry.message and entry.data["waiting"] == {"reference_answer": "disagreement"}
    proposals = link.tasks.get(item=two).pending["reference_answer"]["proposals"]
    assert {p["annotator"].split()[-1] for p in proposals} == {"ann2@example.com", "bob@example.com"}
    assert fresh(single).version == 1 and fresh(two).version == 1

    # The disagreement waits for the researcher: a later pull does not ask it again...
    latest = lss.pull_from_labelstudio(link, user=researcher, apply=lss.ALL, several=lss.LATEST)
    assert latest.result["applied"] == 1 and latest.result["already_pulled"] == 1, latest.message
    assert fresh(single).reference_answer == "Not ready." and fresh(two).version == 1
    # ...and deciding it (taking Bob's value) moves the baseline: nothing waits any more.
    row = link.tasks.get(item=two)
    bob_annotation = next(p["annotation"] for p in row.pending["reference_answer"]["proposals"] if "bob" in p["annotator"])
    lss.decide(row, {"reference_answer": (lss.TAKE + str(bob_annotation), "")}, user=researcher)
    assert fresh(two).reference_answer == "Right." and link.tasks.get(item=two).pending == {}
    assert lss.pull_from_labelstudio(link, user=researcher).result["already_pulled"] == 2
    # The next push shows the decided value, which is then what both sides agree on.
    assert (
        lss.push_items_to_labelstudio(benchmark, [single, two], project_title="Choices", user=researcher).result["refreshed"] == 2
    )
    assert link.tasks.get(item=two).baseline["reference_answer"] == "Right."


def test_a_repush_refreshes_a_changed_task_and_a_status_change_is_no_conflict(
    ls_env, annotator_api, benchmark, researcher, items
):
    single, two = items["single"], items["two_images"]
    link, task_of = push(benchmark, researcher, [single, two], "Refresh")

    # Changed here: a re-push shows the new values in Label Studio.
    update_item(single, {"reference_answer": "Sales rise, then fall."}, expected_version=1, user=researcher)
    again = lss.push_items_to_labelstudio(benchmark, [single, two], project_title="Refresh", user=researcher)
    assert again.result["refreshed"] == 1 and again.result["already_pushed"] == 1, again.message
    shown = {r["from_name"]: r["value"] for r in prediction(annotator_api, task_of[single.pk])}
    assert shown["reference_answer"] == {"text": ["Sales rise, then fall."]}
    # ...and the annotator's later correction applies cleanly (no conflict with our own edit).
    annotate(annotator_api, task_of[single.pk], region("question_type", "Compound"), region("verdict", "OK"))
    assert lss.pull_from_labelstudio(link, user=researcher).result["applied"] == 1
    assert fresh(single).reference_answer == "Sales rise, then fall." and fresh(single).question_type == "compound"

    # A correction pulled, then a status change here, then another correction: no conflict (the
    # project lets answered items take changes, which they bring to their review).
    first = annotate(annotator_api, task_of[two.pk], region("reference_answer", "The left one, 6 bars."), region("verdict", "OK"))
    assert lss.pull_from_labelstudio(link, user=researcher).result["applied"] == 1
    change_status(fresh(two), ANSWERED, user=researcher, action="submitted")
    lss.set_reviewed_rule(link, LabelStudioLink.Reviewed.REVIEW, user=researcher)
    annotator_api.patch(
        f"/api/annotations/{first['id']}/",
        json={"result": [region("reference_answer", "The left one, 6 bars."), region("criterion_1_text", "Left, 6 bars.")]},
    ).raise_for_status()
    third = lss.pull_from_labelstudio(link, user=researcher)
    assert third.result["conflicts"] == 0 and third.result["applied"] == 1 and third.result["to_review"] == 1, third.message
    assert [c.text for c in fresh(two).criteria.all()] == ["Left, 6 bars."] and fresh(two).status == ANSWERED

    # A task with an annotation not pulled yet is refreshed all the same (no "pull, then push"):
    # the annotation is read later against the pre-fill its annotator started from.
    update_item(fresh(two), {"description": "Two charts."}, expected_version=fresh(two).version, user=researcher)
    annotate(annotator_api, task_of[two.pk], region("criterion_1_text", "The left chart."))
    again = lss.push_items_to_labelstudio(benchmark, [two], project_title="Refresh", user=researcher)
    assert again.result["refreshed"] == 1, again.message
    shown = {r["from_name"]: r["value"] for r in prediction(annotator_api, task_of[two.pk])}
    assert shown["description"] == {"text": ["Two charts."]}
    last = lss.pull_from_labelstudio(link, user=researcher)
    assert last.result["applied"] == 1 and last.result["conflicts"] == 0, last.message
    assert [c.text for c in fresh(two).criteria.all()] == ["The left chart."] and fresh(two).description == "Two charts."


def test_a_deleted_project_is_reported_skipped_and_can_be_unlinked(ls_env, annotator_api, benchmark, researcher, items, capsys):
    kept, _ = push(benchmark, researcher, [items["single"]], "Kept")
    gone, _ = push(benchmark, researcher, [items["mcq"]], "Gone")
    annotator_api.delete(f"/api/projects/{gone.project_id}/").raise_for_status()

    with pytest.raises(CommandError) as caught:
        call_command("labelstudio", "pull", benchmark.slug, "--user", researcher.username)
    assert caught.value.returncode == 3, caught.value
    out = capsys.readouterr().out
    assert "no longer exists" in out and "succeeded" in out  # the other project was pulled
    assert LabelStudioLink.objects.get(pk=kept.pk).last_pulled_at is not None
    assert LabelStudioLink.objects.get(pk=gone.pk).gone_at is not None

    # Pushing under its title says what to do; unlinking frees the title.
    refused = lss.push_items_to_labelstudio(benchmark, [items["mcq"]], project_title="Gone", user=researcher)
    assert refused.status == Job.Status.FAILED and "unlink" in refused.message.lower()
    call_command("labelstudio", "unlink", benchmark.slug, "--user", researcher.username, "--title", "Gone")
    assert not LabelStudioLink.objects.filter(pk=gone.pk).exists()
    call_command("labelstudio", "pull", benchmark.slug, "--user", researcher.username)  # exit 0 again
    reborn, _ = push(benchmark, researcher, [items["mcq"]], "Gone")
    assert reborn.project_id != gone.project_id


def test_logs_are_quiet_by_default(ls_env, benchmark, researcher, items, caplog):
    with caplog.at_level(logging.INFO):
        push(benchmark, researcher, [items["single"]], "Quiet")
    assert not [r for r in caplog.records if "HTTP Request" in r.getMessage()]


@pytest.mark.django_db(transaction=True)
def test_concurrent_pushes_with_the_same_new_title_make_one_project(ls_env, annotator_api, benchmark, researcher, items):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("two writers at once need Postgres (SQLite serialises them anyway)")
    barrier = threading.Barrier(2)
    jobs = []

    def one_push(item):
        try:
            barrier.wait(timeout=60)
            jobs.append(lss.push_items_to_labelstudio(benchmark, [item], project_title="Same title", user=researcher))
        finally:
            connection.close()

    threads = [threading.Thread(target=one_push, args=(items[name],)) for name in ("single", "mcq")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert [job.status for job in jobs] == [Job.Status.SUCCEEDED] * 2, [job.message for job in jobs]
    link = LabelStudioLink.objects.get(title="Same title")
    assert link.tasks.count() == 2
    projects = annotator_api.get("/api/projects/", params={"page_size": 1000}).raise_for_status().json()["results"]
    assert [p["id"] for p in projects if p["title"] == "Same title"] == [link.project_id]  # no orphan

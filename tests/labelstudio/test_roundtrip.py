"""Push items to the real Label Studio, annotate there through its API, pull back."""

import base64
import hashlib

import pytest

from annotation.models import Item, ItemRevision
from annotation.services import create_item, update_item
from benchforge.errors import NotAllowed
from jobs.models import Job
from labelstudio import services as lss
from labelstudio.client import LabelStudioClient
from labelstudio.models import LabelStudioLink, LabelStudioTask

from .samples import annotate, region

pytestmark = [pytest.mark.labelstudio, pytest.mark.django_db]


def tasks_in_project(server, project_id) -> dict[int, dict]:
    with LabelStudioClient(server.url, server.token) as client:
        return {t["meta"]["benchforge_item"]: t for t in client.iter_tasks(project_id, include="id,meta,data")}


def entry_messages(job):
    return {e.key: (e.outcome, e.message) for e in job.entries.all()}


def fresh(item):
    return Item.objects.prefetch_related("criteria").get(pk=item.pk)


def test_round_trip_push_annotate_pull_conflict_and_repeat(ls_env, annotator_api, benchmark, researcher, items):
    pushed = lss.push_items_to_labelstudio(benchmark, items.values(), project_title="Chart review", user=researcher)
    assert pushed.status == Job.Status.SUCCEEDED, pushed.message
    assert pushed.result["pushed"] == 4 and pushed.done == 4
    link = LabelStudioLink.objects.get(benchmark=benchmark)
    assert link.project_id == pushed.result["project_id"] and link.url == ls_env.url

    # The tasks are in Label Studio, with the item's images inline and in order, history and options.
    tasks = tasks_in_project(ls_env, link.project_id)
    assert sorted(tasks) == sorted(i.pk for i in items.values())
    two = tasks[items["two_images"].pk]["data"]
    stored = [link.image for link in items["two_images"].item_images.all()]
    sent = [hashlib.sha256(base64.b64decode(url.split(",", 1)[1])).hexdigest() for url in two["images"]]
    assert sent == [i.sha256 for i in stored]
    assert tasks[items["mcq"].pk]["data"]["options"] == "A. 3\nB. 4\nC. 5"
    assert tasks[items["multi_turn"].pk]["data"]["history"] == "User: What is this?\n\nAssistant: A sales chart."
    task_of = {row.item_id: row.task_id for row in LabelStudioTask.objects.filter(link=link)}

    # An annotator corrects the single item and the multi-turn one, and approves the MCQ as is.
    annotate(
        annotator_api,
        task_of[items["single"].pk],
        region("reference_answer", "Sales rise every year, fastest in 2023."),
        region("question_type", "Compound"),
        region("criterion_1_kind", "Soft reference"),
        region("criterion_1_text", "Says that sales rise."),
        region("criterion_2_kind", "Range"),
        region("criterion_2_text", "Gives 2023 growth between 10% and 12%."),
        region("verdict", "Needs revision"),
    )
    annotate(
        annotator_api,
        task_of[items["multi_turn"].pk],
        region("criterion_1_text", "Names 2023 as the highest year."),
        region("verdict", "OK"),
    )
    annotate(annotator_api, task_of[items["mcq"].pk], region("question_type", "Closed-ended"), region("verdict", "OK"))

    pulled = lss.pull_from_labelstudio(link, user=researcher)
    assert pulled.status == Job.Status.SUCCEEDED, pulled.message
    assert pulled.result == {
        "applied": 2,
        "unchanged": 1,
        "already_pulled": 0,
        "not_annotated": 1,
        "not_accepted": 0,
        "disagreements": 0,
        "conflicts": 0,
        "held": 0,
        "to_review": 0,
        "errors": 0,
    }

    single = fresh(items["single"])
    assert single.reference_answer == "Sales rise every year, fastest in 2023." and single.question_type == "compound"
    assert [(c.order, c.kind, c.text) for c in single.criteria.all()] == [
        (1, "soft", "Says that sales rise."),
        (2, "range", "Gives 2023 growth between 10% and 12%."),
    ]
    assert single.version == 2
    revision = ItemRevision.objects.get(item=single, version=2)
    assert revision.action == "labelstudio" and revision.changed_by == researcher
    assert f"task {task_of[single.pk]}" in revision.note
    multi = fresh(items["multi_turn"])
    assert [(c.kind, c.text) for c in multi.criteria.all()] == [("exact", "Names 2023 as the highest year.")]
    assert fresh(items["mcq"]).version == 1
    verdicts = dict(LabelStudioTask.objects.filter(link=link).values_list("item_id", "verdict"))
    assert verdicts == {
        items["single"].pk: "needs_revision",
        items["multi_turn"].pk: "ok",
        items["mcq"].pk: "ok",
        items["two_images"].pk: "",
    }

    # Pulling again changes nothing.
    versions = {i.pk: i.version for i in Item.objects.filter(benchmark=benchmark)}
    revisions = ItemRevision.objects.count()
    again = lss.pull_from_labelstudio(link, user=researcher)
    assert again.result["already_pulled"] == 3 and again.result["applied"] == 0
    assert {i.pk: i.version for i in Item.objects.filter(benchmark=benchmark)} == versions
    assert ItemRevision.objects.count() == revisions

    # Edited here after the push, then annotated there: a conflict, reported with both values,
    # waiting on the project's decisions page.
    two_images = items["two_images"]
    update_item(two_images, {"reference_answer": "The left chart, with 6 bars."}, expected_version=1, user=researcher)
    annotate(annotator_api, task_of[two_images.pk], region("reference_answer", "The right one."), region("verdict", "OK"))
    conflicted = lss.pull_from_labelstudio(link, user=researcher)
    assert conflicted.result["conflicts"] == 1
    entry = conflicted.entries.get(key=f"item {two_images.pk}")
    assert entry.outcome == "skipped" and "conflict on reference answer" in entry.message
    assert "'The left chart, with 6 bars.'" in entry.message and "'The right one.'" in entry.message
    assert "decisions page" in entry.message and "push again" not in entry.message
    row = LabelStudioTask.objects.get(link=link, item=two_images)
    waiting = row.pending["reference_answer"]
    assert (waiting["reason"], waiting["base"], waiting["here"]) == ("conflict", "The left one.", "The left chart, with 6 bars.")
    assert [p["value"] for p in waiting["proposals"]] == ["The right one."]
    two_images = fresh(two_images)
    assert two_images.reference_answer == "The left chart, with 6 bars." and two_images.version == 2
    # The next pull asks nothing again (the annotation was read); the conflict still waits.
    assert lss.pull_from_labelstudio(link, user=researcher).result["already_pulled"] == 4
    assert LabelStudioTask.objects.get(pk=row.pk).pending == row.pending

    # Pushing the same items again adds no task and refreshes the one whose item changed here.
    repeat = lss.push_items_to_labelstudio(benchmark, items.values(), project_title="Chart review", user=researcher)
    assert repeat.result["pushed"] == 0 and repeat.result["refreshed"] == 3 and repeat.result["already_pushed"] == 1
    assert len(tasks_in_project(ls_env, link.project_id)) == 4
    assert LabelStudioLink.objects.count() == 1


def test_an_edited_annotation_is_pulled_again(ls_env, annotator_api, benchmark, researcher, items):
    job = lss.push_items_to_labelstudio(benchmark, [items["single"]], project_title="Edits", user=researcher)
    link = LabelStudioLink.objects.get(pk=job.result["link_id"])
    task_id = link.tasks.get().task_id
    annotation = annotate(annotator_api, task_id, region("reference_answer", "First try."), region("verdict", "OK"))
    assert lss.pull_from_labelstudio(link, user=researcher).result["applied"] == 1
    annotator_api.patch(
        f"/api/annotations/{annotation['id']}/",
        json={"result": [region("reference_answer", "Second, better try."), region("verdict", "OK")]},
    ).raise_for_status()
    assert lss.pull_from_labelstudio(link, user=researcher).result["applied"] == 1
    item = fresh(items["single"])
    assert item.reference_answer == "Second, better try." and item.version == 3


def test_a_push_interrupted_after_the_import_adds_no_duplicates(ls_env, benchmark, researcher, items):
    first = lss.push_items_to_labelstudio(benchmark, items.values(), project_title="Interrupted", user=researcher)
    link = LabelStudioLink.objects.get(pk=first.result["link_id"])
    recorded = dict(link.tasks.values_list("item_id", "task_id"))
    link.tasks.all().delete()  # as if the job died between Label Studio's answer and our bookkeeping

    again = lss.push_items_to_labelstudio(benchmark, items.values(), project_title="Interrupted", user=researcher)
    assert again.result["pushed"] == 0 and again.result["already_pushed"] == 4
    assert dict(link.tasks.values_list("item_id", "task_id")) == recorded
    assert len(tasks_in_project(ls_env, link.project_id)) == 4


def test_malformed_result_is_an_error_naming_the_task_and_the_rest_is_applied(
    ls_env, annotator_api, benchmark, researcher, items
):
    job = lss.push_items_to_labelstudio(benchmark, [items["single"], items["mcq"]], project_title="Malformed", user=researcher)
    link = LabelStudioLink.objects.get(pk=job.result["link_id"])
    task_of = dict(link.tasks.values_list("item_id", "task_id"))
    annotate(annotator_api, task_of[items["single"].pk], region("question_type", "Sort of open"))
    annotate(annotator_api, task_of[items["mcq"].pk], region("reference_answer", "B. Four bars."))

    pulled = lss.pull_from_labelstudio(link, user=researcher)
    assert pulled.result["errors"] == 1 and pulled.result["applied"] == 1
    outcome, message = entry_messages(pulled)[f"item {items['single'].pk}"]
    assert outcome == "error" and message.startswith(f"Label Studio task {task_of[items['single'].pk]}:")
    assert "'Sort of open' is not a question type" in message
    assert fresh(items["single"]).version == 1 and fresh(items["mcq"]).reference_answer == "B. Four bars."


def test_bad_token_fails_the_job_with_a_clear_message_and_changes_nothing(ls_env, benchmark, researcher, items, monkeypatch):
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "f" * 40)
    job = lss.push_items_to_labelstudio(benchmark, items.values(), project_title="Refused", user=researcher)
    assert job.status == Job.Status.FAILED
    assert "refused the access token (HTTP 401" in job.message and "LABEL_STUDIO_API_KEY" in job.message
    assert not LabelStudioLink.objects.exists() and not LabelStudioTask.objects.exists()


def test_rewrites_are_not_pushed_and_only_researchers_push(ls_env, benchmark, researcher, annotator, items):
    rewrite = create_item(
        benchmark, task=items["single"].task, user=researcher, seed=items["single"], question="Describe the trend."
    )
    job = lss.push_items_to_labelstudio(benchmark, [items["single"], rewrite], project_title="Rewrites", user=researcher)
    assert job.result["pushed"] == 1 and job.result["skipped"] == 1
    assert f"push seed item #{items['single'].pk} instead" in entry_messages(job)[f"item {rewrite.pk}"][1]
    with pytest.raises(NotAllowed):
        lss.push_items_to_labelstudio(benchmark, [items["mcq"]], project_title="Rewrites", user=annotator)
    with pytest.raises(NotAllowed):
        lss.pull_from_labelstudio(LabelStudioLink.objects.get(), user=annotator)

"""The second pass of a Label Studio round trip (issue 37), against the real server: a second
annotation from a stale pre-fill deletes nothing, tasks follow their items after a pull (and no
message sends the user between push and pull), reviewed items change only through review."""

import pytest

from annotation.models import Assignment, Item, ItemRevision
from annotation.services import change_status, update_item
from annotation.workflow import ACCEPTED, ANSWERED, IN_REVIEW, REVISION
from jobs.models import Job
from labelstudio import services as lss
from labelstudio.models import LabelStudioLink, LabelStudioTask

from .samples import annotate_in_editor, label_studio_user, prefill_of

pytestmark = [pytest.mark.labelstudio, pytest.mark.django_db]


def fresh(item):
    return Item.objects.prefetch_related("criteria").get(pk=item.pk)


def push(benchmark, researcher, items, title):
    job = lss.push_items_to_labelstudio(benchmark, items, project_title=title, user=researcher)
    assert job.status == Job.Status.SUCCEEDED, job.message
    link = LabelStudioLink.objects.get(pk=job.result["link_id"])
    return link, dict(link.tasks.values_list("item_id", "task_id")), job


def pull(link, researcher, **options):
    job = lss.pull_from_labelstudio(link, user=researcher, **options)
    assert job.status == Job.Status.SUCCEEDED, job.message
    return job


def criteria(item):
    return [(c.kind, c.text) for c in fresh(item).criteria.all()]


def test_a_second_annotation_from_the_stale_prefill_deletes_no_criterion(ls_env, annotator_api, benchmark, researcher, items):
    single = items["single"]  # one criterion: soft "Says that sales rise."
    link, task_of, _ = push(benchmark, researcher, [single], "Second annotation")
    task = task_of[single.pk]
    stale = prefill_of(annotator_api, task)

    # A first annotator gives the item three criteria, the first one now an exact reference.
    annotate_in_editor(
        annotator_api,
        task,
        {
            "criterion_1_kind": "Exact reference",
            "criterion_2_kind": "Range",
            "criterion_2_text": "Gives growth between 10% and 12%.",
            "criterion_3_kind": "Evaluation guideline",
            "criterion_3_text": "No hedging.",
            "verdict": "OK",
        },
    )
    assert pull(link, researcher).result["applied"] == 1
    three = [("exact", "Says that sales rise."), ("range", "Gives growth between 10% and 12%."), ("guideline", "No hedging.")]
    assert criteria(single) == three

    # A second annotator starts from the task's pre-fill, which still shows one soft criterion,
    # and changes criterion 1's text only.
    bob = label_studio_user(annotator_api, "bob2")
    annotate_in_editor(
        annotator_api,
        task,
        {"criterion_1_text": "Says that sales rise every year.", "verdict": "OK"},
        prefill=stale,
        by=bob["id"],
    )
    second = pull(link, researcher)
    assert second.result["applied"] == 1 and second.result["conflicts"] == 0, second.message
    assert criteria(single) == [("exact", "Says that sales rise every year."), *three[1:]]
    assert "criterion 1 text" in second.entries.get(key=f"item {single.pk}").message
    assert fresh(single).reference_answer == "Sales rise."  # what nobody edited stays


def test_tasks_follow_their_items_and_no_message_sends_the_user_in_a_circle(ls_env, annotator_api, benchmark, researcher, items):
    single, two = items["single"], items["two_images"]
    link, task_of, _ = push(benchmark, researcher, [single, two], "Follow")

    # A pull applies a correction: the next push shows it in Label Studio (version and values).
    annotate_in_editor(annotator_api, task_of[single.pk], {"reference_answer": "Sales rise every year.", "verdict": "OK"})
    assert pull(link, researcher).result["applied"] == 1
    _, _, again = push(benchmark, researcher, [single, two], "Follow")
    assert again.result["refreshed"] == 1 and again.result["already_pushed"] == 1, again.message
    task = annotator_api.get(f"/api/tasks/{task_of[single.pk]}/").raise_for_status().json()
    assert task["meta"]["benchforge_version"] == fresh(single).version == 2
    shown = {r["from_name"]: r["value"] for r in prefill_of(annotator_api, task_of[single.pk])["result"]}
    assert shown["reference_answer"] == {"text": ["Sales rise every year."]}

    # Edited on both sides: the pull reports a conflict to decide here, never "push again"...
    update_item(fresh(two), {"reference_answer": "The left chart."}, expected_version=1, user=researcher)
    annotate_in_editor(annotator_api, task_of[two.pk], {"reference_answer": "The right chart.", "verdict": "OK"})
    conflicted = pull(link, researcher)
    message = conflicted.entries.get(key=f"item {two.pk}").message
    assert conflicted.result["conflicts"] == 1 and "decisions page" in message and "push" not in message.lower()
    # ...and the push refreshes the task, never "pull, then push again".
    _, _, pushed = push(benchmark, researcher, [single, two], "Follow")
    assert pushed.result["refreshed"] == 1 and pushed.result["skipped"] == 0, pushed.message
    assert not [e for e in pushed.entries.all() if "pull" in e.message.lower()]

    # Deciding the conflict (taking Label Studio's value) moves the baseline: the item changes,
    # nothing waits, the next pull asks nothing and the next push shows the decided value.
    row = LabelStudioTask.objects.get(link=link, item=two)
    lss.decide(
        row,
        {"reference_answer": (lss.TAKE + str(row.pending["reference_answer"]["proposals"][0]["annotation"]), "")},
        user=researcher,
    )
    assert fresh(two).reference_answer == "The right chart." and LabelStudioTask.objects.get(pk=row.pk).pending == {}
    assert pull(link, researcher).result["already_pulled"] == 2
    _, _, last = push(benchmark, researcher, [single, two], "Follow")
    assert last.result["refreshed"] == 1
    shown = {r["from_name"]: r["value"] for r in prefill_of(annotator_api, task_of[two.pk])["result"]}
    assert shown["reference_answer"] == {"text": ["The right chart."]}
    revision = ItemRevision.objects.filter(item=two).order_by("-version").first()
    assert revision.action == ItemRevision.Action.EDITED and revision.changed_by == researcher  # the researcher's decision


def _move(item, *statuses, user):
    for status in statuses:
        item = change_status(item, status, user=user, action="test")
    return item


def test_reviewed_items_change_only_through_review(ls_env, annotator_api, benchmark, researcher, items):
    accepted = _move(items["single"], ANSWERED, IN_REVIEW, ACCEPTED, user=researcher)
    answered = _move(items["two_images"], ANSWERED, user=researcher)
    draft = items["multi_turn"]
    link, task_of, _ = push(benchmark, researcher, [accepted, answered, draft], "Reviewed")
    for item, text in ((accepted, "Sales rise, then fall."), (answered, "The right one."), (draft, "2024.")):
        annotate_in_editor(annotator_api, task_of[item.pk], {"reference_answer": text, "verdict": "OK"})

    # The default keeps reviewed work as it was reviewed: drafts take the change, the others wait.
    held = pull(link, researcher)
    assert held.result["applied"] == 1 and held.result["held"] == 2, held.message
    assert fresh(accepted).reference_answer == "Sales rise." and fresh(accepted).status == ACCEPTED
    assert fresh(answered).reference_answer == "The left one." and fresh(answered).status == ANSWERED
    assert fresh(draft).reference_answer == "2024."
    assert "the item is accepted" in held.entries.get(key=f"item {accepted.pk}").message

    # Decided on the project's page: the accepted item takes the change and goes back to its
    # author for another review; the answered one takes it and waits for its review round.
    for item in (accepted, answered):
        row = LabelStudioTask.objects.get(link=link, item=item)
        assert row.pending["reference_answer"]["reason"] == "held"
        taken = lss.TAKE + str(row.pending["reference_answer"]["proposals"][0]["annotation"])
        lss.decide(row, {"reference_answer": (taken, "")}, user=researcher)
    assert fresh(accepted).reference_answer == "Sales rise, then fall." and fresh(accepted).status == REVISION
    assert Assignment.objects.filter(item=accepted, status=Assignment.Status.OPEN).exists()  # in its author's queue
    assert fresh(answered).reference_answer == "The right one." and fresh(answered).status == ANSWERED


def test_a_project_may_send_reviewed_items_through_review_at_pull_time(ls_env, annotator_api, benchmark, researcher, items):
    accepted = _move(items["single"], ANSWERED, IN_REVIEW, ACCEPTED, user=researcher)
    in_review = _move(items["two_images"], ANSWERED, IN_REVIEW, user=researcher)
    link, task_of, _ = push(benchmark, researcher, [accepted, in_review], "Through review")
    lss.set_reviewed_rule(link, LabelStudioLink.Reviewed.REVIEW, user=researcher)
    annotate_in_editor(annotator_api, task_of[accepted.pk], {"reference_answer": "Sales rise, then fall.", "verdict": "OK"})
    annotate_in_editor(annotator_api, task_of[in_review.pk], {"reference_answer": "The right one.", "verdict": "OK"})

    pulled = pull(link, researcher)
    assert pulled.result["to_review"] == 1 and pulled.result["held"] == 1, pulled.message
    assert fresh(accepted).reference_answer == "Sales rise, then fall." and fresh(accepted).status == REVISION
    history = list(ItemRevision.objects.filter(item=accepted).order_by("-version")[:2])
    assert [r.action for r in history] == ["labelstudio", "labelstudio"] and "Sent back for another review" in history[0].note
    # An item in review is never changed under its reviewers: it waits for a decision.
    assert fresh(in_review).reference_answer == "The left one." and fresh(in_review).status == IN_REVIEW

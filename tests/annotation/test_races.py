"""Assignments and item transitions under simultaneous requests (the race kit, tests/races.py;
Postgres only): "assign evenly" and "assign by hand" pressed twice, an annotator's queue racing a
reassign or a cancel, items given to someone while they submit, and each item transition pressed
twice or racing its opposite. The invariants are asked in SQL."""

from functools import partial

import pytest

from annotation import services
from annotation.models import Assignment, Item
from tests.factories import complete_fields, make_image
from tests.races import broken, race, rows, server_errors

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("postgres")]
ASSIGN = "/b/demo/assign/"


@pytest.fixture
def otto(make_user, benchmark):
    return make_user("annotator", "otto", benchmarks=[benchmark])


def test_assign_evenly_pressed_at_once_keeps_the_quota_and_hands_each_image_out_once(
    benchmark, counting, researcher, annotator, otto, client_for
):
    counting.quota = 30
    counting.save()
    for _ in range(70):
        make_image(benchmark, tasks=[counting])
    for trial in range(5):
        Assignment.objects.all().delete()
        clients = [client_for(researcher) for _ in range(4)]
        body = {"form": "evenly", "tasks": ["counting"], "assignees": ["anna", "otto"]}
        results = race([partial(c.post, ASSIGN, body) for c in clients])
        assert server_errors(results) == [], f"trial {trial}"
        assert rows("SELECT count(*) FROM annotation_assignment WHERE task_id = %s", [counting.pk]) == [(30,)], f"trial {trial}"
        assert broken() == {}, f"trial {trial}"


def test_the_same_images_assigned_by_hand_at_once_go_to_one_annotator_each(
    benchmark, counting, researcher, annotator, otto, client_for
):
    images = [make_image(benchmark, tasks=[counting]).pk for _ in range(30)]
    for trial in range(4):
        Assignment.objects.all().delete()
        calls = [
            partial(
                client_for(researcher).post, ASSIGN, {"form": "images", "task": "counting", "images": images, "assignee": who}
            )
            for who in ("anna", "otto", "anna", "otto")
        ]
        results = race(calls)
        assert server_errors(results) == [], f"trial {trial}"
        assert rows("SELECT count(*) FROM annotation_assignment") == [(30,)], f"trial {trial}"
        assert broken() == {}, f"trial {trial}"


def _queue_racing(action, benchmark, counting, researcher, annotator, client_for, trials=4, n=12):
    """The annotator opens each of their n fresh assignments (and "next") while researchers `action`
    them in a few requests at once."""
    for trial in range(trials):
        images = [make_image(benchmark, tasks=[counting]).pk for _ in range(n)]
        services.assign_images(benchmark, task=counting, image_ids=images, assignee=annotator, user=researcher)
        ids = list(Assignment.objects.filter(image_id__in=images).order_by("pk").values_list("pk", flat=True))
        calls = [partial(client_for(annotator).post, f"/b/demo/queue/{pk}/") for pk in ids]
        calls += [partial(client_for(annotator).post, "/b/demo/queue/next/") for _ in range(3)]
        for chunk in (ids[0::3], ids[1::3], ids[2::3]):
            body = {"form": "open", "action": action, "assignments": chunk, "assignee": "otto"}
            calls.append(partial(client_for(researcher).post, ASSIGN, body))
        results = race(calls)
        assert server_errors(results) == [], f"trial {trial}"
        assert broken() == {}, f"trial {trial}"
        # Whoever has an assignment with a draft can open and save that draft.
        for assignment in Assignment.objects.filter(pk__in=ids, status="open").exclude(item=None).select_related("assignee"):
            item = Item.objects.get(pk=assignment.item_id)
            services.update_item(item, {"question": "mine"}, expected_version=item.version, user=assignment.assignee)


def test_the_queue_racing_a_reassign_keeps_each_draft_with_its_assignment(
    benchmark, counting, researcher, annotator, otto, client_for
):
    _queue_racing("reassign", benchmark, counting, researcher, annotator, client_for)
    assert Assignment.objects.filter(assignee=otto).count() > 0


def test_the_queue_racing_a_cancel_leaves_no_draft_assigned_without_an_assignment(
    benchmark, counting, researcher, annotator, otto, client_for
):
    _queue_racing("cancel", benchmark, counting, researcher, annotator, client_for)


def drafts(benchmark, counting, annotator, researcher, n: int) -> list[Item]:
    """n complete drafts in the annotator's queue (each from an image assignment)."""
    images = [make_image(benchmark, tasks=[counting]) for _ in range(n)]
    services.assign_images(benchmark, task=counting, image_ids=[i.pk for i in images], assignee=annotator, user=researcher)
    items = []
    for assignment in Assignment.objects.filter(image__in=images).order_by("pk"):
        item = services.start_assignment(assignment, user=annotator)
        items.append(services.update_item(item, complete_fields(assignment.image), expected_version=item.version, user=annotator))
    return items


def test_each_item_transition_pressed_twice_happens_once(benchmark, counting, annotator, researcher, api_for):
    items = drafts(benchmark, counting, annotator, researcher, 10)
    api = [api_for(annotator), api_for(annotator)]
    submit = "/api/v1/benchmarks/demo/items/{}/submit/"
    # Submit pressed twice (a double click): one submission, the same answer to both.
    results = race([partial(c.post, submit.format(i.pk), {"version": i.version}, format="json") for i in items for c in api])
    assert server_errors(results) == []
    assert {r.status for r in results} == {200}, [r.body for r in results if r.status != 200]
    assert {r.json["status"] for r in results} == {"answered"}
    assert rows("SELECT count(*) FROM annotation_itemrevision WHERE action = 'submitted'") == [(len(items),)]
    assert broken() == {}


def test_submit_racing_a_withdraw_and_an_assignment_leaves_one_consistent_state(
    benchmark, counting, annotator, researcher, otto, api_for, client_for
):
    items = drafts(benchmark, counting, annotator, researcher, 12)
    for item in items[:6]:  # half are submitted already: the race withdraws them while they are resubmitted
        services.submit_item(item, user=annotator)
    calls = []
    for item in items:
        item.refresh_from_db()
        calls.append(partial(api_for(annotator).post, f"/api/v1/benchmarks/demo/items/{item.pk}/submit/", {}, format="json"))
        calls.append(partial(client_for(annotator).post, f"/b/demo/items/{item.pk}/withdraw/", {"version": item.version}))
    # Meanwhile a researcher gives the work in progress to someone else.
    body = {"form": "items", "items": [i.pk for i in items], "assignee": "otto"}
    calls.append(partial(client_for(researcher).post, ASSIGN, body))
    results = race(calls)
    assert server_errors(results) == []
    assert broken() == {}

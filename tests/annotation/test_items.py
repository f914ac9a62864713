"""Item services: every validation rule, permissions, optimistic locking, history, transitions."""

import pytest

from annotation import services
from annotation.models import Assignment, Item, ItemRevision
from annotation.workflow import (
    ACCEPTED,
    ANSWERED,
    DRAFT,
    IN_REVIEW,
    QC_PASSED,
    RELEASED,
)
from benchforge.errors import Conflict, DomainError, IllegalTransition, NotAllowed, StaleVersion
from curation.services import load_preset
from tests.factories import complete_fields, make_image

pytestmark = pytest.mark.django_db


def save(item, user, **changes):
    item.refresh_from_db()
    return services.update_item(item, changes, expected_version=item.version, user=user)


def refused(item, user, **changes) -> str:
    with pytest.raises(DomainError) as err:
        save(item, user, **changes)
    return err.value.message


def not_ready(item, user) -> list[str]:
    item.refresh_from_db()
    with pytest.raises(DomainError) as err:
        services.submit_item(item, user=user, expected_version=item.version)
    assert err.value.code == "not_ready"
    item.refresh_from_db()
    assert item.status == DRAFT
    return err.value.extra["problems"]


# ---- shape rules, checked on every save --------------------------------------------------------------


def test_unknown_kind_and_question_type_are_refused(draft, annotator):
    assert "Unknown kind 'essay'" in refused(draft, annotator, kind="essay")
    assert "Unknown question type 'vague'" in refused(draft, annotator, question_type="vague")
    assert "These fields cannot be edited: status" in refused(draft, annotator, status="accepted")


def test_criteria_at_most_three_with_a_known_kind(draft, annotator):
    four = [{"kind": "soft", "text": f"point {n}"} for n in range(4)]
    assert "at most 3 criteria; this one has 4" in refused(draft, annotator, criteria=four)
    assert "Criterion 2 has an unknown kind 'vibe'" in refused(
        draft, annotator, criteria=[{"kind": "exact", "text": "a"}, {"kind": "vibe", "text": "b"}]
    )
    item = save(draft, annotator, criteria=four[:3])
    assert [c.order for c in item.criteria.all()] == [1, 2, 3]


def test_mcq_options_at_most_four_and_the_key_among_them(draft, annotator):
    assert "Only multiple-choice items have options" in refused(draft, annotator, choices=["cat", "dog"])
    assert "at most 4 options (A-D); this one has 5" in refused(draft, annotator, kind="mcq", choices=list("abcde"))
    assert "answer key 'C' is not one of the options (A-B)" in refused(
        draft, annotator, kind="mcq", choices=["cat", "dog"], answer="C"
    )
    item = save(draft, annotator, kind="mcq", choices=["cat", "dog"], answer="B")
    assert item.choices == ["cat", "dog"] and item.answer == "B"


@pytest.mark.parametrize(
    "history, message",
    [
        ([{"role": "assistant", "content": "Hi"}, {"role": "user", "content": "x"}], "Turn 1 must be a user turn"),
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "Turn 2 must be a assistant turn"),
        (
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}],
            "must end with an assistant turn",
        ),
        ([{"role": "user", "text": "a"}, {"role": "assistant", "content": "b"}], 'Turn 1 must be {"role"'),
        ("user: hi", "must be a list of turns"),
    ],
)
def test_history_alternates_from_user_and_ends_before_the_question(draft, annotator, history, message):
    assert message in refused(draft, annotator, kind="multi_turn", history=history)


def test_history_and_incoherence_only_on_multi_turn_items(draft, annotator):
    pair = [{"role": "user", "content": "What is it?"}, {"role": "assistant", "content": "A cat."}]
    assert "Only multi-turn items have a dialogue history" in refused(draft, annotator, history=pair)
    assert "Only multi-turn items can be marked incoherent" in refused(draft, annotator, incoherent=True)
    item = save(draft, annotator, kind="multi_turn", history=pair, incoherent=True)
    assert item.history == pair and item.incoherent


def test_images_must_be_accepted_uncontaminated_and_of_this_benchmark(benchmark, draft, annotator):
    pending = make_image(benchmark, status="pending")
    rejected = make_image(benchmark, status="rejected")
    tainted = make_image(benchmark, contaminated=True)
    elsewhere = make_image(load_preset("mmbench", slug="other"))
    good = make_image(benchmark)
    assert f"Image #{pending.pk} is pending, not accepted" in refused(draft, annotator, images=[pending.pk])
    assert f"Image #{rejected.pk} is rejected, not accepted" in refused(draft, annotator, images=[rejected.pk])
    assert f"Image #{tainted.pk} matches a known dataset" in refused(draft, annotator, images=[tainted.pk])
    assert f"Image #{elsewhere.pk} does not exist in this benchmark" in refused(draft, annotator, images=[elsewhere.pk])
    assert f"Image #{good.pk} is listed twice" in refused(draft, annotator, images=[good.pk, good.pk])
    second = make_image(benchmark)
    item = save(draft, annotator, images=[second.pk, good.pk])
    assert [link.image_id for link in item.item_images.all()] == [second.pk, good.pk]


def test_external_items_may_have_no_image_and_may_use_a_known_image(benchmark, researcher, counting):
    tainted = make_image(benchmark, contaminated=True)
    items, problems = services.import_external_items(
        benchmark,
        [
            {"task": counting, "external_id": "x-0", "question": "How many?", "reference_answer": "Two."},
            {"task": counting, "external_id": "x-1", "question": "How many?", "reference_answer": "Two.", "images": [tainted.pk]},
            {"task": counting, "external_id": "x-2", "kind": "single_turn", "criteria": [{"kind": "nope", "text": ""}]},
        ],
        user=researcher,
    )
    assert [i.external_id for i in items] == ["x-0", "x-1"] and "unknown kind 'nope'" in problems[2][0]
    assert all(i.status == ACCEPTED and i.is_external for i in items)
    assert services.readiness_problems(items[0]) == []


def test_a_rewrite_reads_images_reference_and_criteria_through_its_seed(benchmark, counting, annotator, image):
    seed = services.create_item(benchmark, task=counting, user=annotator, **complete_fields(image))
    with pytest.raises(DomainError, match="is a rewrite of"):
        services.create_item(benchmark, task=None, seed=seed, user=annotator, question="Count the apples.", reference_answer="3")
    rewrite = services.create_item(benchmark, task=None, seed=seed, user=annotator, question="Count the apples, please.")
    assert rewrite.task == counting
    assert services.readiness_problems(rewrite) == []
    with pytest.raises(DomainError, match="not itself a rewrite"):
        services.create_item(benchmark, task=None, seed=rewrite, user=annotator, question="?")


# ---- completeness, required to submit ----------------------------------------------------------------


def test_an_empty_draft_lists_everything_it_lacks(draft, annotator):
    problems = not_ready(draft, annotator)
    assert problems == [
        "Write the question.",
        "Write the reference answer: complete enough that a judge who cannot see the image can grade an answer.",
        "Add 1 to 3 grading criteria.",
        "Attach at least one accepted image.",
    ]


def test_criteria_need_text_before_review(draft, annotator, image):
    save(draft, annotator, **complete_fields(image, criteria=[{"kind": "range", "text": "  "}]))
    assert not_ready(draft, annotator) == ["Criterion 1 has no text."]


@pytest.mark.parametrize(
    "choices, answer, problem",
    [
        (["only one"], "A", "needs 2 to 4 options (A-D); it has 1"),
        (["cat", ""], "A", "Option B is empty."),
        (["A cat", "a  CAT", "dog"], "C", "Options A and B are the same"),
        (["cat", "dog"], "", "Choose the correct option (the answer key)."),
    ],
)
def test_mcq_needs_two_to_four_distinct_options_and_a_key(draft, annotator, image, choices, answer, problem):
    save(draft, annotator, kind="mcq", choices=choices, answer=answer, **complete_fields(image))
    problems = not_ready(draft, annotator)
    assert any(problem in p for p in problems), problems


def test_a_complete_mcq_is_submitted(draft, annotator, image):
    save(
        draft,
        annotator,
        kind="mcq",
        hint="Look at the fruit.",
        choices=["two", "three", "four"],
        answer="B",
        **complete_fields(image),
    )
    item = services.submit_item(draft, user=annotator)
    assert item.status == ANSWERED and item.submitted_at is not None


def test_multi_turn_needs_history_with_text(draft, annotator, image):
    save(draft, annotator, kind="multi_turn", **complete_fields(image))
    assert not_ready(draft, annotator) == ["A multi-turn item needs at least one user/assistant exchange before the question."]
    save(draft, annotator, history=[{"role": "user", "content": "Describe it."}, {"role": "assistant", "content": " "}])
    assert not_ready(draft, annotator) == ["Turn 2 (assistant) is empty."]
    save(draft, annotator, history=[{"role": "user", "content": "Describe it."}, {"role": "assistant", "content": "Two apples."}])
    assert services.submit_item(draft, user=annotator).status == ANSWERED


def test_an_image_rejected_after_it_was_attached_blocks_submission(draft, annotator, image):
    save(draft, annotator, **complete_fields(image))
    image.status = "rejected"
    image.save()
    assert not_ready(draft, annotator) == [
        f"Image #{image.pk} is rejected, not accepted: only images accepted in screening can be used."
    ]


def test_reference_answer_is_required_before_review(draft, annotator, image):
    save(draft, annotator, **complete_fields(image, reference_answer=""))
    assert not_ready(draft, annotator)[0].startswith("Write the reference answer")


# ---- permissions -------------------------------------------------------------------------------------


def test_annotators_edit_only_their_own_or_assigned_items(benchmark, counting, draft, annotator, make_user, researcher):
    other = make_user("annotator", "otto", benchmarks=[benchmark])
    with pytest.raises(NotAllowed, match="is not yours"):
        save(draft, other, question="Mine now?")
    services.assign_items(benchmark, item_ids=[draft.pk], assignee=other, user=researcher)
    assert save(draft, other, question="Assigned to me, so I may.").question == "Assigned to me, so I may."
    benchmark.members.remove(other)
    with pytest.raises(NotAllowed, match="not a member"):
        save(draft, other, question="Still?")
    reviewer = make_user("reviewer", "rex", benchmarks=[benchmark])
    with pytest.raises(NotAllowed, match="is not yours"):
        save(draft, reviewer, question="Reviewers follow the same rule.")


def test_submitted_items_are_locked_for_annotators_until_taken_back(draft, annotator, image, researcher):
    save(draft, annotator, **complete_fields(image))
    services.submit_item(draft, user=annotator)
    with pytest.raises(NotAllowed, match="only drafts and items sent back for revision can be edited"):
        save(draft, annotator, question="Late fix")
    draft.refresh_from_db()
    services.return_to_draft(draft, user=annotator, expected_version=draft.version)
    assert save(draft, annotator, question="Late fix").question == "Late fix"


def test_researchers_fix_later_items_but_cannot_make_them_incomplete(draft, annotator, image, researcher):
    save(draft, annotator, **complete_fields(image))
    draft.refresh_from_db()
    Item.objects.filter(pk=draft.pk).update(status=ACCEPTED)
    assert save(draft, researcher, question="How many red apples?").question == "How many red apples?"
    assert "Write the reference answer" in refused(draft, researcher, reference_answer="")


def test_released_items_never_change(draft, annotator, image, researcher):
    save(draft, annotator, **complete_fields(image))
    Item.objects.filter(pk=draft.pk).update(status=RELEASED)
    with pytest.raises(NotAllowed, match="released items never change"):
        save(draft, researcher, question="Typo fix")
    with pytest.raises(IllegalTransition):
        draft.refresh_from_db()
        services.change_status(draft, QC_PASSED, user=researcher, action="qc")


def test_non_members_cannot_create_items(benchmark, counting, make_user):
    outsider = make_user("annotator", "olga")
    with pytest.raises(NotAllowed):
        services.create_item(benchmark, task=counting, user=outsider)


# ---- optimistic locking and history -------------------------------------------------------------------


def test_a_stale_save_is_refused_and_returns_the_current_version(draft, annotator, researcher):
    loaded = draft.version
    first = services.update_item(draft, {"question": "How many apples?"}, expected_version=loaded, user=researcher)
    with pytest.raises(StaleVersion) as err:
        services.update_item(draft, {"question": "How many pears?"}, expected_version=loaded, user=annotator)
    assert err.value.status == 409
    assert err.value.extra["current_version"] == first.version == loaded + 1
    assert err.value.extra["current"]["question"] == "How many apples?"
    assert err.value.extra["changed_by"] == researcher.username
    draft.refresh_from_db()
    assert draft.question == "How many apples?" and draft.version == loaded + 1


def test_every_edit_bumps_the_version_and_records_a_full_snapshot(draft, annotator, image):
    save(draft, annotator, question="v2")
    save(draft, annotator, question="v2")  # nothing changed: no new version
    save(draft, annotator, **complete_fields(image))
    item = services.submit_item(draft, user=annotator)
    revisions = list(item.revisions.order_by("version"))
    assert [(r.version, r.action) for r in revisions] == [(1, "created"), (2, "edited"), (3, "edited"), (4, "submitted")]
    assert item.version == 4
    assert revisions[1].snapshot["question"] == "v2" and revisions[1].snapshot["images"] == []
    assert revisions[2].snapshot["criteria"] == [{"kind": "exact", "text": "The count is three."}]
    assert revisions[2].snapshot["images"] == [image.pk]
    assert revisions[3].snapshot["status"] == ANSWERED and revisions[3].changed_by == annotator


def test_a_write_returns_the_item_as_stored_and_its_history_keeps_the_whole_item(draft, annotator, image, benchmark):
    """A version bump sets the values it wrote instead of reading the row back, and a submit records
    the snapshot it checked: what each write returns and keeps equals the row and its children."""
    from django.forms.models import model_to_dict

    from annotation.contract import item_snapshot

    def stored(item):
        fresh = Item.objects.get(pk=item.pk)
        assert model_to_dict(item) == model_to_dict(fresh)
        assert (item.version, item.updated_at, item.submitted_at) == (fresh.version, fresh.updated_at, fresh.submitted_at)
        assert item.revisions.get(version=fresh.version).snapshot == item_snapshot(fresh)
        return fresh

    ocr = benchmark.tasks.get(slug="ocr")
    edited = save(draft, annotator, **complete_fields(image), task=ocr.pk)
    assert edited.task == ocr  # the task loaded for the old id is not kept
    submitted = services.submit_item(stored(edited), user=annotator, expected_version=edited.version)
    assert stored(submitted).status == ANSWERED and submitted.submitted_at is not None
    withdrawn = services.return_to_draft(submitted, user=annotator, expected_version=submitted.version)
    assert stored(withdrawn).status == DRAFT


def test_status_changes_follow_the_transition_table(draft, annotator, image, researcher):
    with pytest.raises(IllegalTransition):
        services.return_to_draft(draft, user=annotator)
    with pytest.raises(IllegalTransition, match="cannot move from 'Draft' to 'Accepted'"):
        services.change_status(draft, ACCEPTED, user=researcher, action="accepted")
    save(draft, annotator, **complete_fields(image))
    item = services.submit_item(draft, user=annotator)
    with pytest.raises(IllegalTransition):
        services.submit_item(item, user=annotator)
    item = services.change_status(item, IN_REVIEW, user=researcher, action="review_started")
    assert item.status == IN_REVIEW
    assert ItemRevision.objects.filter(item=item).count() == item.version


# ---- assignments and queues ----------------------------------------------------------------------------


def test_assigning_images_by_hand_never_assigns_an_image_twice_for_a_task(benchmark, counting, annotator, researcher, make_user):
    ocr = benchmark.tasks.get(slug="ocr")
    images = [make_image(benchmark, tasks=[counting]) for _ in range(3)]
    result = services.assign_images(
        benchmark, task=counting, image_ids=[i.pk for i in images], assignee=annotator, user=researcher
    )
    assert result == {"assigned": 3, "skipped": []}
    other = make_user("annotator", "otto", benchmarks=[benchmark])
    again = services.assign_images(benchmark, task="counting", image_ids=[images[0].pk], assignee=other, user=researcher)
    assert again == {"assigned": 0, "skipped": [images[0].pk]}
    assert services.assign_images(benchmark, task=ocr, image_ids=[images[0].pk], assignee=other, user=researcher)["assigned"] == 1
    pending = make_image(benchmark, status="pending")
    with pytest.raises(DomainError, match="not accepted"):
        services.assign_images(benchmark, task=counting, image_ids=[pending.pk], assignee=annotator, user=researcher)
    with pytest.raises(NotAllowed):
        services.assign_images(benchmark, task=counting, image_ids=[images[1].pk], assignee=annotator, user=annotator)
    outsider = make_user("annotator", "olga")
    with pytest.raises(DomainError, match="not a member"):
        services.assign_images(benchmark, task=counting, image_ids=[images[1].pk], assignee=outsider, user=researcher)


def test_assign_evenly_spreads_each_tasks_remaining_quota(benchmark, annotator, researcher, make_user):
    counting, ocr = benchmark.tasks.get(slug="counting"), benchmark.tasks.get(slug="ocr")
    counting.quota, ocr.quota = 5, 4
    counting.save(), ocr.save()
    other = make_user("annotator", "otto", benchmarks=[benchmark])
    count_images = [make_image(benchmark, tasks=[counting]) for _ in range(6)]
    for _ in range(2):  # usable for both tasks
        make_image(benchmark, tasks=[counting, ocr])
    make_image(benchmark, tasks=[ocr], contaminated=True)
    make_image(benchmark, tasks=[ocr], status="pending")
    # One counting seed is already written by hand: only 4 remain for counting.
    services.create_item(benchmark, task=counting, user=annotator, images=[count_images[0].pk])
    report = services.assign_evenly(benchmark, tasks=["counting", "ocr"], assignees=[annotator, other], user=researcher)
    assert report["counting"] == {"assigned": 4, "per_user": {"anna": 2, "otto": 2}, "short": 0}
    assert report["ocr"]["assigned"] == 2 and report["ocr"]["short"] == 2  # only two usable ocr images
    pairs = list(Assignment.objects.values_list("task_id", "image_id"))
    assert len(pairs) == len(set(pairs)) == 6
    assert count_images[0].pk not in [i for t, i in pairs if t == counting.pk]
    # Running it again assigns nothing more: the quota is covered.
    assert all(
        r["assigned"] == 0
        for r in services.assign_evenly(benchmark, tasks=["counting"], assignees=[annotator, other], user=researcher).values()
    )


def test_the_queue_opens_a_seed_draft_and_submitting_closes_the_assignment(benchmark, counting, annotator, researcher):
    images = [make_image(benchmark, tasks=[counting]) for _ in range(2)]
    services.assign_images(benchmark, task=counting, image_ids=[i.pk for i in images], assignee=annotator, user=researcher)
    first = services.next_assignment(annotator, benchmark)
    assert first.image == images[0]
    item = services.start_assignment(first, user=annotator)
    assert item.status == DRAFT and item.author == annotator and item.assignee == annotator
    assert [link.image_id for link in item.item_images.all()] == [images[0].pk]
    assert services.start_assignment(Assignment.objects.get(pk=first.pk), user=annotator) == item  # no second draft
    second = services.next_assignment(annotator, benchmark, after=first)
    assert second.image == images[1]
    assert services.next_assignment(annotator, benchmark, after=second) == first  # wraps around
    save(item, annotator, **complete_fields(images[0]))
    services.submit_item(item, user=annotator)
    first.refresh_from_db()
    assert first.status == Assignment.Status.DONE and first.done_at is not None
    assert services.next_assignment(annotator, benchmark) == second
    services.return_to_draft(Item.objects.get(pk=item.pk), user=annotator)
    first.refresh_from_db()
    assert first.status == Assignment.Status.OPEN


def test_assigning_existing_items_moves_open_work(benchmark, counting, draft, annotator, researcher, make_user):
    other = make_user("annotator", "otto", benchmarks=[benchmark])
    services.assign_items(benchmark, item_ids=[draft.pk], assignee=annotator, user=researcher)
    result = services.assign_items(benchmark, item_ids=[draft.pk], assignee=other, user=researcher)
    assert result == {"assigned": 0, "moved": 1}
    assert Assignment.objects.get(item=draft).assignee == other
    Item.objects.filter(pk=draft.pk).update(status=ACCEPTED)
    with pytest.raises(DomainError, match="only drafts and items to revise can be assigned"):
        services.assign_items(benchmark, item_ids=[draft.pk], assignee=other, user=researcher)


def test_an_assignment_moved_or_withdrawn_after_the_queue_showed_it_is_not_started(
    benchmark, counting, annotator, researcher, make_user
):
    otto = make_user("annotator", "otto", benchmarks=[benchmark])
    images = [make_image(benchmark, tasks=[counting]) for _ in range(2)]
    services.assign_images(benchmark, task=counting, image_ids=[i.pk for i in images], assignee=annotator, user=researcher)
    moved, withdrawn = Assignment.objects.filter(image__in=images).order_by("pk")  # as anna's queue read them
    services.reassign(benchmark, assignment_ids=[moved.pk], assignee=otto, user=researcher)
    services.cancel_assignments(benchmark, assignment_ids=[withdrawn.pk], user=researcher)
    with pytest.raises(NotAllowed, match="given to someone else meanwhile"):
        services.start_assignment(moved, user=annotator)
    with pytest.raises(Conflict, match="withdrawn by a researcher meanwhile"):
        services.start_assignment(withdrawn, user=annotator)
    assert not Item.objects.exists()  # no half-made draft for either
    assert services.start_assignment(Assignment.objects.get(pk=moved.pk), user=otto).assignee == otto

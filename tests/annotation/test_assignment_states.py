"""Item and assignment agree whatever order cancel, reassign, submit and withdraw come in (issue 45):
every sequence of these four on one item, after each step, keeps the race kit's assignment
invariants (tests/races.py), and whoever's queue holds the item can edit it. Postgres only (the
invariants are asked in Postgres SQL)."""

import itertools

import pytest

from annotation import services
from annotation.models import Assignment, Item
from benchforge import permissions
from benchforge.errors import DomainError
from tests.factories import complete_fields, make_image
from tests.races import broken

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("postgres")]

ASSIGNMENT_RULES = (
    "an open assignment's item belongs to another person",
    "work in progress assigned to someone without an assignment",
    "a submitted item still has an open assignment",
)


@pytest.fixture
def people(make_user, benchmark, annotator, researcher):
    return {"author": annotator, "other": make_user("annotator", "otto", benchmarks=[benchmark]), "researcher": researcher}


def _open_ids(item):
    return list(Assignment.objects.filter(item=item, status=Assignment.Status.OPEN).values_list("pk", flat=True))


def _step(name, item, benchmark, people):
    """One step as its user would take it; a refusal (a 4xx) is a possible outcome, never a broken state."""
    item = Item.objects.get(pk=item.pk)
    try:
        if name == "cancel":
            services.cancel_assignments(benchmark, assignment_ids=_open_ids(item), user=people["researcher"])
        elif name == "reassign":
            services.reassign(benchmark, assignment_ids=_open_ids(item), assignee=people["other"], user=people["researcher"])
        elif name == "submit":
            services.submit_item(item, user=people["author"], expected_version=item.version)
        elif name == "withdraw":
            services.return_to_draft(item, user=people["author"], expected_version=item.version)
    except DomainError:
        pass


def _draft_under_an_assignment(benchmark, counting, people) -> Item:
    """What the issue starts from: the author opened an image assignment and wrote a complete draft."""
    image = make_image(benchmark, tasks=[counting])
    services.assign_images(benchmark, task=counting, image_ids=[image.pk], assignee=people["author"], user=people["researcher"])
    assignment = Assignment.objects.get(image=image)
    item = services.start_assignment(assignment, user=people["author"])
    return services.update_item(item, complete_fields(image), expected_version=item.version, user=people["author"])


def _queue_holder_cannot_edit(item) -> list:
    item = Item.objects.select_related("benchmark", "author", "assignee").get(pk=item.pk)
    problems = []
    for assignment in Assignment.objects.filter(item=item, status=Assignment.Status.OPEN).select_related("assignee"):
        refusal = permissions.item_edit_refusal(assignment.assignee, item)
        if refusal:
            problems.append((assignment.assignee.username, refusal))
    return problems


def test_the_failing_sequence_of_the_issue(benchmark, counting, people):
    """Draft under an assignment; a researcher cancels it; the author submits, then withdraws: the new
    open assignment and the item's assignee must name the same person."""
    item = _draft_under_an_assignment(benchmark, counting, people)
    for name in ("cancel", "submit", "withdraw"):
        _step(name, item, benchmark, people)
    item.refresh_from_db()
    assert item.status == "draft"
    [open_assignment] = Assignment.objects.filter(item=item, status=Assignment.Status.OPEN)
    assert open_assignment.assignee_id == item.assignee_id == people["author"].pk
    assert broken(*ASSIGNMENT_RULES) == {}


def test_every_order_of_cancel_reassign_submit_and_withdraw_keeps_item_and_assignment_together(benchmark, counting, people):
    steps = ("cancel", "reassign", "submit", "withdraw")
    # All orders of the four, and the shorter ones that go round the submit/withdraw loop again.
    sequences = list(itertools.permutations(steps)) + [
        seq for seq in itertools.product(steps, repeat=3) if {"submit", "withdraw"} <= set(seq)
    ]
    for sequence in sequences:
        item = _draft_under_an_assignment(benchmark, counting, people)
        for n, name in enumerate(sequence, 1):
            _step(name, item, benchmark, people)
            where = f"{' -> '.join(sequence[:n])} (item #{item.pk})"
            assert broken(*ASSIGNMENT_RULES) == {}, where
            assert _queue_holder_cannot_edit(item) == [], where
            assert len(_open_ids(item)) <= 1, where
    assert broken() == {}

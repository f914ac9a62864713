"""Assignments and queues: handing images and items to annotators, and working through a queue.

Under simultaneous requests (docs/architecture.md, "State changes"): handing out images locks the
task (its quota and "one seed per image" are the task's), and every change to open assignments
locks them before the items that follow them, then reads them again.
"""

from collections import Counter

from django.db.models import Q
from django.utils.translation import gettext

from benchforge import permissions
from benchforge.concurrency import lock, lock_or_none, lock_rows, retried
from benchforge.errors import Conflict, DomainError, NotAllowed
from benchforge.roles import ANNOTATOR, has_role
from curation.models import Benchmark, Image, Task

from ..models import Assignment, Item, ItemImage
from ..selectors import assignable_images, queue_for
from ..workflow import REJECTED, STATUS_LABELS
from .items import create_item, lock_items, resolve_task
from .validation import image_refusals, raise_problems


def _check_assignee(benchmark: Benchmark, assignee) -> None:
    if not has_role(assignee, ANNOTATOR) or not permissions.is_member(assignee, benchmark):
        raise DomainError(
            gettext("%(name)s is not a member of this benchmark with an annotator role; add them to the benchmark first.")
            % {"name": assignee.username},
            code="not_member",
        )


def usable_images(benchmark: Benchmark):
    return Image.objects.filter(benchmark=benchmark, status=Image.Status.ACCEPTED, contaminated=False)


def _taken_image_ids(task: Task) -> set[int]:
    """Images that already have (or will get) a seed item for this task."""
    assigned = Assignment.objects.filter(task=task, image__isnull=False).values_list("image_id", flat=True)
    written = ItemImage.objects.filter(item__task=task, item__seed__isnull=True).values_list("image_id", flat=True)
    return set(assigned) | set(written)


@retried
def assign_images(benchmark: Benchmark, *, task, image_ids, assignee, user) -> dict:
    """Hand accepted images to an annotator: one seed item to write per image for `task`.
    Images already assigned (or written) for the task are skipped, never assigned twice."""
    permissions.require_researcher(user, "Assigning work")
    task = resolve_task(benchmark, task)
    _check_assignee(benchmark, assignee)
    ids = list(dict.fromkeys(int(i) for i in image_ids))
    if not ids:
        raise DomainError(gettext("Select at least one image."))
    raise_problems(image_refusals(benchmark, ids), prefix="Nothing assigned")
    lock(Task, task.pk)  # whoever hands out images for this task at the same time waits, then sees these
    taken = _taken_image_ids(task)
    fresh = [i for i in ids if i not in taken]
    Assignment.objects.bulk_create(
        [Assignment(benchmark=benchmark, assignee=assignee, task=task, image_id=i, assigned_by=user) for i in fresh]
    )
    return {"assigned": len(fresh), "skipped": [i for i in ids if i in taken]}


@retried
def assign_items(benchmark: Benchmark, *, item_ids, assignee, user) -> dict:
    """Give existing drafts / items to revise to an annotator (moving any open assignment)."""
    permissions.require_researcher(user, "Assigning work")
    _check_assignee(benchmark, assignee)
    ids = list(dict.fromkeys(int(i) for i in item_ids))
    items = {i.pk: i for i in lock_items(Item.objects.filter(benchmark=benchmark, pk__in=ids).values_list("pk", flat=True))}
    problems = [f"Item #{i} does not exist in this benchmark." for i in ids if i not in items]
    problems += [
        f"Item #{i.pk} is '{STATUS_LABELS[i.status]}': only drafts and items to revise can be assigned."
        for i in items.values()
        if not i.is_work_in_progress
    ]
    raise_problems(problems, prefix="Nothing assigned")
    moved = Assignment.objects.filter(item_id__in=ids, status=Assignment.Status.OPEN).update(assignee=assignee, assigned_by=user)
    with_open = set(Assignment.objects.filter(item_id__in=ids, status=Assignment.Status.OPEN).values_list("item_id", flat=True))
    Assignment.objects.bulk_create(
        [
            Assignment(benchmark=benchmark, assignee=assignee, task_id=items[i].task_id, item_id=i, assigned_by=user)
            for i in ids
            if i not in with_open
        ]
    )
    Item.objects.filter(pk__in=ids).update(assignee=assignee)
    return {"assigned": len(ids) - len(with_open), "moved": moved}


@retried
def reassign(benchmark: Benchmark, *, assignment_ids, assignee, user) -> int:
    """Move open assignments to another annotator (their drafts follow)."""
    permissions.require_researcher(user, "Assigning work")
    _check_assignee(benchmark, assignee)
    locked = _lock_open(benchmark, assignment_ids)
    Item.objects.filter(pk__in=[a.item_id for a in locked if a.item_id]).update(assignee=assignee)
    return Assignment.objects.filter(pk__in=[a.pk for a in locked]).update(assignee=assignee, assigned_by=user)


@retried
def cancel_assignments(benchmark: Benchmark, *, assignment_ids, user) -> int:
    """Withdraw open assignments; drafts already started stay with their author."""
    permissions.require_researcher(user, "Assigning work")
    locked = _lock_open(benchmark, assignment_ids)
    Item.objects.filter(pk__in=[a.item_id for a in locked if a.item_id]).update(assignee=None)
    return Assignment.objects.filter(pk__in=[a.pk for a in locked]).delete()[0]


def _lock_open(benchmark: Benchmark, assignment_ids) -> list[Assignment]:
    """The open ones among these assignments, locked and read now: a draft that an annotator's
    queue made for one of them meanwhile is on the row read here, so it follows the assignment."""
    ids = [int(i) for i in assignment_ids]
    return lock_rows(Assignment.objects.filter(benchmark=benchmark, pk__in=ids, status=Assignment.Status.OPEN))


def remaining_quota(task: Task) -> int:
    """Seed items a task still needs beyond those written or handed out. A rejected item no
    longer counts: its place in the quota is free for a replacement."""
    assigned = Assignment.objects.filter(task=task, image__isnull=False).exclude(item__status=REJECTED).count()
    unassigned_seeds = (
        Item.objects.filter(task=task, seed__isnull=True, is_external=False)
        .exclude(status=REJECTED)
        .exclude(assignments__image__isnull=False)
        .count()
    )
    return max(0, task.quota - assigned - unassigned_seeds)


@retried
def assign_evenly(benchmark: Benchmark, *, tasks, assignees, user) -> dict:
    """Spread each task's remaining quota of seed items over `assignees` as evenly as possible,
    using accepted, uncontaminated images tagged with the task that nobody has for it yet.
    Returns {task slug: {"assigned": n, "per_user": {username: n}, "short": n}}."""
    permissions.require_researcher(user, "Assigning work")
    assignees = list(dict.fromkeys(assignees))
    if not assignees:
        raise DomainError(gettext("Choose at least one annotator."))
    for person in assignees:
        _check_assignee(benchmark, person)
    tasks = [resolve_task(benchmark, t) for t in tasks] or list(benchmark.tasks.all())
    # The tasks' quotas are what this protects: a second press waits here, then counts what the first assigned.
    lock_rows(Task.objects.filter(pk__in=[t.pk for t in tasks]))
    load = Counter(
        {
            p.pk: Assignment.objects.filter(benchmark=benchmark, assignee=p, status=Assignment.Status.OPEN).count()
            for p in assignees
        }
    )
    report, new = {}, []
    for task in tasks:
        wanted = remaining_quota(task)
        candidates = list(assignable_images(benchmark, task).values_list("pk", flat=True)[:wanted]) if wanted else []
        per_user: Counter = Counter()
        for image_id in candidates:
            # The least loaded annotator gets the next image (ties: the order they were chosen in).
            person = min(assignees, key=lambda p: load[p.pk])
            load[person.pk] += 1
            per_user[person.username] += 1
            new.append(Assignment(benchmark=benchmark, assignee=person, task=task, image_id=image_id, assigned_by=user))
        report[task.slug] = {"assigned": len(candidates), "per_user": dict(per_user), "short": wanted - len(candidates)}
    Assignment.objects.bulk_create(new)
    return report


def next_assignment(user, benchmark: Benchmark, *, after: Assignment | None = None) -> Assignment | None:
    """The user's oldest open assignment (after `after` in queue order, wrapping around)."""
    queue = queue_for(user, benchmark)
    if after is not None:
        later = queue.filter(Q(created_at__gt=after.created_at) | Q(created_at=after.created_at, pk__gt=after.pk)).first()
        if later is not None:
            return later
        return queue.exclude(pk=after.pk).first()
    return queue.first()


def start_assignment(assignment: Assignment, *, user) -> Item:
    """The item to open for an assignment; an image assignment gets its seed draft on first open."""
    if assignment.assignee_id != user.pk:
        raise NotAllowed("This assignment belongs to someone else.")
    if assignment.item_id:
        return assignment.item
    return _start(assignment, user=user)


@retried
def _start(assignment: Assignment, *, user) -> Item:
    # Read again under the lock: a researcher may have moved or withdrawn it since the queue showed it.
    locked = lock_or_none(Assignment, assignment.pk)
    if locked is None:
        raise Conflict("This assignment was withdrawn by a researcher meanwhile: it is no longer in your queue.")
    if locked.assignee_id != user.pk:
        raise NotAllowed("This assignment was given to someone else meanwhile: it is no longer in your queue.")
    if locked.item_id:
        assignment.item = locked.item
        return locked.item
    item = create_item(locked.benchmark, task=locked.task, user=user, assignee=user, images=[locked.image_id])
    locked.item = item
    locked.save(update_fields=["item"])
    assignment.item = item
    return item

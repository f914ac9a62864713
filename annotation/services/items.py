"""Item writes: creation, edits under optimistic locking, status changes through the transition table, history."""

from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from benchforge import permissions
from benchforge.concurrency import lock_rows, retried
from benchforge.errors import Conflict, DomainError, NotAllowed, StaleVersion
from curation.models import Benchmark, Image, Task

from ..contract import EDITABLE_FIELDS, SCALAR_FIELDS, item_payload, item_snapshot
from ..models import CHOICE_LETTERS, Assignment, Criterion, Item, ItemImage, ItemRevision
from ..selectors import last_revision
from ..workflow import (
    ANSWERED,
    DRAFT,
    TRANSITIONS,
    WORK_IN_PROGRESS,
    check_transition,
)
from .validation import (
    completeness_problems,
    raise_problems,
    readiness_problems,
    shape_problems,
)


def _record_revision(item: Item, *, action: str, user, note: str = "", snapshot: dict | None = None) -> ItemRevision:
    return ItemRevision.objects.create(
        item=item,
        version=item.version,
        snapshot=snapshot if snapshot is not None else item_snapshot(item),
        action=action,
        note=note,
        changed_by=user if getattr(user, "is_authenticated", False) else None,
    )


def _stale(current: Item) -> StaleVersion:
    last = last_revision(current)
    who = last.changed_by.username if last and last.changed_by else "someone"
    return StaleVersion(
        f"This item was changed by {who} (now version {current.version}) after you opened it. "
        "Your text is still in the form: compare it with theirs, then keep yours or take theirs.",
        extra={
            "current_version": current.version,
            "current": item_payload(current),
            "changed_by": who,
            "changed_at": last.changed_at.isoformat() if last else None,
        },
    )


def check_can_edit(user, item: Item) -> None:
    permissions.require(permissions.item_edit_refusal(user, item))


def resolve_task(benchmark: Benchmark, task) -> Task:
    if isinstance(task, Task):
        found = task if task.benchmark_id == benchmark.pk else None
    else:
        lookup = {"pk": task} if isinstance(task, int) else {"slug": str(task)}
        found = Task.objects.filter(benchmark=benchmark, **lookup).first()
    if found is None:
        raise DomainError(gettext("Task '%(task)s' is not a task of this benchmark.") % {"task": task}, code="unknown_task")
    return found


def merged_state(item: Item, base: dict, changes: dict) -> dict:
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise DomainError(
            f"These fields cannot be edited: {', '.join(sorted(unknown))}. Editable: {', '.join(EDITABLE_FIELDS)}.",
            code="invalid",
        )
    state = {**base, **changes}
    _follow_options(state, base, changes)
    if "task" in changes:
        state["task"] = resolve_task(item.benchmark, changes["task"]).pk
    if "images" in changes:
        images = changes["images"]
        state["images"] = [i.pk if isinstance(i, Image) else i for i in images] if isinstance(images, list) else images
    return state


def derived_reference(state: dict) -> str:
    """A multiple-choice item's reference answer from its key: "C. <option C>" ('' without a usable key)."""
    choices, letter = state.get("choices"), state.get("answer")
    if not isinstance(choices, list) or not isinstance(letter, str) or letter not in list(CHOICE_LETTERS[: len(choices)]):
        return ""
    choice = choices[CHOICE_LETTERS.index(letter)]
    return f"{letter}. {choice.strip()}" if isinstance(choice, str) and choice.strip() else ""


def _follow_options(state: dict, base: dict, changes: dict) -> None:
    """An edit that makes an item multiple-choice or gives it options makes it closed-ended, unless the
    edit gives a type itself: its options decide the answer (other edits leave the type as someone
    set it). Its reference answer, unless someone wrote one, is its key and option ("C. <text>"),
    kept in step with the key."""
    if state.get("kind") != Item.Kind.MCQ:
        return
    sets_options = "kind" in changes or "choices" in changes
    if sets_options and "question_type" not in changes and state.get("question_type") == Item.QuestionType.OPEN:
        state["question_type"] = Item.QuestionType.CLOSED
    reference = state.get("reference_answer")
    if isinstance(reference, str) and (not reference.strip() or reference == derived_reference(base)):
        state["reference_answer"] = derived_reference(state)


def _store_children(item: Item, state: dict, before: dict) -> None:
    if state["images"] != before["images"]:
        item.item_images.all().delete()
        ItemImage.objects.bulk_create([ItemImage(item=item, image_id=i, order=n) for n, i in enumerate(state["images"])])
    if state["criteria"] != before["criteria"]:
        item.criteria.all().delete()
        Criterion.objects.bulk_create(
            [Criterion(item=item, order=n, kind=c["kind"], text=c["text"]) for n, c in enumerate(state["criteria"], 1)]
        )


@transaction.atomic
def create_item(
    benchmark: Benchmark,
    *,
    task,
    user,
    author=None,
    assignee=None,
    seed: Item | None = None,
    is_external: bool = False,
    external_id: str = "",
    status: str = DRAFT,
    action: str = ItemRevision.Action.CREATED,
    **fields,
) -> Item:
    """A new item (version 1, one history row). `fields` are editable fields (see EDITABLE_FIELDS)."""
    if not permissions.is_member(user, benchmark):
        raise NotAllowed("You are not a member of this benchmark.")
    if seed is not None:
        if seed.benchmark_id != benchmark.pk or seed.seed_id is not None:
            raise DomainError("A rewrite's seed must be a seed item (not itself a rewrite) of the same benchmark.")
        task = task or seed.task
    if external_id and Item.objects.filter(benchmark=benchmark, external_id=external_id).exists():
        raise Conflict(f"An item with external id '{external_id}' already exists in this benchmark.", code="duplicate")
    item = Item(
        benchmark=benchmark,
        task=resolve_task(benchmark, task),
        seed=seed,
        is_external=is_external,
        external_id=external_id,
        status=status,
        author=author if author is not None else user,
        assignee=assignee,
    )
    empty = {**item_snapshot_defaults(), "task": item.task_id}
    state = merged_state(item, empty, fields)
    raise_problems(shape_problems(item, state))
    for name in SCALAR_FIELDS:
        setattr(item, name, state[name])
    item.task_id = state["task"]
    item.save()
    _store_children(item, state, empty)
    _record_revision(item, action=action, user=user, snapshot={**state, "status": item.status})
    return item


def item_snapshot_defaults() -> dict:
    return {
        "task": None,
        "kind": Item.Kind.SINGLE_TURN,
        "question_type": Item.QuestionType.OPEN,
        "question": "",
        "history": [],
        "incoherent": False,
        "hint": "",
        "choices": [],
        "answer": "",
        "reference_answer": "",
        "description": "",
        "images": [],
        "criteria": [],
        "status": DRAFT,
    }


def lock_items(ids) -> list[Item]:
    """Lock items for a state change, in the house order (docs/architecture.md, "State changes"):
    their assignments first, then the items, each in id order. Returns the items as they are now."""
    ids = sorted(set(ids))
    lock_rows(Assignment.objects.filter(item_id__in=ids))
    return lock_rows(Item.objects.filter(pk__in=ids))


def lock_item(item: Item | int) -> Item:
    """One item locked for a state change (its assignments first) and read fresh, with its benchmark and task."""
    pk = getattr(item, "pk", item)
    lock_items([pk])
    return Item.objects.select_related("benchmark", "task").get(pk=pk)


def _locked(item: Item, expected_version: int | None) -> Item:
    """Re-read the item under a row lock (Postgres) and refuse a save based on an old version."""
    current = lock_item(item)
    if expected_version is not None and int(expected_version) != current.version:
        raise _stale(current)
    return current


def _bump(current: Item, expected: int, **fields) -> Item:
    """Write the new version only if nobody wrote since `expected`: a conditional UPDATE, so two
    simultaneous saves from the same version can never both succeed, even without row locks."""
    now = timezone.now()
    updated = Item.objects.filter(pk=current.pk, version=expected).update(version=F("version") + 1, updated_at=now, **fields)
    if not updated:
        raise _stale(Item.objects.select_related("benchmark", "task").get(pk=current.pk))
    # The row now holds exactly these values (the UPDATE matched the version read): set them rather
    # than read the row again. Setting a foreign key's id drops a related row loaded for the old one.
    current.version, current.updated_at = expected + 1, now
    for name, value in fields.items():
        setattr(current, name, value)
    return current


@retried
def update_item(
    item: Item, changes: dict, *, expected_version: int, user, action: str = ItemRevision.Action.EDITED, note: str = ""
) -> Item:
    """Apply `changes` (editable fields) to the version the editor started from.

    Raises StaleVersion (409, the stored version in `extra`) when someone saved in between,
    NotAllowed when `user` may not edit it, DomainError listing every broken rule otherwise.
    A save that changes nothing keeps the version.
    """
    try:
        with transaction.atomic():
            current = _locked(item, expected_version)
            check_can_edit(user, current)
            before = item_snapshot(current)
            state = merged_state(current, before, changes)
            raise_problems(shape_problems(current, state, before["images"]))
            if {k: v for k, v in state.items() if k != "status"} == {k: v for k, v in before.items() if k != "status"}:
                return current
            if current.status not in WORK_IN_PROGRESS:
                # Past the draft stage an edit may fix things but must not break a complete item.
                known = set(completeness_problems(current, before))
                raise_problems([p for p in completeness_problems(current, state) if p not in known])
            current = _bump(current, current.version, task_id=state["task"], **{name: state[name] for name in SCALAR_FIELDS})
            _store_children(current, state, before)
            _record_revision(current, action=action, user=user, note=note, snapshot={**state, "status": current.status})
            return current
    except IntegrityError:
        # Only a concurrent write can collide here (same version row): report it as such.
        raise _stale(Item.objects.select_related("benchmark", "task").get(pk=item.pk)) from None


@retried
def change_status(
    item: Item, target: str, *, user, action: str, note: str = "", expected_version: int | None = None, **fields
) -> Item:
    """Move an item along the transition table (one version, one history row). For other apps'
    workflow steps too (review, rewrite, QC, release); `fields` are extra columns to set."""
    with transaction.atomic():
        return _move(_locked(item, expected_version), target, user=user, action=action, note=note, **fields)


def _move(current: Item, target: str, *, user, action: str, note: str = "", snapshot: dict | None = None, **fields) -> Item:
    """change_status() of an item this transaction has just locked and read (lock_item); `snapshot`:
    its item_snapshot() when the caller read it meanwhile (its new status is set here)."""
    check_transition(current.status, target)
    current = _bump(current, current.version, status=target, **fields)
    _record_revision(current, action=action, user=user, note=note, snapshot={**snapshot, "status": target} if snapshot else None)
    return current


@retried
def change_status_many(items, target: str, *, user, action: str, note: str = "") -> list[Item]:
    """change_status for many items at once (a review round takes thousands): items whose status
    allows the move go to `target`, one version and one history row each, in a few queries.
    Returns those moved; items another writer moved meanwhile are left out."""
    ids = [item.pk for item in items]
    with transaction.atomic():
        lock_items(ids)
        current = list(Item.objects.filter(pk__in=ids).order_by("pk").prefetch_related("item_images", "criteria"))
        moved = [item for item in current if target in TRANSITIONS.get(item.status, ())]
        now = timezone.now()
        # The rows are locked (or, on SQLite, the transaction holds the write lock): one UPDATE per
        # starting status moves them all.
        for status in {item.status for item in moved}:
            Item.objects.filter(pk__in=[i.pk for i in moved if i.status == status], status=status).update(
                status=target, version=F("version") + 1, updated_at=now
            )
        for item in moved:
            item.status, item.version, item.updated_at = target, item.version + 1, now
        changed_by = user if getattr(user, "is_authenticated", False) else None
        ItemRevision.objects.bulk_create(
            ItemRevision(
                item=item, version=item.version, snapshot=item_snapshot(item), action=action, note=note, changed_by=changed_by
            )
            for item in moved
        )
    return moved


@retried
def submit_item(item: Item, *, user, expected_version: int | None = None) -> Item:
    """Send a draft (or an item sent back for revision) to review: only when it is complete.
    Closes the annotator's open assignment for it. The same submission of a version sent twice (a
    double click, a retry) is answered with the item it submitted."""
    with transaction.atomic():
        current = _locked(item, None)
        if _submitted_by(current, user, expected_version):
            return current
        if expected_version is not None and int(expected_version) != current.version:
            raise _stale(current)
        check_transition(current.status, ANSWERED)
        check_can_edit(user, current)
        snapshot = item_snapshot(current)
        problems = readiness_problems(current, snapshot)
        if problems:
            raise DomainError(
                gettext("Not submitted yet: %(problems)s") % {"problems": " ".join(problems)},
                code="not_ready",
                extra={"problems": problems},
            )
        current = _move(
            current, ANSWERED, user=user, action=ItemRevision.Action.SUBMITTED, snapshot=snapshot, submitted_at=timezone.now()
        )
        Assignment.objects.filter(item=current, status=Assignment.Status.OPEN).update(
            status=Assignment.Status.DONE, done_at=timezone.now()
        )
    return current


def _submitted_by(current: Item, user, expected_version: int | None) -> bool:
    """Whether `current` is what this user's submission of `expected_version` made (so a second
    identical request has nothing left to do). Without a version, "the same request" is unknown: refused."""
    if current.status != ANSWERED or expected_version is None or int(expected_version) != current.version - 1:
        return False
    last = last_revision(current)
    return last is not None and last.action == ItemRevision.Action.SUBMITTED and last.changed_by_id == user.pk


@retried
def return_to_draft(item: Item, *, user, expected_version: int | None = None, note: str = "") -> Item:
    """Take a submitted item back before review starts (its author, its assignee or a researcher);
    it goes back into the assignee's queue."""
    with transaction.atomic():
        current = _locked(item, expected_version)
        permissions.require(permissions.item_withdraw_refusal(user, current))
        current = _move(current, DRAFT, user=user, action=ItemRevision.Action.RETURNED, note=note)
        requeue_for_author(current, by=user)  # an item written outside any assignment gets one: it is work in a queue again
    return current


def requeue_for_author(item: Item, *, by) -> Assignment:
    """Put an item in its assignee's (else its author's) queue: reopen its assignment, or give it
    one (an item written outside any assignment, or whose assignment a researcher cancelled). The
    item's assignee is then the assignment's: item and assignment always name the same person."""
    assignment = reopen_assignment(item)
    if assignment is None:
        assignment = Assignment.objects.filter(item=item, status=Assignment.Status.OPEN).first()
    if assignment is None:
        assignment = Assignment.objects.create(
            benchmark_id=item.benchmark_id,
            assignee_id=item.assignee_id or item.author_id,
            task_id=item.task_id,
            item=item,
            assigned_by=by if getattr(by, "is_authenticated", False) else None,
        )
    _follow(item, assignment)
    return assignment


def reopen_assignment(item: Item) -> Assignment | None:
    """Put an item back in its assignee's queue (e.g. when it is sent back for revision)."""
    assignments = list(Assignment.objects.filter(item=item).order_by("-done_at", "-id"))  # an item has few
    if not assignments or any(a.status == Assignment.Status.OPEN for a in assignments):
        return None
    assignment = assignments[0]
    assignment.status, assignment.done_at = Assignment.Status.OPEN, None
    assignment.save(update_fields=["status", "done_at"])
    _follow(item, assignment)
    return assignment


def _follow(item: Item, assignment: Assignment) -> None:
    """The item's assignee becomes its open assignment's (not a new version: its content is the same)."""
    if item.assignee_id != assignment.assignee_id:
        Item.objects.filter(pk=item.pk).update(assignee_id=assignment.assignee_id)
        item.assignee_id = assignment.assignee_id


def withhold_in_app(fields_by_item: dict[int, Iterable[str]]) -> None:
    """Record what a release being frozen keeps private of each of its items ({item id: fields}),
    so the app hides it too (annotation.selectors.visible_payloads). Only ever adds: a field one
    frozen release withholds stays hidden. Neither a version nor a history row: the item's
    content does not change."""
    wanted: dict[tuple[str, ...], list[int]] = {}
    current = dict(Item.objects.filter(pk__in=list(fields_by_item)).values_list("pk", "withheld"))
    for pk, fields in fields_by_item.items():
        merged = tuple(sorted(set(current.get(pk) or ()) | set(fields)))
        if pk in current and merged != tuple(sorted(current[pk] or ())):
            wanted.setdefault(merged, []).append(pk)
    for fields, ids in wanted.items():
        Item.objects.filter(pk__in=ids).update(withheld=list(fields))

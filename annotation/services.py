"""Every write to items: creation, edits under optimistic locking, status changes, history,
assignments and queues, and the AlignMMBench import.

Two levels of validation:
- the *shape* of an item is checked on every save (known kinds, at most 3 criteria and 4
  options, a well-formed dialogue history, usable images...), so nothing malformed is stored;
- its *completeness* (`readiness_problems`) is what a draft still lacks before it can be
  submitted for review (question, reference answer, 1-3 criteria with text, distinct
  options and an answer key, non-empty turns...). Drafts may be incomplete: they autosave.
"""

from collections import Counter

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from benchforge.errors import DomainError, NotAllowed, StaleVersion
from benchforge.roles import ANNOTATOR, RESEARCHER, has_role, user_role
from curation.models import Benchmark, Image, Task

from .models import CHOICE_LETTERS, MAX_CHOICES, MAX_CRITERIA, Assignment, Criterion, Item, ItemImage, ItemRevision
from .selectors import assignable_images, item_payload, last_revision, queue_for
from .workflow import ACCEPTED, ANSWERED, DRAFT, RELEASED, REVISION, STATUS_LABELS, check_transition

EDITABLE_FIELDS = (
    "task", "kind", "question_type", "question", "history", "incoherent", "hint", "choices", "answer",
    "reference_answer", "description", "images", "criteria",
)
SCALAR_FIELDS = ("kind", "question_type", "question", "history", "incoherent", "hint", "choices", "answer",
                 "reference_answer", "description")
TEXT_FIELDS = ("question", "hint", "answer", "reference_answer", "description")
# A rewrite reads these through its seed (ITEM_MODEL.md): they are never stored on the rewrite.
SEED_ONLY_FIELDS = ("images", "reference_answer", "criteria")
# Annotators and reviewers edit work in progress only; researchers may also correct items
# further down the pipeline (never released ones).
WORK_IN_PROGRESS = (DRAFT, REVISION)
ROLES_IN_TURN = ("user", "assistant")


# ---- snapshots (history rows, 409 answers, diffs) ------------------------------------------------

def item_snapshot(item: Item) -> dict:
    """All editable fields of an item, images and criteria included, plus its status."""
    return {
        "task": item.task_id,
        "kind": item.kind,
        "question_type": item.question_type,
        "question": item.question,
        "history": item.history,
        "incoherent": item.incoherent,
        "hint": item.hint,
        "choices": item.choices,
        "answer": item.answer,
        "reference_answer": item.reference_answer,
        "description": item.description,
        "images": [link.image_id for link in item.item_images.all()],
        "criteria": [{"kind": c.kind, "text": c.text} for c in item.criteria.all()],
        "status": item.status,
    }


def _record_revision(item: Item, *, action: str, user, note: str = "", snapshot: dict | None = None) -> ItemRevision:
    return ItemRevision.objects.create(
        item=item, version=item.version, snapshot=snapshot if snapshot is not None else item_snapshot(item),
        action=action, note=note, changed_by=user if getattr(user, "is_authenticated", False) else None,
    )


def _stale(current: Item) -> StaleVersion:
    last = last_revision(current)
    who = last.changed_by.username if last and last.changed_by else "someone"
    return StaleVersion(
        f"This item was changed by {who} (now version {current.version}) after you opened it. "
        "Your text is still in the form: compare it with theirs, then keep yours or take theirs.",
        extra={"current_version": current.version, "current": item_payload(current),
               "changed_by": who, "changed_at": last.changed_at.isoformat() if last else None},
    )


# ---- permissions -----------------------------------------------------------------------------------

def is_member(user, benchmark: Benchmark) -> bool:
    if user_role(user) == RESEARCHER:
        return True
    return has_role(user, ANNOTATOR) and benchmark.members.filter(pk=user.pk).exists()


def edit_refusal(user, item: Item, *, membership_checked: bool = False) -> str | None:
    """Why `user` may not change `item` (None when they may). `membership_checked`: the caller
    got the item through selectors.get_item_for, which already refused non-members."""
    if item.status == RELEASED:
        return f"Item #{item.pk} is released; released items never change."
    role = user_role(user)
    if role is None:
        return "You need a role on this platform to edit items."
    if role == RESEARCHER:
        return None
    if not membership_checked and not is_member(user, item.benchmark):
        return "You are not a member of this benchmark."
    if user.pk not in (item.author_id, item.assignee_id):
        return f"Item #{item.pk} is not yours: you can edit items you wrote or that are assigned to you."
    if item.status not in WORK_IN_PROGRESS:
        return (f"Item #{item.pk} is '{STATUS_LABELS[item.status]}': only drafts and items sent back for "
                "revision can be edited.")
    return None


def check_can_edit(user, item: Item) -> None:
    reason = edit_refusal(user, item)
    if reason:
        raise NotAllowed(reason)


# ---- validation --------------------------------------------------------------------------------------

def _letters(n: int) -> str:
    return CHOICE_LETTERS[:n]


def _image_rows(ids) -> dict[int, dict]:
    return {row["pk"]: row for row in Image.objects.filter(pk__in=list(ids)).values("pk", "benchmark_id", "status", "contaminated")}


def _image_problems(item: Item, image_ids, rows: dict[int, dict]) -> list[str]:
    problems = []
    for image_id in image_ids:
        row = rows.get(image_id)
        if row is None or row["benchmark_id"] != item.benchmark_id:
            problems.append(f"Image #{image_id} does not exist in this benchmark.")
        elif row["status"] != Image.Status.ACCEPTED:
            problems.append(f"Image #{image_id} is {Image.Status(row['status']).label.lower()}, not accepted: "
                            "only images accepted in screening can be used.")
        elif row["contaminated"] and not item.is_external:
            problems.append(f"Image #{image_id} matches a known dataset or benchmark (contaminated) and cannot be used.")
    return problems


def image_refusals(benchmark: Benchmark, image_ids) -> list[str]:
    """Why these images cannot be used in the benchmark's own items (empty: all usable)."""
    ids = list(image_ids)
    return _image_problems(Item(benchmark=benchmark), ids, _image_rows(ids))


def _shape_problems(item: Item, state: dict, before_images=()) -> list[str]:
    """Rules every stored version obeys, draft or not. Images already on the item
    (`before_images`) are re-checked by readiness instead: they may have been rejected since."""
    problems = []
    kind = state["kind"]
    if kind not in Item.Kind.values:
        problems.append(f"Unknown kind '{kind}'; use one of: {', '.join(Item.Kind.values)}.")
    if state["question_type"] not in Item.QuestionType.values:
        problems.append(f"Unknown question type '{state['question_type']}'; use one of: {', '.join(Item.QuestionType.values)}.")
    for name in TEXT_FIELDS:
        if not isinstance(state[name], str):
            problems.append(f"'{name}' must be text.")
    if not isinstance(state["incoherent"], bool):
        problems.append("'incoherent' must be true or false.")

    history = state["history"]
    if not isinstance(history, list):
        problems.append("The dialogue history must be a list of turns.")
    elif history and kind != Item.Kind.MULTI_TURN:
        problems.append("Only multi-turn items have a dialogue history: switch the kind to multi-turn or remove the turns.")
    else:
        for i, turn in enumerate(history, 1):
            if not isinstance(turn, dict) or set(turn) != {"role", "content"} or not isinstance(turn.get("content"), str):
                problems.append(f'Turn {i} must be {{"role": "user" or "assistant", "content": text}}.')
                continue
            expected = ROLES_IN_TURN[(i - 1) % 2]
            if turn["role"] != expected:
                problems.append(f"Turn {i} must be a {expected} turn: the history starts with the user and "
                                "alternates user / assistant.")
        if history and len(history) % 2:
            problems.append("The history must end with an assistant turn: the final user turn is the question itself.")
    if state["incoherent"] and kind != Item.Kind.MULTI_TURN:
        problems.append("Only multi-turn items can be marked incoherent.")

    choices = state["choices"]
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        problems.append("Options must be a list of texts.")
    elif kind != Item.Kind.MCQ and (choices or state["answer"] or state["hint"]):
        problems.append("Only multiple-choice items have options, an answer key or a hint: switch the kind or clear them.")
    elif len(choices) > MAX_CHOICES:
        problems.append(f"A multiple-choice item has at most {MAX_CHOICES} options (A-D); this one has {len(choices)}.")
    elif state["answer"] and state["answer"] not in _letters(len(choices)):
        span = f"A-{_letters(len(choices))[-1]}" if choices else "none yet"
        problems.append(f"The answer key '{state['answer']}' is not one of the options ({span}).")

    criteria = state["criteria"]
    if not isinstance(criteria, list):
        problems.append("Criteria must be a list.")
    else:
        if len(criteria) > MAX_CRITERIA:
            problems.append(f"An item has at most {MAX_CRITERIA} criteria; this one has {len(criteria)}.")
        for i, criterion in enumerate(criteria, 1):
            if not isinstance(criterion, dict) or not isinstance(criterion.get("text"), str):
                problems.append(f'Criterion {i} must be {{"kind": ..., "text": ...}}.')
            elif criterion.get("kind") not in Criterion.Kind.values:
                problems.append(f"Criterion {i} has an unknown kind '{criterion.get('kind')}'; use one of: "
                                f"{', '.join(Criterion.Kind.values)}.")

    images = state["images"]
    if not isinstance(images, list) or not all(isinstance(i, int) for i in images):
        problems.append("Images must be a list of image ids.")
    else:
        repeated = sorted(i for i, n in Counter(images).items() if n > 1)
        problems += [f"Image #{i} is listed twice." for i in repeated]
        added = [i for i in dict.fromkeys(images) if i not in set(before_images)]
        problems += _image_problems(item, added, _image_rows(added))

    if item.seed_id is not None:
        seed_only = [f for f in SEED_ONLY_FIELDS if state[f]]
        if seed_only:
            problems.append(f"Item #{item.pk or 'new'} is a rewrite of #{item.seed_id}: its images, reference answer and "
                            "criteria are the seed's; edit the seed instead.")
    return problems


def _completeness_problems(item: Item, state: dict, image_rows: dict | None = None) -> list[str]:
    """What a version still lacks before review (empty list: ready). `image_rows`: the images'
    screening state when the caller already has it."""
    problems = []
    if not state["question"].strip():
        problems.append("Write the question.")
    kind = state["kind"]
    if kind == Item.Kind.MULTI_TURN:
        if not state["history"]:
            problems.append("A multi-turn item needs at least one user/assistant exchange before the question.")
        for i, turn in enumerate(state["history"], 1):
            if not str(turn.get("content", "")).strip():
                problems.append(f"Turn {i} ({turn.get('role')}) is empty.")
    if kind == Item.Kind.MCQ:
        choices = state["choices"]
        if not 2 <= len(choices) <= MAX_CHOICES:
            problems.append(f"A multiple-choice item needs 2 to {MAX_CHOICES} options (A-D); it has {len(choices)}.")
        seen: dict[str, str] = {}
        for letter, text in zip(CHOICE_LETTERS, choices):
            key = " ".join(text.split()).casefold()
            if not key:
                problems.append(f"Option {letter} is empty.")
            elif key in seen:
                problems.append(f"Options {seen[key]} and {letter} are the same; options must be distinct.")
            else:
                seen[key] = letter
        if not state["answer"] and not item.is_external:
            problems.append("Choose the correct option (the answer key).")
    if item.seed_id is None:
        if not state["reference_answer"].strip():
            problems.append("Write the reference answer: complete enough that a judge who cannot see the image can grade an answer.")
        criteria = state["criteria"]
        if not item.is_external and not criteria:
            problems.append(f"Add 1 to {MAX_CRITERIA} grading criteria.")
        for i, criterion in enumerate(criteria, 1):
            if not criterion["text"].strip():
                problems.append(f"Criterion {i} has no text.")
        if not state["images"] and not item.is_external:
            problems.append("Attach at least one accepted image.")
        rows = image_rows if image_rows is not None else _image_rows(state["images"])
        problems += _image_problems(item, state["images"], rows)
    return problems


def readiness_problems(item: Item) -> list[str]:
    """What the item lacks before it can be submitted for review; empty when it is ready."""
    rows = None
    if "item_images" in getattr(item, "_prefetched_objects_cache", {}):
        # Loaded with their images (selectors.with_payload_data): no extra query.
        rows = {link.image_id: {"pk": link.image_id, "benchmark_id": link.image.benchmark_id, "status": link.image.status,
                                "contaminated": link.image.contaminated} for link in item.item_images.all()}
    return _completeness_problems(item, item_snapshot(item), rows)


def _raise_problems(problems: list[str], *, prefix: str = "Not saved") -> None:
    if problems:
        raise DomainError(f"{prefix}: " + " ".join(problems), code="invalid", extra={"problems": problems})


def _resolve_task(benchmark: Benchmark, task) -> Task:
    if isinstance(task, Task):
        found = task if task.benchmark_id == benchmark.pk else None
    else:
        lookup = {"pk": task} if isinstance(task, int) else {"slug": str(task)}
        found = Task.objects.filter(benchmark=benchmark, **lookup).first()
    if found is None:
        raise DomainError(f"Task '{task}' is not a task of this benchmark.", code="unknown_task")
    return found


def _merge(item: Item, base: dict, changes: dict) -> dict:
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise DomainError(f"These fields cannot be edited: {', '.join(sorted(unknown))}. "
                          f"Editable: {', '.join(EDITABLE_FIELDS)}.", code="invalid")
    state = {**base, **changes}
    if "task" in changes:
        state["task"] = _resolve_task(item.benchmark, changes["task"]).pk
    if "images" in changes:
        images = changes["images"]
        state["images"] = [i.pk if isinstance(i, Image) else i for i in images] if isinstance(images, list) else images
    return state


def _store_children(item: Item, state: dict, before: dict) -> None:
    if state["images"] != before["images"]:
        item.item_images.all().delete()
        ItemImage.objects.bulk_create([ItemImage(item=item, image_id=i, order=n) for n, i in enumerate(state["images"])])
    if state["criteria"] != before["criteria"]:
        item.criteria.all().delete()
        Criterion.objects.bulk_create([Criterion(item=item, order=n, kind=c["kind"], text=c["text"])
                                       for n, c in enumerate(state["criteria"], 1)])


# ---- item writes --------------------------------------------------------------------------------------

@transaction.atomic
def create_item(benchmark: Benchmark, *, task, user, author=None, assignee=None, seed: Item | None = None,
                is_external: bool = False, external_id: str = "", status: str = DRAFT, action: str = ItemRevision.Action.CREATED,
                **fields) -> Item:
    """A new item (version 1, one history row). `fields` are editable fields (see EDITABLE_FIELDS)."""
    if not is_member(user, benchmark):
        raise NotAllowed("You are not a member of this benchmark.")
    if seed is not None:
        if seed.benchmark_id != benchmark.pk or seed.seed_id is not None:
            raise DomainError("A rewrite's seed must be a seed item (not itself a rewrite) of the same benchmark.")
        task = task or seed.task
    if external_id and Item.objects.filter(benchmark=benchmark, external_id=external_id).exists():
        raise DomainError(f"An item with external id '{external_id}' already exists in this benchmark.", code="duplicate")
    item = Item(benchmark=benchmark, task=_resolve_task(benchmark, task), seed=seed, is_external=is_external,
                external_id=external_id, status=status, author=author if author is not None else user, assignee=assignee)
    empty = {**item_snapshot_defaults(), "task": item.task_id}
    state = _merge(item, empty, fields)
    _raise_problems(_shape_problems(item, state))
    for name in SCALAR_FIELDS:
        setattr(item, name, state[name])
    item.task_id = state["task"]
    item.save()
    _store_children(item, state, empty)
    _record_revision(item, action=action, user=user, snapshot={**state, "status": item.status})
    return item


def item_snapshot_defaults() -> dict:
    return {"task": None, "kind": Item.Kind.SINGLE_TURN, "question_type": Item.QuestionType.OPEN, "question": "",
            "history": [], "incoherent": False, "hint": "", "choices": [], "answer": "", "reference_answer": "",
            "description": "", "images": [], "criteria": [], "status": DRAFT}


def _locked(item: Item, expected_version: int | None) -> Item:
    """Re-read the item under a row lock (Postgres) and refuse a save based on an old version."""
    current = Item.objects.select_for_update().select_related("benchmark", "task").get(pk=item.pk)
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
    current.refresh_from_db()
    return current


def update_item(item: Item, changes: dict, *, expected_version: int, user, action: str = ItemRevision.Action.EDITED,
                note: str = "") -> Item:
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
            state = _merge(current, before, changes)
            _raise_problems(_shape_problems(current, state, before["images"]))
            if {k: v for k, v in state.items() if k != "status"} == {k: v for k, v in before.items() if k != "status"}:
                return current
            if current.status not in WORK_IN_PROGRESS:
                # Past the draft stage an edit may fix things but must not break a complete item.
                known = set(_completeness_problems(current, before))
                _raise_problems([p for p in _completeness_problems(current, state) if p not in known])
            current = _bump(current, current.version, task_id=state["task"], **{name: state[name] for name in SCALAR_FIELDS})
            _store_children(current, state, before)
            _record_revision(current, action=action, user=user, note=note, snapshot={**state, "status": current.status})
            return current
    except IntegrityError:
        # Only a concurrent write can collide here (same version row): report it as such.
        raise _stale(Item.objects.select_related("benchmark", "task").get(pk=item.pk)) from None


def change_status(item: Item, target: str, *, user, action: str, note: str = "", expected_version: int | None = None,
                  **fields) -> Item:
    """Move an item along the transition table (one version, one history row). For other apps'
    workflow steps too (review, rewrite, QC, release); `fields` are extra columns to set."""
    with transaction.atomic():
        current = _locked(item, expected_version)
        check_transition(current.status, target)
        current = _bump(current, current.version, status=target, **fields)
        _record_revision(current, action=action, user=user, note=note)
    return current


def submit_item(item: Item, *, user, expected_version: int | None = None) -> Item:
    """Send a draft (or an item sent back for revision) to review: only when it is complete.
    Closes the annotator's open assignment for it."""
    with transaction.atomic():
        current = _locked(item, expected_version)
        check_transition(current.status, ANSWERED)
        check_can_edit(user, current)
        problems = readiness_problems(current)
        if problems:
            raise DomainError("Not submitted yet: " + " ".join(problems), code="not_ready", extra={"problems": problems})
        current = change_status(current, ANSWERED, user=user, action=ItemRevision.Action.SUBMITTED, submitted_at=timezone.now())
        Assignment.objects.filter(item=current, status=Assignment.Status.OPEN).update(
            status=Assignment.Status.DONE, done_at=timezone.now())
    return current


def return_to_draft(item: Item, *, user, expected_version: int | None = None, note: str = "") -> Item:
    """Take a submitted item back before review starts (its author, its assignee or a researcher);
    it goes back into the assignee's queue."""
    with transaction.atomic():
        current = _locked(item, expected_version)
        if user_role(user) != RESEARCHER and user.pk not in (current.author_id, current.assignee_id):
            raise NotAllowed(f"Only the author, the assignee or a researcher can take item #{current.pk} back.")
        current = change_status(current, DRAFT, user=user, action=ItemRevision.Action.RETURNED, note=note)
        reopen_assignment(current)
    return current


def reopen_assignment(item: Item) -> Assignment | None:
    """Put an item back in its assignee's queue (e.g. when it is sent back for revision)."""
    if Assignment.objects.filter(item=item, status=Assignment.Status.OPEN).exists():
        return None
    assignment = Assignment.objects.filter(item=item).order_by("-done_at", "-id").first()
    if assignment is None:
        return None
    assignment.status, assignment.done_at = Assignment.Status.OPEN, None
    assignment.save(update_fields=["status", "done_at"])
    return assignment


# ---- assignments and queues -----------------------------------------------------------------------

def _check_assignee(benchmark: Benchmark, assignee) -> None:
    if not has_role(assignee, ANNOTATOR) or not is_member(assignee, benchmark):
        raise DomainError(f"{assignee.username} is not a member of this benchmark with an annotator role; "
                          "add them to the benchmark first.", code="not_member")


def _check_researcher(user) -> None:
    if user_role(user) != RESEARCHER:
        raise NotAllowed("Assigning work needs the researcher role.")


def _usable_images(benchmark: Benchmark):
    return Image.objects.filter(benchmark=benchmark, status=Image.Status.ACCEPTED, contaminated=False)


def _taken_image_ids(task: Task) -> set[int]:
    """Images that already have (or will get) a seed item for this task."""
    assigned = Assignment.objects.filter(task=task, image__isnull=False).values_list("image_id", flat=True)
    written = ItemImage.objects.filter(item__task=task, item__seed__isnull=True).values_list("image_id", flat=True)
    return set(assigned) | set(written)


@transaction.atomic
def assign_images(benchmark: Benchmark, *, task, image_ids, assignee, user) -> dict:
    """Hand accepted images to an annotator: one seed item to write per image for `task`.
    Images already assigned (or written) for the task are skipped, never assigned twice."""
    _check_researcher(user)
    task = _resolve_task(benchmark, task)
    _check_assignee(benchmark, assignee)
    ids = list(dict.fromkeys(int(i) for i in image_ids))
    if not ids:
        raise DomainError("Select at least one image.")
    _raise_problems(image_refusals(benchmark, ids), prefix="Nothing assigned")
    taken = _taken_image_ids(task)
    fresh = [i for i in ids if i not in taken]
    Assignment.objects.bulk_create([Assignment(benchmark=benchmark, assignee=assignee, task=task, image_id=i, assigned_by=user)
                                    for i in fresh])
    return {"assigned": len(fresh), "skipped": [i for i in ids if i in taken]}


@transaction.atomic
def assign_items(benchmark: Benchmark, *, item_ids, assignee, user) -> dict:
    """Give existing drafts / items to revise to an annotator (moving any open assignment)."""
    _check_researcher(user)
    _check_assignee(benchmark, assignee)
    ids = list(dict.fromkeys(int(i) for i in item_ids))
    items = {i.pk: i for i in Item.objects.filter(benchmark=benchmark, pk__in=ids)}
    problems = [f"Item #{i} does not exist in this benchmark." for i in ids if i not in items]
    problems += [f"Item #{i.pk} is '{STATUS_LABELS[i.status]}': only drafts and items to revise can be assigned."
                 for i in items.values() if i.status not in WORK_IN_PROGRESS]
    _raise_problems(problems, prefix="Nothing assigned")
    moved = Assignment.objects.filter(item_id__in=ids, status=Assignment.Status.OPEN).update(assignee=assignee, assigned_by=user)
    with_open = set(Assignment.objects.filter(item_id__in=ids, status=Assignment.Status.OPEN).values_list("item_id", flat=True))
    Assignment.objects.bulk_create([
        Assignment(benchmark=benchmark, assignee=assignee, task_id=items[i].task_id, item_id=i, assigned_by=user)
        for i in ids if i not in with_open
    ])
    Item.objects.filter(pk__in=ids).update(assignee=assignee)
    return {"assigned": len(ids) - len(with_open), "moved": moved}


@transaction.atomic
def reassign(benchmark: Benchmark, *, assignment_ids, assignee, user) -> int:
    """Move open assignments to another annotator (their drafts follow)."""
    _check_researcher(user)
    _check_assignee(benchmark, assignee)
    open_ones = Assignment.objects.filter(benchmark=benchmark, pk__in=list(assignment_ids), status=Assignment.Status.OPEN)
    item_ids = [i for i in open_ones.values_list("item_id", flat=True) if i]
    Item.objects.filter(pk__in=item_ids).update(assignee=assignee)
    return open_ones.update(assignee=assignee, assigned_by=user)


@transaction.atomic
def cancel_assignments(benchmark: Benchmark, *, assignment_ids, user) -> int:
    """Withdraw open assignments; drafts already started stay with their author."""
    _check_researcher(user)
    open_ones = Assignment.objects.filter(benchmark=benchmark, pk__in=list(assignment_ids), status=Assignment.Status.OPEN)
    Item.objects.filter(pk__in=[i for i in open_ones.values_list("item_id", flat=True) if i]).update(assignee=None)
    return open_ones.delete()[0]


def remaining_quota(task: Task) -> int:
    """Seed items a task still needs beyond those written or handed out."""
    assigned = Assignment.objects.filter(task=task, image__isnull=False).count()
    unassigned_seeds = (Item.objects.filter(task=task, seed__isnull=True, is_external=False)
                        .exclude(assignments__image__isnull=False).count())
    return max(0, task.quota - assigned - unassigned_seeds)


@transaction.atomic
def assign_evenly(benchmark: Benchmark, *, tasks, assignees, user) -> dict:
    """Spread each task's remaining quota of seed items over `assignees` as evenly as possible,
    using accepted, uncontaminated images tagged with the task that nobody has for it yet.
    Returns {task slug: {"assigned": n, "per_user": {username: n}, "short": n}}."""
    _check_researcher(user)
    assignees = list(dict.fromkeys(assignees))
    if not assignees:
        raise DomainError("Choose at least one annotator.")
    for person in assignees:
        _check_assignee(benchmark, person)
    tasks = [_resolve_task(benchmark, t) for t in tasks] or list(benchmark.tasks.all())
    load = Counter({p.pk: Assignment.objects.filter(benchmark=benchmark, assignee=p, status=Assignment.Status.OPEN).count()
                    for p in assignees})
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
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if locked.item_id:
            return locked.item
        item = create_item(locked.benchmark, task=locked.task, user=user, assignee=user, images=[locked.image_id])
        locked.item = item
        locked.save(update_fields=["item"])
    assignment.item = item
    return item


# ---- imports of external benchmarks -----------------------------------------------------------------

def import_external_items(benchmark: Benchmark, specs: list[dict], *, user) -> tuple[list[Item], dict[int, list[str]]]:
    """Bulk-create items of an external benchmark: status accepted (reviewed by their publisher),
    version 1 with one 'imported' history row each. A spec is {"task": Task, "seed": Item or None,
    "external_id": str, **editable fields}. Specs that break a shape rule are left out; their
    problems come back keyed by the spec's index. Callers skip external ids already imported."""
    if user_role(user) != RESEARCHER:
        raise NotAllowed("Importing a benchmark needs the researcher role.")
    items, states, problems = [], [], {}
    for n, spec in enumerate(specs):
        spec = dict(spec)
        item = Item(benchmark=benchmark, task=spec.pop("task"), seed=spec.pop("seed", None), is_external=True,
                    external_id=spec.pop("external_id"), status=ACCEPTED)
        state = _merge(item, {**item_snapshot_defaults(), "task": item.task_id}, spec)
        found = _shape_problems(item, state)
        if found:
            problems[n] = found
            continue
        for name in SCALAR_FIELDS:
            setattr(item, name, state[name])
        items.append(item)
        states.append({**state, "status": ACCEPTED})
    with transaction.atomic():
        Item.objects.bulk_create(items)
        ItemImage.objects.bulk_create([ItemImage(item=item, image_id=image_id, order=n)
                                       for item, state in zip(items, states) for n, image_id in enumerate(state["images"])])
        Criterion.objects.bulk_create([Criterion(item=item, order=n, kind=c["kind"], text=c["text"])
                                       for item, state in zip(items, states) for n, c in enumerate(state["criteria"], 1)])
        ItemRevision.objects.bulk_create([ItemRevision(item=item, version=1, snapshot=state, action=ItemRevision.Action.IMPORTED,
                                                       changed_by=user) for item, state in zip(items, states)])
    return items, problems


# ---- AlignMMBench import (tracked, resumable job) -----------------------------------------------------

ALIGNMMBENCH_JOB = "import_alignmmbench"


def import_alignmmbench(benchmark: Benchmark, path, user):
    """Import an AlignMMBench metadata.jsonl from a server path as a job, now (management command);
    returns the finished job. Re-running adds nothing already imported (matched by question_id)."""
    from jobs import services as jobs

    return jobs.run_now(jobs.create_job(ALIGNMMBENCH_JOB, user=user, benchmark=benchmark, params={"path": str(path)}))


def start_alignmmbench_import(benchmark: Benchmark, *, user, file):
    """Stage an uploaded metadata.jsonl and import it in the background."""
    from jobs import services as jobs
    from jobs.staging import stage_upload

    _check_researcher(user)
    staged = stage_upload(file, ".jsonl")
    return jobs.start_job(ALIGNMMBENCH_JOB, user=user, benchmark=benchmark,
                          params={"staged": staged, "filename": getattr(file, "name", "metadata.jsonl")})


# ---- demo data -----------------------------------------------------------------------------------------

def seed_demo_work(benchmark: Benchmark, *, per_annotator: int = 3) -> int:
    """A few image assignments for each annotator of a demo benchmark, handed out by one of its
    researchers, when accepted task-tagged images exist. Safe to re-run; returns how many were added."""
    researcher = benchmark.members.filter(groups__name=RESEARCHER).order_by("pk").first()
    if researcher is None:
        return 0
    annotators = list(benchmark.members.filter(groups__name=ANNOTATOR).order_by("username"))
    taken = set(Assignment.objects.filter(benchmark=benchmark, image__isnull=False).values_list("task_id", "image_id"))
    pool = [(image, task) for image in _usable_images(benchmark).prefetch_related("tasks").order_by("id")
            for task in image.tasks.all() if (task.pk, image.pk) not in taken]
    have = Counter(dict(Assignment.objects.filter(benchmark=benchmark).values_list("assignee").annotate(n=Count("id")).order_by()))
    created = 0
    for person in annotators:
        while have[person.pk] < per_annotator and pool:
            image, task = pool.pop(0)
            created += assign_images(benchmark, task=task, image_ids=[image.pk], assignee=person, user=researcher)["assigned"]
            have[person.pk] += 1
    return created

"""Pages: item list, item editor (htmx saves with optimistic locking), history, queue,
assignment and import pages. Thin: parse, call a service or selector, render."""

import hashlib
from functools import partial
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.utils.translation import get_language, gettext
from django.views.decorators.http import require_POST

from benchforge import permissions
from benchforge.errors import Conflict, DomainError, NotAllowed, StaleVersion
from benchforge.i18n import PerLanguage
from benchforge.inputs import BadInput, accepts_uploads, optional_id, parse_id
from benchforge.navigation import SETUP, changes_nothing_kept, changes_work_only, kept_for_benchmark
from benchforge.paging import keyset_page
from benchforge.roles import ANNOTATOR, RESEARCHER, role_required
from curation.models import Image
from curation.selectors import choices_of, get_benchmark_for, labels_of, task_choices, task_labels, task_rows, tasks_of
from jobs.selectors import jobs_of

from . import services
from .contract import FIELD_LABELS, field_as_text, item_snapshot
from .forms import (
    AlignMMBenchImportForm,
    AssignEvenlyForm,
    AssignImagesForm,
    AssignItemsForm,
    NewItemForm,
    OpenAssignmentsForm,
    editor_changes,
)
from .models import CHOICE_LETTERS, Assignment, Criterion, Item
from .selectors import (
    ITEM_FILTERS,
    assignable_images,
    benchmark_people,
    editor_tasks,
    get_item_for,
    item_to_change,
    items_of,
    latest_assignment_for_item,
    open_assignments_of,
    picker_images,
    queue_for,
    queue_rows,
    revisions_of,
    revisions_with_changes,
    withheld_from,
)
from .workflow import ANSWERED, STATUS_CHOICES, STATUS_LABELS

ITEMS_PAGE_SIZE = 50
ITEM_LIST_COLUMNS = (
    "id", "seed_id", "kind", "status", "question", "version", "updated_at", "task_id", "author__username", "assignee__username",
)  # fmt: skip
QUEUE_PAGE_SIZE = 25


def _filters(request, names) -> dict:
    return {name: request.GET.get(name, "").strip() for name in names}


@role_required(ANNOTATOR)
def item_list(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    filters = _filters(request, ITEM_FILTERS)
    # Only the columns the list shows, as plain rows: no long texts besides the question, no model
    # instances (at 50 rows a page, building them cost more than the query); tasks' labels are kept.
    found = items_of(benchmark, **filters, viewer=request.user)
    tasks = task_rows(benchmark)  # one cache read for the task select and the rows' labels
    # A benchmark may hold a million items: pages by keyset and a capped count (benchforge.paging).
    # The count is kept until something changes in the benchmark; a search's depends on the role (withheld texts).
    filtered = hashlib.sha256(urlencode(sorted(filters.items())).encode()).hexdigest()[:32]  # a short cache key
    count_key = f"items:{permissions.is_researcher(request.user)}:{filtered}"
    page = keyset_page(
        request,
        found.values(*ITEM_LIST_COLUMNS),
        ("-id",),
        ITEMS_PAGE_SIZE,
        count_queryset=found,
        keep_count=partial(kept_for_benchmark, benchmark.pk, count_key),
    )
    return render(
        request,
        "annotation/item_list.html",
        {
            "benchmark": benchmark,
            "page": page,
            "edit_url": reverse("item-list", args=[benchmark.slug]),  # + "<id>/": no URL reversing per row
            "filters": filters,
            "task_groups": choices_of(tasks),
            "task_labels": labels_of(tasks),
            "statuses": STATUS_CHOICES,
            "kinds": Item.Kind.choices,
            # Three selects list them (names only), kept until its setup (members) changes.
            "people": kept_for_benchmark(
                benchmark.pk, "people", lambda: list(benchmark_people(benchmark).values("username")), on=SETUP
            ),
        },
    )


@role_required(ANNOTATOR)
def item_new(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = NewItemForm(request.POST or None, benchmark=benchmark, initial={"task": request.GET.get("task")})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        item = services.create_item(benchmark, task=data["task"], kind=data["kind"], images=data["images"], user=request.user)
        messages.success(request, gettext("Item #%(id)s created.") % {"id": item.pk})
        return redirect("item-edit", slug=benchmark.slug, item_id=item.pk)
    return render(request, "annotation/item_new.html", {"benchmark": benchmark, "form": form})


def _next_url(item) -> str:
    """Next in the queue after this item's assignment; resolved on click (a POST, which may start
    it), not on every editor view."""
    return reverse("queue-next", args=[item.benchmark.slug])


def _plain(choices) -> list[tuple[str, str]]:
    return [(value, str(label)) for value, label in choices]


# The editor's three choice lists with their labels translated, once per language.
_EDITOR_CHOICES = PerLanguage(
    lambda: {
        "kinds": _plain(Item.Kind.choices),
        "question_types": _plain(Item.QuestionType.choices),
        "criterion_kinds": _plain(Criterion.Kind.choices),
    }
)


@role_required(ANNOTATOR)
def item_edit(request, slug, item_id):
    item = get_item_for(request.user, slug, item_id)
    source = item.seed if item.seed_id else item
    refusal = permissions.item_edit_refusal(request.user, item, membership_checked=True)
    problems = services.readiness_problems(item)
    withheld = withheld_from(request.user, [item]).get(item.pk, frozenset())
    criteria = [] if "criteria" in withheld else list(source.criteria.all())
    if withheld:
        # Read-only (a frozen release's items are released): blank what the release keeps private, on this page only.
        item.answer = "" if "answer" in withheld else item.answer
        if "reference_answer" in withheld:
            item.reference_answer = source.reference_answer = ""
    # The same for every item of the benchmark: kept until its setup changes (a task edited).
    tasks = kept_for_benchmark(
        item.benchmark_id, f"editor-tasks:{get_language()}", lambda: editor_tasks(item.benchmark), on=SETUP
    )
    current_task = next(t for t in tasks["rows"] if t["id"] == item.task_id)
    return render(
        request,
        "annotation/item_edit.html",
        {
            "benchmark": item.benchmark,
            "item": item,
            "source": source,
            "images": [link.image for link in source.item_images.all()],
            "criteria": criteria,
            "withheld": sorted(withheld),
            "task_groups": tasks["groups"],
            "guidelines_json": mark_safe(tasks["guidelines_json"]),  # noqa: S308 - json_script's, escaped
            "current_task": current_task,
            **_EDITOR_CHOICES.get(),
            "letters": CHOICE_LETTERS,
            "options": list(zip(CHOICE_LETTERS, item.choices)),
            "exchanges": [item.history[i : i + 2] for i in range(0, len(item.history), 2)],
            "refusal": refusal,
            "autosave": refusal is None and item.is_work_in_progress,
            "problems": problems,
            "next_url": _next_url(item),
            "can_withdraw": item.status == ANSWERED and permissions.item_withdraw_refusal(request.user, item) is None,
        },
    )


def _status_fragment(request, item, *, status=200, error: DomainError | None = None, saved: bool = True):
    return render(
        request,
        "annotation/_save_status.html",
        {
            "item": item,
            "error": error,
            "saved": saved,
            "problems": services.readiness_problems(item),
            "now": timezone.now(),
        },
        status=status,
    )


def _conflict(request, item: Item, changes: dict, error: StaleVersion):
    """409: the stored version beside the user's unsaved one, field by field (the form keeps theirs)."""
    current = get_item_for(request.user, item.benchmark.slug, item.pk)
    theirs = item_snapshot(current)
    task_ids = dict(current.benchmark.tasks.values_list("slug", "pk"))
    mine = {**theirs, **changes, "task": task_ids.get(changes.get("task"), theirs["task"])}
    task_names = dict(current.benchmark.tasks.values_list("pk", "name"))
    rows = [
        {
            "label": label,
            "theirs": field_as_text(field, theirs.get(field), task_names),
            "mine": field_as_text(field, mine.get(field), task_names),
        }
        for field, label in FIELD_LABELS.items()
        if field != "status" and theirs.get(field) != mine.get(field)
    ]
    response = render(request, "annotation/_conflict.html", {"item": current, "error": error, "rows": rows}, status=409)
    # Shown above the editor, not in the sticky toolbar, so it never hides the fields.
    response["HX-Retarget"] = "#conflict-area"
    return response


def _posted_version(request) -> int:
    try:
        return parse_id(request.POST.get("version", ""), "version")
    except BadInput:
        raise DomainError(gettext("The form does not say which version it was loaded from; reload the page.")) from None


def _save_and(request, slug, item_id, then=None):
    """Apply the editor form to the version it was loaded from, then run `then(item)`.
    Returns (item, None) or (None, an error response that keeps the user's text in the form)."""
    item = get_item_for(request.user, slug, item_id)
    changes = {}
    try:
        changes = editor_changes(request.POST, item)
        saved = services.update_item(item, changes, expected_version=_posted_version(request), user=request.user)
        return (then(saved) if then else saved), None
    except StaleVersion as exc:
        return None, _conflict(request, item, changes, exc)
    except DomainError as exc:
        return None, _status_fragment(
            request, get_item_for(request.user, slug, item_id), status=exc.status, error=exc, saved=False
        )


@role_required(ANNOTATOR)
@require_POST
@changes_nothing_kept  # an edit, never a status: submitting is item_submit
def item_save(request, slug, item_id):
    item, error = _save_and(request, slug, item_id)
    return error or _status_fragment(request, item)


@role_required(ANNOTATOR)
@require_POST
@changes_work_only
def item_submit(request, slug, item_id):
    item, error = _save_and(
        request, slug, item_id, then=lambda saved: services.submit_item(saved, user=request.user, expected_version=saved.version)
    )
    if error:
        return error
    messages.success(request, gettext("Item #%(id)s submitted for review.") % {"id": item.pk})
    response = HttpResponse(status=204)
    response["HX-Redirect"] = _start_next(request, item)
    return response


def _cannot_start(assignment, exc: DomainError) -> str:
    if isinstance(exc, Conflict | NotAllowed):  # moved or withdrawn meanwhile: nothing for anyone to fix
        return exc.message
    return gettext("Assignment #%(id)s cannot be started: %(problem)s Ask a researcher to cancel it.") % {
        "id": assignment.pk,
        "problem": exc.message,
    }


def _start_next(request, item) -> str:
    """Where to go after submitting: the next assignment, started now (this is a POST), or the
    queue page when nothing is left or the next one cannot be started."""
    after = latest_assignment_for_item(request.user, item.pk)
    following = services.next_assignment(request.user, item.benchmark, after=after)
    if following is None:
        messages.success(request, gettext("Your queue is empty: nothing left to do here."))
        return reverse("queue", args=[item.benchmark.slug])
    try:
        started = services.start_assignment(following, user=request.user)
    except DomainError as exc:
        messages.error(request, _cannot_start(following, exc))
        return reverse("queue", args=[item.benchmark.slug])
    return reverse("item-edit", args=[item.benchmark.slug, started.pk])


@role_required(ANNOTATOR)
@require_POST
@changes_work_only
def item_withdraw(request, slug, item_id):
    item = item_to_change(request.user, slug, item_id)
    services.return_to_draft(item, user=request.user, expected_version=_posted_version(request))
    messages.success(request, gettext("Item #%(id)s is a draft again.") % {"id": item.pk})
    return redirect("item-edit", slug=slug, item_id=item.pk)


@role_required(ANNOTATOR)
def item_history(request, slug, item_id):
    item = get_item_for(request.user, slug, item_id)
    page = Paginator(revisions_of(item), 20).get_page(request.GET.get("page"))
    return render(
        request,
        "annotation/item_history.html",
        {
            "benchmark": item.benchmark,
            "item": item,
            "page": page,
            "rows": revisions_with_changes(item, page.object_list, user=request.user),
        },
    )


@role_required(ANNOTATOR)
def image_chip(request, slug):
    """One image for the editor's image list (htmx), after checking it can be used."""
    benchmark = get_benchmark_for(request.user, slug)
    image_id = optional_id(request.GET.get("image_id"))
    image = Image.objects.filter(benchmark=benchmark, pk=image_id).first() if image_id else None
    if image is None:
        # Plain text: the typed value is echoed back, and must never be read as HTML.
        shown = request.GET.get("image_id", "").strip()[:40]
        return HttpResponse(
            gettext("No image #%(id)s in this benchmark: type the number of an accepted image.") % {"id": shown},
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    problems = services.image_refusals(benchmark, [image.pk])
    if problems:
        return HttpResponse(" ".join(problems), status=400, content_type="text/plain; charset=utf-8")
    return render(request, "annotation/_image_chip.html", {"images": [image]})


PICKER_PAGE_SIZE = 24


@role_required(ANNOTATOR)
def image_picker(request, slug):
    """The "Browse images" dialog (htmx): search and filter, 24 thumbnails a page. Lists only
    images an item may use, so whatever is picked passes the save's image check."""
    benchmark = get_benchmark_for(request.user, slug)
    query, task = request.GET.get("q", "")[:100], request.GET.get("task", "")[:100]
    page = Paginator(picker_images(benchmark, query=query, task=task), PICKER_PAGE_SIZE).get_page(request.GET.get("page"))
    template = "annotation/_image_picker_results.html" if request.GET.get("results") else "annotation/_image_picker.html"
    return render(
        request,
        template,
        {
            "benchmark": benchmark,
            "page": page,
            "query": query,
            "task": task,
            "task_groups": task_choices(benchmark),
            "picker_url": reverse("item-image-picker", args=[benchmark.slug]),
        },
    )


# ---- queue -------------------------------------------------------------------------------------------


@role_required(ANNOTATOR)
def queue(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    # Counted without the rows' joins, and capped; paged by keyset (benchforge.paging).
    rows, count_rows = queue_rows(request.user, benchmark), partial(queue_for, request.user, benchmark)
    keep = partial(kept_for_benchmark, benchmark.pk, f"queue:{request.user.pk}")
    page = keyset_page(request, rows, ("created_at", "id"), QUEUE_PAGE_SIZE, count_queryset=count_rows, keep_count=keep)
    # Ready-made strings, each text translated once per page: this page is hit after every item.
    item_work, seed_work = gettext("item #%(id)s (%(status)s)"), gettext("write the seed question for image #%(id)s")
    open_text, start_text = gettext("open"), gettext("start")
    statuses = {value: str(label).lower() for value, label in STATUS_LABELS.items()}
    labels = task_labels(benchmark) if page.object_list else {}
    for row in page.object_list:
        if row["item_id"]:
            row["work"] = item_work % {"id": row["item_id"], "status": statuses.get(row["item__status"], "")}
        else:
            row["work"] = seed_work % {"id": row["image_id"]}
        row["action"] = open_text if row["item_id"] else start_text
        row["assigned_on"] = timezone.localtime(row["created_at"]).date().isoformat()
        row["task_label"] = labels.get(row["task_id"], "")
    return render(
        request,
        "annotation/queue.html",
        {
            "benchmark": benchmark,
            "page": page,
            "open_url": reverse("queue", args=[benchmark.slug]),
        },
    )


def _after(request):
    """The assignment of `?item=<id>` (or a posted `item`): "next" means after it in queue order."""
    item_id = optional_id(request.POST.get("item") or request.GET.get("item"))
    return latest_assignment_for_item(request.user, item_id) if item_id else None


@role_required(ANNOTATOR)
@changes_work_only
def queue_next(request, slug):
    """The next piece of work (after the assignment of `?item=<id>`, if given). A GET never creates
    anything (a link crawler or a browser prefetch would make drafts): it opens work already
    started, or shows a page whose button POSTs here to start it."""
    benchmark = get_benchmark_for(request.user, slug)
    assignment = services.next_assignment(request.user, benchmark, after=_after(request))
    if assignment is None:
        messages.success(request, gettext("Your queue is empty: nothing left to do here."))
        return redirect("queue", slug=slug)
    return _open_or_offer(request, benchmark, assignment)


@role_required(ANNOTATOR)
@changes_work_only
def queue_open(request, slug, assignment_id):
    benchmark = get_benchmark_for(request.user, slug)
    assignment = get_object_or_404(Assignment, pk=assignment_id, benchmark=benchmark, assignee=request.user)
    return _open_or_offer(request, benchmark, assignment)


def _open_or_offer(request, benchmark, assignment):
    if request.method == "POST" or assignment.item_id:
        return _open(request, benchmark, assignment)
    return render(
        request,
        "annotation/queue_start.html",
        {
            "benchmark": benchmark,
            "assignment": assignment,
            "start_url": reverse("queue-open", args=[benchmark.slug, assignment.pk]),
        },
    )


def _open(request, benchmark, assignment):
    try:
        item = services.start_assignment(assignment, user=request.user)
    except DomainError as exc:
        messages.error(request, _cannot_start(assignment, exc))
        return redirect("queue", slug=benchmark.slug)
    return redirect("item-edit", slug=benchmark.slug, item_id=item.pk)


# ---- researchers: assignment and import ------------------------------------------------------------------


@role_required(RESEARCHER)
def assign(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    tasks = list(tasks_of(benchmark))
    task = next((t for t in tasks if t.slug == request.GET.get("task")), tasks[0] if tasks else None)
    if request.method == "POST":
        _assign_post(request, benchmark)
        return redirect(request.get_full_path())
    images = Paginator(assignable_images(benchmark, task) if task else Image.objects.none(), 48).get_page(request.GET.get("page"))
    filters = _filters(request, ("assignee",))
    open_page = Paginator(open_assignments_of(benchmark, **filters), 50).get_page(request.GET.get("open_page"))
    remaining = {t.pk: services.remaining_quota(t) for t in tasks}
    return render(
        request,
        "annotation/assign.html",
        {
            "benchmark": benchmark,
            "tasks": [(t, remaining[t.pk]) for t in tasks],
            "task": task,
            "images": images,
            "people": benchmark_people(benchmark),
            "open_page": open_page,
            "filters": filters,
        },
    )


def _assign_post(request, benchmark) -> None:
    action = request.POST.get("form")
    form_class = {
        "images": AssignImagesForm,
        "items": AssignItemsForm,
        "evenly": AssignEvenlyForm,
        "open": OpenAssignmentsForm,
    }.get(action)
    if form_class is None:
        raise DomainError(gettext("Unknown assignment action."))
    form = form_class(request.POST, benchmark=benchmark)
    if not form.is_valid():
        messages.error(
            request,
            gettext("Nothing assigned: %(problems)s")
            % {"problems": " ".join(e for errors in form.errors.values() for e in errors)},
        )
        return
    data = form.cleaned_data
    if action == "images":
        result = services.assign_images(
            benchmark, task=data["task"], image_ids=data["images"], assignee=data["assignee"], user=request.user
        )
        said = {"n": result["assigned"], "who": data["assignee"].username, "skipped": len(result["skipped"])}
        if result["skipped"]:
            done = gettext("%(n)s image(s) assigned to %(who)s (%(skipped)s already assigned for this task, skipped).")
        else:
            done = gettext("%(n)s image(s) assigned to %(who)s.")
        messages.success(request, done % said)
    elif action == "items":
        result = services.assign_items(benchmark, item_ids=data["items"], assignee=data["assignee"], user=request.user)
        messages.success(
            request,
            gettext("%(n)s item(s) assigned to %(who)s.")
            % {"n": result["assigned"] + result["moved"], "who": data["assignee"].username},
        )
    elif action == "evenly":
        report = services.assign_evenly(benchmark, tasks=data["tasks"], assignees=list(data["assignees"]), user=request.user)
        total = sum(r["assigned"] for r in report.values())
        labels = {task.slug: task.label for task in tasks_of(benchmark)}
        short = [
            gettext("%(task)s, %(n)s short") % {"task": labels.get(slug, slug), "n": r["short"]}
            for slug, r in report.items()
            if r["short"]
        ]
        done = gettext("%(n)s image(s) assigned evenly.") % {"n": total}
        if short:
            done += " " + gettext("Not enough accepted images tagged for: %(tasks)s.") % {"tasks": "; ".join(short)}
        messages.success(request, done)
    elif data["action"] == "reassign":
        n = services.reassign(benchmark, assignment_ids=data["assignments"], assignee=data["assignee"], user=request.user)
        messages.success(request, gettext("%(n)s assignment(s) moved to %(who)s.") % {"n": n, "who": data["assignee"].username})
    else:
        n = services.cancel_assignments(benchmark, assignment_ids=data["assignments"], user=request.user)
        messages.success(request, gettext("%(n)s assignment(s) cancelled.") % {"n": n})


@accepts_uploads("data_file")
@role_required(RESEARCHER)
def import_page(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = AlignMMBenchImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        job = services.start_alignmmbench_import(benchmark, user=request.user, file=form.cleaned_data["file"])
        messages.success(request, gettext("Import job #%(id)s started.") % {"id": job.pk})
        return redirect("item-import", slug=slug)
    jobs = jobs_of(benchmark, kind=services.ALIGNMMBENCH_JOB)[:10]
    return render(request, "annotation/import.html", {"benchmark": benchmark, "form": form, "jobs": jobs})

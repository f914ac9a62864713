"""Reads for the annotation app: item payloads, lists, queues, history diffs, progress."""

import datetime
import difflib
import re

from django.db import connection
from django.db.models import Count, F, Prefetch, Q
from django.db.models.functions import TruncDate
from django.http import Http404
from django.utils import timezone
from django.utils.html import json_script

from benchforge import permissions
from benchforge.compiled import Compiled, as_loaded, as_prefetched
from benchforge.inputs import MAX_ID, is_digits
from curation.models import Benchmark, Image, Task, category_name, english_interface, task_name
from curation.selectors import benchmarks_for, get_benchmark_for

from .contract import FIELD_LABELS, field_as_text, item_payload
from .models import Assignment, Criterion, Item, ItemImage, ItemRevision

ITEM_FILTERS = ("task", "status", "author", "assignee", "kind", "q")


def item_counts_by_task_and_status(benchmark) -> dict[int, dict[str, int]]:
    """{task_id: {status: count}} in one grouped query. COUNT(*), not COUNT(id): Postgres then
    answers from the (benchmark, task, status) index alone instead of reading every item row."""
    counts: dict[int, dict[str, int]] = {}
    rows = Item.objects.filter(benchmark=benchmark).values("task_id", "status").annotate(n=Count("*")).order_by()
    for row in rows:
        counts.setdefault(row["task_id"], {})[row["status"]] = row["n"]
    return counts


# ---- payload -------------------------------------------------------------------------------------------

_IMAGES = Prefetch("item_images", queryset=ItemImage.objects.select_related("image"))


def with_payload_data(queryset, *, benchmark_known: bool = False):
    """Everything item_payload reads, in a fixed number of queries whatever the page size.
    `benchmark_known`: the caller sets item.benchmark itself (one join less)."""
    related = ["task__category__parent", "author", "assignee", "seed"] + ([] if benchmark_known else ["benchmark"])
    return queryset.select_related(*related).prefetch_related(
        _IMAGES,
        "criteria",
        Prefetch("seed__item_images", queryset=ItemImage.objects.select_related("image")),
        "seed__criteria",
    )


def editors_of(benchmark: Benchmark, item_ids=None) -> dict[int, set[int]]:
    """Who, besides its author, edited each item's content (a researcher correcting it, say): the
    edits make it their work too, so they never review it. {item id: {user id, ...}}."""
    rows = ItemRevision.objects.filter(item__benchmark=benchmark, action=ItemRevision.Action.EDITED, changed_by__isnull=False)
    rows = rows.exclude(changed_by=F("item__author"))
    if item_ids is not None:
        rows = rows.filter(item_id__in=list(item_ids))
    found: dict[int, set[int]] = {}
    for item_id, user_id in rows.values_list("item_id", "changed_by_id").distinct():
        found.setdefault(item_id, set()).add(user_id)
    return found


# ---- what frozen releases withhold ---------------------------------------------------------------

# What a field a release withholds blanks in an item payload.
_BLANK = {"answer": "", "reference_answer": "", "criteria": []}
# A rewrite reads these from its seed: what a release withholds of the seed is hidden on the rewrite too.
_SHARED_WITH_SEED = {"reference_answer", "criteria"}


def withheld_from(user, items) -> dict[int, frozenset[str]]:
    """{item id: the fields to hide from `user`} for the items (loaded with their seeds) whose
    answer key, reference answer or criteria a frozen release keeps private and that are not the
    user's work (benchforge.permissions.sees_withheld). Items not named show in full."""
    if permissions.is_researcher(user):
        return {}

    def hidden_of(item) -> set[str]:
        hidden = set(item.withheld or ())
        if item.seed_id:
            hidden |= set(item.seed.withheld or ()) & _SHARED_WITH_SEED
        return hidden

    concerned = [item for item in items if hidden_of(item)]
    if not concerned:
        return {}
    ids = {item.pk for item in concerned} | {item.seed_id for item in concerned if item.seed_id}
    edited = set(
        ItemRevision.objects.filter(item_id__in=ids, changed_by=user, action=ItemRevision.Action.EDITED).values_list(
            "item_id", flat=True
        )
    )
    # Reviews reach items through the review app's relation: a reviewer assigned to an item reads all of it.
    reviewing = set(Item.objects.filter(pk__in=ids, reviews__reviewer=user).values_list("pk", flat=True))
    out = {}
    for item in concerned:
        people = [item, item.seed] if item.seed_id else [item]
        if not any(permissions.sees_withheld(user, i, edited=i.pk in edited, reviewing=i.pk in reviewing) for i in people):
            out[item.pk] = frozenset(hidden_of(item))
    return out


def redacted(payload: dict, hidden) -> dict:
    """An item payload without the `hidden` fields; "withheld" names them (empty: the whole item)."""
    out = {**payload, **{name: _BLANK[name] for name in hidden if name in _BLANK}}
    out["withheld"] = sorted(hidden)
    return out


def payloads_for(user, items) -> list[dict]:
    """The items' payloads as `user` may read them: what a frozen release withholds is left out
    unless the item is the user's work. Every API or page that shows items to people asks this."""
    items = list(items)
    hidden = withheld_from(user, items)
    return [redacted(item_payload(item), hidden.get(item.pk, ())) for item in items]


def redact_revisions(user, item, revisions) -> list:
    """History rows as `user` may read them: snapshots without what a frozen release withholds,
    and the reviewer of a status change a review decided hidden unless every review round the
    item went through is closed and reveals its reviewers (researchers see everything)."""
    revisions = list(revisions)
    if permissions.is_researcher(user):
        return revisions
    hidden = withheld_from(user, [item]).get(item.pk, frozenset())
    anonymous_reviews = item.round_entries.filter(~Q(round__status="closed") | Q(round__reveal_reviewers=False)).exists()
    for revision in revisions:
        if hidden and isinstance(revision.snapshot, dict):
            revision.snapshot = {**revision.snapshot, **{n: _BLANK[n] for n in hidden if n in revision.snapshot}}
        if anonymous_reviews and revision.action == ItemRevision.Action.REVIEWED and revision.changed_by_id != user.pk:
            revision.changed_by = None
    return revisions


def last_revision(item: Item) -> ItemRevision | None:
    return ItemRevision.objects.filter(item=item).select_related("changed_by").order_by("-version").first()


# ---- lists and lookups ------------------------------------------------------------------------------


CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def search_items(items, text: str, *, withheld_too: bool = True):
    """Items whose question, reference answer or criteria (a rewrite's: its seed's) match `text`.
    On Postgres, full-text search (web-search syntax: words, "phrases", -excluded, or); text
    with Chinese, Japanese or Korean characters, which Postgres does not split into words, also
    matches as a substring. On SQLite (the embedded runtime), every word as a substring.
    `withheld_too` False: reference answers and criteria that a frozen release withholds are not
    searched (a search must not answer questions about text the searcher may not read)."""
    text = text.strip()[:200]
    if not text:
        return items
    if connection.vendor == "postgresql":
        from django.contrib.postgres.search import SearchQuery, SearchVector

        query = SearchQuery(text, search_type="websearch", config="english")
        criteria = Criterion.objects.annotate(found=SearchVector("text", config="english")).filter(found=query)
        vector = SearchVector("question", "reference_answer", "seed__reference_answer", config="english")
        match = Q(pk__in=items.annotate(found=vector).filter(found=query).values("pk"))
        match |= Q(pk__in=criteria.values("item_id")) | Q(seed_id__in=criteria.values("item_id"))
        if not withheld_too:
            question = SearchVector("question", config="english")
            match = (match & _nothing_withheld()) | Q(pk__in=items.annotate(found=question).filter(found=query).values("pk"))
        if CJK.search(text):
            match |= _substring_match(text, withheld_too)
        return items.filter(match)
    for word in text.split():
        items = items.filter(_substring_match(word, withheld_too))
    return items


def _nothing_withheld() -> Q:
    """Items (and their seeds) of which no frozen release withholds anything."""
    return Q(withheld=[]) & (Q(seed__isnull=True) | Q(seed__withheld=[]))


def _substring_match(text: str, withheld_too: bool = True) -> Q:
    criteria = Criterion.objects.filter(text__icontains=text).values("item_id")
    private = (
        Q(reference_answer__icontains=text)
        | Q(seed__reference_answer__icontains=text)
        | Q(pk__in=criteria)
        | Q(seed_id__in=criteria)
    )
    return Q(question__icontains=text) | (private if withheld_too else private & _nothing_withheld())


def items_of(
    benchmark: Benchmark,
    *,
    task: str = "",
    status: str = "",
    author: str = "",
    assignee: str = "",
    kind: str = "",
    q: str = "",
    viewer=None,
):
    """A benchmark's items, newest first, filtered by task slug, status, author/assignee username,
    kind and words in their texts (search_items). `viewer`: the person searching; unless a
    researcher, the words are not looked for in what a frozen release withholds."""
    qs = Item.objects.filter(benchmark=benchmark).select_related("task__category__parent", "author", "assignee")
    if q:
        qs = search_items(qs, q, withheld_too=viewer is None or permissions.is_researcher(viewer))
    if task:
        qs = qs.filter(task__slug=task)
    if status:
        qs = qs.filter(status=status)
    if author:
        qs = qs.filter(author__username=author)
    if assignee:
        qs = qs.filter(assignee__username=assignee)
    if kind:
        qs = qs.filter(kind=kind)
    return qs.order_by("-id")


def _item(shape: str, *, benchmark_id: int, item_id: int):
    """One item of the benchmark with its author's and assignee's names (a rewrite's seed is in its benchmark too)."""
    return Item.objects.filter(benchmark_id=benchmark_id, pk=item_id).annotate(
        author_username=F("author__username"), assignee_username=F("assignee__username")
    )


def _item_images(shape: str, *, item_id: int):
    """An item's images in its order, each with its link's id and order."""
    links = Image.objects.filter(item_links__item_id=item_id)
    return links.annotate(link_id=F("item_links__id"), link_order=F("item_links__order")).order_by("link_order", "link_id")


# The editor opens an item on every step of an annotator's day: its queries are compiled once.
_ITEM = Compiled(_item, benchmark_id=-7_301_422_019, item_id=-7_301_422_020)
_ITEM_IMAGES = Compiled(_item_images, item_id=-7_301_422_021)
_ITEM_CRITERIA = Compiled(lambda shape, *, item_id: Criterion.objects.filter(item_id=item_id), item_id=-7_301_422_022)


def _loaded_item(benchmark_id: int, item_id: int) -> Item | None:
    """The item as `select_related("author", "assignee").prefetch_related(item_images + image, criteria)`
    would leave it, from the compiled queries (the people are read with their names only)."""
    item = next(iter(_ITEM.rows("item", benchmark_id=benchmark_id, item_id=item_id)), None)
    if item is None:
        return None
    user_model = Item._meta.get_field("author").related_model
    for relation in ("author", "assignee"):
        user_id = getattr(item, f"{relation}_id")
        person = user_model.from_db(connection.alias, ["id", "username"], [user_id, getattr(item, f"{relation}_username")])
        as_loaded(item, relation, person if user_id is not None else None)
    links = []
    for image in _ITEM_IMAGES.rows("links", item_id=item.pk):
        link = ItemImage.from_db(
            connection.alias, ["id", "item_id", "image_id", "order"], [image.link_id, item.pk, image.pk, image.link_order]
        )
        as_loaded(link, "image", image)
        as_loaded(link, "item", item)
        links.append(link)
    as_prefetched(item, "item_images", links)
    as_prefetched(item, "criteria", _ITEM_CRITERIA.rows("criteria", item_id=item.pk))
    return item


def _item_id(item_id) -> int:
    if not is_digits(str(item_id)) or not 1 <= int(item_id) <= MAX_ID:
        raise Http404("No such item in this benchmark.")  # the compiled query takes the id as it comes
    return int(item_id)


def item_to_change(user, slug: str, item_id) -> Item:
    """An item of a benchmark the user belongs to (404 otherwise), its row only: for a view that hands
    it to a service that locks and reads it again (a submit, a withdraw), so its images and criteria
    are not read twice."""
    benchmark = get_benchmark_for(user, slug)
    item = next(iter(_ITEM.rows("item", benchmark_id=benchmark.pk, item_id=_item_id(item_id))), None)
    if item is None:
        raise Http404("No such item in this benchmark.")
    item.benchmark = benchmark
    return item


def get_item_for(user, slug: str, item_id: int, *, payload: bool = False) -> Item:
    """An item of a benchmark the user belongs to; 404 otherwise (no hint it exists elsewhere).
    Loaded with its author and assignee, its images and criteria (and its seed's, for a rewrite);
    `payload`: also everything item_payload reads. The default stays lean: the editor is the busiest page."""
    benchmark, item_id = get_benchmark_for(user, slug), _item_id(item_id)
    if payload:
        item = with_payload_data(Item.objects.filter(benchmark=benchmark), benchmark_known=True).filter(pk=item_id).first()
    else:
        item = _loaded_item(benchmark.pk, item_id)
    if item is None:
        raise Http404("No such item in this benchmark.")
    item.benchmark = benchmark
    if item.seed_id and not payload:
        seed = _loaded_item(benchmark.pk, item.seed_id)
        if seed is not None:  # (a seed is always in its rewrite's benchmark; else item.seed loads it as before)
            as_loaded(item, "seed", seed)
    return item


GUIDELINE_FIELDS = ("name", "path", "description", "guideline", "judge_rules", "description_en", "guideline_en", "judge_rules_en")


def task_guidelines(benchmark: Benchmark) -> list[dict]:
    """Tasks as plain rows for the editor (select + guideline panel), named as this interface
    names them; the *_en texts are set only where the English interface shows them beside the
    task's own. No model building."""
    rows = list(
        Task.objects.filter(benchmark=benchmark).values(
            *("id", "slug", "name", "name_en", "description", "guideline", "judge_rules", "description_en", "guideline_en"),
            *("judge_rules_en", "category__name", "category__name_en", "category__parent__name", "category__parent__name_en"),
        )
    )
    english = english_interface()
    for row in rows:
        row["name"] = task_name(row["name"], row.pop("name_en"))
        category = category_name(row.pop("category__name"), row.pop("category__name_en"))
        parent = category_name(row.pop("category__parent__name") or "", row.pop("category__parent__name_en") or "")
        row["path"] = f"{parent} / {category}" if parent else category
        for field in ("description", "guideline", "judge_rules"):
            if not english or row[f"{field}_en"] == row[field]:
                row[f"{field}_en"] = ""
    return rows


def editor_tasks(benchmark: Benchmark) -> dict:
    """What the editor shows of the benchmark's tasks, the same for each of its items (kept per
    benchmark and language): the rows, the select's options grouped by category path, and every
    task's guideline as the page's JSON (switching the task swaps the panel without a request)."""
    rows = task_guidelines(benchmark)
    groups: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        groups.setdefault(row["path"], []).append((row["slug"], row["name"]))
    guidelines = {row["slug"]: {field: row[field] for field in GUIDELINE_FIELDS} for row in rows}
    return {"rows": rows, "groups": list(groups.items()), "guidelines_json": str(json_script(guidelines, "task-guidelines"))}


def benchmark_people(benchmark: Benchmark):
    """Members who can be given work (annotator role or above)."""
    return benchmark.members.filter(groups__name__in=("annotator", "reviewer", "researcher")).distinct().order_by("username")


# ---- queues ------------------------------------------------------------------------------------------


def queue_for(user, benchmark: Benchmark):
    """The user's open assignments in a benchmark, oldest first."""
    return (
        Assignment.objects.filter(assignee=user, benchmark=benchmark, status=Assignment.Status.OPEN)
        .select_related("task", "image", "item")
        .order_by("created_at", "id")
    )


def open_assignments(user, benchmark: Benchmark):
    """The navigation's Author count: the user's open assignments (their queue)."""
    return Assignment.objects.filter(assignee=user, benchmark=benchmark, status=Assignment.Status.OPEN)


def queue_rows(user, benchmark: Benchmark):
    """The queue page's rows: only the columns it shows (the page is hit constantly); the tasks'
    labels come from curation.selectors.task_labels, kept."""
    return (
        queue_for(user, benchmark)
        .select_related(None)
        .values("id", "created_at", "image_id", "item_id", "task_id", "item__status")
    )


def assignments_for(user, *, benchmark: str = "", status: str = ""):
    qs = Assignment.objects.filter(assignee=user, benchmark__in=benchmarks_for(user)).select_related(
        "benchmark", "task", "image", "item"
    )
    if benchmark:
        qs = qs.filter(benchmark__slug=benchmark)
    if status:
        qs = qs.filter(status=status)
    return qs.order_by("created_at", "id")


def latest_assignment_for_item(user, item_id: int) -> Assignment | None:
    """The user's assignment for an item (open or just done): where "next in queue" continues from."""
    return Assignment.objects.filter(item_id=item_id, assignee=user).order_by("-id").first()


def open_assignments_of(benchmark: Benchmark, *, assignee: str = "", task: str = ""):
    qs = Assignment.objects.filter(benchmark=benchmark, status=Assignment.Status.OPEN).select_related(
        "assignee", "task__category__parent", "image", "item"
    )
    if assignee:
        qs = qs.filter(assignee__username=assignee)
    if task:
        qs = qs.filter(task__slug=task)
    return qs.order_by("assignee__username", "created_at", "id")


def assignable_images(benchmark: Benchmark, task: Task):
    """Accepted, uncontaminated images tagged with `task` that nobody has for it yet."""
    from curation.models import Image

    assigned = Assignment.objects.filter(task=task, image__isnull=False).values("image_id")
    written = ItemImage.objects.filter(item__task=task, item__seed__isnull=True).values("image_id")
    return (
        Image.objects.filter(benchmark=benchmark, status=Image.Status.ACCEPTED, contaminated=False, tasks=task)
        .exclude(pk__in=assigned)
        .exclude(pk__in=written)
        .order_by("id")
    )


def picker_images(benchmark: Benchmark, *, query: str = "", task: str = ""):
    """The image picker's choices: exactly the images an item of the benchmark may use (the rule
    services.image_refusals applies on save: accepted in screening, not contaminated), newest
    first, searched by id ("42" or "#42") or file name, optionally those tagged with a task."""
    from curation.models import Image

    images = Image.objects.filter(benchmark=benchmark, status=Image.Status.ACCEPTED, contaminated=False)
    if task:
        images = images.filter(tasks__slug=task)
    query = query.strip()
    if query:
        bare = query.lstrip("#")
        match = Q(original_name__icontains=query)
        if is_digits(bare) and len(bare) < 19:
            match |= Q(pk=int(bare))
        images = images.filter(match)
    return images.distinct().prefetch_related("tasks").order_by("-id")


# ---- history ---------------------------------------------------------------------------------------------

_TOKENS = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)


def text_diff(old: str, new: str) -> list[tuple[str, str]]:
    """Word-level diff as (op, text) segments, op in equal / delete / insert."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    segments = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            segments.append(("equal", "".join(a[i1:i2])))
        else:
            if i2 > i1:
                segments.append(("delete", "".join(a[i1:i2])))
            if j2 > j1:
                segments.append(("insert", "".join(b[j1:j2])))
    return segments


def snapshot_changes(old: dict | None, new: dict, task_names: dict[int, str]) -> list[dict]:
    """Fields that differ between two snapshots, each with a word diff (all fields when old is None)."""
    changes = []
    for field, label in FIELD_LABELS.items():
        before = old.get(field) if old else None
        after = new.get(field)
        if old is not None and before == after:
            continue
        old_text = field_as_text(field, before, task_names) if old else ""
        new_text = field_as_text(field, after, task_names)
        if old is None and not new_text:
            continue
        changes.append({"field": field, "label": label, "old": old_text, "new": new_text, "diff": text_diff(old_text, new_text)})
    return changes


def revisions_with_changes(item: Item, revisions, *, user) -> list[dict]:
    """For a page of revisions (newest first), each with the field changes it made, as `user`
    may read them (redact_revisions)."""
    revisions = redact_revisions(user, item, revisions)
    if not revisions:
        return []
    older = ItemRevision.objects.filter(item=item, version__lt=revisions[-1].version).order_by("-version").first()
    older = redact_revisions(user, item, [older])[0] if older else None
    task_names = dict(Task.objects.filter(benchmark_id=item.benchmark_id).values_list("pk", "name"))
    rows = []
    for revision, previous in zip(revisions, revisions[1:] + [older]):
        rows.append(
            {
                "revision": revision,
                "changes": snapshot_changes(previous.snapshot if previous else None, revision.snapshot, task_names),
            }
        )
    return rows


def revisions_of(item: Item):
    return ItemRevision.objects.filter(item=item).select_related("changed_by").order_by("-version")


# ---- progress (dashboard) ----------------------------------------------------------------------------

PROGRESS_DAYS = 14


def _bars(counts: dict, days: list[datetime.date], peak: int) -> list[dict]:
    # Labels and heights as ready strings: the dashboard renders hundreds of bars.
    bars = []
    for day in days:
        n = counts.get(day, 0)
        bars.append(
            {
                "day": day,
                "n": n,
                "percent": round(100 * n / peak) if peak else 0,
                "label": f"{day:%b} {day.day}: {n}",
                "height": f"{round(100 * n / peak) if peak else 0}%",
            }
        )
    return bars


def submission_progress(benchmark: Benchmark, *, days: int = PROGRESS_DAYS, today: datetime.date | None = None) -> dict:
    """Items submitted per day over the last `days` days, per annotator and per task, plus
    each annotator's open / done assignments. A handful of grouped queries."""
    today = today or timezone.localdate()
    day_list = [today - datetime.timedelta(days=n) for n in range(days - 1, -1, -1)]
    start = timezone.make_aware(datetime.datetime.combine(day_list[0], datetime.time.min))
    submitted = ItemRevision.objects.filter(
        item__benchmark=benchmark, action=ItemRevision.Action.SUBMITTED, changed_at__gte=start
    ).annotate(day=TruncDate("changed_at"))
    by_user: dict = {}
    for row in submitted.values("changed_by__username", "day").annotate(n=Count("item", distinct=True)).order_by():
        by_user.setdefault(row["changed_by__username"] or "(deleted user)", {})[row["day"]] = row["n"]
    by_task: dict = {}
    for row in submitted.values("item__task_id", "day").annotate(n=Count("item", distinct=True)).order_by():
        by_task.setdefault(row["item__task_id"], {})[row["day"]] = row["n"]
    work: dict = {}
    for row in (
        Assignment.objects.filter(benchmark=benchmark).values("assignee__username", "status").annotate(n=Count("id")).order_by()
    ):
        work.setdefault(row["assignee__username"], {})[row["status"]] = row["n"]
    peak = max([n for counts in list(by_user.values()) + list(by_task.values()) for n in counts.values()] or [0])

    people = []
    for username in sorted(set(by_user) | set(work)):
        counts = by_user.get(username, {})
        total = sum(counts.values())
        active = sum(1 for n in counts.values() if n)
        people.append(
            {
                "username": username,
                "bars": _bars(counts, day_list, peak),
                "total": total,
                "per_active_day": round(total / active, 1) if active else 0,
                "open": work.get(username, {}).get("open", 0),
                "done": work.get(username, {}).get("done", 0),
            }
        )
    tasks = []
    for task in Task.objects.filter(benchmark=benchmark).select_related("category__parent"):
        counts = by_task.get(task.pk, {})
        tasks.append({"task": task, "bars": _bars(counts, day_list, peak), "total": sum(counts.values())})
    return {"days": day_list, "people": people, "tasks": tasks, "peak": peak}

"""Reads for the curation app: taxonomy and images."""

from django.contrib.auth import get_user_model
from django.db.models import Count, IntegerField, OuterRef, Prefetch, Q, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from benchforge import permissions
from benchforge.compiled import Compiled
from benchforge.navigation import SETUP, kept_for_benchmark
from benchforge.roles import user_role
from jobs.selectors import jobs_of

from .models import (
    Benchmark,
    Category,
    ContaminationMatch,
    Image,
    KnownHash,
    KnownImageSet,
    Task,
    category_name,
    task_name,
)


def benchmarks_for(user):
    """Benchmarks a user may see: researchers see all; everyone else only those they belong to."""
    return permissions.visible(Benchmark.objects.all(), user)


def benchmarks_by_id(ids) -> dict[int, Benchmark]:
    """{id: benchmark} of those ids (what jobs, which keep a benchmark's id only, show)."""
    return Benchmark.objects.in_bulk(list(ids))


def benchmark_ids_with_slug(slug: str):
    return Benchmark.objects.filter(slug=slug).values_list("pk", flat=True)


def member_benchmark_ids(user):
    """The ids of the benchmarks `user` is a member of."""
    return Benchmark.objects.filter(members=user).values_list("pk", flat=True)


def find_benchmark_for(user, slug: str) -> Benchmark | None:
    return benchmarks_for(user).filter(slug=slug).first()


def _benchmarks_for_role(role: str, *, slug: str, user_id: int):
    stand_in = get_user_model()(pk=user_id)
    stand_in._benchforge_role = role
    return benchmarks_for(stand_in).filter(slug=slug)


# Every page inside a benchmark asks for it first: the query is compiled once per role.
_BENCHMARK_FOR = Compiled(_benchmarks_for_role, slug="\x00slug\x00", user_id=-7_301_422_019)


def get_benchmark_for(user, slug: str) -> Benchmark:
    role = user_role(user)
    found = next(iter(_BENCHMARK_FOR.rows(role, slug=slug, user_id=user.pk)), None) if role else None
    if found is None:
        raise Http404("No such benchmark, or you are not a member of it.")
    return found


def taxonomy_tree(benchmark: Benchmark) -> list[dict]:
    """Top-level categories with nested children and tasks, in two queries."""
    categories = list(Category.objects.filter(benchmark=benchmark))
    tasks = list(Task.objects.filter(benchmark=benchmark).order_by("order", "name"))
    by_category: dict[int, list[Task]] = {}
    for task in tasks:
        by_category.setdefault(task.category_id, []).append(task)
    children: dict[int | None, list[Category]] = {}
    for cat in categories:
        children.setdefault(cat.parent_id, []).append(cat)

    def node(cat):
        return {"category": cat, "tasks": by_category.get(cat.pk, []), "children": [node(c) for c in children.get(cat.pk, [])]}

    return [node(c) for c in children.get(None, [])]


def tasks_of(benchmark: Benchmark):
    """The benchmark's tasks in taxonomy order, with their categories (for Task.label)."""
    return Task.objects.filter(benchmark=benchmark).select_related("category", "category__parent")


def task_choices(benchmark: Benchmark, value: str = "slug") -> list[tuple[str, list[tuple]]]:
    """Choices for a task select, grouped by category in taxonomy order: [(category path,
    [(task slug or pk, task name), ...]), ...] (Django renders the groups as <optgroup>)."""
    return choices_of(task_rows(benchmark), value)


def choices_of(rows: list[dict], value: str = "slug") -> list[tuple[str, list[tuple]]]:
    """task_choices from task_rows already read."""
    groups: dict[str, list[tuple]] = {}
    for task in rows:
        groups.setdefault(task["path"], []).append((task[value], task["name"]))
    return list(groups.items())


def task_labels(benchmark: Benchmark) -> dict[int, str]:
    """{task id: the task as people read it, with its category} (Task.label, without loading tasks)."""
    return labels_of(task_rows(benchmark))


def labels_of(rows: list[dict]) -> dict[int, str]:
    """task_labels from task_rows already read."""
    return {task["pk"]: f"{task['name']} ({task['path']})" for task in rows}


def task_rows(benchmark: Benchmark) -> list[dict]:
    """The benchmark's tasks in taxonomy order as plain rows (pk, slug, name and category path, named
    as this interface names them), kept per language until the benchmark's setup changes:
    every list page's filter bar and rows ask for them."""
    return kept_for_benchmark(benchmark.pk, f"task-rows:{get_language()}", lambda: _task_rows(benchmark), on=SETUP)


def _task_rows(benchmark: Benchmark) -> list[dict]:
    rows = tasks_of(benchmark).values_list(
        "pk",
        "slug",
        "name",
        "name_en",
        "category__name",
        "category__name_en",
        "category__parent__name",
        "category__parent__name_en",
    )
    found = []
    for pk, slug, name, name_en, category, category_en, parent, parent_en in rows:
        path = category_name(category, category_en)
        if parent is not None:
            path = f"{category_name(parent, parent_en)} / {path}"
        found.append({"pk": pk, "slug": slug, "name": task_name(name, name_en), "path": path})
    return found


def images_to_screen(user, benchmark: Benchmark):
    """The navigation's Collect count: images waiting for a screening decision (anyone screens)."""
    return Image.objects.filter(benchmark=benchmark, status=Image.Status.PENDING)


# ---- images ----------------------------------------------------------------------------------

IMAGE_FLAGS = {
    "low_resolution": (_("Low resolution"), {"low_resolution": True}),
    "near_duplicate": (_("Near duplicate (unreviewed)"), {"near_duplicate_of__isnull": False, "near_duplicate_resolved": False}),
    "contaminated": (_("Matches a known set"), {"contaminated": True}),
    "animated": (_("Animated"), {"animated": True}),
    "untagged": (_("No task"), {"tasks__isnull": True}),
}


def images_of(benchmark: Benchmark, *, status: str = "", task: str = "", flag: str = ""):
    """Images for the screening grid / API, filtered by status, task slug and flag."""
    qs = Image.objects.filter(benchmark=benchmark).prefetch_related(Prefetch("tasks", Task.objects.all()))
    if status:
        qs = qs.filter(status=status)
    if task:
        qs = qs.filter(tasks__slug=task)
    if flag in IMAGE_FLAGS:
        qs = qs.filter(**IMAGE_FLAGS[flag][1])
    # No DISTINCT needed: task slugs are unique within a benchmark, so the task join (and the
    # "untagged" left join) yields each image at most once.
    return qs.order_by("id")


def get_image_for(user, slug: str, image_id: int):
    benchmark = get_benchmark_for(user, slug)
    try:
        return Image.objects.select_related("benchmark", "near_duplicate_of").get(benchmark=benchmark, pk=image_id)
    except Image.DoesNotExist:
        raise Http404("No such image in this benchmark.") from None


def task_collection_progress(benchmark: Benchmark) -> list[dict]:
    """Per task: images accepted / pending / rejected against the task's quota."""
    rows = []
    tasks = tasks_of(benchmark).annotate(
        accepted=Count("images", filter=Q(images__status="accepted")),
        pending=Count("images", filter=Q(images__status="pending")),
        rejected=Count("images", filter=Q(images__status="rejected")),
    )
    for task in tasks:
        percent = min(100, round(100 * task.accepted / task.quota)) if task.quota else 0
        rows.append(
            {
                "task": task,
                "accepted": task.accepted,
                "pending": task.pending,
                "rejected": task.rejected,
                "quota": task.quota,
                "percent": percent,
            }
        )
    return rows


def status_counts(benchmark: Benchmark) -> dict[str, int]:
    # COUNT(*), not COUNT(id): Postgres answers from the (benchmark, status) index alone (at 2,000,000
    # images 140 ms instead of a 300 ms scan of the table on every core, every dashboard recount).
    counts = dict(Image.objects.filter(benchmark=benchmark).values_list("status").annotate(n=Count("*")).order_by())
    return {value: counts.get(value, 0) for value in Image.Status.values}


def near_duplicate_queue(benchmark: Benchmark):
    """Flagged pairs nobody has decided on yet (an image already rejected needs no decision)."""
    return (
        Image.objects.filter(benchmark=benchmark, near_duplicate_of__isnull=False, near_duplicate_resolved=False)
        .exclude(status=Image.Status.REJECTED)
        .select_related("near_duplicate_of")
        .order_by("near_duplicate_distance", "id")
    )


def contamination_report(benchmark: Benchmark):
    return (
        ContaminationMatch.objects.filter(image__benchmark=benchmark)
        .select_related("image", "known_set", "known_hash")
        .order_by("known_set__name", "distance", "image_id")
    )


def _count_of(model, **outer):
    # A correlated subquery per count: joining both relations at once would multiply the rows
    # (hashes x matches), which is millions for a large set.
    rows = model.objects.filter(**{k: OuterRef(v) for k, v in outer.items()}).order_by().values(*outer)
    return Coalesce(Subquery(rows.annotate(n=Count("pk")).values("n"), output_field=IntegerField()), 0)


def known_sets():
    return KnownImageSet.objects.select_related("created_by").annotate(
        n_hashes=_count_of(KnownHash, known_set="pk"), n_matches=_count_of(ContaminationMatch, known_set="pk")
    )


def media_file_visible_to(user, name: str, sha256: str) -> bool:
    """May `user` download the stored file `name` (an image or its thumbnail)? Only when it
    belongs to an image of a benchmark the user can see."""
    return (
        Image.objects.filter(sha256=sha256, benchmark__in=benchmarks_for(user)).filter(Q(file=name) | Q(thumbnail=name)).exists()
    )


def recent_imports(benchmark: Benchmark, limit: int = 5):
    """Latest image import jobs (zip, server folder, URL list: every kind is named ingest_*)."""
    return jobs_of(benchmark, kind_prefix="ingest_")[:limit]

"""Reads for the curation app: taxonomy and images."""

from django.db.models import Count, Q
from django.http import Http404

from benchforge.roles import RESEARCHER, user_role

from .models import Benchmark, Category, ContaminationMatch, Image, KnownImageSet, Task


def benchmarks_for(user):
    """Benchmarks a user may see: researchers see all; everyone else only those they belong to."""
    if user_role(user) == RESEARCHER:
        return Benchmark.objects.all()
    if user_role(user) is None:
        return Benchmark.objects.none()
    return Benchmark.objects.filter(members=user)


def get_benchmark_for(user, slug: str) -> Benchmark:
    try:
        return benchmarks_for(user).get(slug=slug)
    except Benchmark.DoesNotExist:
        raise Http404("No such benchmark, or you are not a member of it.") from None


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
    return Task.objects.filter(benchmark=benchmark).select_related("category", "category__parent")


# ---- images ----------------------------------------------------------------------------------

IMAGE_FLAGS = {
    "low_resolution": ("Low resolution", {"low_resolution": True}),
    "near_duplicate": ("Near duplicate (unreviewed)", {"near_duplicate_of__isnull": False, "near_duplicate_resolved": False}),
    "contaminated": ("Matches a known set", {"contaminated": True}),
    "animated": ("Animated", {"animated": True}),
    "untagged": ("No task", {"tasks__isnull": True}),
}


def images_of(benchmark: Benchmark, *, status: str = "", task: str = "", flag: str = ""):
    """Images for the screening grid / API, filtered by status, task slug and flag."""
    qs = Image.objects.filter(benchmark=benchmark).prefetch_related("tasks")
    if status:
        qs = qs.filter(status=status)
    if task:
        qs = qs.filter(tasks__slug=task)
    if flag in IMAGE_FLAGS:
        qs = qs.filter(**IMAGE_FLAGS[flag][1])
    return qs.order_by("id").distinct()


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
        rows.append({"task": task, "accepted": task.accepted, "pending": task.pending,
                     "rejected": task.rejected, "quota": task.quota, "percent": percent})
    return rows


def status_counts(benchmark: Benchmark) -> dict[str, int]:
    counts = dict(Image.objects.filter(benchmark=benchmark).values_list("status").annotate(n=Count("pk")))
    return {value: counts.get(value, 0) for value in Image.Status.values}


def near_duplicate_queue(benchmark: Benchmark):
    return (Image.objects.filter(benchmark=benchmark, near_duplicate_of__isnull=False, near_duplicate_resolved=False)
            .select_related("near_duplicate_of").order_by("near_duplicate_distance", "id"))


def contamination_report(benchmark: Benchmark):
    return (ContaminationMatch.objects.filter(image__benchmark=benchmark)
            .select_related("image", "known_set", "known_hash").order_by("known_set__name", "distance", "image_id"))


def known_sets():
    return KnownImageSet.objects.annotate(n_hashes=Count("hashes", distinct=True), n_matches=Count("matches", distinct=True))

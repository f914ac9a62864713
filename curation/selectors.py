"""Reads for the curation app. Taxonomy part."""

from django.http import Http404

from benchforge.roles import RESEARCHER, user_role

from .models import Benchmark, Category, Task


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

from django.db.models import Count

from .models import Item


def item_counts_by_task_and_status(benchmark) -> dict[int, dict[str, int]]:
    """{task_id: {status: count}} in one grouped query."""
    counts: dict[int, dict[str, int]] = {}
    rows = Item.objects.filter(benchmark=benchmark).values("task_id", "status").annotate(n=Count("id")).order_by()
    for row in rows:
        counts.setdefault(row["task_id"], {})[row["status"]] = row["n"]
    return counts

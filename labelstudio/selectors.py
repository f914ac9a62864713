"""Reads for the Label Studio page: a benchmark's connection, projects and their last jobs."""

import os

from django.db.models import Count, F, Q
from django.http import Http404

from annotation.contract import item_payload
from annotation.models import Item
from annotation.selectors import with_payload_data
from curation.selectors import get_benchmark_for
from jobs.selectors import jobs_of

from . import adapter
from .models import LabelStudioConnection, LabelStudioLink, LabelStudioTask

PUSH_JOB = "labelstudio_push"
PULL_JOB = "labelstudio_pull"


def connection_for(benchmark) -> LabelStudioConnection:
    """The benchmark's saved connection, or the defaults (unsaved) when there is none."""
    return LabelStudioConnection.objects.filter(benchmark=benchmark).first() or LabelStudioConnection(benchmark=benchmark)


def connection_status(benchmark) -> dict:
    """What the page shows about the connection; whether the token is set, never the token."""
    connection = connection_for(benchmark)
    return {
        "connection": connection,
        "url": connection.server_url,
        "url_from_env": not connection.url,
        "token_env": connection.token_env,
        "token_set": bool(os.environ.get(connection.token_env)),
    }


def projects_of(benchmark):
    return (
        LabelStudioLink.objects.filter(benchmark=benchmark)
        .annotate(
            n_tasks=Count("tasks"),
            n_pulled=Count("tasks", filter=Q(tasks__pulled_at__isnull=False)),
            n_needs_revision=Count("tasks", filter=Q(tasks__verdict="needs_revision")),
            n_waiting=Count("tasks", filter=~Q(tasks__pending={})),
            # Tasks showing an older version of their item (changed here, by a pull or a decision):
            # the next push refreshes them.
            n_behind=Count("tasks", filter=~Q(tasks__pushed_version=F("tasks__item__version"))),
        )
        .order_by("-created_at", "-id")
    )


def last_pull_job(link: LabelStudioLink):
    return jobs_of(link.benchmark_id, kind=PULL_JOB, params={"link_id": link.pk}).first()


def get_link_for(user, slug: str, link_id: int) -> LabelStudioLink:
    benchmark = get_benchmark_for(user, slug)
    link = LabelStudioLink.objects.filter(benchmark=benchmark, pk=link_id).select_related("benchmark").first()
    if link is None:
        raise Http404("No such Label Studio project in this benchmark.")
    return link


def waiting_tasks(link: LabelStudioLink):
    """The project's tasks with something waiting for the researcher's decision, with their items."""
    return LabelStudioTask.objects.filter(link=link).exclude(pending={}).select_related("link").order_by("task_id")


def waiting_task(link: LabelStudioLink, task_id) -> LabelStudioTask:
    try:
        task_id = int(task_id)
    except (TypeError, ValueError):
        task_id = None
    row = None
    if task_id is not None and 0 < task_id < 2**31:
        row = waiting_tasks(link).filter(task_id=task_id).first()
    if row is None:
        raise Http404("No such task waiting for a decision in this project.")
    return row


def _as_text(key: str, value) -> str:
    if value is None:
        return ""
    if key == "choices":
        return adapter.options_block(value)
    if key == "question_type":
        return adapter.QUESTION_TYPES.get(value, value or "")
    if key in adapter.CHOICE_KEYS and key != "answer":
        return adapter.CRITERION_KINDS.get(value, value or "")
    return str(value)


def decision_cards(rows) -> list[dict]:
    """What the decisions page shows of each waiting task: per key, the value here now, the one
    both sides last agreed on and what each annotator asks (as text), in two queries for the page."""
    rows = list(rows)
    items = with_payload_data(Item.objects.filter(pk__in=[row.item_id for row in rows])).in_bulk()
    cards = []
    for row in rows:
        item = items[row.item_id]
        here = adapter.field_values(item_payload(item))
        keys = []
        for key in adapter.KEYS:  # in the order the task shows them
            if key not in row.pending:
                continue
            waiting = row.pending[key]
            proposals = [{**p, "text": _as_text(key, p["value"])} for p in waiting["proposals"]]
            keys.append(
                {
                    "key": key,
                    "label": adapter.KEY_NAMES[key],
                    "reason": waiting["reason"],
                    "status": waiting.get("status", ""),
                    "here": _as_text(key, here[key]),
                    "base": _as_text(key, waiting.get("base")),
                    "proposals": proposals,
                    "edit": proposals[-1]["text"] if proposals else _as_text(key, here[key]),
                    "multiline": key not in adapter.CHOICE_KEYS,
                }
            )
        cards.append({"row": row, "item": item, "keys": keys, "task_url": row.link.task_url(row.task_id)})
    return cards

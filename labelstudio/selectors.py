"""Reads for the Label Studio page: a benchmark's connection, projects and their last jobs."""

import os

from django.db.models import Count, Q
from django.http import Http404

from curation.selectors import get_benchmark_for
from jobs.selectors import jobs_of

from .models import LabelStudioConnection, LabelStudioLink

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

"""Demo work for `make run`: what a new user can try at once. Development only."""

from collections import Counter

from django.db.models import Count

from annotation.models import Assignment
from annotation.services import assign_images
from annotation.services.assignments import usable_images
from benchforge.roles import ANNOTATOR, RESEARCHER
from curation.models import Benchmark


def seed_demo_work(benchmark: Benchmark, *, per_annotator: int = 3) -> int:
    """A few image assignments for each annotator of a demo benchmark, handed out by one of its
    researchers, when accepted task-tagged images exist. Safe to re-run; returns how many were added."""
    researcher = benchmark.members.filter(groups__name=RESEARCHER).order_by("pk").first()
    if researcher is None:
        return 0
    annotators = list(benchmark.members.filter(groups__name=ANNOTATOR).order_by("username"))
    taken = set(Assignment.objects.filter(benchmark=benchmark, image__isnull=False).values_list("task_id", "image_id"))
    pool = [
        (image, task)
        for image in usable_images(benchmark).prefetch_related("tasks").order_by("id")
        for task in image.tasks.all()
        if (task.pk, image.pk) not in taken
    ]
    have = Counter(
        dict(Assignment.objects.filter(benchmark=benchmark).values_list("assignee").annotate(n=Count("id")).order_by())
    )
    created = 0
    for person in annotators:
        while have[person.pk] < per_annotator and pool:
            image, task = pool.pop(0)
            created += assign_images(benchmark, task=task, image_ids=[image.pk], assignee=person, user=researcher)["assigned"]
            have[person.pk] += 1
    return created

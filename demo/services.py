"""Demo work for `make run`: every stage a new user can try at once. Development only.

The demo is a list of steps (DEMO_STEPS). Each step takes the demo benchmark and the demo users
({"researcher": User, "reviewer": ..., "annotator": ..., "annotator2": ...}), does its part
through the apps' real services, and returns one line for the console. Every step is safe to
re-run: it finds what an earlier run made and adds only what is missing.

Each app's step is its `demo.add_demo(benchmark, users) -> str`. The steps run in order, so a
later one can use what the earlier ones made: the accepted multi-turn item, the reviewer's open
round. The release is built but not frozen: freezing moves accepted items to released, and is
the user's to try.
"""

import hashlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count

from annotation.models import Assignment, Item
from annotation.services import assign_images, assign_items, create_item, submit_item
from annotation.services.assignments import usable_images
from annotation.workflow import ANSWERED, DRAFT
from benchforge.roles import ANNOTATOR, RESEARCHER
from curation.models import Benchmark, Image, KnownImageSet
from curation.services import import_known_set, ingest_image, screen_images
from exports import demo as exports_demo
from humaneval import demo as humaneval_demo
from jobs import services as jobs
from qc import demo as qc_demo
from review.models import Review, ReviewRound
from review.services import open_round, submit_review
from rewrite import demo as rewrite_demo

from .images import demo_pictures

DEMO_SOURCE = "benchforge demo generator (drawn in code)"
KNOWN_SET_NAME = "Demo: a prior benchmark's images"
# The demo picture the known set "already contains": the contamination report has one hit.
CONTAMINATED_PICTURE = "emblem-3.jpg"


@dataclass(frozen=True)
class DemoStep:
    name: str
    run: Callable[[Benchmark, dict], str]


def add_known_set(benchmark: Benchmark, users: dict) -> str:
    """A known image set (before the pictures, so ingest flags the match) holding the MD5 of one
    demo picture among hashes that match nothing."""
    picture = next(p for p in demo_pictures() if p.name == CONTAMINATED_PICTURE)
    rows = [{"md5": hashlib.md5(picture.data).hexdigest(), "phash": None, "label": f"prior-benchmark/{CONTAMINATED_PICTURE}"}]
    rows += [
        {"md5": hashlib.md5(f"demo-known-{n}".encode()).hexdigest(), "phash": None, "label": f"prior-benchmark/{n:04d}.jpg"}
        for n in range(1, 12)
    ]
    existed = KnownImageSet.objects.filter(name=KNOWN_SET_NAME).exists()
    result = import_known_set(
        name=KNOWN_SET_NAME,
        rows=rows,
        kind=KnownImageSet.Kind.BENCHMARK,
        description="Twelve image hashes standing in for a published benchmark; one demo picture is among them.",
        user=users["researcher"],
    )
    return f"Known set '{result.known_set.name}': {len(rows)} hashes ({'already there' if existed else 'added'})."


def add_pictures(benchmark: Benchmark, users: dict) -> str:
    """The demo pictures, through the real ingest (same checks, hashes and flags as any upload).
    They are drawn deterministically, so a re-run finds every one already stored (same MD5)."""
    tasks = {task.slug: task for task in benchmark.tasks.all()}
    added = []
    for picture in demo_pictures():
        outcome = ingest_image(
            benchmark,
            picture.data,
            original_name=picture.name,
            source=DEMO_SOURCE,
            license="CC0-1.0",
            collected_by=users["annotator"],
            tasks=[tasks[picture.task_slug]],
        )
        if outcome.created:
            added.append(outcome.image)
    # So the authoring queues have work, the first run accepts two thirds of the clean new
    # pictures; the rest (and the flagged ones) wait on the screening grid. Re-runs never
    # touch screening decisions.
    clean = [image.pk for image in added if not (image.low_resolution or image.near_duplicate_of_id or image.contaminated)]
    if clean:
        screen_images(benchmark, clean[: len(clean) * 2 // 3], action="accept", user=users["researcher"])
    flagged = benchmark.images.filter(contaminated=True).count()
    return f"Images: {benchmark.images.count()} ({len(added)} added now), {flagged} flagged by the known set."


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


def add_queue_work(benchmark: Benchmark, users: dict) -> str:
    added = seed_demo_work(benchmark)
    return f"Queues: {added} new image assignment(s) for the annotators."


# The demo items, one per stage a user can open. Each is found again by its question.
DRAFT_QUESTION = "How many oranges are in the front crate?"
ANSWERED_QUESTION = "What does the street sign say, word for word?"
MCQ_QUESTION = "Which month has the tallest bar in the chart?"
MULTI_TURN_QUESTION = "Then which of the shapes is the odd one out, and why?"


def _picture(benchmark: Benchmark, name: str) -> Image:
    return benchmark.images.get(original_name=name)


def _item(benchmark: Benchmark, question: str) -> Item | None:
    return Item.objects.filter(benchmark=benchmark, question=question).order_by("pk").first()


def _make_item(benchmark, users, *, author: str, picture: str, task: str, submit: bool, **fields) -> Item:
    item = _item(benchmark, fields["question"])
    if item is None:
        image = _picture(benchmark, picture)
        item = create_item(benchmark, task=task, user=users[author], images=[image.pk], **fields)
        # Handed to its author the way a researcher does it: the item and its open assignment name them both.
        assign_items(benchmark, item_ids=[item.pk], assignee=users[author], user=users["researcher"])
        item.refresh_from_db()
    if submit and item.status == DRAFT:
        item = submit_item(item, user=users[author], expected_version=item.version)
    return item


def add_items(benchmark: Benchmark, users: dict) -> str:
    """Items at the stages before review: a draft, an answered single-turn item, an answered MCQ
    (the review step puts it in review) and an answered multi-turn item (the review step accepts it)."""
    made = [
        _make_item(
            benchmark,
            users,
            author="annotator",
            picture="fruit-stall-1.jpg",
            task="counting",
            submit=False,
            question=DRAFT_QUESTION,
        ),
        _make_item(
            benchmark,
            users,
            author="annotator2",
            picture="street-sign-1.jpg",
            task="ocr",
            submit=True,
            question=ANSWERED_QUESTION,
            reference_answer="The sign reads the words printed on it exactly, in capitals, with nothing added.",
            criteria=[{"kind": "exact", "text": "Quotes the sign's text exactly, in the same letters."}],
        ),
        _make_item(
            benchmark,
            users,
            author="annotator",
            picture="bar-chart-1.jpg",
            task="chart",
            submit=True,
            kind=Item.Kind.MCQ,
            question_type=Item.QuestionType.CLOSED,
            question=MCQ_QUESTION,
            choices=["January", "March", "June", "September"],
            answer="C",
            reference_answer="June: its bar is the tallest of the twelve, clearly above March and September.",
            criteria=[{"kind": "exact", "text": "Picks C (June)."}],
        ),
        _make_item(
            benchmark,
            users,
            author="annotator",
            picture="odd-one-out-1.jpg",
            task="reasoning",
            submit=True,
            kind=Item.Kind.MULTI_TURN,
            history=[
                {"role": "user", "content": "How many shapes are in the picture?"},
                {"role": "assistant", "content": "There are several coloured shapes laid out in a row."},
            ],
            question=MULTI_TURN_QUESTION,
            reference_answer="The one whose shape differs from all the others is the odd one out: the rest share one form.",
            criteria=[{"kind": "guideline", "text": "Names one shape and gives a reason that rules out the others."}],
        ),
    ]
    counts = Counter(item.get_status_display().lower() for item in made)
    return "Items: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) + "."


def _open_demo_round(benchmark: Benchmark, users: dict, task: str) -> ReviewRound:
    """A cross-review round over one task's answered items, the demo reviewer reviewing, opened now."""
    review_round = open_round(benchmark, user=users["researcher"], tasks=[task], reviewers=[users["reviewer"]])
    # The round opens as a job. Outside a transaction the job runner has it already: wait for it.
    # Inside one (a test), the runner only gets it on commit: run it here.
    if transaction.get_connection().in_atomic_block:
        jobs.run_now(review_round.job)
    jobs.wait([review_round.job_id], timeout=60)
    review_round.refresh_from_db()
    return review_round


def add_review_rounds(benchmark: Benchmark, users: dict) -> str:
    """Round 1 over the multi-turn item: the reviewer accepts it (closing the round). Round 2 over
    the MCQ item stays open: the demo reviewer has it to review."""
    multi_turn, mcq = _item(benchmark, MULTI_TURN_QUESTION), _item(benchmark, MCQ_QUESTION)
    if multi_turn is None or mcq is None:
        return "Review: skipped (the demo items are missing)."
    if multi_turn.status == ANSWERED and not benchmark.review_rounds.exclude(status=ReviewRound.Status.CLOSED).exists():
        _open_demo_round(benchmark, users, multi_turn.task)
    review = Review.objects.filter(item=multi_turn, reviewer=users["reviewer"], verdict="").first()
    if review is not None:
        multi_turn.refresh_from_db()
        submit_review(review, user=users["reviewer"], verdict=Review.Verdict.ACCEPT, item_version=multi_turn.version)
    mcq.refresh_from_db()
    if mcq.status == ANSWERED and not benchmark.review_rounds.exclude(status=ReviewRound.Status.CLOSED).exists():
        _open_demo_round(benchmark, users, mcq.task)
    multi_turn.refresh_from_db()
    mcq.refresh_from_db()
    waiting = Review.objects.filter(reviewer=users["reviewer"], item__benchmark=benchmark, verdict="").count()
    return (
        f"Review: {benchmark.review_rounds.count()} round(s); the multi-turn item is {multi_turn.get_status_display().lower()}, "
        f"the MCQ item is {mcq.get_status_display().lower()} with {waiting} review(s) waiting for 'reviewer'."
    )


DEMO_STEPS: list[DemoStep] = [
    DemoStep("known set", add_known_set),
    DemoStep("pictures", add_pictures),
    DemoStep("queue work", add_queue_work),
    DemoStep("items", add_items),
    DemoStep("review rounds", add_review_rounds),
    DemoStep("rewrite batch", rewrite_demo.add_demo),
    DemoStep("QC run", qc_demo.add_demo),
    DemoStep("releases and leaderboard", exports_demo.add_demo),
    DemoStep("human evaluation", humaneval_demo.add_demo),
]


def run_demo_steps(benchmark: Benchmark, users: dict, steps=None, *, report=print) -> list[tuple[str, float]]:
    """Run every step in order, reporting each step's line; returns (step name, seconds) pairs."""
    timings = []
    for step in steps if steps is not None else DEMO_STEPS:
        started = time.monotonic()
        line = step.run(benchmark, users)
        timings.append((step.name, time.monotonic() - started))
        report(line)
    return timings

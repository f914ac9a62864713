"""A human-evaluation study at scale: 100,000 stored ratings on Postgres, every page that reads it.

Run: .venv/bin/python bench/humaneval.py [--ratings 100000] [--raters 50] [--requests 300] [--page-requests 20]

Creates a throwaway Postgres database (BENCH_POSTGRES_URL, dropped at the end), a frozen release of
2,000 open questions, judged scores, and a study whose --ratings ratings (60% saved) are spread over
--raters raters. The figures are computed once, as the job does after an import (its time printed).
Then, in-process through Django's test client (DEBUG off), as one rater: opens the rating page of
--requests of their ratings and saves half of them (the POST that also finds the next answer; each
save marks the figures out of date). Then the job that recomputes them runs (in a thread, as the
embedded runtime runs jobs; its time printed), and once it is done, as a researcher, --page-requests times
each: the study page, the JSON Lines and Parquet exports (time to the first byte, and to the last),
the study API and the release's leaderboard. Prints p50/p95 and the queries per request.
Targets: rating page and save p95 < 150 ms; study page, study API, leaderboard and the exports'
first byte p95 < 1 s.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.throwaway import create_database, database_url, drop_database  # noqa: E402

TARGET_MS = {
    "GET rating page": 150,
    "POST save and next": 150,
    "GET study page": 1000,
    "JSONL export, 1st byte": 1000,
    "Parquet export, 1st byte": 1000,
    "GET study API": 1000,
    "GET leaderboard": 1000,
}


def populate(n_ratings: int, n_raters: int):
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.utils import timezone

    from benchforge.roles import ANNOTATOR, RESEARCHER, set_role
    from curation.services import load_preset
    from exports.models import Release, ReleaseItem, Score
    from humaneval import services
    from humaneval.models import Rating, Study, StudyItem, StudyRater

    call_command("migrate", verbosity=0)
    benchmark = load_preset("alignmmbench", slug="bench")
    users = get_user_model()
    researcher = users.objects.create_user("bench-researcher", password="x" * 16)
    set_role(researcher, RESEARCHER)
    people = [users.objects.create_user(f"rater{n}", password="x" * 16) for n in range(n_raters)]
    for person in people:
        set_role(person, ANNOTATOR)
    benchmark.members.add(*people)
    release = Release.objects.create(benchmark=benchmark, version="1.0.0", created_by=researcher)
    n_items = 2000
    rows = [
        {
            "id": str(n),
            "question": f"How many apples are in photo {n}? 图中有几个苹果？",
            "task": "Counting",
            "category": "Perception",
            "history": [],
            "images": [],
            "reference_answer": f"There are {n % 7 + 1} apples.",
            "criteria": ["the count is right"],
            "choices": None,
        }
        for n in range(n_items)
    ]
    ReleaseItem.objects.bulk_create(
        ReleaseItem(release=release, key=row["id"], item_id=n + 1, task="Counting", split="test", row=row, order=n)
        for n, row in enumerate(rows)
    )
    release.status = Release.Status.FROZEN
    release.save()
    answers = {row["id"]: f"I count {int(row['id']) % 5 + 1} apples in the photo." for row in rows}
    score = Score.objects.create(
        release=release,
        label="bench-model",
        method="pointwise",
        source="upload",
        answers=answers,
        status="done",
        created_by=researcher,
    )
    study = Study.objects.create(
        benchmark=benchmark, release=release, number=1, title="bench", mode="pointwise", per_task=n_items, created_by=researcher
    )
    study.scores.add(score)
    raters = StudyRater.objects.bulk_create(
        StudyRater(study=study, user=u, pseudonym=f"R{n}", seed=n) for n, u in enumerate(people, 1)
    )
    n_answers = n_ratings // 2
    keys = list(answers)
    items = []
    for n in range(n_answers):
        items.append(
            StudyItem(study=study, score=score, key=keys[n % n_items], task="Counting", category="Perception",
                      answer=answers[keys[n % n_items]], judge={"rating": n % 10 + 1}, position=n)
        )  # fmt: skip
    # one score, 2000 keys: an answer per key and the rest as if other models answered (the unique
    # constraint is per score and key, so spread them over copies of the score).
    copies = [score] + [
        Score.objects.create(release=release, label=f"bench-model-{k}", method="pointwise", source="upload",
                             answers=answers, status="done", created_by=researcher)
        for k in range(1, n_answers // n_items + 1)
    ]  # fmt: skip
    for n, item in enumerate(items):
        item.score = copies[n // n_items]
    StudyItem.objects.bulk_create(items, batch_size=5000)
    items = list(StudyItem.objects.filter(study=study).order_by("position"))
    now = timezone.now()
    rng = random.Random(0)
    positions = {r.pk: 0 for r in raters}
    ratings = []
    for n, item in enumerate(items):
        for rater in (raters[n % n_raters], raters[(n + 1) % n_raters]):
            saved = rng.random() < 0.6
            ratings.append(
                Rating(study=study, item=item, rater=rater, position=positions[rater.pk], anchor_first=False,
                       score=rng.randint(1, 10) if saved else None, reason="ok" if saved else "", saved_at=now if saved else None)
            )  # fmt: skip
            positions[rater.pk] += 1
    Rating.objects.bulk_create(ratings, batch_size=5000)
    services.recount_tallies(study)  # what create_study keeps as it creates the ratings
    return study, people[0]


def measure(study, user, requests: int) -> dict:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from humaneval.models import Rating

    client = Client()
    client.force_login(user)
    mine = list(Rating.objects.filter(study=study, rater__user=user).values_list("pk", "saved_at"))
    rng = random.Random(1)
    chosen = rng.sample(mine, min(requests, len(mine)))
    pending = [pk for pk, saved in mine if saved is None]
    rng.shuffle(pending)
    timings = {"GET rating page": [], "POST save and next": []}
    queries = {name: [] for name in timings}
    for pk, _ in chosen:
        url = f"/b/bench/human-eval/{study.number}/rate/{pk}/"
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            response = client.get(url, secure=True)
            timings["GET rating page"].append(time.perf_counter() - start)
        assert response.status_code == 200, response.status_code
        queries["GET rating page"].append(len(captured.captured_queries))
    for pk in pending[: requests // 2]:
        url = f"/b/bench/human-eval/{study.number}/rate/{pk}/"
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            response = client.post(url, {"score": "7", "reason": "counts one apple too many"}, secure=True)
            timings["POST save and next"].append(time.perf_counter() - start)
        assert response.status_code == 302, response.status_code
        queries["POST save and next"].append(len(captured.captured_queries))
    return {name: (timings[name], queries[name]) for name in timings}


def measure_pages(study, researcher, requests: int) -> dict:
    """The pages that read the whole study, as a researcher, after the figures job is done."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(researcher)
    base = f"/b/bench/human-eval/{study.number}"
    pages = {
        "GET study page": f"{base}/",
        "GET study API": f"/api/v1/benchmarks/bench/human-eval/studies/{study.number}/",
        "GET leaderboard": "/b/bench/releases/1.0.0/leaderboard/",
    }
    exports = {
        "JSONL export": f"{base}/ratings.jsonl",
        "Parquet export": f"/api/v1/benchmarks/bench/human-eval/studies/{study.number}/ratings/?format=parquet",
    }
    timings: dict = {}
    queries: dict = {}
    for _ in range(requests):
        for name, url in pages.items():
            with CaptureQueriesContext(connection) as captured:
                start = time.perf_counter()
                response = client.get(url, secure=True)
                timings.setdefault(name, []).append(time.perf_counter() - start)
            assert response.status_code == 200, (url, response.status_code)
            queries.setdefault(name, []).append(len(captured.captured_queries))
        for name, url in exports.items():
            with CaptureQueriesContext(connection) as captured:
                start = time.perf_counter()
                response = client.get(url, secure=True)
                assert response.status_code == 200, (url, response.status_code)
                chunks = iter(response.streaming_content)
                size = len(next(chunks))
                timings.setdefault(f"{name}, 1st byte", []).append(time.perf_counter() - start)
                size += sum(len(chunk) for chunk in chunks)
                timings.setdefault(f"{name}, whole", []).append(time.perf_counter() - start)
            assert size > 1000
            for part in ("1st byte", "whole"):
                queries.setdefault(f"{name}, {part}", []).append(len(captured.captured_queries))
    return {name: (timings[name], queries[name]) for name in timings}


def report(results: dict) -> bool:
    ok = True
    for page, (seconds, counts) in results.items():
        ms = sorted(s * 1000 for s in seconds)
        p95 = ms[max(0, int(len(ms) * 0.95) - 1)]
        target = TARGET_MS.get(page)
        if target is not None:
            ok &= p95 < target
        goal = f"target < {target} ms" if target else "no target"
        print(
            f"  {page:<28} n={len(ms):4}  p50 {statistics.median(ms):7.1f} ms  p95 {p95:7.1f} ms  "
            f"queries {min(counts)}-{max(counts)}  ({goal}; load {os.getloadavg()[0]:.1f})"
        )
    return ok


def wait_for_figures(study) -> None:
    from humaneval.models import Study

    for _ in range(600):
        fresh = Study.objects.filter(pk=study.pk, figures_queued=False, stored_figures__version=F_version()).exists()
        if fresh:
            return
        time.sleep(0.5)
    raise SystemExit("the figures job did not finish in 5 minutes")


def F_version():  # noqa: N802 - a query expression
    from django.db.models import F

    return F("ratings_version")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ratings", type=int, default=100_000)
    parser.add_argument("--raters", type=int, default=50)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--page-requests", type=int, default=20)
    args = parser.parse_args()
    name = create_database("bench_humaneval")
    if name is None:
        return 0
    try:
        os.environ.update(
            DATABASE_URL=database_url(name), DJANGO_SETTINGS_MODULE="benchforge.settings", DEBUG="0", SECRET_KEY="bench-" + name
        )
        os.environ.pop("CELERY_BROKER_URL", None)
        import django

        django.setup()
        started = time.perf_counter()
        study, user = populate(args.ratings, args.raters)
        print(f"{study.ratings.count():,} ratings over {args.raters} raters stored in {time.perf_counter() - started:.0f} s")
        from django.contrib.auth import get_user_model

        from humaneval import services

        started = time.perf_counter()
        services.refresh_figures(study)
        print(
            f"figures computed from {study.ratings.exclude(saved_at=None).count():,} saved ratings in {time.perf_counter() - started:.1f} s (the job's work)"
        )
        ok = report(measure(study, user, args.requests))
        started = time.perf_counter()
        services.queue_figures(study.pk)  # as the researcher's first look at the study page does
        wait_for_figures(study)
        print(f"figures recomputed by the job after the saves in {time.perf_counter() - started:.1f} s")
        researcher = get_user_model().objects.get(username="bench-researcher")
        ok &= report(measure_pages(study, researcher, args.page_requests))
        print(f"targets (p95): {'met' if ok else 'MISSED'}")
        return 0 if ok else 1
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(name)


if __name__ == "__main__":
    sys.exit(main())

"""Label Studio sync at scale: database queries and Label Studio requests of a push and of pulls
of N tasks, to show that neither grows per task where it need not (no N+1 queries, one paged
listing per pull instead of a request per task).

Run: .venv/bin/python bench/labelstudio_sync.py [--tasks 100,1000]

A throwaway embedded runtime (SQLite in a temporary folder) and an in-memory Label Studio that
answers the client's calls (tests/labelstudio/fake_server.py; the same calls the real server
answers in tests/labelstudio/), counting them: one "listing" call stands for the SDK's pager,
which fetches 100 tasks per request from a real server. For each N it prints, per phase, the
queries and Label Studio calls in all and per task, and the seconds taken:

  push (new)            N tasks imported in batches of 25
  pull (not annotated)  nothing to read: constant queries and one listing, whatever N
  pull (annotated)      every task has a new annotation that changes its reference answer:
                        the item writes (update_item, a few queries each) are the per-task cost
  pull (again)          every annotation read already: constant again
  push (refresh)        every item changed by the pull: 3 requests per refreshed task

Targets (checked, exit 1 when missed): the quiet pulls make under 0.05 queries per task at the
largest N (their entries are written in batches) and the same number of Label Studio calls at
every N; the annotated pull's queries per task do not grow with N (within 20%).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def setup(var: Path) -> None:
    os.environ.update(
        BENCHFORGE_VAR_DIR=str(var), MEDIA_ROOT=str(var / "media"), DJANGO_SETTINGS_MODULE="benchforge.settings", DEBUG="1"
    )
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["BENCHFORGE_JOB_RUNNER"] = "inline"
    import django

    django.setup()


class Counted:
    """The in-memory server with every client call counted."""

    def __init__(self, server):
        self.server, self.calls = server, Counter()

    def __getattr__(self, name):
        found = getattr(self.server, name)
        if not callable(found) or name in ("prefill", "annotate", "task"):
            return found

        def call(*args, **kwargs):
            self.calls[name] += 1
            return found(*args, **kwargs)

        return call

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def run(n: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import Criterion, Item
    from benchforge.roles import RESEARCHER, set_role
    from curation.services import load_preset
    from labelstudio import services as lss
    from labelstudio.models import LabelStudioLink
    from labelstudio.services import pull, push
    from tests.labelstudio.fake_server import FakeLabelStudio

    call_command("migrate", verbosity=0)
    benchmark = load_preset("alignmmbench", slug=f"bench{n}")
    researcher = get_user_model().objects.create_user(f"bench-researcher-{n}", password="x" * 16)
    set_role(researcher, RESEARCHER)
    task = benchmark.tasks.order_by("pk").first()
    items = Item.objects.bulk_create(
        Item(benchmark=benchmark, task=task, question=f"Question {k}?", reference_answer=f"Answer {k}.", author=researcher)
        for k in range(n)
    )
    Criterion.objects.bulk_create(Criterion(item=item, order=1, kind="soft", text=f"Says {item.pk}.") for item in items)
    fake = FakeLabelStudio()
    fake.url = f"http://labelstudio-{n}.invalid"  # one server per size: project ids start again
    server = Counted(fake)
    push.open_client = pull.open_client = lambda *args, **kwargs: server

    phases = {}

    def phase(name, action):
        server.calls.clear()
        queries = Counter()

        def count(execute, sql, params, many, context):
            queries["n"] += 1
            return execute(sql, params, many, context)

        started = time.perf_counter()
        with connection.execute_wrapper(count):
            job = action()
        assert job.status == "succeeded", job.message
        phases[name] = {"queries": queries["n"], "calls": sum(server.calls.values()), "seconds": time.perf_counter() - started}
        return job

    title = f"Bench {n}"
    job = phase("push (new)", lambda: lss.push_items_to_labelstudio(benchmark, items, project_title=title, user=researcher))
    link = LabelStudioLink.objects.get(pk=job.result["link_id"])
    phase("pull (not annotated)", lambda: lss.pull_from_labelstudio(link, user=researcher))
    for row in link.tasks.all():
        prefill = server.prefill(row.task_id)
        region = {
            "from_name": "reference_answer",
            "to_name": "question",
            "type": "textarea",
            "value": {"text": [f"Better {row.item_id}."]},
        }
        server.annotate(
            row.task_id, [{**region, "origin": "prediction-changed"}], parent_prediction=prefill["id"], lead_time=1.0, by=1
        )
    job = phase("pull (annotated)", lambda: lss.pull_from_labelstudio(link, user=researcher))
    assert job.result["applied"] == n, job.result
    phase("pull (again)", lambda: lss.pull_from_labelstudio(link, user=researcher))
    job = phase("push (refresh)", lambda: lss.push_items_to_labelstudio(benchmark, items, project_title=title, user=researcher))
    assert job.result["refreshed"] == n, job.result
    return phases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="100,1000", help="task counts to measure, comma-separated")
    sizes = [int(n) for n in parser.parse_args().tasks.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-ls-") as var:
        setup(Path(var))
        results = {n: run(n) for n in sizes}
    print(f"{'phase':24} " + " ".join(f"{f'N={n}: queries (/task) calls (/task) s':>44}" for n in sizes))
    for name in results[sizes[0]]:
        cells = []
        for n in sizes:
            r = results[n][name]
            cells.append(
                f"{r['queries']:>9} ({r['queries'] / n:6.2f}) {r['calls']:>7} ({r['calls'] / n:5.2f}) {r['seconds']:8.2f}"
            )
        print(f"{name:24} " + " ".join(f"{c:>44}" for c in cells))
    failures = []
    small, large = results[sizes[0]], results[sizes[-1]]
    for name in ("pull (not annotated)", "pull (again)"):
        # Their entries are written in batches: a query per task would be an N+1.
        if large[name]["queries"] / sizes[-1] > 0.05:
            failures.append(f"{name}: {large[name]['queries'] / sizes[-1]:.2f} queries per task")
        if large[name]["calls"] != small[name]["calls"]:
            failures.append(
                f"{name}: Label Studio calls grow with the number of tasks ({small[name]['calls']} -> {large[name]['calls']})"
            )
    per_task = [results[n]["pull (annotated)"]["queries"] / n for n in sizes]
    if per_task[-1] > per_task[0] * 1.2:
        failures.append(f"pull (annotated): queries per task grow ({per_task[0]:.2f} -> {per_task[-1]:.2f})")
    for failure in failures:
        print("MISSED:", failure)
    print(
        "OK: quiet pulls are constant in queries and calls; an applied task costs the same at every size." if not failures else ""
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

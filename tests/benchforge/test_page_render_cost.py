"""A guard on what the five busiest pages cost to build (issue 43; bench/web_load.py measures them
under load at 100,000 items): in a fixed world, each page's queries are bounded, and its CPU time
is compared with a baseline render of a fixed template measured in the same run, so the machine's
speed and its other load cancel out. A change that doubles a page's cost fails here.

CPU time is this thread's (not wall time: the machine running CI is shared; not the process's, which
also counts any thread an earlier test left running), the least of several tries (the least is the
measurement least disturbed by other work)."""

import time

import pytest
from django.template import Context, Template

from annotation.models import Assignment
from annotation.services import create_item
from tests.benchforge.test_page_costs import open_round, submitted

pytestmark = pytest.mark.django_db

# The fixed template: a 50-row table, eight lookups, two filters and a translation per row: what a
# list page of this project does, in the same template engine, so it speeds up and slows down with it.
BASELINE = Template(
    '{% load i18n %}<table>{% for row in rows %}<tr data-row="{{ row.pk }}"><td><a href="{{ url }}{{ row.pk }}/">'
    "#{{ row.pk }}</a></td><td>{{ row.task }}</td><td>{{ row.kind }}</td><td>{% translate 'Status' %} {{ row.status }}</td>"
    "<td>{{ row.question|truncatechars:90 }}</td><td>{{ row.author|default:'—' }}</td><td>{{ row.version }}</td>"
    "<td>{{ row.updated|date:'Y-m-d H:i' }}</td></tr>{% endfor %}</table>"
)

# Each page's CPU as a multiple of the baseline render, and its queries, in this world. The limits
# are about 1.8 times what the pages cost after issue 43's fourth round on a quiet machine (measured:
# review queue 0.74-0.80, items list 1.00-1.24, queue 0.66-0.95, dashboard 0.82-0.93; under a load
# average of 6: 0.93, 1.37, 0.87, 1.10), the editor's after its fifth (1.15-1.17; it was 1.92-2.07):
# a page that gets twice as expensive fails; the measured ratios are printed with -s.
LIMITS = {
    "review queue": (1.5, 12),
    "items list": (2.2, 12),
    "queue": (1.5, 12),
    "editor": (2.1, 16),
    "dashboard": (1.7, 30),
}


def cpu(action) -> float:
    start = time.thread_time()  # the test client runs the view in this thread
    action()
    return time.thread_time() - start


def least_cpu_against_baseline(action, tries: int = 9) -> tuple[float, float]:
    """(the least CPU of `action`, the least of the baseline render), the two taken in turns, so
    that both minima come from the same seconds. The baseline used to be measured once, before all
    the pages, in process time: in a CI run (3 processes on 2 cores) the items list and the editor
    then came out at 2.24 and 2.28 times it, where they measure 0.9-1.5 alone and under a steady load."""
    page = base = float("inf")
    for _ in range(tries):
        base = min(base, cpu(baseline_render))
        page = min(page, cpu(action))
    return page, base


def baseline_render() -> None:
    import datetime

    rows = [
        {
            "pk": n,
            "task": "Counting (Perception & Understanding)",
            "kind": "single turn",
            "status": "in review",
            "question": f"Question {n}: what is shown in the image? " * 3,
            "author": f"member{n % 20:02d}",
            "version": 2,
            "updated": datetime.datetime(2026, 1, 1, 12, n % 60, tzinfo=datetime.UTC),
        }
        for n in range(50)
    ]
    BASELINE.render(Context({"rows": rows, "url": "/b/demo/items/"}))


@pytest.fixture
def world(benchmark, team, counting, django_capture_on_commit_callbacks):
    """30 submitted items in an open round (rev1 reviews them), and 10 of rev1's own open items."""
    submitted(benchmark, counting, team["ann"], 30)
    open_round(benchmark, team["boss"], django_capture_on_commit_callbacks, per_item=2, reviewers=[team["rev1"], team["rev2"]])
    mine = []
    for _ in range(10):
        item = create_item(benchmark, task=counting, user=team["rev1"], assignee=team["rev1"])
        Assignment.objects.create(benchmark=benchmark, assignee=team["rev1"], task=counting, item=item)
        mine.append(item)
    return {
        "review queue": "/b/demo/review/queue/",
        "items list": "/b/demo/items/",
        "queue": "/b/demo/queue/",
        "editor": f"/b/demo/items/{mine[0].pk}/",
        "dashboard": "/b/demo/",
    }


@pytest.fixture
def team(make_user, benchmark, annotator):
    return {
        "ann": annotator,
        "rev1": make_user("reviewer", "rev1", benchmarks=[benchmark]),
        "rev2": make_user("reviewer", "rev2", benchmarks=[benchmark]),
        "boss": make_user("researcher", "boss", benchmarks=[benchmark]),
    }


def test_the_busiest_pages_cost_no_more_than_their_share_of_a_baseline_render(
    world, team, client_for, django_assert_max_num_queries
):
    client = client_for(team["rev1"])
    for path in world.values():  # warm: templates compiled, translations loaded, counts cached
        assert client.get(path).status_code == 200
    over = []
    for page, path in world.items():
        ratio_limit, query_limit = LIMITS[page]
        with django_assert_max_num_queries(query_limit):
            response = client.get(path)
        assert response.status_code == 200
        spent, baseline = least_cpu_against_baseline(lambda path=path: client.get(path))
        ratio = spent / baseline
        print(f"{page}: {ratio:.2f} x the baseline render ({baseline * 1000:.2f} ms), limit {ratio_limit}")
        if ratio > ratio_limit:
            over.append(f"{page} costs {ratio:.2f} x the baseline render (limit {ratio_limit})")
    assert not over, over

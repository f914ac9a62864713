"""What the five busiest pages cost in queries, whatever the benchmark's size (bench/web_load.py
times them at 100,000 items): the review queue, the items list, the queue, the editor and the
dashboard make no more queries with more items, reviews or rounds; the dashboard's whole-table
counts and a round's numbers are cached without ever showing a stale round."""

import re
import time

import pytest

from annotation.models import Assignment
from annotation.services import create_item, submit_item, update_item
from benchforge import navigation
from review import selectors, services
from review.models import Review, ReviewRound
from tests.factories import complete_fields, make_image

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(make_user, benchmark, annotator):
    return {
        "ann": annotator,
        "rev1": make_user("reviewer", "rev1", benchmarks=[benchmark]),
        "rev2": make_user("reviewer", "rev2", benchmarks=[benchmark]),
        "boss": make_user("researcher", "boss", benchmarks=[benchmark]),
    }


def submitted(benchmark, task, author, n):
    image = make_image(benchmark, tasks=[task])
    items = []
    for k in range(n):
        item = create_item(benchmark, task=task, user=author, assignee=author)
        item = update_item(item, complete_fields(image, question=f"q{k}"), expected_version=item.version, user=author)
        items.append(submit_item(item, user=author))
    return items


def open_round(benchmark, boss, capture, **kwargs):
    with capture(execute=True):  # the round's job runs when the transaction commits
        review_round = services.open_round(benchmark, user=boss, **kwargs)
    review_round.refresh_from_db()
    assert review_round.status == ReviewRound.Status.OPEN
    return review_round


def give(review, verdict):
    review.refresh_from_db()
    return services.submit_review(
        review,
        user=review.reviewer,
        verdict=verdict,
        reasons=[] if verdict == "accept" else ["incomplete"],
        item_version=review.item.version,
    )


def queries_for(client, path, assert_max, limit=40) -> int:
    with assert_max(limit) as captured:
        response = client.get(path)
    assert response.status_code == 200, path
    return len(captured.captured_queries)


PAGES = ("/b/demo/review/queue/", "/b/demo/items/", "/b/demo/items/?status=in_review", "/b/demo/queue/", "/b/demo/")


def test_the_busiest_pages_make_no_more_queries_with_more_items_and_reviews(
    benchmark, team, counting, client_for, settings, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    settings.BENCHFORGE_DASHBOARD_CACHE_SECONDS = 0  # count every time: the dashboard's own queries
    client = client_for(team["rev1"])
    submitted(benchmark, counting, team["ann"], 2)
    first = open_round(
        benchmark, team["boss"], django_capture_on_commit_callbacks, per_item=2, reviewers=[team["rev1"], team["rev2"]]
    )
    mine = create_item(benchmark, task=counting, user=team["rev1"], assignee=team["rev1"])
    Assignment.objects.create(benchmark=benchmark, assignee=team["rev1"], task=counting, item=mine)
    small = {path: queries_for(client, path, django_assert_max_num_queries) for path in PAGES}
    editor_small = queries_for(client, f"/b/demo/items/{mine.pk}/", django_assert_max_num_queries)

    # Ten times the items, a second round with given verdicts, more open work.
    services.close_round(first, user=team["boss"])
    more = submitted(benchmark, counting, team["ann"], 20)
    review_round = open_round(
        benchmark, team["boss"], django_capture_on_commit_callbacks, per_item=2, reviewers=[team["rev1"], team["rev2"]]
    )
    for review in Review.objects.filter(round=review_round, item__in=more[:5]):
        give(review, "accept" if review.item_id % 2 else "revision")
    for _ in range(5):
        item = create_item(benchmark, task=counting, user=team["rev1"], assignee=team["rev1"])
        Assignment.objects.create(benchmark=benchmark, assignee=team["rev1"], task=counting, item=item)
    assert Review.objects.filter(reviewer=team["rev1"], verdict="").count() > 15
    for path, count in small.items():
        assert queries_for(client, path, django_assert_max_num_queries, limit=count) <= count, path
    assert queries_for(client, f"/b/demo/items/{mine.pk}/", django_assert_max_num_queries, limit=editor_small) <= editor_small


def test_round_numbers_come_from_the_cache_until_a_verdict_changes_them(
    benchmark, team, counting, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    items = submitted(benchmark, counting, team["ann"], 3)
    review_round = open_round(
        benchmark, team["boss"], django_capture_on_commit_callbacks, per_item=2, reviewers=[team["rev1"], team["rev2"]]
    )
    reviews = list(Review.objects.filter(round=review_round, item=items[0]).order_by("reviewer__username"))
    give(reviews[0], "accept")
    first = selectors.round_stats(review_round)
    assert first["reviews_done"] == 1 and first["accepted"] == 0
    with django_assert_max_num_queries(1):  # the round's state only
        assert selectors.round_stats(review_round) == first
    give(reviews[1], "accept")
    second = selectors.round_stats(review_round)
    assert second["reviews_done"] == 2 and second["accepted"] == 1 and second["agreement"]["percent_agreement"] == 1.0
    assert second == selectors.compute_round_stats(review_round)

    review_round = services.close_round(review_round, user=team["boss"])
    closed = selectors.round_stats(review_round)
    assert closed["status"] == "closed" and closed["unreviewed"] == 2 and closed == selectors.compute_round_stats(review_round)


def test_the_dashboard_recounts_at_most_every_so_many_seconds(
    benchmark, team, counting, client_for, settings, django_assert_max_num_queries
):
    settings.BENCHFORGE_DASHBOARD_CACHE_SECONDS = 30
    client = client_for(team["ann"])
    submitted(benchmark, counting, team["ann"], 2)
    counted = queries_for(client, "/b/demo/", django_assert_max_num_queries)
    cached = queries_for(client, "/b/demo/", django_assert_max_num_queries)
    assert cached <= counted - 4  # item counts, submissions per annotator and per task, open work, rounds
    # The page says how old its numbers may be: the time of the count it shows, not of the request.
    first = re.search(r'id="counted-at">Counted at (\d\d:\d\d:\d\d); .* every 30 s', client.get("/b/demo/").content.decode())
    time.sleep(1.1)
    again = re.search(r'id="counted-at">Counted at (\d\d:\d\d:\d\d)', client.get("/b/demo/").content.decode())
    assert first and again and first.group(1) == again.group(1)
    settings.BENCHFORGE_DASHBOARD_CACHE_SECONDS = 0
    submitted(benchmark, counting, team["ann"], 1)
    page = client.get("/b/demo/").content.decode()
    assert 'id="counted-at"' not in page  # counted for this request: nothing to say
    navigation.changed()  # the navigation's counts afresh too, as in the first count
    assert queries_for(client, "/b/demo/", django_assert_max_num_queries) == counted
    assert 'data-task="counting"' in page

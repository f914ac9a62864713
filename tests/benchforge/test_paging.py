"""Lists that may hold a million rows page by keyset and show a capped count (benchforge.paging):
the count stops at BENCHFORGE_LIST_COUNT_CAP ("20+"), pages go forward and back by the rows'
sort values, and rows added between two page views are neither skipped nor shown twice."""

import re

import pytest
from django.utils import timezone

from annotation import views as annotation_views
from annotation.models import Assignment, Item
from review import views as review_views
from review.models import Review, ReviewRound, RoundItem

pytestmark = pytest.mark.django_db


def _items(benchmark, author, n):
    task = benchmark.tasks.first()
    return Item.objects.bulk_create([Item(benchmark=benchmark, task=task, author=author, kind="single_turn") for _ in range(n)])


def _page(client, url):
    response = client.get(url)
    assert response.status_code == 200
    page = response.context["page"]
    html = response.content.decode()
    links = dict(re.findall(r'<a rel="(next|prev)" href="([^"]+)"', html))
    return (
        [row.pk if hasattr(row, "pk") else row["id"] for row in page],
        page,
        {k: v.replace("&amp;", "&") for k, v in links.items()},
        html,
    )


@pytest.fixture
def small_pages(settings, monkeypatch):
    settings.BENCHFORGE_LIST_COUNT_CAP = 20
    monkeypatch.setattr(annotation_views, "ITEMS_PAGE_SIZE", 10)
    monkeypatch.setattr(annotation_views, "QUEUE_PAGE_SIZE", 10)
    monkeypatch.setattr(review_views, "REVIEW_QUEUE_PAGE_SIZE", 10)


def test_the_items_list_shows_a_capped_count_and_pages_by_keyset_without_skipping_or_repeating(
    benchmark, make_user, client_for, small_pages
):
    lead = make_user("researcher", "lead", benchmarks=[benchmark])
    client = client_for(lead)
    first_ids = [item.pk for item in _items(benchmark, lead, 35)]
    url = f"/b/{benchmark.slug}/items/"

    ids, page, links, html = _page(client, url)
    assert ids == sorted(first_ids, reverse=True)[:10]  # newest first
    assert page.count == 20 and page.count_more and "20+ in all" in html  # capped: no full COUNT
    assert "prev" not in links

    seen = list(ids)
    ids, page, links, _ = _page(client, url + links["next"])
    seen += ids
    added = [item.pk for item in _items(benchmark, lead, 7)]  # new items arrive between two page views
    while "next" in links:
        ids, page, links, _ = _page(client, url + links["next"])
        seen += ids
    assert seen == sorted(first_ids, reverse=True)  # every item once, none skipped, none twice, in order

    while "prev" in links:
        ids, page, links, _ = _page(client, url + links["prev"])
    # Back at the start: a full first page, which the new items lead.
    assert ids == sorted(first_ids + added, reverse=True)[:10] and not page.has_previous

    ids, page, _, html = _page(client, url + "?author=lead&after=garbage")  # a mangled cursor: the first page
    assert ids == sorted(first_ids + added, reverse=True)[:10]


def test_a_list_under_the_cap_shows_its_exact_count(benchmark, make_user, client_for, small_pages):
    lead = make_user("researcher", "lead", benchmarks=[benchmark])
    _items(benchmark, lead, 5)
    _, page, links, _ = _page(client_for(lead), f"/b/{benchmark.slug}/items/?author=lead")
    assert page.count == 5 and not page.count_more and links == {}


def test_the_queue_pages_by_keyset_through_ties_in_time(benchmark, make_user, client_for, small_pages):
    """Assignments made together share a time: the id breaks the tie, so none is skipped."""
    anna = make_user("annotator", "anna", benchmarks=[benchmark])
    items = _items(benchmark, anna, 25)
    when = timezone.now()
    made = Assignment.objects.bulk_create(
        [Assignment(benchmark=benchmark, assignee=anna, task=item.task, item=item, created_at=when) for item in items]
    )
    url = f"/b/{benchmark.slug}/queue/"
    ids, page, links, html = _page(client_for(anna), url)
    assert page.count == 20 and "20+ open assignments" in html
    seen = list(ids)
    while "next" in links:
        ids, page, links, _ = _page(client_for(anna), url + links["next"])
        seen += ids
    assert seen == [a.pk for a in made]


def test_the_review_queue_pages_by_keyset_over_rounds_and_items(benchmark, make_user, client_for, small_pages):
    lead = make_user("researcher", "lead", benchmarks=[benchmark])
    rita = make_user("reviewer", "rita", benchmarks=[benchmark])
    items = _items(benchmark, lead, 14)
    reviews = []
    # Two rounds, each item in both (open_round numbers rounds as it makes them, under a lock, so a
    # round's id and number grow together; the queue pages by the id): round 1's reviews come first.
    for number in (1, 2):
        review_round = ReviewRound.objects.create(benchmark=benchmark, number=number, created_by=lead, status="open")
        for item in items:
            entry = RoundItem.objects.create(round=review_round, item=item, version=1)
            reviews.append(Review.objects.create(round=review_round, entry=entry, item=item, reviewer=rita))
    expected = [r.pk for r in sorted(reviews, key=lambda r: (r.round.number, r.item_id, r.pk))]
    assert expected[:14] == [r.pk for r in reviews if r.round.number == 1]
    url = f"/b/{benchmark.slug}/review/queue/"
    ids, page, links, html = _page(client_for(rita), url)
    assert page.count == 20 and page.count_more and "20+ items to review" in html
    seen = list(ids)
    while "next" in links:
        ids, page, links, _ = _page(client_for(rita), url + links["next"])
        seen += ids
    assert seen == expected
    back = list(ids)
    while "prev" in links:
        ids, page, links, _ = _page(client_for(rita), url + links["prev"])
        back = ids + back
    assert back == expected


def test_a_kept_count_follows_every_change_in_its_benchmark(benchmark, make_user, client_for, small_pages):
    """The count is kept between page views (no count query per view) until something changes in
    the benchmark: a save, a delete, a request that writes."""
    lead = make_user("researcher", "lead", benchmarks=[benchmark])
    client = client_for(lead)
    url = f"/b/{benchmark.slug}/items/?author=lead"
    _items(benchmark, lead, 5)
    assert _page(client, url)[1].count == 5
    Item.objects.create(benchmark=benchmark, task=benchmark.tasks.first(), author=lead, kind="single_turn")  # a save
    assert _page(client, url)[1].count == 6
    Item.objects.filter(author=lead).first().delete()
    assert _page(client, url)[1].count == 5
    _items(benchmark, lead, 2)  # in bulk: no signal...
    client.post(f"/b/{benchmark.slug}/items/")  # ...but the request that wrote it drops the kept numbers
    assert _page(client, url)[1].count == 7


def test_a_kept_count_builds_no_count_queryset(rf, monkeypatch):
    """A page whose count is kept does not even build the queryset that would count it: the queue and
    the review queue pass a function, called only when the count is counted."""
    from benchforge import paging

    built = []

    def count_rows():
        built.append(1)
        return Item.objects.none()

    def kept(compute):
        return 42, False  # what a kept count gives back without computing

    page = paging.keyset_page(rf.get("/"), Item.objects.none(), ("id",), 10, count_queryset=count_rows, keep_count=kept)
    assert page.count == 42 and built == []
    page = paging.keyset_page(rf.get("/"), Item.objects.none(), ("id",), 10, count_queryset=count_rows, keep_count=lambda f: f())
    assert page.count == 0 and built == [1]

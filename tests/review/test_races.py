"""Review rounds under simultaneous requests (the race kit, tests/races.py; Postgres only): two
reviewers of one item at once, one reviewer sending two verdicts at once, verdicts racing the
round's closing, and a round opened twice at once. The invariants are asked in SQL."""

from functools import partial

import pytest

from review.models import Review, ReviewRound
from tests.races import broken, race, rows, server_errors, violations
from tests.review.test_rounds import submitted

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("postgres")]
ITEMS = 12


@pytest.fixture
def team(make_user, benchmark, annotator):
    return {
        "ann": annotator,
        "rev1": make_user("reviewer", "rev1", benchmarks=[benchmark]),
        "rev2": make_user("reviewer", "rev2", benchmarks=[benchmark]),
        "boss": make_user("researcher", "boss", benchmarks=[benchmark]),
    }


@pytest.fixture
def open_round(benchmark, team, counting):
    from review import services

    def make(per_item: int, reviewers, items: int = ITEMS, **kwargs):
        submitted(benchmark, counting, team["ann"], items)
        review_round = services.open_round(benchmark, user=team["boss"], per_item=per_item, reviewers=reviewers, **kwargs)
        review_round.refresh_from_db()
        assert review_round.status == ReviewRound.Status.OPEN, review_round.job.message
        return review_round

    return make


def verdict(api, review: Review, choice: str):
    body = {"verdict": choice, "reasons": [] if choice == "accept" else ["incomplete"], "version": review.item.version}
    return partial(api.post, f"/api/v1/benchmarks/demo/reviews/{review.pk}/", body, format="json")


def test_two_reviewers_of_one_item_at_once_decide_it(open_round, team, api_for):
    review_round = open_round(2, [team["rev1"], team["rev2"]])
    calls = []
    for n, review in enumerate(Review.objects.filter(round=review_round).select_related("item").order_by("pk")):
        choice = "revision" if n % 5 == 0 else "accept"
        calls.append(verdict(api_for(review.reviewer), review, choice))
    results = race(calls)
    assert server_errors(results) == []
    assert {r.status for r in results} == {200}
    assert broken() == {}
    assert rows("SELECT status FROM review_reviewround WHERE id = %s", [review_round.pk]) == [("closed",)]


def test_one_reviewer_sending_two_verdicts_at_once_is_decided_once(open_round, team, api_for):
    review_round = open_round(1, [team["rev1"]])
    api = [api_for(team["rev1"]), api_for(team["rev1"])]
    reviews = list(Review.objects.filter(round=review_round).select_related("item").order_by("pk"))
    calls = []
    for n, review in enumerate(reviews):
        # Half the items get two different verdicts at once, half the same verdict twice (a double click).
        second = "reject" if n % 2 else "accept"
        calls += [verdict(api[0], review, "accept"), verdict(api[1], review, second)]
    results = race(calls)
    assert server_errors(results) == []
    for n in range(len(reviews)):
        pair = sorted(r.status for r in results[2 * n : 2 * n + 2])
        # The same verdict twice is one verdict (both answered 200); a different second one is refused.
        assert pair == ([200, 409] if n % 2 else [200, 200]), (n, [r.body for r in results[2 * n : 2 * n + 2]])
    assert broken() == {}
    assert (
        violations(
            """
        SELECT r.id, r.verdict, e.outcome FROM review_review r JOIN review_rounditem e ON e.id = r.entry_id
        WHERE (r.verdict = 'accept' AND e.outcome <> 'accepted') OR (r.verdict = 'reject' AND e.outcome <> 'rejected')
        """
        )
        == []
    )


def test_verdicts_racing_the_round_closing_leave_no_item_behind(open_round, team, api_for):
    review_round = open_round(1, [team["rev1"]])
    boss = [api_for(team["boss"]) for _ in range(2)]
    reviews = list(Review.objects.filter(round=review_round).select_related("item").order_by("pk"))
    calls = [verdict(api_for(team["rev1"]), review, "accept" if n % 3 else "revision") for n, review in enumerate(reviews)]
    calls += [partial(c.post, f"/api/v1/benchmarks/demo/review/rounds/{review_round.number}/close/") for c in boss]
    results = race(calls)
    assert server_errors(results) == []
    # A verdict that came after the closing is refused (the round is closed), never lost halfway.
    assert {r.status for r in results} <= {200, 400, 409}
    assert broken() == {}
    assert rows("SELECT status FROM review_reviewround WHERE id = %s", [review_round.pk]) == [("closed",)]
    late = [review for review, r in zip(reviews, results) if r.status != 200]
    assert all(Review.objects.get(pk=review.pk).verdict == "" for review in late)


def test_a_round_opened_twice_at_once_is_one_round(benchmark, team, counting, api_for):
    submitted(benchmark, counting, team["ann"], 6)
    clients = [api_for(team["boss"]) for _ in range(4)]
    body = {"per_item": 1, "reviewers": ["rev1", "rev2"]}
    results = race([partial(c.post, "/api/v1/benchmarks/demo/review/rounds/", body, format="json") for c in clients])
    assert server_errors(results) == []
    assert sorted(r.status for r in results) == [201, 409, 409, 409], [r.body for r in results]
    assert rows("SELECT count(*) FROM review_reviewround") == [(1,)]
    assert violations("SELECT item_id FROM review_rounditem GROUP BY item_id HAVING count(*) > 1") == []
    assert broken() == {}

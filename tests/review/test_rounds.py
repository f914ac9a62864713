"""Review rounds: who reviews what, verdicts and their rules, the revision loop, rejections and
quota gaps, closing, expert verification, and the numbers (checked against hand-computed values)."""

import csv
import io
from collections import Counter

import pytest

from annotation.models import Assignment, Item
from annotation.services import change_status, create_item, submit_item, update_item
from annotation.services.assignments import remaining_quota
from benchforge.errors import DomainError, IllegalTransition, NotAllowed, StaleVersion
from jobs.models import Job
from review import selectors, services
from review.models import Review, ReviewRound, RoundItem
from tests.factories import complete_fields, make_image

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(make_user, benchmark, annotator):
    return {
        "ann": annotator,
        "ann2": make_user("annotator", "abe", benchmarks=[benchmark]),
        "rev1": make_user("reviewer", "rev1", benchmarks=[benchmark]),
        "rev2": make_user("reviewer", "rev2", benchmarks=[benchmark]),
        "rev3": make_user("reviewer", "rev3", benchmarks=[benchmark]),
        "boss": make_user("researcher", "boss", benchmarks=[benchmark]),
    }


def submitted(benchmark, task, author, n=1):
    """`n` complete items written and submitted by `author`."""
    items = []
    for _ in range(n):
        image = make_image(benchmark, tasks=[task])
        item = create_item(benchmark, task=task, user=author, assignee=author)
        item = update_item(item, complete_fields(image), expected_version=item.version, user=author)
        items.append(submit_item(item, user=author))
    return items


def open_round(benchmark, boss, django_capture_on_commit_callbacks, **kwargs):
    with django_capture_on_commit_callbacks(execute=True):  # its job runs when the transaction commits
        review_round = services.open_round(benchmark, user=boss, **kwargs)
    review_round.refresh_from_db()
    assert review_round.status == ReviewRound.Status.OPEN, review_round.job.message
    return review_round


def give(review, verdict, reasons=(), comment=""):
    review.refresh_from_db()
    item = Item.objects.get(pk=review.item_id)
    reasons = reasons or ([] if verdict == "accept" else ["incomplete"])
    return services.submit_review(
        review, user=review.reviewer, verdict=verdict, reasons=reasons, comment=comment, item_version=item.version
    )


@pytest.fixture
def rounds(benchmark, team, counting, django_capture_on_commit_callbacks):
    def make(**kwargs):
        return open_round(benchmark, team["boss"], django_capture_on_commit_callbacks, **kwargs)

    return make


# ---- opening -------------------------------------------------------------------------------------


def test_a_round_spreads_items_over_reviewers_who_did_not_write_them(benchmark, team, counting, rounds):
    items = submitted(benchmark, counting, team["ann"], 6) + submitted(benchmark, counting, team["rev1"], 3)
    review_round = rounds(per_item=2, reviewers=[team["rev1"], team["rev2"], team["rev3"]])
    assert review_round.number == 1 and review_round.job.status == Job.Status.SUCCEEDED
    assert {i.status for i in Item.objects.filter(pk__in=[i.pk for i in items])} == {"in_review"}
    reviews = list(Review.objects.filter(round=review_round))
    assert len(reviews) == 18
    for item in items:
        mine = [r.reviewer for r in reviews if r.item_id == item.pk]
        assert len(mine) == 2 and item.author not in mine  # never one's own work
    load = [sum(r.reviewer == person for r in reviews) for person in (team["rev1"], team["rev2"], team["rev3"])]
    assert max(load) - min(load) <= 1  # balanced
    entry = RoundItem.objects.get(round=review_round, item=items[0])
    assert entry.version == Item.objects.get(pk=items[0].pk).version


def test_opening_is_refused_clearly(benchmark, team, counting, rounds, django_capture_on_commit_callbacks):
    with pytest.raises(DomainError, match="No answered"):
        services.open_round(benchmark, user=team["boss"])
    submitted(benchmark, counting, team["rev1"])
    with pytest.raises(DomainError, match="would need 2 reviewer"):
        services.open_round(benchmark, user=team["boss"], per_item=2, reviewers=[team["rev1"], team["rev2"]])
    with pytest.raises(NotAllowed, match="needs the researcher role"):
        services.open_round(benchmark, user=team["rev2"])
    with pytest.raises(DomainError, match="cannot review here"):
        services.open_round(benchmark, user=team["boss"], reviewers=[team["ann"]])
    rounds()
    submitted(benchmark, counting, team["ann"])
    with pytest.raises(DomainError, match="Round 1 is still open"):
        services.open_round(benchmark, user=team["boss"])


# ---- reviewing ---------------------------------------------------------------------------------------


def test_nobody_reviews_their_own_item(benchmark, team, counting, rounds, api_for):
    (item,) = submitted(benchmark, counting, team["ann"])
    rounds(reviewers=[team["rev1"]])
    review = Review.objects.get(item=item)
    # Even when someone else's review slot is reached by the author (made a reviewer meanwhile):
    from benchforge.roles import set_role

    set_role(team["ann"], "reviewer")
    with pytest.raises(NotAllowed, match="assigned to someone else"):
        services.submit_review(review, user=team["ann"], verdict="accept", item_version=item.version + 1)
    Review.objects.filter(pk=review.pk).update(reviewer=team["ann"])
    with pytest.raises(NotAllowed, match="your own work"):
        services.submit_review(
            Review.objects.get(pk=review.pk), user=team["ann"], verdict="accept", item_version=item.version + 1
        )
    response = api_for(team["ann"]).post(
        f"/api/v1/benchmarks/demo/reviews/{review.pk}/", {"verdict": "accept", "version": item.version + 1}, format="json"
    )
    assert response.status_code == 403 and "your own work" in response.json()["detail"]


def test_whoever_edited_an_item_does_not_review_it(benchmark, team, counting, rounds, client_for):
    # A researcher corrects two submitted items (researchers may edit any item); the third has only
    # its author's edits.
    corrected = submitted(benchmark, counting, team["ann"], 3)
    for item in corrected[:2]:
        update_item(item, {"question": item.question + " (corrected)"}, expected_version=item.version, user=team["boss"])
    with pytest.raises(DomainError, match="other than their author, assignee and editors"):
        services.open_round(benchmark, user=team["boss"], reviewers=[team["boss"]])
    review_round = rounds(per_item=2, reviewers=[team["boss"], team["rev1"], team["rev2"]])
    reviewers = {(r.item_id, r.reviewer_id) for r in Review.objects.filter(round=review_round)}
    assert {(i.pk, team["boss"].pk) for i in corrected[:2]}.isdisjoint(reviewers)
    assert (corrected[2].pk, team["boss"].pk) in reviewers  # the author's own edits make nobody else an editor
    # Reaching an editor's item anyway is refused, in the service and on the page.
    review = Review.objects.filter(round=review_round, item=corrected[0]).first()
    Review.objects.filter(pk=review.pk).update(reviewer=team["boss"])
    item = Item.objects.get(pk=corrected[0].pk)
    with pytest.raises(NotAllowed, match=f"Item #{item.pk} is your own work"):
        services.submit_review(Review.objects.get(pk=review.pk), user=team["boss"], verdict="accept", item_version=item.version)
    page = client_for(team["boss"]).get(f"/b/demo/review/{review.pk}/")
    assert "your own work" in page.content.decode()


def test_an_item_cannot_skip_review(benchmark, team, counting, api_for):
    (item,) = submitted(benchmark, counting, team["ann"])
    with pytest.raises(IllegalTransition, match="cannot move from 'Answered' to 'Accepted'"):
        change_status(item, "accepted", user=team["boss"], action="edited")
    api_for(team["boss"]).patch(
        f"/api/v1/benchmarks/demo/items/{item.pk}/", {"version": item.version, "status": "accepted"}, format="json"
    )
    assert Item.objects.get(pk=item.pk).status == "answered"  # status is not an editable field


def test_a_review_of_an_older_version_is_refused(benchmark, team, counting, rounds, api_for):
    (item,) = submitted(benchmark, counting, team["ann"])
    rounds(reviewers=[team["rev1"]])
    review = Review.objects.get(item=item)
    seen = Item.objects.get(pk=item.pk).version
    update_item(
        Item.objects.get(pk=item.pk), {"question": "A researcher fixed a typo?"}, expected_version=seen, user=team["boss"]
    )
    with pytest.raises(StaleVersion, match=f"you read version {seen}, it is now version {seen + 1}"):
        services.submit_review(review, user=team["rev1"], verdict="accept", item_version=seen)
    response = api_for(team["rev1"]).post(
        f"/api/v1/benchmarks/demo/reviews/{review.pk}/", {"verdict": "accept", "version": seen}, format="json"
    )
    assert response.status_code == 409 and response.json()["current_version"] == seen + 1
    give(review, "accept")
    assert Item.objects.get(pk=item.pk).status == "accepted"


def test_reasons_are_needed_unless_accepting(benchmark, team, counting, rounds):
    (item,) = submitted(benchmark, counting, team["ann"])
    rounds(reviewers=[team["rev1"]])
    review = Review.objects.get(item=item)
    version = Item.objects.get(pk=item.pk).version
    with pytest.raises(DomainError, match="at least one reason"):
        services.submit_review(review, user=team["rev1"], verdict="reject", item_version=version)
    with pytest.raises(DomainError, match="Unknown reason code"):
        services.submit_review(review, user=team["rev1"], verdict="reject", reasons=["boring"], item_version=version)


@pytest.mark.parametrize(
    "rule, verdicts, outcome",
    [
        ("unanimous", ["accept", "accept", "accept"], "accepted"),
        ("unanimous", ["accept", "accept", "revision"], "revision"),
        ("unanimous", ["reject", "reject", "reject"], "rejected"),
        ("unanimous", ["accept", "reject", "reject"], "revision"),
        ("majority", ["accept", "accept", "reject"], "accepted"),
        ("majority", ["reject", "reject", "accept"], "rejected"),
        ("majority", ["accept", "revision"], "revision"),  # a tie
        ("majority", ["accept", "reject", "revision"], "revision"),
        ("any_reject", ["accept", "accept", "reject"], "rejected"),
        ("any_reject", ["accept", "revision", "accept"], "revision"),
        ("any_reject", ["accept", "accept"], "accepted"),
    ],
)
def test_overlapping_verdicts_resolve_by_the_rule(rule, verdicts, outcome):
    assert services.decide(rule, verdicts) == outcome


def test_three_reviewers_under_each_rule_move_the_item(benchmark, team, counting, rounds):
    statuses = {}
    for rule in ("unanimous", "majority", "any_reject"):
        (item,) = submitted(benchmark, counting, team["ann"])
        review_round = rounds(rule=rule, per_item=3, reviewers=[team["rev1"], team["rev2"], team["rev3"]])
        for review, verdict in zip(
            Review.objects.filter(round=review_round).order_by("reviewer__username"), ["accept", "accept", "reject"]
        ):
            give(review, verdict)
        statuses[rule] = Item.objects.get(pk=item.pk).status
        assert ReviewRound.objects.get(pk=review_round.pk).status == "closed"  # every review in: it closed itself
    assert statuses == {"unanimous": "revision", "majority": "accepted", "any_reject": "rejected"}


# ---- the loop ----------------------------------------------------------------------------------------


def test_revision_returns_the_item_with_the_reviews_then_the_next_round_takes_its_new_version(
    benchmark, team, counting, rounds, client_for
):
    (item,) = submitted(benchmark, counting, team["ann"])
    first = rounds(reviewers=[team["rev1"]])
    give(Review.objects.get(round=first), "revision", ["factual_error", "criteria_missing"], "There are four apples, not three.")
    item = Item.objects.get(pk=item.pk)
    assert item.status == "revision"
    assert Assignment.objects.get(item=item).status == "open"  # back in the author's queue
    feedback = client_for(team["ann"]).get(f"/b/demo/items/{item.pk}/feedback/").content.decode()
    assert "There are four apples, not three." in feedback and "Factual error" in feedback
    assert "rev1" in feedback  # the round closed itself and reveals reviewers
    item = update_item(
        item,
        {"reference_answer": "There are four red apples on the table, two on each side."},
        expected_version=item.version,
        user=team["ann"],
    )
    feedback = client_for(team["ann"]).get(f"/b/demo/items/{item.pk}/feedback/").content.decode()
    assert "Your changes since the version they judged" in feedback and "four" in feedback
    submit_item(item, user=team["ann"])

    second = rounds(reviewers=[team["rev2"]])
    review = Review.objects.get(round=second)
    assert review.item_id == item.pk and second.number == 2
    page = client_for(team["rev2"]).get(f"/b/demo/review/{review.pk}/").content.decode()
    assert "Changed since round 1" in page and "four" in page
    give(review, "accept")
    assert Item.objects.get(pk=item.pk).status == "accepted"
    assert [s["accepted"] for s in selectors.rounds_summary(benchmark)] == [0, 1]
    assert [s["revision"] for s in selectors.rounds_summary(benchmark)] == [1, 0]


def test_reviewers_stay_anonymous_until_the_round_closes_when_configured(benchmark, team, counting, rounds, client_for):
    items = submitted(benchmark, counting, team["ann"], 2)
    review_round = rounds(reviewers=[team["rev1"]], reveal_reviewers=True)
    give(Review.objects.get(round=review_round, item=items[0]), "revision", comment="Say more.")
    feedback = client_for(team["ann"]).get(f"/b/demo/items/{items[0].pk}/feedback/").content.decode()
    assert "Say more." in feedback and "rev1" not in feedback  # round still open
    services.close_round(review_round, user=team["boss"])
    assert "rev1" in client_for(team["ann"]).get(f"/b/demo/items/{items[0].pk}/feedback/").content.decode()


def test_a_rejected_item_leaves_a_quota_gap_that_a_replacement_fills(benchmark, team, counting, rounds, client_for):
    from annotation.services import assign_images

    counting.quota = 1
    counting.save()
    image = make_image(benchmark, tasks=[counting])
    assign_images(benchmark, task=counting, image_ids=[image.pk], assignee=team["ann"], user=team["boss"])
    from annotation.services import start_assignment

    item = start_assignment(Assignment.objects.get(image=image), user=team["ann"])
    item = update_item(item, complete_fields(image), expected_version=item.version, user=team["ann"])
    submit_item(item, user=team["ann"])
    assert remaining_quota(counting) == 0
    review_round = rounds(reviewers=[team["rev1"]])
    give(Review.objects.get(round=review_round), "reject", ["no_image_needed"])
    assert Item.objects.get(pk=item.pk).status == "rejected"
    assert remaining_quota(counting) == 1
    gaps = selectors.quota_gaps(benchmark)
    assert [(g["task"].slug, g["short"], g["rejected"]) for g in gaps] == [("counting", 1, 1)]
    page = client_for(team["boss"]).get(f"/b/demo/review/rounds/{review_round.number}/").content.decode()
    assert 'data-task="counting"' in page and "assign replacements" in page
    replacement = make_image(benchmark, tasks=[counting])
    assert (
        assign_images(benchmark, task=counting, image_ids=[replacement.pk], assignee=team["ann2"], user=team["boss"])["assigned"]
        == 1
    )
    assert remaining_quota(counting) == 0


def test_closing_decides_what_it_can_returns_the_rest_and_is_idempotent(benchmark, team, counting, rounds, api_for):
    reviewed, untouched = submitted(benchmark, counting, team["ann"], 2)
    review_round = rounds(per_item=2, reviewers=[team["rev1"], team["rev2"]])
    give(Review.objects.get(round=review_round, item=reviewed, reviewer=team["rev1"]), "accept")
    response = api_for(team["boss"]).post(f"/api/v1/benchmarks/demo/review/rounds/{review_round.number}/close/")
    assert response.status_code == 200 and response.json()["status"] == "closed"
    assert Item.objects.get(pk=reviewed.pk).status == "accepted"  # decided from the one verdict given
    assert Item.objects.get(pk=untouched.pk).status == "answered"  # waits for the next round
    entries = {e.item_id: e.outcome for e in RoundItem.objects.filter(round=review_round)}
    assert entries == {reviewed.pk: "accepted", untouched.pk: "unreviewed"}
    before = (ReviewRound.objects.get(pk=review_round.pk).closed_at, Item.objects.get(pk=untouched.pk).version)
    again = api_for(team["boss"]).post(f"/api/v1/benchmarks/demo/review/rounds/{review_round.number}/close/")
    assert again.status_code == 200
    assert (ReviewRound.objects.get(pk=review_round.pk).closed_at, Item.objects.get(pk=untouched.pk).version) == before
    with pytest.raises(DomainError, match="Round 1 is closed"):
        give(Review.objects.get(round=review_round, item=untouched, reviewer=team["rev2"]), "accept")


def test_expert_verification_over_a_sample_per_task(benchmark, team, counting, rounds):
    ocr = benchmark.tasks.get(slug="ocr")
    items = submitted(benchmark, counting, team["ann"], 4) + submitted(benchmark, ocr, team["ann"], 3)
    cross = rounds(reviewers=[team["rev1"]])
    for review in Review.objects.filter(round=cross):
        give(review, "accept")
    assert {Item.objects.get(pk=i.pk).status for i in items} == {"accepted"}
    with pytest.raises(DomainError, match="not a researcher"):
        services.open_round(benchmark, user=team["boss"], kind="expert", reviewers=[team["rev1"]])
    expert = rounds(kind="expert", sample_per_task=2, seed=7)
    entries = list(RoundItem.objects.filter(round=expert).select_related("item"))
    assert sorted(Counter(e.item.task.slug for e in entries).items()) == [("counting", 2), ("ocr", 2)]
    assert {r.reviewer for r in Review.objects.filter(round=expert)} == {team["boss"]}
    first, second, *rest = Review.objects.filter(round=expert).order_by("id")
    give(first, "accept")
    give(second, "reject", ["factual_error"])
    assert Item.objects.get(pk=first.item_id).status == "accepted"
    assert Item.objects.get(pk=second.item_id).status == "rejected"
    assert {e.item_id for e in entries} == {e.item_id for e in RoundItem.objects.filter(round=expert)}


# ---- numbers -----------------------------------------------------------------------------------------


def test_agreement_matches_hand_computed_values_with_missing_ratings():
    # Three reviewers, four items, not everyone on every item:
    #   item 1: r1 accept,   r2 accept
    #   item 2: r1 accept,   r2 revision, r3 revision
    #   item 3:              r2 reject,   r3 reject
    #   item 4: r1 revision,              r3 accept
    reviews = [
        (1, 1, "accept"),
        (1, 2, "accept"),
        (2, 1, "accept"),
        (2, 2, "revision"),
        (2, 3, "revision"),
        (3, 2, "reject"),
        (3, 3, "reject"),
        (4, 1, "revision"),
        (4, 3, "accept"),
    ]
    result = selectors.agreement(reviews)
    # Pairs: item 1 agrees 1/1, item 2 agrees 1/3, item 3 1/1, item 4 0/1: 3 of 6.
    assert result["pairs"] == 6 and result["percent_agreement"] == pytest.approx(0.5)
    # Cohen's kappa by hand: (r1, r2) on items 1-2: po 1/2, pe 1/2 -> 0; (r1, r3) on items 2, 4: po 0, pe 1/2 -> -1;
    # (r2, r3) on items 2-3: po 1, pe 1/2 -> 1.
    assert {pair: v["kappa"] for pair, v in result["kappa_pairs"].items()} == {
        (1, 2): pytest.approx(0.0),
        (1, 3): pytest.approx(-1.0),
        (2, 3): pytest.approx(1.0),
    }
    assert result["mean_kappa"] == pytest.approx(0.0)
    # Krippendorff's alpha (nominal) by the coincidence matrix: n = 9 pairable values; o(A,A) 2,
    # o(A,Rv) = o(Rv,A) = 2, o(Rv,Rv) 1, o(Rj,Rj) 2; n_A 4, n_Rv 3, n_Rj 2.
    # D_o = 4/9; D_e = 2(4*3 + 4*2 + 3*2) / (9*8) = 13/18; alpha = 1 - (4/9)/(13/18) = 5/13.
    assert result["alpha"] == pytest.approx(5 / 13)


def test_agreement_is_undefined_rather_than_invented():
    single = selectors.agreement([(1, 1, "accept")])
    assert single["overlapping_items"] == 0 and single["percent_agreement"] is None and single["alpha"] is None
    same = selectors.agreement([(1, 1, "accept"), (1, 2, "accept"), (2, 1, "accept"), (2, 2, "accept")])
    assert same["percent_agreement"] == 1.0 and same["mean_kappa"] is None and same["alpha"] is None


def test_round_numbers_from_the_api_as_json_and_csv(benchmark, team, counting, rounds, api_for, client_for):
    items = submitted(benchmark, counting, team["ann"], 3)
    review_round = rounds(per_item=2, reviewers=[team["rev1"], team["rev2"]])
    verdicts = {items[0].pk: ("accept", "accept"), items[1].pk: ("accept", "revision"), items[2].pk: ("reject", "reject")}
    for item_id, (first, second) in verdicts.items():
        reviews = Review.objects.filter(round=review_round, item_id=item_id).order_by("reviewer__username")
        give(reviews[0], first, ["factual_error"] if first != "accept" else [])
        give(reviews[1], second, ["unclear"] if second != "accept" else [])
    stats = api_for(team["boss"]).get(f"/api/v1/benchmarks/demo/review/rounds/{review_round.number}/").json()
    assert (stats["accepted"], stats["revision"], stats["rejected"], stats["pending"]) == (1, 1, 1, 0)
    assert stats["agreement"]["percent_agreement"] == pytest.approx(2 / 3)
    assert {r["code"]: r["count"] for r in stats["reasons"]} == {"factual_error": 1, "unclear": 2}
    assert [(r["reviewer"], r["assigned"], r["done"]) for r in stats["load"]] == [("rev1", 3, 3), ("rev2", 3, 3)]
    rows = list(
        csv.reader(
            io.StringIO(
                api_for(team["boss"])
                .get(f"/api/v1/benchmarks/demo/review/rounds/{review_round.number}/", {"format": "csv"})
                .content.decode()
            )
        )
    )
    assert ["outcomes", "rejected", "1", ""] in rows and any(r[:2] == ["agreement", "alpha"] for r in rows)
    page_csv = client_for(team["boss"]).get(f"/b/demo/review/rounds/{review_round.number}/stats.csv")
    assert page_csv["Content-Type"].startswith("text/csv") and b"percent_agreement" in page_csv.content
    assert api_for(team["rev1"]).get(f"/api/v1/benchmarks/demo/review/rounds/{review_round.number}/").status_code == 403
    dashboard = client_for(team["ann"]).get("/b/demo/").content.decode()
    assert 'id="rounds-chart"' in dashboard and 'id="review-overview"' in dashboard


def test_reviewers_see_only_their_own_reviews(benchmark, team, counting, rounds, client_for, api_for):
    (item,) = submitted(benchmark, counting, team["ann"])
    review_round = rounds(per_item=2, reviewers=[team["rev1"], team["rev2"]])
    mine = Review.objects.get(round=review_round, reviewer=team["rev1"])
    theirs = Review.objects.get(round=review_round, reviewer=team["rev2"])
    give(theirs, "reject", ["sensitive"], "Do not use this.")
    assert client_for(team["rev1"]).get(f"/b/demo/review/{theirs.pk}/").status_code == 404
    page = client_for(team["rev1"]).get(f"/b/demo/review/{mine.pk}/").content.decode()
    assert "Do not use this." not in page and "Sensitive" in page  # the reason list, not their verdict
    assert 'value="reject" data-key="x" checked' not in page
    listed = api_for(team["rev1"]).get("/api/v1/benchmarks/demo/reviews/").json()["results"]
    assert [r["id"] for r in listed] == [mine.pk]
    assert client_for(team["ann"]).get("/b/demo/review/").status_code == 403


def test_a_round_that_hides_its_reviewers_hides_them_in_item_history_too(benchmark, team, counting, rounds, client_for, api_for):
    items = submitted(benchmark, counting, team["ann"], 1)
    review_round = rounds(reviewers=[team["rev1"]], reveal_reviewers=False)
    give(Review.objects.get(round=review_round, item=items[0]), "revision", comment="Say more.")
    services.close_round(review_round, user=team["boss"])
    url = f"/api/v1/benchmarks/demo/items/{items[0].pk}/history/"
    reviewed = [r for r in api_for(team["boss"]).get(url).json()["results"] if r["action"] == "reviewed"]
    assert "rev1" in [r["changed_by"] for r in reviewed]  # researchers see who it was
    for seen in (
        api_for(team["ann"]).get(url).content.decode(),
        client_for(team["ann"]).get(f"/b/demo/items/{items[0].pk}/history/").content.decode(),
    ):
        assert "Say more." in seen and "rev1" not in seen
    # The reviewer still sees their own name.
    assert "rev1" in api_for(team["rev1"]).get(url).content.decode()


def test_the_round_csv_neutralises_cells_a_spreadsheet_would_run(
    benchmark, team, make_user, counting, rounds, api_for, client_for
):
    items = submitted(benchmark, counting, team["ann"], 1)
    sneaky = make_user("reviewer", "@SUM-1", benchmarks=[benchmark])  # usernames may start with @, + or -
    review_round = rounds(reviewers=[sneaky])
    give(Review.objects.get(round=review_round, item=items[0]), "accept")
    for content in (
        api_for(team["boss"]).get(f"/api/v1/benchmarks/demo/review/rounds/{review_round.number}/", {"format": "csv"}).content,
        client_for(team["boss"]).get(f"/b/demo/review/rounds/{review_round.number}/stats.csv").content,
    ):
        rows = list(csv.reader(io.StringIO(content.decode())))
        assert ["load", "'@SUM-1"] == [r for r in rows if r[0] == "load"][0][:2]
        assert not any(cell.startswith(("=", "+", "@")) for row in rows for cell in row)

"""Item analysis of a frozen release scored by four scripted models: a wrong key and a trivial item
are flagged with reasons an owner can act on, from the page a review round is opened on them with
the reasons shown to reviewers, and items left out are out of the next release, whose diff names them."""

import pytest

from analysis.models import Analysis, ItemStat, LeftOut
from exports import services
from exports.models import Score
from review.models import ReviewRound, RoundItem
from tests.analysis.conftest import INVERTED, TRIVIAL, WRONG_KEY, key_of

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]
PAGE = "/b/demo/releases/1.0.0/analysis/"
QUERIES = 16


def test_a_wrong_key_and_a_trivial_item_are_flagged_with_their_reasons(
    frozen_mcq, score_models, researcher, client_for, django_assert_max_num_queries
):
    scores = score_models(0, 1, 2, 3)
    assert all(s.status == Score.Status.DONE for s in Score.objects.all())
    analysis = Analysis.objects.get(release=frozen_mcq, method="mcq")
    assert [m["label"] for m in analysis.scored_models] == [s.label for s in scores]
    stats = {s.key: s for s in ItemStat.objects.filter(analysis=analysis)}
    wrong, trivial, inverted = (stats[key_of(frozen_mcq, n)] for n in (WRONG_KEY, TRIVIAL, INVERTED))
    assert wrong.flags == ["unanswerable"] and wrong.share_right == 0 and wrong.n_models == 4
    assert trivial.flags == ["saturated"] and trivial.share_right == 1
    assert inverted.flags == ["negative_discrimination"] and inverted.discrimination < -0.3
    others = [s for key, s in stats.items() if s not in (wrong, trivial, inverted)]
    assert others and not any(s.flags for s in others) and all(s.discrimination > 0 for s in others)
    assert analysis.summary["flags"] == {"saturated": 1, "unanswerable": 1, "negative_discrimination": 1, "judge_disagreement": 0}
    assert wrong.results == {f"model {m}": [0.0, "failed"] for m in range(4)}

    web = client_for(researcher)
    web.get(PAGE)  # logged in, session made
    with django_assert_max_num_queries(QUERIES):  # compact rows: the same few queries whatever the release's size
        page = web.get(PAGE, {"method": "mcq", "flag": "any"}).content.decode()
    assert "Unanswerable: no model gets it right (0 of 4)" in page and "answer key" in page
    assert "Saturated: every model gets it right (4 of 4)" in page
    assert f'data-item-key="{wrong.key}"' in page and f'data-item-key="{others[0].key}"' not in page


def test_the_page_is_for_researchers(frozen_mcq, score_models, annotator, reviewer, researcher, client_for):
    score_models(0, 1, 2)
    assert 'id="release-analysis-link"' in client_for(researcher).get("/b/demo/releases/1.0.0/").content.decode()
    for person in (annotator, reviewer):
        assert "release-analysis-link" not in client_for(person).get("/b/demo/releases/1.0.0/").content.decode()
        assert client_for(person).get(PAGE).status_code == 403
        assert client_for(person).get(PAGE + "items.csv").status_code == 403
        assert client_for(person).post(PAGE + "act/", {"action": "leave_out", "items": ["1"]}).status_code == 403


def test_a_review_round_and_leaving_out_work_from_the_page(
    frozen_mcq, score_models, benchmark, researcher, client_for, django_capture_on_commit_callbacks
):
    score_models(0, 1, 2, 3)
    web = client_for(researcher)
    wrong, trivial = key_of(frozen_mcq, WRONG_KEY), key_of(frozen_mcq, TRIVIAL)
    with django_capture_on_commit_callbacks(execute=True):
        response = web.post(PAGE + "act/", {"method": "mcq", "action": "review", "items": [wrong]})
    assert response.status_code == 302
    review_round = ReviewRound.objects.get(benchmark=benchmark)
    assert review_round.kind == "expert" and review_round.status == "open", review_round.job.message
    entry = RoundItem.objects.get(round=review_round)
    assert entry.item.status == "released" and entry.note.startswith("Unanswerable: no model gets it right")
    review = entry.reviews.get()
    shown = client_for(review.reviewer).get(f"/b/demo/review/{review.pk}/").content.decode()
    assert "Why this item is in this round:" in shown and "Unanswerable: no model gets it right" in shown

    # Everything the filter shows (the flagged items), left out of the releases built from now on.
    response = web.post(PAGE + "act/", {"method": "mcq", "action": "leave_out", "scope": "all", "flag": "any"})
    assert response.status_code == 302
    assert LeftOut.objects.count() == 3
    left = {row.key: row.reason for row in LeftOut.objects.all()}
    assert left[trivial].startswith("Saturated") and left[wrong].startswith("Unanswerable")
    page = web.get(PAGE, {"method": "mcq"}).content.decode()
    assert page.count('class="badge left-out"') == 3

    nxt = services.create_release(benchmark, user=researcher, version="1.1.0")  # its source: 1.0.0
    with django_capture_on_commit_callbacks(execute=True):
        services.start_build(nxt, user=researcher)
    nxt.refresh_from_db()
    assert nxt.status == "built", nxt.job.message
    keys = set(nxt.items.values_list("key", flat=True))
    assert wrong not in keys and trivial not in keys and len(keys) == frozen_mcq.items.count() - 3
    diff = web.get("/b/demo/releases/1.1.0/diff/", {"against": "1.0.0", "show": "removed"}).content.decode()
    assert diff.count("Left out by its owners:") == 3 and "Unanswerable: no model gets it right" in diff
    assert {row["id"] for row in services.diff(frozen_mcq, nxt)["left_out"]} == set(left)

    # Taken back: the next build has them again.
    web.post(PAGE + "act/", {"method": "mcq", "action": "take_back", "items": [wrong]})
    assert not LeftOut.objects.filter(key=wrong).exists()


def test_people_who_disagree_with_the_reader_flag_the_item_once_their_study_closes(
    frozen_mcq, score_models, researcher, make_user, benchmark, django_capture_on_commit_callbacks
):
    """An extraction check on one model's passes: both raters read another choice than the leaderboard's
    reader on one item and the same on the rest. Closing the study recomputes the analysis, which then
    flags that item only (judge-people disagreement), with its ratings counted."""
    from humaneval import services as humaneval
    from humaneval.models import Rating

    scores = [Score.objects.get(pk=s.pk) for s in score_models(0, 1, 2, 3)]  # as their jobs left them: done
    raters = [make_user("annotator", name, benchmarks=[benchmark]) for name in ("rita", "raul")]
    study = humaneval.create_study(
        frozen_mcq, user=researcher, title="check", mode="extraction", scores=[scores[3]], raters=raters, per_task=3, seed=1
    )
    ratings = list(Rating.objects.filter(study=study).select_related("rater__user", "item"))
    target = ratings[0].item.key
    for rating in ratings:
        read = rating.item.judge["choice"]
        other = next(letter for letter in [*rating.item.options, "none"] if letter != read)
        humaneval.save_rating(rating, user=rating.rater.user, choice=other if rating.item.key == target else read)
    analysis = Analysis.objects.get(release=frozen_mcq, method="mcq")
    assert ItemStat.objects.get(analysis=analysis, key=target).ratings in (None, 0)  # computed before any rating

    with django_capture_on_commit_callbacks(execute=True):
        humaneval.close_study(study, user=researcher)
    analysis.refresh_from_db()
    stats = {s.key: s for s in ItemStat.objects.filter(analysis=analysis)}
    rated_target = sum(1 for r in ratings if r.item.key == target)
    assert stats[target].ratings == rated_target >= 2 and stats[target].disagreement == 1.0
    assert "judge_disagreement" in stats[target].flags
    rated = {r.item.key for r in ratings} - {target}
    assert rated and all(stats[key].disagreement == 0.0 and "judge_disagreement" not in stats[key].flags for key in rated)
    assert analysis.summary["flags"]["judge_disagreement"] == 1

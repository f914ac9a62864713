"""Human evaluation: studies planned from judged leaderboard scores, blind balanced rating, the
agreement figures (equal to benchforge_harness.metrics on the exported ratings), the leaderboard's note,
export and import."""

import io
import json
from collections import defaultdict

import pyarrow.parquet as pq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from benchforge_harness import metrics
from humaneval import selectors, services
from humaneval.models import Rating, Study

from .conftest import ANCHOR_LABEL, PAIRWISE_LABEL, POINTWISE_LABEL

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


def start(scored, researcher, raters, mode="pointwise", **settings):
    settings = {"per_task": 4, "ratings_per_item": 2, "seed": 7} | settings
    return services.create_study(
        scored["release"], user=researcher, title=f"{mode} check", mode=mode, scores=[scored[mode]], raters=raters, **settings
    )


def rate_all(study, choose):
    """Every owed rating saved through the service, as each rater would."""
    for rating in Rating.objects.filter(study=study).select_related("rater__user", "item", "study"):
        score, vote, reason = choose(rating)
        services.save_rating(rating, user=rating.rater.user, score=score, vote=vote, reason=reason)


def test_a_plan_estimates_the_cost_and_the_seed_makes_the_study_reproducible(scored, researcher, raters):
    plan = services.plan_study(
        scored["release"], user=researcher, mode="pointwise", scores=[scored["pointwise"]], raters=raters, per_task=4, seed=7
    )
    # 18 open Counting questions in the release: 4 sampled, 1 model, 2 ratings each, 1.5 min a rating.
    assert plan.summary() | {"tasks": None} == {
        "items": 4,
        "answers": 4,
        "ratings": 8,
        "raters": 3,
        "ratings_per_rater": 8 / 3,
        "rater_hours": 0.2,
        "hours_per_rater": 0.07,
        "tasks": None,
    }
    assert Study.objects.count() == 0  # an estimate saves nothing
    first, second = start(scored, researcher, raters), start(scored, researcher, raters)

    def orders(study):
        return {
            r.pseudonym: [(x.item.key, x.anchor_first) for x in r.ratings.select_related("item").order_by("position")]
            for r in study.raters.all()
        }

    assert orders(first) == orders(second) and sorted(first.items.values_list("key", flat=True)) == sorted(
        plan.keys_by_task["计数"]
    )
    other = start(scored, researcher, raters, seed=8)
    assert orders(other) != orders(first)


def test_each_answer_gets_its_ratings_from_different_raters_and_loads_are_balanced(scored, researcher, raters):
    study = start(scored, researcher, raters, per_task=6)
    per_item = defaultdict(set)
    for rating in study.ratings.all():
        per_item[rating.item_id].add(rating.rater_id)
    assert len(per_item) == 6 and all(len(v) == 2 for v in per_item.values())
    loads = [r.ratings.count() for r in study.raters.all()]
    assert sorted(loads) == [4, 4, 4]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"ratings_per_item": 1}, "agreement between people needs two"),
        ({"ratings_per_item": 4}, "Pick at least 4 raters"),
        ({"mode": "pairwise"}, "a pairwise study rates pairwise scores only"),
    ],
)
def test_a_plan_that_cannot_measure_agreement_is_refused(scored, researcher, raters, change, message):
    settings = {"mode": "pointwise", "per_task": 2, "ratings_per_item": 2} | change
    with pytest.raises(Exception, match=message):
        services.plan_study(scored["release"], user=researcher, scores=[scored["pointwise"]], raters=raters, **settings)


def test_outsiders_are_refused_as_raters_and_annotators_cannot_plan(scored, researcher, raters, outsider):
    with pytest.raises(Exception, match="not a member"):
        start(scored, researcher, [raters[0], outsider])
    with pytest.raises(Exception, match="needs the researcher role"):
        start(scored, raters[0], raters)


def _texts_of_rater_views(client, api, study, rating):
    base = f"/b/demo/human-eval/{study.number}"
    pages = [
        client.get(f"{base}/rate/{rating.pk}/"),
        client.get(f"{base}/queue/"),
        client.get("/b/demo/human-eval/"),
        client.get(f"{base}/", follow=True),
        api.get(f"/api/v1/benchmarks/demo/human-eval/studies/{study.number}/queue/"),
        api.get("/api/v1/benchmarks/demo/human-eval/studies/"),
    ]
    assert all(p.status_code == 200 for p in pages), [p.status_code for p in pages]
    return [p.content.decode() for p in pages]


@pytest.mark.parametrize("mode", ["pointwise", "pairwise"])
def test_rater_pages_and_api_never_name_the_model_or_show_the_judge_or_another_rating(
    scored, researcher, raters, client_for, api_for, mode
):
    study = start(scored, researcher, raters[:2], mode=mode, per_task=3)
    first, second = study.raters.order_by("pseudonym")
    shared = first.ratings.first().item
    theirs = Rating.objects.get(item=shared, rater=second)
    services.save_rating(
        theirs, user=second.user, score=9 if mode == "pointwise" else None, vote="answer1", reason="OTHER-RATER-REASON"
    )
    mine = Rating.objects.get(item=shared, rater=first)
    texts = _texts_of_rater_views(client_for(first.user), api_for(first.user), study, mine)
    assert shared.answer in texts[0]  # the page shows what to rate
    for text in texts:
        for secret in (POINTWISE_LABEL, PAIRWISE_LABEL, ANCHOR_LABEL, "OTHER-RATER-REASON", "SECRET-JUDGE-REASON", "judge_"):
            assert secret not in text
    queue = json.loads(texts[4])
    assert all(set(entry["item"]) >= {"question", "reference_answer"} for entry in queue)
    assert not any(key in json.dumps(queue) for key in ('"outcome"', '"rating"', '"model"'))


def test_nobody_outside_the_study_sees_any_of_it(scored, researcher, raters, client_for, api_for, make_user, benchmark, outsider):
    study = start(scored, researcher, raters[:2])
    rating = study.ratings.first()
    image = scored["release"].images.first()
    member = raters[2]  # a member of the benchmark, not a rater of this study
    base = f"/b/demo/human-eval/{study.number}"
    for person in (member, outsider):
        client = client_for(person)
        for url in (f"{base}/", f"{base}/queue/", f"{base}/next/", f"{base}/rate/{rating.pk}/", f"{base}/images/{image.pk}/"):
            assert client.get(url).status_code == 404, url
        for url in (f"{base}/ratings.jsonl", "/b/demo/human-eval/new/"):
            assert client.get(url).status_code in (403, 404), url
        assert client.post(f"{base}/rate/{rating.pk}/", {"score": "5", "reason": "x"}).status_code == 404
        api = api_for(person)
        root = f"/api/v1/benchmarks/demo/human-eval/studies/{study.number}"
        assert api.get(f"{root}/queue/").status_code == 404
        assert api.put(f"{root}/ratings/{rating.pk}/", {"score": 5, "reason": "x"}, format="json").status_code == 404
        for url in (f"{root}/", f"{root}/ratings/"):
            assert api.get(url).status_code in (403, 404)
    assert "check" not in client_for(member).get("/b/demo/human-eval/").content.decode()
    assert api_for(member).get("/api/v1/benchmarks/demo/human-eval/studies/").json() == []
    # A rater may not save another rater's rating either.
    other = Rating.objects.filter(study=study).exclude(rater__user=raters[0]).first()
    assert client_for(raters[0]).post(f"{base}/rate/{other.pk}/", {"score": "5", "reason": "x"}).status_code == 404
    assert not Rating.objects.exclude(saved_at=None).exists()


def test_rating_with_the_form_saves_and_moves_on_and_refuses_a_score_without_a_reason(scored, researcher, raters, client_for):
    study = start(scored, researcher, raters[:2], per_task=2)
    rater = study.raters.get(user=raters[0])
    client = client_for(raters[0])
    first = selectors.next_pending(rater)
    assert client.get(f"/b/demo/human-eval/{study.number}/next/")["Location"].endswith(f"/rate/{first.pk}/")
    url = f"/b/demo/human-eval/{study.number}/rate/{first.pk}/"
    refused = client.post(url, {"score": "7", "reason": ""}, follow=True)
    assert "a score without a reason" in refused.content.decode()
    first.refresh_from_db()
    assert first.saved_at is None
    autosaved = client.post(url, {"score": "10", "reason": "all right"}, HTTP_X_AUTOSAVE="1")
    assert autosaved.json() == {"saved": True, "progress": {"done": 1, "total": 2}}
    response = client.post(url, {"score": "8", "reason": "one count is off"})
    first.refresh_from_db()
    assert (first.score, first.reason) == (8, "one count is off")  # saved again: the last save counts
    following = selectors.next_pending(rater)
    assert response["Location"].endswith(f"/rate/{following.pk}/")


def test_a_pairwise_vote_is_stored_as_the_side_the_rater_chose_whatever_the_order_shown(scored, researcher, raters):
    study = start(scored, researcher, raters[:2], mode="pairwise", per_task=6)
    ratings = list(Rating.objects.filter(study=study).select_related("rater__user", "item", "study"))
    assert {r.anchor_first for r in ratings} == {True, False}  # sides are shuffled per rater
    for rating in ratings:
        shown = selectors.rating_view(rating)
        services.save_rating(rating, user=rating.rater.user, vote="answer1", reason="first looks better")
        rating.refresh_from_db()
        first_answer_is_the_models = shown["answer1"] == rating.item.answer
        assert rating.vote == ("model" if first_answer_is_the_models else "anchor")


def _pointwise_choice(rating):
    return (rating.item.judge["rating"] + rating.rater.pk) % 10 + 1, None, f"reason {rating.pk}"


def _pairwise_choice(rating):
    return None, ["answer1", "answer2", "unable_one", "unable_two"][(rating.item.pk + rating.rater.pk) % 4], "why"


def _independent_figures(mode, rows):
    """The figures straight from benchforge_harness.metrics on the exported rows (not through the app's code)."""
    units, by_rater = defaultdict(list), defaultdict(dict)
    if mode == "pointwise":
        for r in rows:
            units[(r["model"], r["item"])].append(r["score"])
            by_rater[r["rater"]][(r["model"], r["item"])] = r["score"]
        judge = metrics.agreement([r["judge_score"] for r in rows], [r["score"] for r in rows])
        return metrics.krippendorff_alpha(units, "interval"), judge, metrics.rater_pair_matching(by_rater)
    side = {"model": "model", "anchor": "anchor"}
    judge_outcomes = {}
    for r in rows:
        vote = side.get(r["vote"], "unable")
        units[(r["model"], r["item"])].append(vote)
        by_rater[r["rater"]][(r["model"], r["item"])] = vote
        judge_outcomes[(r["model"], r["item"])] = r["judge_outcome"]
    judge = metrics.vote_agreement(judge_outcomes, by_rater)
    return metrics.krippendorff_alpha(units, "nominal"), judge, metrics.rater_pair_matching(by_rater)


@pytest.mark.parametrize("mode", ["pointwise", "pairwise"])
def test_the_study_page_api_and_leaderboard_show_the_harness_figures_of_the_exported_ratings(
    scored, researcher, raters, client_for, api_for, mode
):
    study = start(scored, researcher, raters, mode=mode, per_task=6)
    rate_all(study, _pointwise_choice if mode == "pointwise" else _pairwise_choice)
    client = client_for(researcher)
    exported = client.get(f"/b/demo/human-eval/{study.number}/ratings.jsonl")
    rows = [json.loads(line) for line in b"".join(exported.streaming_content).decode().splitlines()]
    assert len(rows) == 12 and {r["model"] for r in rows} == {scored[mode].label}  # the export reveals the model
    alpha, judge, pairs = _independent_figures(mode, rows)
    api = api_for(researcher).get(f"/api/v1/benchmarks/demo/human-eval/studies/{study.number}/").json()
    overall = api["agreement"]["overall"]
    assert overall["alpha"] == pytest.approx(alpha)
    assert {tuple(p["raters"]): p["agreement"] for p in overall["rater_pairs"]} == {k: v["agreement"] for k, v in pairs.items()}
    page = client.get(f"/b/demo/human-eval/{study.number}/").content.decode()
    assert f'<b class="alpha">{alpha:.3f}</b>' in page
    if mode == "pointwise":
        assert overall["judge"]["mae"] == pytest.approx(judge["mae"]) and overall["judge"]["pearson"] == pytest.approx(
            judge["pearson"]
        )
        assert f'<td class="mae">{judge["mae"]:.3f}</td>' in page
    else:
        assert overall["judge"]["majority"] == pytest.approx(judge["majority"])
        assert overall["judge"]["individual"] == pytest.approx(judge["individual"])
        assert f'<b class="majority">{judge["majority"]:.3f}</b>' in page
    chart = client.get(f"/b/demo/human-eval/{study.number}/chart-task.svg")
    figure = judge["fuzzy_accuracy"] if mode == "pointwise" else judge["majority"]
    assert chart["Content-Type"] == "image/svg+xml" and f"{100 * figure:.0f}% (n=12)" in chart.content.decode()
    assert client_for(raters[0]).get(f"/b/demo/human-eval/{study.number}/chart-task.svg").status_code == 403
    services.close_study(study, user=researcher)  # the leaderboard shows a closed study's figures
    board = client_for(raters[0]).get("/b/demo/releases/1.0.0/leaderboard/").content.decode()
    headline = selectors.headline(study, api["agreement"])
    assert f"study {study.number}</a>: 12 ratings, {headline}" in board
    listed = api_for(researcher).get("/api/v1/benchmarks/demo/releases/1.0.0/leaderboard/").json()
    validation = {s["label"]: s["validation"] for s in listed}
    assert validation[scored[mode].label]["ratings"] == 12 and validation[ANCHOR_LABEL] is None


def test_export_as_parquet_with_a_per_category_split_and_import_all_or_nothing(scored, researcher, raters, client_for, api_for):
    study = start(scored, researcher, raters, per_task=10)
    rate_all(study, _pointwise_choice)
    client = client_for(researcher)
    table = pq.read_table(
        io.BytesIO(b"".join(client.get(f"/b/demo/human-eval/{study.number}/ratings.parquet?split=1").streaming_content))
    )
    rows = table.to_pylist()
    assert len(rows) == 20 and set(table.column_names) >= {"item", "model", "rater", "score", "reason", "time", "split"}
    tests = {r["item"] for r in rows if r["split"] == "test"}
    assert len(tests) == 1  # 10 answers in the one category: 1 for test, 9 for training
    assert all(r["split"] == "test" for r in rows if r["item"] in tests)  # an answer's ratings stay on one side

    other = start(scored, researcher, raters[:2], per_task=2)
    keys = list(other.items.values_list("key", flat=True))
    good = [
        {"item": k, "model": POINTWISE_LABEL, "rater": "outside-1", "score": 6, "reason": "fine", "time": "2026-01-02T03:04:05Z"}
        for k in keys
    ]
    bad = [*good, {"item": keys[0], "model": POINTWISE_LABEL, "rater": "outside-2", "score": 11, "reason": "x"}]
    url = f"/api/v1/benchmarks/demo/human-eval/studies/{other.number}/ratings/"

    def upload(lines):
        data = "".join((json.dumps(x) if isinstance(x, dict) else x) + "\n" for x in lines).encode()
        return api_for(researcher).post(url, {"ratings": SimpleUploadedFile("r.jsonl", data)}, format="multipart")

    refused = upload(bad + ["not json"])
    assert refused.status_code == 400
    assert "line 3: 'score' must be a whole number from 1 to 10, got 11" in refused.json()["detail"]
    assert "line 4: not JSON" in refused.json()["detail"]
    assert not other.ratings.exclude(saved_at=None).exists() and other.raters.count() == 2  # nothing half-saved
    assert upload(good).json() == {"imported": 2}
    again = upload(good)
    assert again.status_code == 400 and "outside-1 already rated" in again.json()["detail"]
    imported = selectors.export_rows(other)
    assert [(r["rater"], r["score"], r["source"]) for r in imported] == [("outside-1", 6, "import")] * 2
    assert api_for(raters[0]).post(url, {}, format="multipart").status_code == 403


def test_the_researcher_plans_and_starts_a_study_in_the_page(scored, researcher, raters, client_for):
    client = client_for(researcher)
    data = {
        "title": "Pointwise check",
        "release": "1.0.0",
        "mode": "pointwise",
        "scores": [scored["pointwise"].pk],
        "raters": [raters[0].pk, raters[1].pk],
        "per_task": 3,
        "ratings_per_item": 2,
        "seed": 1,
        "minutes_per_rating": 2,
    }
    estimate = client.post("/b/demo/human-eval/new/", data | {"estimate": "1"}).content.decode()
    assert '<b id="rater-hours">0.2</b>' in estimate and not Study.objects.exists()  # 3 answers x 2 ratings x 2 min
    started = client.post("/b/demo/human-eval/new/", data | {"start": "1"})
    study = Study.objects.get()
    assert started["Location"] == f"/b/demo/human-eval/{study.number}/" and study.ratings.count() == 6
    home = client_for(raters[0]).get("/b/demo/human-eval/").content.decode()
    assert "0 / 3" in home and "Pointwise check" in home


def test_a_researcher_who_rates_sees_the_figures_only_after_their_own_ratings(scored, researcher, raters, client_for, api_for):
    study = start(scored, researcher, [researcher, raters[0]], per_task=2)
    base = f"/b/demo/human-eval/{study.number}"
    page = client_for(researcher).get(f"{base}/", follow=True)
    assert page.redirect_chain[-1][0] == f"{base}/queue/" and "remaining ratings are saved" in page.content.decode()
    assert client_for(researcher).get(f"{base}/ratings.jsonl").status_code == 403
    assert api_for(researcher).get(f"/api/v1/benchmarks/demo/human-eval/studies/{study.number}/").status_code == 403
    for rating in Rating.objects.filter(study=study, rater__user=researcher).select_related("rater__user", "study"):
        services.save_rating(rating, user=researcher, score=5, reason="half right")
    assert client_for(researcher).get(f"{base}/").status_code == 200

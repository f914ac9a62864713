"""A study's ratings as files (the same columns and types in JSON Lines and Parquet for every
mode, through the pages and the documented API parameters), the stored figures (never decoded
from whole answer sets on a page view), undefined figures that say why, and which study the
leaderboard shows for a score."""

import io
import json

import pyarrow.parquet as pq
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from humaneval import selectors, services
from humaneval.models import Rating

from .test_extraction import start as start_extraction
from .test_studies import start

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]

PY_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "options": list}


def _rate(study, reason="because"):
    for rating in Rating.objects.filter(study=study).select_related("rater__user", "item", "study"):
        user = rating.rater.user
        if study.mode == "pointwise":
            services.save_rating(rating, user=user, score=(rating.pk % 10) + 1, reason=reason)
        elif study.mode == "pairwise":
            services.save_rating(rating, user=user, vote=("answer1", "answer2", "unable_one")[rating.pk % 3], reason=reason)
        else:
            services.save_rating(rating, user=user, choice=next(iter(rating.item.options)), reason=reason)


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def _compare_files(study, client, api):
    """JSON Lines and Parquet of the study, from the page and from the API: the same rows, with
    the same columns, and every value of the documented type."""
    base = f"/b/demo/human-eval/{study.number}/ratings"
    root = f"/api/v1/benchmarks/demo/human-eval/studies/{study.number}/ratings/"
    for split in ("", "?split=1"):
        page_jsonl = _body(client.get(f"{base}.jsonl{split}"))
        page_parquet = _body(client.get(f"{base}.parquet{split}"))
        sep = "&" if split else "?"
        api_jsonl = api.get(f"{root}{split}{sep}format=jsonl")
        api_parquet = api.get(f"{root}{split}{sep}format=parquet")
        assert api_jsonl.status_code == 200 and api_parquet.status_code == 200  # the documented parameters
        assert api_parquet["Content-Type"] == "application/vnd.apache.parquet"
        assert _body(api_jsonl) == page_jsonl and _body(api.get(f"{root}{split}")) == page_jsonl  # jsonl is the default
        rows = [json.loads(line) for line in page_jsonl.decode().splitlines()]
        table = pq.read_table(io.BytesIO(page_parquet))
        assert pq.read_table(io.BytesIO(_body(api_parquet))).to_pylist() == table.to_pylist()
        columns = selectors.export_columns(study.mode, split=bool(split))
        assert table.column_names == [name for name, _ in columns]
        assert all(list(row) == table.column_names for row in rows)
        assert len(rows) == table.num_rows == study.ratings.exclude(saved_at=None).count()
        for name, kind in columns:  # column by column: same values, same types
            from_parquet = table.column(name).to_pylist()
            from_jsonl = [row[name] for row in rows]
            assert from_parquet == from_jsonl, name
            assert all(value is None or type(value) is PY_TYPES[kind] for value in from_jsonl + from_parquet), name
    return rows


@pytest.mark.parametrize("mode", ["pointwise", "pairwise"])
def test_jsonl_and_parquet_hold_the_same_columns_and_types_for_judged_studies(
    scored, researcher, raters, client_for, api_for, mode
):
    study = start(scored, researcher, raters[:2], mode=mode)
    _rate(study)
    rows = _compare_files(study, client_for(researcher), api_for(researcher))
    if mode == "pointwise":
        assert all(isinstance(r["judge_score"], float) and isinstance(r["score"], int) for r in rows)
    else:  # what the rater saw: which side the anchor's answer was on
        shown = dict(study.ratings.exclude(saved_at=None).values_list("item__key", "anchor_first"))
        assert {type(r["anchor_first"]) for r in rows} == {bool} and len(rows[0]["judge_votes"]) == 2
        assert any(r["anchor_first"] == shown[r["item"]] for r in rows)


def test_jsonl_and_parquet_hold_the_same_columns_and_types_for_extraction_checks(mcq, researcher, raters, client_for, api_for):
    study = start_extraction(mcq, researcher, raters[:2])
    _rate(study)
    rows = _compare_files(study, client_for(researcher), api_for(researcher))
    assert all(r["pass"] is not None and r["choice"] and r["reader"] in ("rule", "extractor") for r in rows)
    item = study.items.get(key=rows[0]["item"], pass_index=rows[0]["pass"])
    assert rows[0]["options"] == [
        {"letter": k, "text": v} for k, v in item.options.items()
    ]  # the options as that pass showed them


def test_an_unknown_export_format_is_refused_clearly(scored, researcher, raters, api_for):
    study = start(scored, researcher, raters[:2])
    response = api_for(researcher).get(f"/api/v1/benchmarks/demo/human-eval/studies/{study.number}/ratings/?format=json")
    assert response.status_code == 400 and "jsonl or parquet" in response.json()["detail"]


def test_the_figures_are_stored_and_a_page_view_reads_them_without_decoding_answer_sets(
    scored, researcher, raters, client_for, django_capture_on_commit_callbacks
):
    study = start(scored, researcher, raters[:2], per_task=4)
    _rate(study)
    client = client_for(researcher)
    assert client.get(f"/b/demo/human-eval/{study.number}/").status_code == 200  # computes and stores them
    stored = study.stored_figures
    assert stored.ratings == 8 and stored.version == study.ratings.exclude(saved_at=None).count()
    with CaptureQueriesContext(connection) as captured:
        page = client.get(f"/b/demo/human-eval/{study.number}/")
    assert page.status_code == 200
    sql = " ".join(q["sql"] for q in captured.captured_queries)
    assert '"exports_score"."answers"' not in sql  # no leaderboard answer set is read
    assert '"humaneval_rating"."score"' not in sql  # nor is any rating: the figures are stored
    # a save marks them out of date; the next view counts it
    rating = study.ratings.filter(rater__user=raters[0]).select_related("rater__user", "item", "study").first()
    services.save_rating(rating, user=raters[0], score=10, reason="changed my mind")
    assert selectors.cached_figures(study)[1] is True
    client.get(f"/b/demo/human-eval/{study.number}/")
    assert selectors.cached_figures(study)[1] is False


def test_a_large_study_recomputes_its_figures_in_a_job_and_its_page_shows_the_stored_ones_meanwhile(
    scored, researcher, raters, client_for, django_capture_on_commit_callbacks, monkeypatch
):
    import datetime

    study = start(scored, researcher, raters[:2], per_task=4)
    _rate(study)
    monkeypatch.setattr(services, "INLINE_FIGURES", 4)  # as if the study were large
    before = services.refresh_figures(study)
    rating = study.ratings.filter(rater__user=raters[0]).select_related("rater__user", "item", "study").first()
    with django_capture_on_commit_callbacks(execute=True):
        # A score it does not have yet (_rate gave it one from its id, which may be 10): the figures change.
        services.save_rating(rating, user=raters[0], score=1 if rating.score == 10 else 10, reason="changed my mind")
    assert selectors.cached_figures(study) == (before, True)  # computed a moment ago: not again at each save
    client = client_for(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        page = client.get(f"/b/demo/human-eval/{study.number}/").content.decode()
    assert 'id="figures-stale"' in page  # the stored figures, said to be updating; the page queued the job
    figures, stale = selectors.cached_figures(study)
    assert not stale and figures == selectors.compute_figures(study) != before

    monkeypatch.setattr(services, "REFRESH_EVERY", datetime.timedelta(0))  # figures older than that: a save queues the job
    with django_capture_on_commit_callbacks(execute=True):
        services.save_rating(rating, user=raters[0], score=1, reason="changed my mind again")
    figures, stale = selectors.cached_figures(study)
    assert not stale and figures == selectors.compute_figures(study)


def test_undefined_figures_say_why(scored, researcher, raters, client_for):
    study = start(scored, researcher, raters[:2], per_task=3)
    for rating in Rating.objects.filter(study=study).select_related("rater__user", "item", "study"):
        services.save_rating(rating, user=rating.rater.user, score=5, reason="all the same")
    figures = services.current_figures(study)
    assert figures["overall"]["alpha"] is None and figures["overall"]["undefined"]["alpha"] == "constant"
    assert figures["overall"]["undefined"]["pearson"] == "constant"
    page = client_for(researcher).get(f"/b/demo/human-eval/{study.number}/").content.decode()
    assert "constant ratings: every rating is the same" in page

    one = start(scored, researcher, raters[:2], per_task=2)
    rating = one.ratings.select_related("rater__user", "item", "study").first()
    services.save_rating(rating, user=rating.rater.user, score=4, reason="only one so far")
    figures = services.current_figures(one)
    assert figures["overall"]["undefined"] == {
        "alpha": "one_rater",
        "pearson": "too_few_pairs",
        "spearman": "too_few_pairs",
        "kendall_tau_b": "too_few_pairs",
    }
    page = client_for(researcher).get(f"/b/demo/human-eval/{one.number}/").content.decode()
    assert "one rater per answer so far" in page and "too few pairs" in page


def test_the_leaderboard_shows_the_marked_or_latest_closed_study_else_validation_in_progress(
    scored, researcher, raters, client_for, api_for
):
    label = scored["pointwise"].label
    board_url = "/b/demo/releases/1.0.0/leaderboard/"
    api_url = "/api/v1/benchmarks/demo/releases/1.0.0/leaderboard/"

    def shown():
        return {s["label"]: s["validation"] for s in api_for(researcher).get(api_url).json()}[label]

    complete = start(scored, researcher, raters[:2], per_task=4)
    _rate(complete)
    assert shown()["in_progress"] is True and (shown()["saved"], shown()["total"]) == (8, 8)
    board = client_for(researcher).get(board_url).content.decode()
    assert f"study {complete.number}</a>: validation in progress, 8 of 8 ratings saved" in board
    services.close_study(complete, user=researcher)
    assert shown()["number"] == complete.number and shown()["ratings"] == 8

    later = start(scored, researcher, raters[:2], per_task=2)  # an open study with fewer ratings
    rating = later.ratings.select_related("rater__user", "item", "study").first()
    services.save_rating(rating, user=rating.rater.user, score=3, reason="first one")
    assert shown()["number"] == complete.number  # it does not replace the complete one
    services.close_study(later, user=researcher)
    assert shown()["number"] == later.number  # the latest closed study, unless one is marked
    response = client_for(researcher).post(f"/b/demo/human-eval/{complete.number}/validation/", {"validates": "1"})
    assert response.status_code == 302
    assert shown()["number"] == complete.number and shown()["validates"] is True
    assert client_for(raters[0]).post(f"/b/demo/human-eval/{later.number}/validation/", {"validates": "1"}).status_code == 403

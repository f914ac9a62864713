"""Choice-extraction checks: people read which option a model's free-form reply commits to, blind,
and the study measures the leaderboard's readers (its rules and its LLM choice extractor) against
them. The MCQ score is real: CircularEval on the loopback server, its passes stored by the score job."""

import json
import re
from collections import defaultdict

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from benchforge_harness import metrics
from humaneval import selectors, services
from humaneval.models import Rating

from .conftest import MCQ_LABEL

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


def start(mcq, researcher, raters, **settings):
    settings = {"per_task": 4, "ratings_per_item": 2, "seed": 3} | settings
    return services.create_study(
        mcq["release"],
        user=researcher,
        title="extraction check",
        mode="extraction",
        scores=[mcq["extraction"]],
        raters=raters,
        **settings,
    )


def test_the_stored_passes_are_read_as_the_scoring_read_them_by_rule_and_by_extractor(mcq):
    passes = selectors.mcq_passes(mcq["extraction"])
    assert len(passes) == 12  # 4 items x 3 rotations, every pass answered
    by_reader = defaultdict(list)
    for found in passes:
        by_reader[found["reader"]].append(found)
        assert found["options"][found["choice"]] == "three"  # the letter read is where "three" was shown
    assert {r: len(v) for r, v in by_reader.items()} == {"rule": 6, "extractor": 6}
    assert all("-ish maybe" in p["output"] for p in by_reader["extractor"])
    from exports.leaderboard import reproduce_commands

    # the card's command scores it again with the same extractor
    assert "--model secret-vlm-endpoint --extractor reader --out" in reproduce_commands(mcq["extraction"])[-1]


def test_the_sample_takes_passes_of_both_readers_and_rater_pages_hide_model_and_reading(
    mcq, researcher, raters, client_for, api_for
):
    study = start(mcq, researcher, raters[:2])
    items = list(study.items.all())
    assert len(items) == 4 and len({i.key for i in items}) == 4  # one pass per item
    assert sorted(i.judge["reader"] for i in items) == ["extractor", "extractor", "rule", "rule"]
    assert study.ratings.count() == 8

    rater = study.raters.order_by("pseudonym").first()
    rating = rater.ratings.select_related("item").first()
    client = client_for(rater.user)
    page = client.get(f"/b/demo/human-eval/{study.number}/rate/{rating.pk}/").content.decode()
    queue = api_for(rater.user).get(f"/api/v1/benchmarks/demo/human-eval/studies/{study.number}/queue/").json()
    listed = api_for(rater.user).get("/api/v1/benchmarks/demo/human-eval/studies/").content.decode()
    assert f'<p id="rate-reply">{rating.item.answer}</p>' in page  # the reply to read is shown
    for letter, text in rating.item.options.items():
        assert f"<b>{letter}.</b> {text}" in page
    keys = re.findall(r'name="choice" value="([^"]+)" data-key="([^"]+)"', page)
    # each option's radio answers to its number and its letter; "none" to 0 only
    assert keys == [*((letter, f"{n} {letter.lower()}") for n, letter in enumerate(rating.item.options, 1)), ("none", "0")]
    for text in (page, json.dumps(queue), listed):
        for secret in (MCQ_LABEL, "secret-vlm-endpoint", "heuristic", "extractor", "reader", "SECRET-REFERENCE"):
            assert secret not in text
    assert all(set(entry["item"]) == {"question", "hint", "options", "reply", "task", "images"} for entry in queue)


def _choose(rating) -> str:
    """R1 reads every reply as committing to the option "three"; R2 reads the worded replies as
    committing to nothing."""
    three = next(letter for letter, text in rating.item.options.items() if text == "three")
    if rating.rater.pseudonym == "R2" and "-ish maybe" in rating.item.answer:
        return "none"
    return three


def test_the_figures_are_the_harness_functions_on_the_exported_ratings(mcq, researcher, raters, client_for, api_for):
    study = start(mcq, researcher, raters[:2])
    for rating in Rating.objects.filter(study=study).select_related("rater__user", "item", "study"):
        services.save_rating(rating, user=rating.rater.user, choice=_choose(rating))
    with pytest.raises(services.DomainError, match="Choose the letter"):
        services.save_rating(rating, user=rating.rater.user, choice="Q")
    client = client_for(researcher)
    rows = [
        json.loads(line)
        for line in b"".join(client.get(f"/b/demo/human-eval/{study.number}/ratings.jsonl").streaming_content)
        .decode()
        .splitlines()
    ]
    assert len(rows) == 8 and {r["model"] for r in rows} == {MCQ_LABEL}
    assert set(rows[0]) >= {"item", "pass", "choice", "reader_choice", "reader", "rater"}

    by_rater, units, readings = defaultdict(dict), defaultdict(list), {"rule": {}, "extractor": {}}
    for row in rows:
        unit = (row["item"], row["pass"])
        by_rater[row["rater"]][unit] = row["choice"]
        units[unit].append(row["choice"])
        readings[row["reader"]][unit] = row["reader_choice"]
    rule = metrics.reader_accuracy(readings["rule"], by_rater)
    extractor = metrics.reader_accuracy(readings["extractor"], by_rater)
    alpha = metrics.krippendorff_alpha(units, "nominal")
    # By hand: both raters agree with the rules on both rule passes; on the two worded replies
    # they disagree (a tie: no majority), so the extractor has no pass to be measured on.
    assert rule == {"items": 2, "ties": 0, "accuracy": 1.0, "individual": 1.0}
    assert extractor["items"] == 0 and extractor["ties"] == 2 and extractor["individual"] == pytest.approx(0.5)

    overall = (
        api_for(researcher).get(f"/api/v1/benchmarks/demo/human-eval/studies/{study.number}/").json()["agreement"]["overall"]
    )
    assert overall["judge"] == {"rule": rule, "extractor": extractor}
    assert overall["alpha"] == pytest.approx(alpha)
    page = client.get(f"/b/demo/human-eval/{study.number}/").content.decode()
    assert '<td class="rule-accuracy">1.000</td>' in page and '<td class="extractor-accuracy">—</td>' in page
    assert f'<b class="alpha">{alpha:.3f}</b>' in page


def test_extraction_ratings_export_and_import_all_or_nothing(mcq, researcher, raters, client_for, api_for):
    study = start(mcq, researcher, raters[:2], per_task=2)
    items = list(study.items.all())
    good = [
        {"item": i.key, "model": MCQ_LABEL, "rater": "outside-1", "choice": next(iter(i.options)), "time": "2026-01-02T03:04:05Z"}
        for i in items
    ]
    bad = [*good, {"item": items[0].key, "model": MCQ_LABEL, "rater": "outside-2", "choice": "Q"}]
    url = f"/api/v1/benchmarks/demo/human-eval/studies/{study.number}/ratings/"

    def upload(lines):
        data = "".join(json.dumps(x) + "\n" for x in lines).encode()
        return api_for(researcher).post(url, {"ratings": SimpleUploadedFile("r.jsonl", data)}, format="multipart")

    refused = upload(bad)
    assert refused.status_code == 400 and "line 3: 'choice': Choose the letter" in refused.json()["detail"]
    assert not study.ratings.exclude(saved_at=None).exists()
    assert upload(good).json() == {"imported": 2}
    exported = [
        json.loads(line)
        for line in b"".join(client_for(researcher).get(f"/b/demo/human-eval/{study.number}/ratings.jsonl").streaming_content)
        .decode()
        .splitlines()
    ]
    assert sorted((r["item"], r["choice"], r["source"]) for r in exported) == sorted(
        (g["item"], g["choice"], "import") for g in good
    )
    assert all(r["reader"] in ("rule", "extractor") and r["reader_choice"] for r in exported)


def test_a_closed_study_can_be_cited_on_the_release_card_page_and_the_bundle_readme_stays_as_frozen(
    mcq, researcher, raters, client_for, api_for
):
    from exports import card

    study = start(mcq, researcher, raters[:2])
    for rating in Rating.objects.filter(study=study).select_related("rater__user", "item", "study"):
        services.save_rating(rating, user=rating.rater.user, choice=_choose(rating))
    client = client_for(researcher)
    url = f"/b/demo/human-eval/{study.number}/cite/"
    refused = client.post(url, {"cite": "1"}, follow=True).content.decode()
    assert "Close the study" in refused and "a card cites finished studies only" in refused
    assert client_for(raters[0]).post(url, {"cite": "1"}).status_code == 403
    readme = card.dataset_card(mcq["release"], "public")
    api = f"/api/v1/benchmarks/demo/human-eval/studies/{study.number}/card/"
    open_study = api_for(researcher).put(api, {"cited": True}, format="json")  # a state conflict: 409 with what to do
    assert open_study.status_code == 409 and f"Close study {study.number} first" in open_study.json()["detail"]
    services.close_study(study, user=researcher)
    client.post(url, {"cite": "1"})
    figures = selectors.study_agreement(study)
    page = client_for(raters[0]).get("/b/demo/releases/1.0.0/card/").content.decode()
    assert f"Study {study.number}: extraction check</a>" in page
    assert f"8 ratings of 4 answers by 2 raters; {selectors.headline(study, figures)}" in page
    assert "rule reader 100.0%, LLM extractor —" in page
    assert card.dataset_card(mcq["release"], "public") == readme  # the bundle's README is not touched
    assert api_for(raters[0]).put(api, {"cited": False}, format="json").status_code == 403
    assert api_for(researcher).put(api, {"cited": False}, format="json").json()["cited_on_card"] is False
    assert "Validated by people" not in client.get("/b/demo/releases/1.0.0/card/").content.decode()

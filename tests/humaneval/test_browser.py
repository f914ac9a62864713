"""In headless Chromium: a researcher plans a pairwise and a pointwise study from a scored release;
two raters complete both with the keyboard only; the study pages and the leaderboard show the
agreement, equal to benchforge_harness.metrics on the exported ratings."""

import json

import pytest
from playwright.sync_api import expect

from humaneval.models import Study

from .test_studies import _independent_figures

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_image_indexes")]


def plan(page, scored, raters, mode):
    page.goto("/b/demo/human-eval/new/")
    page.fill("input[name=title]", f"{mode} check")
    page.select_option("select[name=release]", "1.0.0")
    page.select_option("select[name=mode]", mode)
    page.check(f"input[name=scores][value='{scored[mode].pk}']")
    for rater in raters:
        page.check(f"input[name=raters][value='{rater.pk}']")
    page.fill("input[name=per_task]", "3")
    page.click("#estimate-button")
    expect(page.locator("#rater-hours")).to_have_text("0.15")  # 3 answers x 2 ratings x 1.5 minutes
    page.click("#start-button")
    expect(page.locator("h1")).to_contain_text(f"{mode} check")


def rate_with_keys(page, study, keys):
    page.goto(f"/b/demo/human-eval/{study.number}/queue/")
    page.keyboard.press("n")
    for n, key in enumerate(keys):
        expect(page.locator("h1")).to_contain_text(f"Answer {n + 1} of 3")
        page.keyboard.press(key)
        page.keyboard.press("r")  # to the reason field
        page.keyboard.type(f"reason {n}: the count {key} fits")
        page.keyboard.press("Control+Enter")
    expect(page.locator("#queue-progress")).to_have_text("3 / 3")


def test_two_studies_planned_rated_by_keyboard_and_their_agreement_shown(login_as, scored, researcher, raters):
    page = login_as(researcher)
    plan(page, scored, raters[:2], "pairwise")
    plan(page, scored, raters[:2], "pointwise")
    pairwise, pointwise = Study.objects.get(mode="pairwise"), Study.objects.get(mode="pointwise")

    for rater, score_keys, vote_keys in ((raters[0], "790", "124"), (raters[1], "583", "223")):
        page = login_as(rater)
        rate_with_keys(page, pointwise, score_keys)
        rate_with_keys(page, pairwise, vote_keys)
        expect(page.locator("main")).not_to_contain_text(scored["pointwise"].label)

    saved = sorted(pointwise.ratings.values_list("score", flat=True))
    assert saved == sorted([7, 9, 10, 5, 8, 3])  # the key 0 is a 10
    assert all(pairwise.ratings.exclude(saved_at=None).values_list("vote", flat=True))

    page = login_as(researcher)
    for study in (pointwise, pairwise):
        response = page.request.get(f"/b/demo/human-eval/{study.number}/ratings.jsonl")
        rows = [json.loads(line) for line in response.text().splitlines()]
        assert len(rows) == 6
        alpha, judge, _ = _independent_figures(study.mode, rows)
        page.goto(f"/b/demo/human-eval/{study.number}/")
        overall = page.locator(".figures[data-scope='All answers']")
        expect(overall.locator(".alpha")).to_have_text("—" if alpha is None else f"{alpha:.3f}")
        if study.mode == "pointwise":
            expect(overall.locator(".mae")).to_have_text(f"{judge['mae']:.3f}")
            expect(overall.locator(".fuzzy")).to_have_text(f"{judge['fuzzy_accuracy']:.3f}")
        else:
            expect(overall.locator(".majority")).to_have_text(f"{judge['majority']:.3f}")
            expect(overall.locator(".individual")).to_have_text(f"{judge['individual']:.3f}")
    page.goto("/b/demo/releases/1.0.0/leaderboard/")
    for mode, study in (("pointwise", pointwise), ("pairwise", pairwise)):
        row = page.locator(f"tr[data-label='{scored[mode].label}'] td.validation")
        expect(row).to_contain_text(f"study {study.number}: validation in progress, 6 of 6 ratings saved")  # still open


def test_an_extraction_check_is_rated_with_number_and_letter_keys_and_0_for_none(login_as, mcq, researcher, raters):
    from .conftest import MCQ_LABEL
    from .test_extraction import start

    study = start(mcq, researcher, raters[:2])
    page = login_as(raters[0])
    page.goto(f"/b/demo/human-eval/{study.number}/queue/")
    page.keyboard.press("n")
    for n, key in enumerate("b0" + "1c"):
        expect(page.locator("h1")).to_contain_text(f"Answer {n + 1} of 4")
        expect(page.locator("main")).not_to_contain_text(MCQ_LABEL)
        page.keyboard.press(key)
        expect(page.locator("#autosave-status")).to_have_text("Saved.")  # chosen by the key alone
        page.keyboard.press("Control+Enter")
    expect(page.locator("#queue-progress")).to_have_text("4 / 4")
    rater = study.raters.get(user=raters[0])
    chosen = list(rater.ratings.order_by("position").values_list("choice", flat=True))
    assert chosen == ["B", "none", "A", "C"]


def test_letter_keys_choose_without_taking_the_keys_and_every_reason_is_stored(login_as, mcq, researcher, raters):
    """A letter key chooses the option and leaves the focus on the page: R then reaches the reason
    and Ctrl+Enter saves the choice with it (letters used to focus a radio button, after which R
    and typing did nothing and the rating was saved without its reason). The keys must not wait for
    the page's deferred script (autosave): a key pressed the moment the page shows used to be lost,
    so this test runs with that script held back."""
    from .test_extraction import start

    study = start(mcq, researcher, raters[:2])
    page = login_as(raters[0])
    page.route("**/humaneval/rate.js", lambda route: route.abort())
    page.goto(f"/b/demo/human-eval/{study.number}/queue/")
    page.keyboard.press("n")
    for n, key in enumerate("bcab"):
        expect(page.locator("h1")).to_contain_text(f"Answer {n + 1} of 4")
        page.keyboard.press(key)
        expect(page.locator(f"input[name=choice][value='{key.upper()}']")).to_be_checked()
        page.keyboard.press("r")
        expect(page.locator("#reason")).to_be_focused()
        page.keyboard.type(f"it says {key} in so many words")
        page.keyboard.press("Control+Enter")
    expect(page.locator("#queue-progress")).to_have_text("4 / 4")
    stored = list(study.raters.get(user=raters[0]).ratings.order_by("position").values_list("choice", "reason"))
    assert stored == [(key.upper(), f"it says {key} in so many words") for key in "bcab"]


def test_a_choice_made_before_the_autosave_script_ran_is_saved_when_it_runs(login_as, mcq, researcher, raters):
    """The keys work before the page's deferred autosave script has run (keys.js loads first): a
    choice made in that moment showed as chosen and was never saved (the change went by with no
    listener; seen once in a full run). Here the script is held back until after the key."""
    from .test_extraction import start

    study = start(mcq, researcher, raters[:2])
    page = login_as(raters[0])
    held = []
    page.route("**/humaneval/rate.js", lambda route: held.append(route))
    page.goto(f"/b/demo/human-eval/{study.number}/queue/")
    page.keyboard.press("n")
    expect(page.locator("h1")).to_contain_text("Answer 1 of 4")
    page.keyboard.press("b")
    expect(page.locator("input[name=choice][value='B']")).to_be_checked()
    assert not study.raters.get(user=raters[0]).ratings.exclude(choice="").exists()
    for _ in range(100):  # the script's request reaches the route when the browser asks for it
        if held:
            break
        page.wait_for_timeout(50)
    held[0].continue_()
    expect(page.locator("#autosave-status")).to_have_text("Saved.")
    assert list(study.raters.get(user=raters[0]).ratings.exclude(choice="").values_list("choice", flat=True)) == ["B"]

"""The release page's Compare select, which shows only once a benchmark has two releases."""

import re

import pytest

pytestmark = pytest.mark.django_db


def test_the_compare_select_has_a_label_naming_what_it_picks(built, client_for, researcher, benchmark):
    built("1.0.0")
    built("1.1.0")
    page = client_for(researcher).get(f"/b/{benchmark.slug}/releases/1.1.0/").content.decode()
    select = re.search(r'<select name="against"[^>]*>', page).group(0)
    found = re.search(r'id="([^"]+)"', select)
    assert found, select
    assert re.search(rf'<label[^>]*for="{found.group(1)}"[^>]*>Release to compare with</label>', page)


def test_a_scoring_failure_the_user_caused_says_why_without_a_traceback(built, researcher, settings, tmp_path, caplog):
    from exports import leaderboard, services
    from exports.models import Score
    from jobs import services as jobs
    from llm.demo import DEMO_MODELS

    settings.BENCHFORGE_MODELS = tmp_path / "models.toml"
    settings.BENCHFORGE_MODELS.write_text(DEMO_MODELS)
    release = services.freeze(built("1.0.0"), user=researcher)
    score = leaderboard.submit(
        release, user=researcher, label="fair", method="pointwise", endpoint="demo-fair", judge="demo-judge"
    )
    # The judge leaves the models file before the job runs.
    settings.BENCHFORGE_MODELS.write_text(DEMO_MODELS.replace("[models.demo-judge]", "[models.other-judge]"))
    job = jobs.run_now(score.job)
    score.refresh_from_db()
    assert score.status == Score.Status.FAILED and job.status == "failed"
    assert "demo-judge" in job.message
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records if r.exc_info]


def test_the_study_plan_form_picks_the_only_frozen_release(built, researcher, benchmark):
    from exports import services
    from humaneval.forms import PlanForm

    services.freeze(built("1.0.0"), user=researcher)
    built("1.1.0")  # built, not frozen: not a choice
    field = PlanForm(benchmark=benchmark)["release"]
    html = str(field)
    assert "---------" not in html and 'value="1.0.0" selected' in html

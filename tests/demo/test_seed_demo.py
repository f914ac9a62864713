"""`manage.py seed_demo` (run by `make run`): the demo benchmark with generated images, safe to re-run."""

import io
import itertools

import pytest
from django.core.management import call_command
from django.db.models import Count

from annotation.models import Assignment
from curation.imaging import hamming
from curation.models import Benchmark, Image
from demo.management.commands.seed_demo import DEMO_SLUG, DEMO_USERS
from demo.services import seed_demo_work
from tests.factories import make_image, stored_files_match_rows

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _development_runtime(settings):
    settings.DEBUG = True  # what `make run` runs with; pytest turns it off


def test_seed_demo_ingests_tagged_generated_images_once(settings, fresh_image_indexes):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert "Images: 36 (36 added now), 1 flagged by the known set." in out.getvalue()
    benchmark = Benchmark.objects.get(slug=DEMO_SLUG)
    images = list(benchmark.images.prefetch_related("tasks"))
    assert len(images) == 36 and stored_files_match_rows(settings)
    assert all(len(i.tasks.all()) == 1 and i.source and i.license == "CC0-1.0" for i in images)
    assert all(i.collected_by.username == "annotator" for i in images)
    assert len({t.slug for i in images for t in i.tasks.all()}) >= 9
    # Varied pictures: exactly the deliberate flaws are flagged.
    assert [i.original_name for i in images if i.low_resolution] == ["flowchart-4.jpg"]
    assert [i.original_name for i in images if i.contaminated] == ["emblem-3.jpg"]
    (copy,) = [i for i in images if i.near_duplicate_of_id]
    assert copy.original_name == "scenery-1-copy.jpg" and copy.near_duplicate_of.original_name == "scenery-1.jpg"
    others = [i for i in images if i != copy]
    closest = min(min(hamming(a.phash, b.phash), hamming(a.dhash, b.dhash)) for a, b in itertools.combinations(others, 2))
    assert closest >= benchmark.near_dup_threshold
    assert {u.username for u in benchmark.members.all()} == {name for name, _, _ in DEMO_USERS}

    # Two thirds of the clean pictures come accepted, so the annotators' queues have work.
    accepted = [i for i in images if i.status == Image.Status.ACCEPTED]
    assert len(accepted) == 22 and not any(i.low_resolution or i.near_duplicate_of_id or i.contaminated for i in accepted)
    images_queued = Assignment.objects.filter(benchmark=benchmark, image__isnull=False)
    queued = dict(images_queued.values_list("assignee__username").annotate(n=Count("id")))
    assert queued == {"annotator": 3, "annotator2": 3}
    assert "6 new image assignment(s)" in out.getvalue()
    assert out.getvalue().rstrip().endswith("Demo ready: log in as researcher (password bf-demo-researcher-2026).")

    files = sorted(p for p in settings.MEDIA_ROOT.rglob("*") if p.is_file())
    Image.objects.filter(pk=accepted[0].pk).update(status=Image.Status.REJECTED, reject_reason="other", reject_note="mine")
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert "Images: 36 (0 added now)" in out.getvalue() and "0 new image assignment(s)" in out.getvalue()
    assert Image.objects.count() == 36 and sorted(p for p in settings.MEDIA_ROOT.rglob("*") if p.is_file()) == files
    # A re-run leaves people's screening decisions alone.
    assert Image.objects.get(pk=accepted[0].pk).status == Image.Status.REJECTED
    assert Image.objects.filter(status=Image.Status.ACCEPTED).count() == 21


def test_seed_demo_refuses_to_create_published_accounts_in_production(settings):
    from django.contrib.auth import get_user_model
    from django.core.management import CommandError

    settings.DEBUG = False
    with pytest.raises(CommandError, match="only runs with DEBUG on"):
        call_command("seed_demo", stdout=io.StringIO())
    assert not get_user_model().objects.filter(username__in=[u for u, _, _ in DEMO_USERS]).exists()


def test_demo_work_tops_each_annotator_up_to_a_few_image_assignments(benchmark, counting, annotator, make_user):
    make_user("researcher", "rhea", benchmarks=[benchmark])
    make_user("annotator", "otto", benchmarks=[benchmark])
    assert seed_demo_work(benchmark) == 0  # no accepted images yet: nothing to hand out
    make_image(benchmark, status="pending", tasks=[counting])
    make_image(benchmark, contaminated=True, tasks=[counting])
    assert seed_demo_work(benchmark) == 0  # unscreened and contaminated images are never handed out
    for _ in range(8):
        make_image(benchmark, tasks=[counting])
    assert seed_demo_work(benchmark) == 6
    per_person = dict(Assignment.objects.values_list("assignee__username").annotate(n=Count("id")).order_by())
    assert per_person == {"anna": 3, "otto": 3}
    assert Assignment.objects.filter(assigned_by__username="rhea").count() == 6
    assert seed_demo_work(benchmark) == 0  # a re-run adds nothing while queues are full
    Assignment.objects.filter(assignee=annotator).first().delete()
    assert seed_demo_work(benchmark) == 1  # ...and refills what was taken away
    assert Assignment.objects.values("task", "image").distinct().count() == 6


def test_the_demo_has_an_item_at_every_stage_and_a_review_waiting(fresh_image_indexes, django_capture_on_commit_callbacks):
    from annotation.models import Item
    from curation.models import KnownImageSet
    from review.models import Review, ReviewRound

    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo", stdout=io.StringIO())
    benchmark = Benchmark.objects.get(slug=DEMO_SLUG)
    items = {item.status: item for item in Item.objects.filter(benchmark=benchmark, is_external=False).order_by("-pk")}
    # The QC step's imported multiple-choice items, half of them flagged by its text-only run.
    assert set(Item.objects.filter(benchmark=benchmark, is_external=True).values_list("status", flat=True)) >= {"qc_flagged"}
    assert benchmark.releases.get().status == "built"
    # Newest first, so each stage shows the first item made for it; "rewritten": the rewrite step's seed.
    assert sorted(items) == ["accepted", "answered", "draft", "in_review", "rewritten"]
    assert items["accepted"].kind == "multi_turn" and len(items["accepted"].history) == 2
    assert items["in_review"].kind == "mcq" and items["in_review"].answer == "C"
    assert items["answered"].author.username == "annotator2" and items["draft"].author.username == "annotator"
    rounds = list(benchmark.review_rounds.order_by("number").values_list("status", flat=True))
    assert rounds == [ReviewRound.Status.CLOSED, ReviewRound.Status.OPEN]
    waiting = Review.objects.get(verdict="")
    assert waiting.reviewer.username == "reviewer" and waiting.item == items["in_review"]
    assert KnownImageSet.objects.get().hashes.count() == 12

    # A re-run changes nothing.
    before = sorted(Item.objects.values_list("pk", "status", "version"))
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo", stdout=io.StringIO())
    assert sorted(Item.objects.values_list("pk", "status", "version")) == before
    assert benchmark.review_rounds.count() == 2 and Review.objects.count() == 2


def test_later_stages_append_a_step_with_the_same_signature(fresh_image_indexes, monkeypatch):
    from demo import services

    seen = []

    def add_demo(benchmark, users):
        seen.append((benchmark.slug, sorted(users)))
        return "Later stage: done."

    monkeypatch.setattr(services, "DEMO_STEPS", [*services.DEMO_STEPS[:1], services.DemoStep("later stage", add_demo)])
    from demo.management.commands import seed_demo

    monkeypatch.setattr(seed_demo, "DEMO_STEPS", services.DEMO_STEPS)
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert seen == [(DEMO_SLUG, ["annotator", "annotator2", "researcher", "reviewer"])]
    assert "  Later stage: done." in out.getvalue()


@pytest.mark.usefixtures("postgres")
def test_a_fresh_demo_keeps_every_invariant_of_the_race_kit(fresh_image_indexes, django_capture_on_commit_callbacks):
    """Issue 45: its draft was assigned to `annotator` with no assignment behind it."""
    from tests.races import broken

    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo", stdout=io.StringIO())
    assert broken() == {}


def test_with_no_models_file_the_demo_writes_the_demo_endpoints_and_seeds_every_stage_through_real_jobs(
    settings, tmp_path, fresh_image_indexes
):
    from django.contrib.auth import get_user_model

    from benchforge_harness import scoring
    from exports.models import Release, Score
    from humaneval.models import Study
    from humaneval.selectors import study_agreement
    from qc.models import QCRun
    from rewrite.models import Rewrite, RewriteBatch

    settings.BENCHFORGE_MODELS = tmp_path / "models.toml"
    out = io.StringIO()
    call_command("seed_demo", "--demo-models", stdout=out)
    text = out.getvalue()
    assert settings.BENCHFORGE_MODELS.exists() and "declares the built-in demo endpoints" in text
    assert 'provider = "demo"' in settings.BENCHFORGE_MODELS.read_text()
    # No address but the server's own (printed by `manage.py serve` with the port it listens on).
    assert "http://" not in text

    batch = RewriteBatch.objects.get()
    assert batch.endpoint == "demo-strong" and batch.status == RewriteBatch.Status.FINISHED and batch.job.is_finished
    assert Rewrite.objects.filter(batch=batch, state=Rewrite.State.PENDING).count() >= 5

    run = QCRun.objects.get()
    assert run.status == QCRun.Status.FINISHED and run.model_names == ["demo-strong", "demo-fair", "demo-weak"]
    assert run.answers.exists() and run.entries.filter(flagged=True, decision="").exists()

    first, second = Release.objects.order_by("created_at")
    assert (first.version, first.status, second.version, second.status) == ("1.0.0", "frozen", "1.1.0", "built")
    scores = {(s.label, s.method): s for s in Score.objects.filter(release=first)}
    for model in ("demo-strong", "demo-fair", "demo-weak"):
        assert scores[(model, "mcq")].status == scores[(model, "pointwise")].status == Score.Status.DONE
    assert scores[("demo-weak", "pairwise")].status == Score.Status.DONE
    pointwise = {
        m: scoring.MODES["pointwise"].headline_value(scores[(m, "pointwise")].results)
        for m in ("demo-strong", "demo-fair", "demo-weak")
    }
    assert pointwise["demo-strong"] > pointwise["demo-fair"] > pointwise["demo-weak"]

    study = Study.objects.get()
    assert study.ratings.exclude(saved_at=None).exists() and study.ratings.filter(saved_at=None).exists()
    assert study_agreement(study)["overall"]["ratings"] > 0

    # The leaderboard links the study for those who may open it, and only for them.
    from django.test import Client

    study_link = f'href="/b/{DEMO_SLUG}/human-eval/{study.number}/"'
    pages = {}
    for name in ("researcher", "reviewer"):
        client = Client()
        client.force_login(get_user_model().objects.get(username=name))
        pages[name] = client.get(f"/b/{DEMO_SLUG}/releases/1.0.0/leaderboard/").content.decode()
    assert study_link in pages["researcher"] and study_link not in pages["reviewer"]
    assert "study 1" in pages["reviewer"]

    # Re-running adds nothing.
    call_command("seed_demo", "--demo-models", stdout=io.StringIO())
    assert (RewriteBatch.objects.count(), QCRun.objects.count(), Release.objects.count(), Study.objects.count()) == (1, 1, 2, 1)
    assert Score.objects.count() == len(scores)


def test_without_the_option_the_demo_writes_no_models_file(settings, tmp_path, fresh_image_indexes):
    settings.BENCHFORGE_MODELS = tmp_path / "models.toml"
    call_command("seed_demo", stdout=io.StringIO())
    assert not settings.BENCHFORGE_MODELS.exists()

"""A job keeps its benchmark's id only (jobs sits below curation): the jobs app declares no
relation to another app's model, a deleted benchmark's jobs go with it, and who sees which job,
and the benchmark a job list or page names, stay as they were with the foreign key."""

import pytest
from django.apps import apps
from django.conf import settings

from curation.services import create_benchmark
from jobs import services as jobs
from jobs.models import Job, JobEntry
from tests.jobs.toy import TOY

pytestmark = pytest.mark.django_db


def test_the_jobs_app_declares_no_relation_to_a_model_of_another_app():
    """import-linter cannot see a relation named by a string ("curation.Benchmark"): this can."""
    allowed = {"jobs", settings.AUTH_USER_MODEL.split(".")[0]}  # its own models, and who started a job
    for model in apps.get_app_config("jobs").get_models():
        for field in model._meta.get_fields(include_hidden=False):
            if field.is_relation and field.concrete:
                assert field.related_model._meta.app_label in allowed, f"{model.__name__}.{field.name} -> {field.related_model}"


def test_deleting_a_benchmark_deletes_its_jobs_and_their_entries_only(benchmark, researcher):
    other = create_benchmark(name="Other", user=researcher)
    gone = jobs.create_job(TOY, benchmark=benchmark, params={"units": 0, "ledger": 0})
    JobEntry.objects.create(job=gone, key="unit 1", outcome="ok")
    kept = jobs.create_job(TOY, benchmark=other, params={"units": 0, "ledger": 0})
    loose = jobs.create_job(TOY, params={"units": 0, "ledger": 0})
    benchmark.delete()
    assert set(Job.objects.values_list("pk", flat=True)) == {kept.pk, loose.pk}
    assert not JobEntry.objects.filter(job_id=gone.pk).exists()


def test_members_see_their_benchmarks_jobs_and_everyone_the_jobs_they_started(
    benchmark, make_user, researcher, api_for, client_for
):
    member = make_user("annotator", "member", benchmarks=[benchmark])
    outsider = make_user("annotator", "outsider")
    of_benchmark = jobs.create_job(TOY, benchmark=benchmark, user=researcher, params={"units": 0, "ledger": 0})
    own = jobs.create_job(TOY, benchmark=benchmark, user=outsider, params={"units": 0, "ledger": 0})
    elsewhere = jobs.create_job(TOY, user=researcher, params={"units": 0, "ledger": 0})

    def listed(user, **filters):
        rows = api_for(user).get("/api/v1/jobs/", filters).json()["results"]
        return {row["id"]: row["benchmark"] for row in rows}

    assert listed(member) == {of_benchmark.pk: "demo", own.pk: "demo"}
    assert listed(outsider) == {own.pk: "demo"}
    assert listed(researcher) == {of_benchmark.pk: "demo", own.pk: "demo", elsewhere.pk: None}
    assert listed(researcher, benchmark="demo") == {of_benchmark.pk: "demo", own.pk: "demo"}
    assert listed(researcher, benchmark="no-such-benchmark") == {}
    assert api_for(outsider).get(f"/api/v1/jobs/{of_benchmark.pk}/").status_code == 404

    page = client_for(member).get(f"/jobs/{of_benchmark.pk}/").content.decode()
    assert 'href="/b/demo/"' in page and benchmark.name in page
    listing = client_for(member).get("/jobs/?benchmark=demo").content.decode()
    assert f"/jobs/{of_benchmark.pk}/" in listing and f"/jobs/{elsewhere.pk}/" not in listing

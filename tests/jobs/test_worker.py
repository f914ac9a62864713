"""Jobs on real Celery workers (Redis broker, Postgres): a worker killed mid-run, the job seen as
interrupted, resumed from the API on a new worker; no unit lost, none done twice; re-delivery of
the finished job changes nothing."""

import pytest
from django.test import Client

from benchforge.auth import create_token_for
from jobs import services as jobs
from jobs.models import Job, JobEntry
from tests.jobs.toy import TOY
from tests.jobs.workers import wait_for

pytestmark = pytest.mark.services


def test_a_preset_load_runs_on_a_worker(celery_workers, researcher):
    from curation.services import create_benchmark, start_preset_load

    celery_workers.start()
    benchmark = create_benchmark(name="Remote", user=researcher)
    job = start_preset_load(benchmark, "mllm-bench", user=researcher)
    job = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=Job.FINISHED).first(), what="the preset job")
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert benchmark.tasks.count() == 42 and job.created_by == researcher and job.result == {"tasks": 42}
    assert job.worker and job.runs == 1


def test_a_killed_worker_leaves_an_interrupted_job_that_resumes_without_repeating_a_unit(celery_workers, researcher, settings):
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT = 3
    ledger = jobs.create_job(TOY, params={"units": 0, "ledger": 0})  # holds the units' side effects
    job = jobs.start_job(TOY, user=researcher, params={"units": 40, "delay": 0.05, "ledger": ledger.pk})
    worker = celery_workers.start(app="tests.jobs.toy_worker")
    wait_for(lambda: Job.objects.get(pk=job.pk).done >= 10, what="ten units")
    celery_workers.kill(worker)
    killed_at = Job.objects.get(pk=job.pk).done
    assert 10 <= killed_at < 40

    api = Client(HTTP_AUTHORIZATION=f"Token {create_token_for(researcher)}")
    seen = wait_for(
        lambda: (row := api.get(f"/api/v1/jobs/{job.pk}/").json())["state"] == "interrupted" and row,
        timeout=30,
        what="the job to show as interrupted",
    )
    assert seen["status"] == "running" and seen["can_resume"] is True
    response = api.post(f"/api/v1/jobs/{job.pk}/resume/")
    assert response.status_code == 200 and response.json()["status"] == "queued"

    celery_workers.start(app="tests.jobs.toy_worker")
    job = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=Job.FINISHED).first(), what="the resumed job")
    assert job.status == Job.Status.SUCCEEDED, job.message
    keys = sorted(JobEntry.objects.filter(job=job).values_list("key", flat=True))
    assert keys == [f"unit {n:03d}" for n in range(40)]  # none lost
    effects = [key.split(" | ")[0] for key in JobEntry.objects.filter(job=ledger).values_list("key", flat=True)]
    assert sorted(effects) == keys  # none done twice: each unit's effect exists exactly once
    runs = {key.split(" | ")[1] for key in JobEntry.objects.filter(job=ledger).values_list("key", flat=True)}
    assert runs == {"run 1", "run 2"}
    assert job.runs == 2 and job.done == 40 and job.result == {"ok": 40, "skipped": 0, "errors": 0}  # both runs counted

    # The broker delivering the same job again (a late redelivery) changes nothing.
    finished = (job.status, job.finished_at, job.result, job.runs)
    from benchforge.celery import app

    with app.connection_for_write() as connection:
        app.send_task("jobs.run", args=[job.pk], queue=celery_workers.queue, connection=connection)
    ping = jobs.start_job(TOY, params={"units": 1, "ledger": ledger.pk})  # queued behind it: once done, so is the redelivery
    wait_for(lambda: Job.objects.filter(pk=ping.pk, status=Job.Status.SUCCEEDED).exists(), what="the job queued behind")
    job.refresh_from_db()
    assert (job.status, job.finished_at, job.result, job.runs) == finished
    assert JobEntry.objects.filter(job=job).count() == 40

"""Infrastructure down is a clear, recoverable state. The Celery broker at a closed port: starting a
job is a 503 saying what to do, the job shows "not sent" (never "queued" forever, never "running"),
resuming it sends it again, and a worker that starts sends what was missed. The shared cache at a
closed port: token authentication, throttles and the dashboard keep answering."""

import json
import socket

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Item
from curation.models import Benchmark, Image
from jobs import services as jobs
from jobs.models import Job
from tests.jobs.toy import TOY
from tests.jobs.workers import REDIS_URL, _port_open, require, wait_for


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


@pytest.fixture
def broker_down(settings):
    from benchforge.celery import app

    settings.BENCHFORGE_JOB_RUNNER = "celery"
    previous = app.conf.broker_url, app.conf.task_always_eager
    app.conf.broker_url, app.conf.task_always_eager = f"redis://127.0.0.1:{closed_port()}/0", False
    yield app
    app.conf.broker_url, app.conf.task_always_eager = previous


def counts():
    return Item.objects.count(), Image.objects.count(), Benchmark.objects.count(), Job.objects.count()


@pytest.mark.django_db(transaction=True)
def test_an_unreachable_broker_is_a_503_and_the_job_shows_not_sent(broker_down, api_for, client_for, researcher):
    api = api_for(researcher)
    before = counts()
    data = json.dumps({"id": 1, "question": "Why?"}).encode()
    response = api.post(
        "/api/v1/qc/imports/",
        {"format": "mllm_bench", "name": "Later", "file": SimpleUploadedFile("q.jsonl", data)},
        format="multipart",
    )
    assert response.status_code == 503, response.content
    body = response.json()
    assert body["code"] == "queue_unavailable" and "could not be reached" in body["detail"]
    assert "resume it from its page" in body["detail"]
    job_id = body["job"]
    # The job and its benchmark are saved (the import runs once the queue is back), nothing imported.
    assert counts() == (before[0], before[1], before[2] + 1, before[3] + 1)

    row = api.get(f"/api/v1/jobs/{job_id}/").json()
    assert row["status"] == "queued" and row["state"] == "unsent" and row["can_resume"] is True
    assert row["message"].startswith("Not sent: the job queue could not be reached")

    page = client_for(researcher).get(f"/jobs/{job_id}/").content.decode()
    assert "Not sent" in page and 'value="resume"' in page
    # Still down: resuming says so again, and the job stays resumable.
    again = api.post(f"/api/v1/jobs/{job_id}/resume/")
    assert again.status_code == 503 and Job.objects.get(pk=job_id).is_unsent


@pytest.mark.django_db(transaction=True)
def test_an_unsent_job_is_sent_when_the_broker_is_back(broker_down, researcher):
    with pytest.raises(jobs.QueueUnavailable):
        jobs.start_job(TOY, user=researcher, params={"units": 1, "ledger": 0})
    job = Job.objects.get(kind=TOY)
    assert job.state == "unsent" and job.state_label == "Not sent"
    require(_port_open(REDIS_URL), f"a Redis broker at {REDIS_URL} (the broker coming back)")
    broker_down.conf.broker_url = REDIS_URL
    assert jobs.resend_unsent() == 1
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED and job.unsent_since is None and job.state == "queued"
    assert jobs.resend_unsent() == 0  # sent once, not again


@pytest.mark.services
def test_a_starting_worker_sends_the_jobs_the_broker_missed(celery_workers, researcher):
    from benchforge.celery import app

    app.conf.broker_url = f"redis://127.0.0.1:{closed_port()}/0"
    ledger = jobs.create_job(TOY, params={"units": 0, "ledger": 0})
    with pytest.raises(jobs.QueueUnavailable):
        jobs.start_job(TOY, user=researcher, params={"units": 3, "ledger": ledger.pk})
    job = Job.objects.get(kind=TOY, params__units=3)
    assert job.is_unsent
    app.conf.broker_url = REDIS_URL  # the broker is back
    celery_workers.start(app="tests.jobs.toy_worker")
    job = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=Job.FINISHED).first(), what="the re-sent job")
    assert job.status == Job.Status.SUCCEEDED and job.done == 3 and job.unsent_since is None


# ---- the shared cache down -----------------------------------------------------------------------


@pytest.mark.django_db
def test_token_authentication_and_throttles_answer_with_the_cache_down(
    cache_down, api_for, researcher, benchmark, caplog, monkeypatch
):
    from benchforge import throttling

    api = api_for(researcher)
    monkeypatch.setattr(throttling, "_last_logged", float("-inf"))  # outages in the setup were logged already (once a minute)
    before = counts()
    assert api.get("/api/v1/jobs/").status_code == 200
    from rest_framework.test import APIClient

    bad = APIClient().get("/api/v1/jobs/", HTTP_AUTHORIZATION="Token " + "0" * 64)
    assert bad.status_code == 401  # an invalid token is still refused (just not counted)
    assert counts() == before
    assert any("shared cache is unreachable" in r.getMessage() for r in caplog.records)


@pytest.mark.django_db
def test_the_dashboard_counts_afresh_with_the_cache_down(cache_down, client_for, researcher, benchmark):
    response = client_for(researcher).get(f"/b/{benchmark.slug}/")
    assert response.status_code == 200


@pytest.mark.django_db(transaction=True)
def test_jobs_started_together_all_show_not_sent_when_the_first_cannot_be_sent(broker_down, researcher):
    from django.db import transaction

    with pytest.raises(jobs.QueueUnavailable), transaction.atomic():
        for units in (1, 2, 3):  # as a QC run starts one job per part
            jobs.start_job(TOY, user=researcher, params={"units": units, "ledger": 0})
    assert [j.state for j in Job.objects.filter(kind=TOY).order_by("pk")] == ["unsent"] * 3
    assert not Job.objects.filter(kind=TOY, status=Job.Status.QUEUED, unsent_since__isnull=True).exists()

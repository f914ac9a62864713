"""Jobs recover on their own: a running job whose worker was lost (no heartbeat) is re-queued by
the sweeper with a back-off, at most BENCHFORGE_JOB_MAX_RECOVERIES times, then fails with the
reason; each run records the worker that ran it (page and API)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import runner
from jobs import services as jobs
from jobs.models import Job, JobEntry
from tests.jobs.toy import TOY

pytestmark = pytest.mark.django_db


@pytest.fixture
def ledger():
    return jobs.create_job(TOY, params={"units": 0, "ledger": 0})


def _lose_worker(job, *, silent_for: float) -> None:
    """What a killed worker leaves: running, its heartbeat silent for `silent_for` seconds."""
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING,
        run_token="dead",
        worker="gone (pid 1)",
        heartbeat_at=timezone.now() - timedelta(seconds=silent_for),
    )


def test_a_job_whose_worker_died_is_re_queued_and_finishes_without_anyone_resuming_it(ledger, settings):
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT, settings.BENCHFORGE_JOB_RECOVERY_BACKOFF = 60, 10
    job = jobs.create_job(TOY, params={"units": 4, "ledger": ledger.pk})
    _lose_worker(job, silent_for=65)  # past the timeout, not yet past the back-off: left alone
    assert jobs.recover_lost() == {"recovered": [], "failed": []}
    _lose_worker(job, silent_for=75)
    assert jobs.recover_lost() == {"recovered": [job.pk], "failed": []}
    job.refresh_from_db()  # the inline runner ran it again right away
    assert job.status == Job.Status.SUCCEEDED and job.recoveries == 1 and job.done == 4
    assert job.run_log[-1]["recovered"] is True and job.run_log[-1]["worker"] == runner.worker_name()
    assert JobEntry.objects.filter(job=ledger).count() == 4


def test_the_back_off_doubles_and_after_the_limit_the_job_fails_with_the_reason(ledger, settings, researcher):
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT, settings.BENCHFORGE_JOB_RECOVERY_BACKOFF = 60, 10
    settings.BENCHFORGE_JOB_MAX_RECOVERIES = 2
    job = jobs.create_job(TOY, params={"units": 1, "ledger": ledger.pk})
    Job.objects.filter(pk=job.pk).update(recoveries=1)
    _lose_worker(job, silent_for=75)  # a second recovery waits 60 + 20 s
    assert jobs.recover_lost()["recovered"] == []
    _lose_worker(job, silent_for=85)
    assert jobs.recover_lost()["recovered"] == [job.pk]
    _lose_worker(job, silent_for=3600)
    assert jobs.recover_lost() == {"recovered": [], "failed": [job.pk]}
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.recoveries == 2
    assert "gone (pid 1)" in job.message and "re-queued automatically 2 time(s)" in job.message
    assert job.can_resume  # a person resumes it once the cause is fixed; the count starts again
    job = jobs.run_now(jobs.resume(job, user=researcher))
    assert job.status == Job.Status.SUCCEEDED and job.recoveries == 0


def test_a_live_or_finished_job_is_never_touched_by_the_sweeper(ledger, settings):
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT, settings.BENCHFORGE_JOB_RECOVERY_BACKOFF = 60, 0
    alive = jobs.create_job(TOY, params={"units": 1, "ledger": ledger.pk})
    _lose_worker(alive, silent_for=5)
    done = jobs.run_now(jobs.create_job(TOY, params={"units": 1, "ledger": ledger.pk}))
    Job.objects.filter(pk=done.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert jobs.recover_lost() == {"recovered": [], "failed": []}
    assert Job.objects.get(pk=alive.pk).run_token == "dead"


def test_each_run_names_its_worker_on_the_page_and_in_the_api(ledger, settings, client, researcher, api_for):
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT, settings.BENCHFORGE_JOB_RECOVERY_BACKOFF = 60, 0
    job = jobs.run_now(jobs.create_job(TOY, params={"units": 1, "ledger": ledger.pk}))
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING, worker="w1@host (pid 7)", heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    jobs.recover_lost()
    row = api_for(researcher).get(f"/api/v1/jobs/{job.pk}/").json()
    assert row["worker"] == runner.worker_name() and row["recoveries"] == 1
    assert [r["recovered"] for r in row["run_log"]] == [False, True]
    client.force_login(researcher)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert runner.worker_name() in page and "automatically" in page

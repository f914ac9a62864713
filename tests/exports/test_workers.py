"""A release build on a real Celery worker (Redis broker, Postgres) SIGKILLed in the middle: the
next worker's sweeper re-queues it with no one pressing Resume, and it finishes with every file
once."""

import pytest

from exports import services
from exports.models import Release, ReleaseFile
from jobs.models import Job, JobEntry
from tests.jobs.workers import wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_a_killed_worker_s_build_finishes_by_itself_on_the_next_worker(celery_workers, benchmark, researcher, accepted, settings):
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT = 3
    celery_workers.env.update(
        {"BENCHFORGE_JOB_HEARTBEAT_TIMEOUT": "3", "BENCHFORGE_JOB_RECOVERY_BACKOFF": "0.5", "BENCHFORGE_TEST_SLOW_STORE": "1"}
    )
    first = celery_workers.start(app="tests.exports.slow_worker")
    release = services.create_release(benchmark, user=researcher, version="1.0.0")
    release = services.start_build(release, user=researcher)
    job = release.job
    wait_for(lambda: JobEntry.objects.filter(job=job).count() >= 2, timeout=120, what="the snapshot and a file")
    celery_workers.kill(first)
    assert not Job.objects.get(pk=job.pk).is_finished
    celery_workers.start(app="tests.exports.slow_worker")  # a worker comes back; nobody touches the build

    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=180, what="the build to finish by itself")
    job.refresh_from_db()
    release.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.runs == 2 and job.recoveries == 1, job.message
    assert [r["recovered"] for r in job.run_log] == [False, True]
    assert release.status == Release.Status.BUILT
    kinds = list(ReleaseFile.objects.filter(release=release).values_list("kind", flat=True))
    assert len(kinds) == len(set(kinds)) == job.total - 1  # every file once (the snapshot is the other unit)
    assert JobEntry.objects.filter(job=job).count() == job.total

import pytest

from jobs.models import Job
from jobs.services import create_job, finished_keys, record_entry, run_tracked

pytestmark = pytest.mark.django_db


def test_a_resumed_job_counts_each_unit_once_and_retries_errors():
    job = create_job("import", total=3)
    record_entry(job.pk, "a.jpg", "ok")
    record_entry(job.pk, "b.jpg", "error", "truncated JPEG")
    assert finished_keys(job.pk) == {"a.jpg"}
    # second run: a is skipped, b is retried and now succeeds
    record_entry(job.pk, "b.jpg", "ok")
    record_entry(job.pk, "c.jpg", "ok")
    job.refresh_from_db()
    assert job.done == 3 and job.percent == 100
    assert finished_keys(job.pk) == {"a.jpg", "b.jpg", "c.jpg"}
    assert job.entries.get(key="b.jpg").message == ""


def test_run_tracked_records_failure_message_instead_of_crashing():
    job = create_job("boom")

    def work(job):
        raise ValueError("the zip file is corrupt")

    finished = run_tracked(job.pk, work)
    assert finished.status == Job.Status.FAILED
    assert finished.message == "ValueError: the zip file is corrupt"
    assert finished.finished_at is not None


def test_run_tracked_success_keeps_result():
    job = create_job("fine")
    finished = run_tracked(job.pk, lambda job: {"added": 2})
    assert finished.status == Job.Status.SUCCEEDED and finished.result == {"added": 2}

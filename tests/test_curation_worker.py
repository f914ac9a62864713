"""A zip import runs on a real Celery worker (Redis broker, shared Postgres and media folder)."""

import time

import pytest

from curation import services
from curation.models import Image
from jobs.models import Job
from tests.test_celery_worker import celery_worker_process  # noqa: F401 (fixture)
from tests.test_curation_ingest import jpeg, make_zip, stored_files_match_rows

pytestmark = pytest.mark.services


def test_worker_imports_a_zip_as_a_tracked_resumable_job(celery_worker_process, researcher, settings, tmp_path):  # noqa: F811
    from curation.tasks import run_import_job_task

    benchmark = services.create_benchmark(name="Remote images", user=researcher, preset="alignmmbench")
    archive = tmp_path / "upload.zip"
    archive.write_bytes(make_zip([("ocr/a.jpg", jpeg(4000)), ("b.jpg", jpeg(4001)), ("c.txt", b"text")]))
    job = services.create_import_job("ingest_zip", benchmark, user=researcher, path=str(archive), uploaded=True)
    run_import_job_task.apply_async(args=[job.pk], **celery_worker_process)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.is_finished:
            break
        time.sleep(0.2)
    else:
        pytest.fail("the worker did not finish the import within 60 s (see the worker log above)")
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.result == {"added": 2, "skipped": 0, "errors": 1}
    assert [t.slug for t in Image.objects.get(original_name="a.jpg").tasks.all()] == ["ocr"]
    assert stored_files_match_rows(settings) and not archive.exists()

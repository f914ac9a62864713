"""A zip import runs on a real Celery worker (Redis broker, shared Postgres and media folder)."""

import pytest
from django.core.files.base import ContentFile

from curation import services
from curation.models import Image
from jobs import services as jobs
from jobs.models import Job
from jobs.staging import stage_upload
from tests.factories import jpeg, make_zip, stored_files_match_rows
from tests.jobs.workers import wait_for

pytestmark = pytest.mark.services


def test_worker_imports_a_zip_as_a_tracked_resumable_job(celery_workers, researcher, settings):
    from pathlib import Path

    benchmark = services.create_benchmark(name="Remote images", user=researcher, preset="alignmmbench")
    staged = stage_upload(ContentFile(make_zip([("ocr/a.jpg", jpeg(4000)), ("b.jpg", jpeg(4001)), ("c.txt", b"text")])), ".zip")
    job = jobs.enqueue(services.create_import_job("ingest_zip", benchmark, user=researcher, staged=staged))
    celery_workers.start()
    job = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=Job.FINISHED).first(), what="the import")
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.result == {"added": 2, "skipped": 0, "errors": 1}
    assert [t.slug for t in Image.objects.get(original_name="a.jpg").tasks.all()] == ["ocr"]
    assert stored_files_match_rows(settings) and not (Path(settings.MEDIA_ROOT) / staged).exists()

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


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_worker_imports_a_big_zip_in_worker_processes_or_where_it_cannot_in_threads(
    celery_workers, researcher, settings, concurrency
):
    """A zip big enough for ingest's worker processes (32 files or more) imports the same on a
    solo worker, which starts them, and in a prefork child, a daemonic process that cannot start
    any: there the images are analysed in the job's threads (docs/deploy.md), and the log says so."""
    import hashlib

    benchmark = services.create_benchmark(name="Many remote images", user=researcher)
    pictures = [jpeg(4100 + n, size=(96, 72)) for n in range(40)]
    staged = stage_upload(ContentFile(make_zip([(f"img-{n}.jpg", data) for n, data in enumerate(pictures)])), ".zip")
    job = jobs.enqueue(services.create_import_job("ingest_zip", benchmark, user=researcher, staged=staged))
    celery_workers.env["BENCHFORGE_INGEST_PROCESSES"] = "2"
    celery_workers.start(concurrency=concurrency)
    job = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=Job.FINISHED).first(), what="the import")
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.result == {"added": 40, "skipped": 0, "errors": 0}
    stored = {image.original_name: image.md5 for image in Image.objects.filter(benchmark=benchmark)}
    assert stored == {f"img-{n}.jpg": hashlib.md5(data).hexdigest() for n, data in enumerate(pictures)}
    assert stored_files_match_rows(settings)
    log = (celery_workers.tmp_path / "worker-0.log").read_text()
    assert ("worker processes cannot start here" in log) == (concurrency > 1), log[-3000:]

"""Uploads a job works from (a zip, a URL list, a metadata file), kept through Django's storage
API under `imports/` (local disk or S3 alike; never served over HTTP) until the job no longer
needs them: deleted when it succeeds, kept while it can be resumed (failed, cancelled or
interrupted), and swept once abandoned."""

import uuid
from datetime import timedelta

from django.conf import settings
from django.core.files.storage import default_storage
from django.utils import timezone

from benchforge.errors import DomainError

STAGING_DIR = "imports"


def stage_upload(uploaded, suffix: str) -> str:
    """Store an upload for a job; returns its storage name (put it in the job's params["staged"])."""
    return default_storage.save(f"{STAGING_DIR}/{uuid.uuid4().hex}{suffix}", uploaded)


def open_staged(name: str, *, max_bytes: int | None = None):
    """A staged upload as a seekable binary file (zipfile seeks). From S3 the object is downloaded
    whole on first read, into memory up to the storage's max_memory_size and a temporary file past
    it (django-storages' S3File); `max_bytes` refuses a larger object before any of it is fetched."""
    if not name.startswith(f"{STAGING_DIR}/"):
        raise ValueError(f"{name!r} is not a staged upload")
    if max_bytes is not None:
        size = default_storage.size(name)
        if size > max_bytes:
            raise DomainError(f"The uploaded file is {size / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.0f} MB.")
    return default_storage.open(name, "rb")


def discard_staged(job) -> None:
    name = job.params.get("staged")
    if name:
        default_storage.delete(name)


def sweep_staged(*, now=None) -> list[str]:
    """Delete staged uploads no job will use any more: of succeeded jobs; of jobs failed, cancelled
    or interrupted longer ago than BENCHFORGE_STAGED_UPLOAD_DAYS (not resumed since); and files no
    job names, older than an hour (a request that died between upload and job). Returns the names."""
    from .models import Job

    now = now or timezone.now()
    keep_failed_since = now - timedelta(days=settings.BENCHFORGE_STAGED_UPLOAD_DAYS)
    referenced = {}
    for job in Job.objects.filter(params__has_key="staged").only("status", "finished_at", "heartbeat_at", "params"):
        # An interrupted job was last alive at its heartbeat: that is when it was abandoned.
        ended = job.finished_at or (job.heartbeat_at if job.is_interrupted else None)
        referenced[job.params["staged"]] = (job.status, ended)
    try:
        _dirs, files = default_storage.listdir(STAGING_DIR)
    except FileNotFoundError:
        return []
    deleted = []
    for file in files:
        name = f"{STAGING_DIR}/{file}"
        status, finished_at = referenced.get(name, (None, None))
        if status is None:
            try:
                stale = default_storage.get_modified_time(name) < now - timedelta(hours=1)
            except (FileNotFoundError, NotImplementedError):
                stale = False
        else:
            stale = status == Job.Status.SUCCEEDED or (finished_at is not None and finished_at < keep_failed_since)
        if stale:
            default_storage.delete(name)
            deleted.append(name)
    return deleted

"""Upload limits hold while the body streams in: a request over its limit is refused before it is
read, a file over its limit is dropped after at most that many bytes, archives are capped in size
and entries, and known-set files have a cap too."""

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.files.uploadhandler import (
    MemoryFileUploadHandler,
    TemporaryFileUploadHandler,
)

from curation.models import Image, KnownImageSet
from jobs.models import Job
from tests.factories import jpeg, make_zip

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]
IMAGES = "/api/v1/benchmarks/demo/images/"


@pytest.fixture
def bytes_passed_on(monkeypatch):
    """How many bytes of each file reached the handlers that keep files (memory or disk)."""
    seen: dict[str, int] = {}
    for handler in (MemoryFileUploadHandler, TemporaryFileUploadHandler):
        original = handler.receive_data_chunk

        def counting(self, raw_data, start, original=original):
            seen[self.file_name] = seen.get(self.file_name, 0) + len(raw_data)
            return original(self, raw_data, start)

        monkeypatch.setattr(handler, "receive_data_chunk", counting)
    return seen


def test_an_oversized_file_is_dropped_while_streaming_and_reported_in_order(
    api_for, annotator, benchmark, settings, bytes_passed_on
):
    settings.BENCHFORGE_MAX_UPLOAD_BYTES = 200_000
    big = SimpleUploadedFile("big.jpg", b"\xff" * 3_000_000, content_type="image/jpeg")
    files = [
        SimpleUploadedFile("a.jpg", jpeg(8001), content_type="image/jpeg"),
        big,
        SimpleUploadedFile("b.jpg", jpeg(8002), content_type="image/jpeg"),
    ]
    response = api_for(annotator).post(IMAGES, {"files": files}, format="multipart")
    assert response.status_code == 201
    results = response.json()["results"]
    assert [(r["name"], r["outcome"]) for r in results] == [("a.jpg", "added"), ("big.jpg", "error"), ("b.jpg", "added")]
    assert "limit is 200 kB per file" in results[1]["message"]
    assert bytes_passed_on["big.jpg"] <= 200_000  # never more than the limit was kept, of 3 MB sent
    assert Image.objects.count() == 2


def test_a_request_over_its_limit_is_refused_before_it_is_read(api_for, annotator, benchmark, settings, bytes_passed_on):
    settings.BENCHFORGE_MAX_REQUEST_BYTES = 100_000
    files = [SimpleUploadedFile(f"{n}.jpg", b"\xff" * 90_000, content_type="image/jpeg") for n in range(3)]
    response = api_for(annotator).post(IMAGES, {"files": files}, format="multipart")
    assert response.status_code == 413 and "accepts at most" in response.json()["detail"]
    assert bytes_passed_on == {} and Image.objects.count() == 0


def test_archive_over_its_limit_is_refused_with_a_message(client_for, researcher, benchmark, settings):
    settings.BENCHFORGE_MAX_ARCHIVE_BYTES = 50_000
    archive = SimpleUploadedFile("big.zip", make_zip([(f"{n}.jpg", jpeg(8100 + n)) for n in range(20)]))
    response = client_for(researcher).post(
        "/b/demo/images/import/", {"kind": "zip", "file": archive}, follow=True, HTTP_REFERER="/b/demo/images/upload/"
    )
    assert "this page accepts at most" in response.content.decode() or "limit is" in response.content.decode()
    assert not Job.objects.exists()
    assert not (settings.MEDIA_ROOT / "imports").exists() or not any((settings.MEDIA_ROOT / "imports").iterdir())


def test_zip_with_too_many_entries_or_bytes_is_refused_before_a_job(api_for, researcher, benchmark, settings):
    settings.BENCHFORGE_MAX_ARCHIVE_ENTRIES = 5
    many = SimpleUploadedFile("many.zip", make_zip([(f"{n}.jpg", b"x") for n in range(6)]))
    response = api_for(researcher).post(
        "/api/v1/benchmarks/demo/images/import/", {"kind": "zip", "file": many}, format="multipart"
    )
    assert response.status_code == 400 and "holds 6 files; an import takes at most 5" in response.json()["detail"]
    settings.BENCHFORGE_MAX_ARCHIVE_ENTRIES = 100
    settings.BENCHFORGE_MAX_ARCHIVE_UNPACKED_BYTES = 10_000
    bomb = io.BytesIO()
    import zipfile

    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("zeros.jpg", b"\0" * 5_000_000)  # a few kB packed, 5 MB unpacked
    response = api_for(researcher).post(
        "/api/v1/benchmarks/demo/images/import/",
        {"kind": "zip", "file": SimpleUploadedFile("bomb.zip", bomb.getvalue())},
        format="multipart",
    )
    assert response.status_code == 400 and "unpacks to" in response.json()["detail"]
    assert not Job.objects.exists()


def test_known_set_files_have_a_limit(api_for, researcher, settings):
    settings.BENCHFORGE_MAX_DATA_FILE_BYTES = 10_000
    rows = "md5\n" + "".join(f"{n:032x}\n" for n in range(2000))
    response = api_for(researcher).post(
        "/api/v1/known-sets/",
        {"name": "big", "kind": "sft", "file": SimpleUploadedFile("h.csv", rows.encode())},
        format="multipart",
    )
    assert response.status_code == 413 and "limit is 10 kB per file" in response.json()["detail"]
    assert not KnownImageSet.objects.exists()

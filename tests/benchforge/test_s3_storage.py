"""Media on S3-compatible storage (BENCHFORGE_MEDIA_STORAGE=s3), against a real S3 HTTP API: moto in
server mode on loopback (tests/fakes/s3_server.py). Every file the app touches goes through Django's
storage API, so uploads, imports, serving, the staging sweep and Label Studio work from the bucket,
and no URL a page or the API gives out points at the bucket. Select with `pytest -m s3`."""

import base64
import http.server
import os
import subprocess
import sys
import threading
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from annotation import services as items
from annotation.contract import item_payload
from benchforge.errors import DomainError
from benchforge.storage import media_storages
from curation import services
from curation.models import Image
from curation.services import contamination
from curation.services import ingest as ingesting
from jobs.models import Job
from jobs.services import run_now
from jobs.staging import STAGING_DIR, open_staged, stage_upload, sweep_staged
from labelstudio.services import _image_data_url
from tests.conftest import REPO_ROOT
from tests.factories import encode, jpeg, make_zip, photo

pytestmark = [pytest.mark.s3, pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]

IMAGES = "/api/v1/benchmarks/demo/images/"
IMPORT = "/api/v1/benchmarks/demo/images/import/"
SPOOL = 5 * 1024 * 1024


def content_names(sha256: str, ext: str) -> set[str]:
    return {f"images/{sha256[:2]}/{sha256[2:4]}/{sha256}.{ext}", f"thumbs/{sha256[:2]}/{sha256[2:4]}/{sha256}.jpg"}


def nothing_on_local_disk(settings) -> bool:
    return not any(p.is_file() for p in Path(settings.MEDIA_ROOT).rglob("*"))


# ---- configuration -------------------------------------------------------------------------------


def test_local_disk_is_the_default():
    assert media_storages({}, spool_bytes=SPOOL)["default"] == {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    assert media_storages({"BENCHFORGE_MEDIA_STORAGE": "local"}, spool_bytes=SPOOL)["default"]["BACKEND"].endswith(
        "FileSystemStorage"
    )


def test_an_s3_configuration_is_private_and_holds_no_credentials():
    env = {
        "BENCHFORGE_MEDIA_STORAGE": "S3",
        "BENCHFORGE_S3_BUCKET": "media",
        "BENCHFORGE_S3_ENDPOINT_URL": "https://minio.internal:9000",
        "BENCHFORGE_S3_REGION": "eu-central-1",
        "BENCHFORGE_S3_PREFIX": "/bench/",
        "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "very-secret",
    }
    storages = media_storages(env, spool_bytes=SPOOL)
    options = storages["default"]["OPTIONS"]
    assert storages["default"]["BACKEND"] == "benchforge.storage_s3.PrivateS3Storage"
    assert options == {
        "bucket_name": "media",
        "endpoint_url": "https://minio.internal:9000",
        "region_name": "eu-central-1",
        "location": "bench",
        "addressing_style": "path",  # any S3-compatible server takes path-style requests
        "default_acl": "private",
        "file_overwrite": True,
        "max_memory_size": SPOOL,
    }
    assert "very-secret" not in repr(storages) and "AKIAEXAMPLE" not in repr(storages)
    assert "staticfiles" in storages
    # AWS itself: no endpoint, the SDK picks the addressing; an empty ACL sends none (ACLs disabled).
    aws = media_storages({**env, "BENCHFORGE_S3_ENDPOINT_URL": "", "BENCHFORGE_S3_ACL": ""}, spool_bytes=SPOOL)
    assert aws["default"]["OPTIONS"]["addressing_style"] is None and aws["default"]["OPTIONS"]["default_acl"] is None


@pytest.mark.parametrize(
    "env, message",
    [
        ({"BENCHFORGE_MEDIA_STORAGE": "ftp"}, "BENCHFORGE_MEDIA_STORAGE='ftp' is not a media storage"),
        ({"BENCHFORGE_MEDIA_STORAGE": "s3"}, "BENCHFORGE_S3_BUCKET is not set"),
        (
            {"BENCHFORGE_MEDIA_STORAGE": "s3", "BENCHFORGE_S3_BUCKET": "b", "BENCHFORGE_S3_ENDPOINT_URL": "minio:9000"},
            "BENCHFORGE_S3_ENDPOINT_URL='minio:9000' is not an http(s) URL",
        ),
        (
            {"BENCHFORGE_MEDIA_STORAGE": "s3", "BENCHFORGE_S3_BUCKET": "b", "AWS_ACCESS_KEY_ID": "AKIA"},
            "only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set",
        ),
        (
            {"BENCHFORGE_MEDIA_STORAGE": "s3", "BENCHFORGE_S3_BUCKET": "b", "BENCHFORGE_S3_ADDRESSING_STYLE": "dns"},
            "BENCHFORGE_S3_ADDRESSING_STYLE='dns' must be one of auto, path, virtual",
        ),
        (
            {"BENCHFORGE_MEDIA_STORAGE": "s3", "BENCHFORGE_S3_BUCKET": "b", "BENCHFORGE_S3_PREFIX": "a/../b"},
            "must not contain '..'",
        ),
    ],
)
def test_a_bad_configuration_is_refused_with_what_to_fix(env, message):
    with pytest.raises(ImproperlyConfigured) as info:
        media_storages(env, spool_bytes=SPOOL)
    assert message in str(info.value)


def test_the_app_refuses_to_start_without_a_bucket():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHFORGE_", "AWS_"))}
    env.update(BENCHFORGE_MEDIA_STORAGE="s3", DJANGO_SETTINGS_MODULE="benchforge.settings")
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "ImproperlyConfigured: Media storage is S3 (BENCHFORGE_MEDIA_STORAGE=s3), but: BENCHFORGE_S3_BUCKET is not set" in (
        done.stderr
    )


# ---- ingest --------------------------------------------------------------------------------------


def test_uploads_land_in_the_bucket_content_addressed_once(s3_media, api_for, annotator, benchmark, settings):
    first, second = jpeg(2001), encode(photo((600, 600), 2002), "PNG")
    api = api_for(annotator)
    resp = api.post(
        IMAGES,
        {"files": [SimpleUploadedFile("a.jpg", first), SimpleUploadedFile("b.png", second), SimpleUploadedFile("c.jpg", b"no")]},
        format="multipart",
    )
    assert resp.status_code == 201, resp.content
    assert [r["outcome"] for r in resp.json()["results"]] == ["added", "added", "error"]
    a, b = Image.objects.order_by("pk")
    assert s3_media.names() == content_names(a.sha256, "jpg") | content_names(b.sha256, "png")
    assert s3_media.read(a.file.name) == first and s3_media.read(b.file.name) == second
    assert s3_media.read(a.thumbnail.name)[:3] == b"\xff\xd8\xff"  # a JPEG thumbnail
    assert s3_media.head(a.file.name)["ContentType"] == "image/jpeg"
    assert s3_media.grants(a.file.name) == [("CanonicalUser", "FULL_CONTROL")]  # private: the owner only
    assert nothing_on_local_disk(settings)

    # The same bytes again, here or in another benchmark: not stored twice.
    before = s3_media.names()
    again = api.post(IMAGES, {"files": [SimpleUploadedFile("copy.jpg", first)]}, format="multipart")
    assert again.json()["results"][0]["outcome"] == "duplicate"
    other = services.create_benchmark(name="Other")
    assert services.ingest_image(other, first).created
    assert Image.objects.count() == 3 and s3_media.names() == before


def test_a_content_addressed_name_is_written_once_and_never_renamed(s3_media):
    name = "images/ab/cd/abcd" + "0" * 60 + ".png"
    assert ingesting._store(name, b"first") and not ingesting._store(name, b"second")  # the first write wins
    assert s3_media.read(name) == b"first"
    # A writer racing past the existence check rewrites the same name (same content), not a renamed copy.
    assert default_storage.save(name, ContentFile(b"first")) == name and s3_media.names() == {name}


def test_a_failed_ingest_leaves_no_object_behind(s3_media, benchmark, monkeypatch):
    services.ingest_image(benchmark, jpeg(2010))
    before = s3_media.names()

    def broken(image):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(contamination, "flag_contamination", broken)
    with pytest.raises(RuntimeError):
        services.ingest_image(benchmark, jpeg(2011))
    assert Image.objects.count() == 1 and s3_media.names() == before


def test_urls_in_pages_and_payloads_are_the_apps_media_route(s3_media, benchmark, annotator, api_for, client_for):
    image = services.ingest_image(benchmark, jpeg(2020), tasks=[benchmark.tasks.get(slug="counting")]).image
    services.screen_images(benchmark, [image.pk], action="accept", user=annotator)
    file_url = reverse("media", kwargs={"path": image.file.name})
    thumb_url = reverse("media", kwargs={"path": image.thumbnail.name})
    assert (
        (image.file.url, image.thumbnail.url)
        == (file_url, thumb_url)
        == (f"/media/{image.file.name}", f"/media/{image.thumbnail.name}")
    )

    row = api_for(annotator).get(IMAGES).json()["results"][0]
    assert (row["file_url"], row["thumbnail_url"]) == (file_url, thumb_url)
    item = items.create_item(benchmark, task=benchmark.tasks.get(slug="counting"), user=annotator, images=[image.pk])
    assert item_payload(item)["images"][0]["url"] == file_url
    page = client_for(annotator).get("/b/demo/images/").content.decode()
    assert f'src="{thumb_url}"' in page and s3_media.endpoint not in page and "X-Amz" not in page


def test_local_disk_urls_are_the_same_route(benchmark):
    image = services.ingest_image(benchmark, jpeg(2021)).image
    assert image.file.url == reverse("media", kwargs={"path": image.file.name})


# ---- serving -------------------------------------------------------------------------------------


def test_media_is_served_from_the_bucket_to_members_only(s3_media, benchmark, annotator, outsider, client_for):
    data = jpeg(2030)
    image = services.ingest_image(benchmark, data).image
    member, stranger = client_for(annotator), client_for(outsider)

    resp = member.get(f"/media/{image.file.name}")
    assert resp.status_code == 200 and b"".join(resp.streaming_content) == data
    assert resp["Content-Type"] == "image/jpeg" and resp["Content-Length"] == str(len(data))
    assert resp["Cache-Control"] == "private, max-age=31536000, immutable"
    thumb = member.get(f"/media/{image.thumbnail.name}")
    assert thumb.status_code == 200 and b"".join(thumb.streaming_content) == s3_media.read(image.thumbnail.name)

    assert stranger.get(f"/media/{image.file.name}").status_code == 404
    assert stranger.get(f"/media/{image.thumbnail.name}").status_code == 404
    staged = stage_upload(ContentFile(b"secret list"), ".txt")
    assert member.get(f"/media/{staged}").status_code == 404  # uploads staged for jobs are never served
    s3_media.delete(image.file.name)
    assert member.get(f"/media/{image.file.name}").status_code == 404  # missing from the bucket: 404, not 500


# ---- imports from staged uploads -----------------------------------------------------------------


def test_a_zip_import_reads_its_upload_from_the_bucket_and_deletes_it(
    s3_media, api_for, researcher, benchmark, django_capture_on_commit_callbacks
):
    archive = make_zip([("counting/a.jpg", jpeg(2040)), ("b.jpg", jpeg(2041)), ("bad.jpg", b"nope")])
    with django_capture_on_commit_callbacks() as callbacks:
        resp = api_for(researcher).post(
            IMPORT, {"kind": "zip", "file": SimpleUploadedFile("p.zip", archive, "application/zip")}, format="multipart"
        )
    assert resp.status_code == 202, resp.content
    job = Job.objects.get(pk=resp.json()["job_id"])
    staged = job.params["staged"]
    assert staged.startswith(f"{STAGING_DIR}/") and s3_media.names(STAGING_DIR) == {staged}
    assert s3_media.read(staged) == archive
    for callback in callbacks:
        callback()  # the job runs (inline) once the request's transaction commits
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.result == {"added": 2, "skipped": 0, "errors": 1}
    assert s3_media.names(STAGING_DIR) == set()  # the upload is gone with the job done
    images = Image.objects.order_by("original_name")
    assert [i.original_name for i in images] == ["a.jpg", "b.jpg"]
    assert s3_media.names() == set().union(*(content_names(i.sha256, "jpg") for i in images))
    assert [t.slug for t in images[0].tasks.all()] == ["counting"]


def test_a_failed_zip_import_keeps_its_upload_for_a_resume(s3_media, researcher, benchmark):
    staged = stage_upload(ContentFile(b"PK\x03\x04 not really a zip"), ".zip")
    job = run_now(services.create_import_job("ingest_zip", benchmark, user=researcher, staged=staged))
    assert job.status == Job.Status.FAILED and "not a readable zip" in job.message
    assert s3_media.names(STAGING_DIR) == {staged}
    assert sweep_staged() == [] and s3_media.names(STAGING_DIR) == {staged}  # a fresh failure can still be resumed


def test_a_staged_zip_is_spooled_to_a_temporary_file_and_bounded(s3_media, settings):
    settings.STORAGES = {**settings.STORAGES, "default": {**settings.STORAGES["default"]}}
    settings.STORAGES["default"]["OPTIONS"] = {**settings.STORAGES["default"]["OPTIONS"], "max_memory_size": 16 * 1024}
    archive = make_zip([(f"{n}.jpg", jpeg(2050 + n)) for n in range(3)])
    assert len(archive) > 16 * 1024
    staged = stage_upload(ContentFile(archive), ".zip")
    with open_staged(staged, max_bytes=len(archive)) as handle:
        with zipfile.ZipFile(handle) as zf:  # zipfile seeks: the object is a local, seekable copy
            assert zf.namelist() == ["0.jpg", "1.jpg", "2.jpg"] and zf.read("2.jpg") == jpeg(2052)
        assert handle.file._rolled  # past max_memory_size it is on disk, not in memory
    with pytest.raises(DomainError, match="the limit is"):
        open_staged(staged, max_bytes=len(archive) - 1)


def test_a_large_upload_is_staged_in_parts_and_read_back_whole(s3_media):
    data = os.urandom(9 * 1024 * 1024)  # past boto3's 8 MB multipart threshold, as any big zip is
    staged = stage_upload(ContentFile(data), ".zip")
    assert s3_media.head(staged)["ContentLength"] == len(data) and s3_media.grants(staged) == [("CanonicalUser", "FULL_CONTROL")]
    with open_staged(staged, max_bytes=len(data)) as handle:
        assert handle.read() == data


class _Pictures(http.server.BaseHTTPRequestHandler):
    files = {"/a.jpg": jpeg(2060), "/b.jpg": jpeg(2061)}

    def do_GET(self):
        body = self.files.get(self.path)
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "image/jpeg")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args):
        pass


@pytest.fixture
def picture_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pictures)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_url_list_import_reads_its_list_from_the_bucket(
    s3_media, api_for, researcher, benchmark, settings, picture_server, django_capture_on_commit_callbacks
):
    settings.BENCHFORGE_URL_IMPORT_ALLOW_PRIVATE = True  # the pictures come from a loopback server
    listing = f"{picture_server}/a.jpg\n{picture_server}/b.jpg\n{picture_server}/missing.jpg\n".encode()
    with django_capture_on_commit_callbacks(execute=True):
        resp = api_for(researcher).post(
            IMPORT, {"kind": "url_list", "file": SimpleUploadedFile("urls.txt", listing, "text/plain")}, format="multipart"
        )
    assert resp.status_code == 202, resp.content
    job = Job.objects.get(pk=resp.json()["job_id"])
    assert job.status == Job.Status.SUCCEEDED and job.result == {"added": 2, "skipped": 0, "errors": 1}, job.message
    assert s3_media.names(STAGING_DIR) == set()
    assert {s3_media.read(i.file.name) for i in Image.objects.all()} == {_Pictures.files["/a.jpg"], _Pictures.files["/b.jpg"]}


# ---- the staging sweep ---------------------------------------------------------------------------


def test_the_sweep_lists_and_dates_staged_objects_in_the_bucket(s3_media, researcher, benchmark):
    image = services.ingest_image(benchmark, jpeg(2065)).image
    orphan = stage_upload(ContentFile(b"a request died after this upload"), ".zip")
    failed = stage_upload(ContentFile(b"PK broken"), ".zip")
    done = stage_upload(ContentFile(b"finished"), ".txt")
    assert (
        run_now(services.create_import_job("ingest_zip", benchmark, user=researcher, staged=failed)).status == Job.Status.FAILED
    )
    succeeded = services.create_import_job("ingest_url_list", benchmark, user=researcher, staged=done)
    Job.objects.filter(pk=succeeded.pk).update(status=Job.Status.SUCCEEDED, finished_at=timezone.now())

    now = timezone.now()
    assert now - timedelta(minutes=5) < default_storage.get_modified_time(orphan) <= now + timedelta(seconds=5)
    with pytest.raises(FileNotFoundError):  # as on local disk (another sweep got there first)
        default_storage.get_modified_time(f"{STAGING_DIR}/gone.zip")
    assert sweep_staged() == [done]  # the orphan is too fresh to be a dead request's, the failure can resume
    assert sweep_staged(now=now + timedelta(hours=2)) == [orphan]
    assert sweep_staged(now=now + timedelta(days=30)) == [failed]
    assert s3_media.names(STAGING_DIR) == set()
    assert s3_media.names() == content_names(image.sha256, "jpg")  # nothing outside imports/ is touched


# ---- Label Studio --------------------------------------------------------------------------------


def test_label_studio_tasks_carry_the_image_read_from_the_bucket(s3_media, benchmark):
    data = jpeg(2070)
    image = services.ingest_image(benchmark, data).image
    url = _image_data_url(image)
    assert url.startswith("data:image/jpeg;base64,") and base64.b64decode(url.split(",", 1)[1]) == data
    s3_media.delete(image.file.name)
    with pytest.raises(OSError):  # reported per item by the push, which goes on with the others
        _image_data_url(image)

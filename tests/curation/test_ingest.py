"""Image ingest paths, bad input, exact/near duplicates, contamination and screening (services)."""

import hashlib
import http.server
import io
import json
import threading
import time
from datetime import timedelta
from pathlib import Path

import imagehash
import pytest
from django.core.files.base import ContentFile
from django.core.management import CommandError, call_command
from django.utils import timezone
from PIL import Image as PILImage

from benchforge import outbound
from benchforge.errors import DomainError
from curation import services
from curation.imaging import ImageRejected, hamming
from curation.models import ContaminationMatch, Image, KnownHash, KnownImageSet
from curation.services import contamination
from curation.services import imports as imports_module
from curation.services import ingest as ingesting
from jobs.models import Job, JobEntry
from jobs.services import requeue, run_now
from jobs.staging import stage_upload
from tests.factories import (
    add_images,
    encode,
    jpeg,
    make_zip,
    media_files,
    photo,
    png_header_only,
    stored_files_match_rows,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


def run_zip(benchmark, user, data, tmp_path, **kw):
    path = tmp_path / f"upload-{time.monotonic_ns()}.zip"
    path.write_bytes(data)
    job = services.create_import_job("ingest_zip", benchmark, user=user, path=str(path), **kw)
    return run_now(job)


def entries(job):
    return {e.key: (e.outcome, e.message) for e in job.entries.all()}


# ---- one image -------------------------------------------------------------------------------


def test_a_small_plain_image_is_stored_once_and_serves_as_its_own_thumbnail(benchmark, settings):
    data = encode(photo((200, 150)))
    image = services.ingest_image(benchmark, data).image
    assert image.thumbnail.name == image.file.name
    assert (Path(settings.MEDIA_ROOT) / image.thumbnail.name).read_bytes() == data
    assert not (Path(settings.MEDIA_ROOT) / "thumbs").exists()


def test_ingest_stores_content_addressed_file_and_thumbnail(benchmark, annotator, settings):
    task = benchmark.tasks.first()
    data = jpeg(1)
    out = services.ingest_image(
        benchmark,
        data,
        original_name="cat.jpg",
        source="https://example.org/cat",
        license="CC-BY-4.0",
        collected_by=annotator,
        tasks=[task],
    )
    image = out.image
    assert out.created and out.message == "added"
    sha = image.sha256
    assert image.file.name == f"images/{sha[:2]}/{sha[2:4]}/{sha}.jpg"
    assert (Path(settings.MEDIA_ROOT) / image.file.name).read_bytes() == data
    thumb = PILImage.open(Path(settings.MEDIA_ROOT) / image.thumbnail.name)
    assert max(thumb.size) == services.THUMBNAIL_PX
    assert (image.width, image.height, image.format) == (640, 520, "jpeg")
    assert image.source == "https://example.org/cat" and image.license == "CC-BY-4.0"
    assert image.collected_by == annotator and image.collected_at is not None
    assert list(image.tasks.all()) == [task]
    assert image.status == Image.Status.PENDING


def test_exact_duplicate_is_linked_not_stored_twice(benchmark, settings, make_user):
    first = services.ingest_image(benchmark, jpeg(2)).image
    files = media_files(settings)
    again = services.ingest_image(benchmark, jpeg(2), original_name="copy.jpg")
    assert not again.created and again.image == first
    assert "duplicate of image #%d" % first.pk in again.message
    assert Image.objects.count() == 1 and media_files(settings) == files
    # Another benchmark gets its own row but shares the stored bytes.
    other = services.create_benchmark(name="Other")
    services.ingest_image(other, jpeg(2))
    assert Image.objects.count() == 2 and media_files(settings) == files


def test_low_resolution_is_flagged_with_the_benchmark_minimum(benchmark):
    image = services.ingest_image(benchmark, jpeg(3, size=(500, 400))).image
    assert image.low_resolution
    benchmark.min_short_edge = 300
    benchmark.save()
    assert not services.ingest_image(benchmark, jpeg(4, size=(500, 400))).image.low_resolution


@pytest.mark.parametrize(
    "data, code",
    [
        (b"", "empty"),
        (b"just some text, named photo.jpg", "not_an_image"),
        (jpeg(5)[:3000], "truncated"),
        (png_header_only(12_000, 12_000), "too_many_pixels"),
        (png_header_only(40_000, 50), "too_large"),
    ],
)
def test_bad_files_leave_no_rows_and_no_files(benchmark, settings, data, code):
    services.ingest_image(benchmark, jpeg(8))
    before = media_files(settings)
    with pytest.raises(ImageRejected) as info:
        services.ingest_image(benchmark, data)
    assert info.value.code == code and info.value.message
    assert Image.objects.count() == 1 and media_files(settings) == before and stored_files_match_rows(settings)


def test_a_failure_after_writing_the_file_removes_it(benchmark, settings, monkeypatch):
    def boom(image):
        raise RuntimeError("database went away")

    monkeypatch.setattr(contamination, "flag_contamination", boom)
    with pytest.raises(RuntimeError):
        services.ingest_image(benchmark, jpeg(6))
    assert Image.objects.count() == 0 and media_files(settings) == []


def test_task_of_another_benchmark_is_refused(benchmark):
    other = services.load_preset("mmbench", slug="mmb")
    with pytest.raises(DomainError, match="another benchmark"):
        services.ingest_image(benchmark, jpeg(7), tasks=[other.tasks.first()])
    assert Image.objects.count() == 0


# ---- zip ---------------------------------------------------------------------------------------


def tricky_images():
    rgba = photo((600, 600), 8).convert("RGBA")
    rgba.putalpha(128)
    exif = PILImage.Exif()
    exif[0x0112] = 6
    return {
        "animated.gif": encode(
            photo((520, 520), 9).convert("P"),
            "GIF",
            save_all=True,
            append_images=[photo((520, 520), 10).convert("P")],
            duration=80,
        ),
        "cmyk.jpg": encode(photo((600, 600), 11).convert("CMYK"), "JPEG"),
        "rotated.jpg": encode(photo((640, 520), 12), "JPEG", exif=exif.tobytes()),
        "transparent.png": encode(rgba, "PNG"),
    }


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_zip_import_reports_every_entry_and_reimport_adds_nothing(benchmark, annotator, settings, tmp_path):
    task = benchmark.tasks.order_by("pk")[1]
    good = tricky_images()
    zip_entries = (
        [(name, data) for name, data in good.items()]
        + [
            ("../../etc/evil.jpg", jpeg(13)),
            ("/abs/path.jpg", jpeg(14)),
            ("..\\..\\windows-evil.jpg", jpeg(19)),
            ("C:\\drive\\evil.jpg", jpeg(23)),
            ("same/name.jpg", jpeg(15)),
            ("same/name.jpg", jpeg(16)),  # a second entry with the same name, different picture
            (f"{task.slug}/tagged.jpg", jpeg(17)),
            ("empty.jpg", b""),
            ("notes.txt", b"not an image"),
            ("broken.jpg", jpeg(18)[:2500]),
            ("__MACOSX/._junk", b"mac metadata"),
        ]
    )
    job = run_zip(benchmark, annotator, make_zip(zip_entries), tmp_path, source="field trip", license="own photos")
    assert job.status == Job.Status.SUCCEEDED, job.message
    report = entries(job)
    assert report["../../etc/evil.jpg"][0] == "error" and "Unsafe name" in report["../../etc/evil.jpg"][1]
    assert report["/abs/path.jpg"][0] == "error"
    assert report["..\\..\\windows-evil.jpg"][0] == report["C:\\drive\\evil.jpg"][0] == "error"
    assert report["same/name.jpg"][0] == "ok" and report["same/name.jpg (copy 2)"][0] == "ok"
    assert report["empty.jpg"] == ("error", "The file is empty (0 bytes).")
    assert report["notes.txt"][0] == "error" and "Not a readable image" in report["notes.txt"][1]
    assert report["broken.jpg"][0] == "error" and "truncated" in report["broken.jpg"][1]
    assert all(report[name][0] == "ok" for name in good)
    assert not any("__MACOSX" in key for key in report)
    assert job.result == {
        "added": 7,
        "skipped": 0,
        "errors": 7,
        "files_in_no_task_folder": 2,  # same/: not a task slug (the unsafe names are refused, not counted)
        "no_task_folders": "same (2)",
    }
    assert job.done == job.total == 14

    images = {i.original_name: i for i in Image.objects.all()}
    assert images["animated.gif"].animated
    assert (images["rotated.jpg"].width, images["rotated.jpg"].height) == (520, 640)
    assert list(images["tagged.jpg"].tasks.all()) == [task]
    assert all(i.source == "field trip" and i.collected_by == annotator for i in images.values())
    assert not any("evil" in f for f in media_files(settings))
    assert stored_files_match_rows(settings) and len(media_files(settings)) == 14
    assert not (Path(settings.MEDIA_ROOT).parent / "etc").exists()
    files = media_files(settings)

    again = run_zip(benchmark, annotator, make_zip(zip_entries), tmp_path)
    assert again.result == {"added": 0, "skipped": 7, "errors": 7, "files_in_no_task_folder": 2, "no_task_folders": "same (2)"}
    assert Image.objects.count() == 7 and media_files(settings) == files


def test_zip_entries_above_the_size_limit_are_refused_without_reading_them(benchmark, annotator, settings, tmp_path):
    settings.BENCHFORGE_MAX_UPLOAD_BYTES = 20_000
    big = jpeg(24, size=(900, 900), quality=98)
    assert len(big) > 20_000
    job = run_zip(benchmark, annotator, make_zip([("big.jpg", big), ("ok.jpg", jpeg(25, size=(200, 150)))]), tmp_path)
    report = entries(job)
    assert report["big.jpg"][0] == "error" and "uncompressed; the limit is" in report["big.jpg"][1]
    assert report["ok.jpg"][0] == "ok"
    assert Image.objects.count() == 1 and stored_files_match_rows(settings)


def test_tricky_but_valid_images_are_stored_upright_and_on_white(benchmark, settings):
    clear = PILImage.new("RGBA", (600, 600), (0, 0, 0, 0))  # fully transparent: must look white, not black
    clear.paste((200, 30, 30, 255), (200, 200, 400, 400))
    image = services.ingest_image(benchmark, encode(clear, "PNG"), original_name="clear.png").image
    thumb = PILImage.open(Path(settings.MEDIA_ROOT) / image.thumbnail.name)
    assert thumb.mode == "RGB" and min(thumb.getpixel((5, 5))) >= 250
    assert max(abs(a - b) for a, b in zip(thumb.getpixel((128, 128)), (200, 30, 30))) < 25

    cmyk_bytes = tricky_images()["cmyk.jpg"]
    cmyk = services.ingest_image(benchmark, cmyk_bytes, original_name="cmyk.jpg").image
    assert cmyk.format == "jpeg" and (Path(settings.MEDIA_ROOT) / cmyk.file.name).read_bytes() == cmyk_bytes
    assert PILImage.open(Path(settings.MEDIA_ROOT) / cmyk.thumbnail.name).mode == "RGB"

    rotated = services.ingest_image(benchmark, tricky_images()["rotated.jpg"]).image
    thumb = PILImage.open(Path(settings.MEDIA_ROOT) / rotated.thumbnail.name)
    assert (rotated.width, rotated.height) == (520, 640) and thumb.height > thumb.width  # shown upright

    gif = services.ingest_image(benchmark, tricky_images()["animated.gif"]).image
    assert gif.animated and gif.format == "gif" and PILImage.open(Path(settings.MEDIA_ROOT) / gif.thumbnail.name).format == "JPEG"
    assert stored_files_match_rows(settings)


def test_a_resumed_zip_job_skips_entries_already_done(benchmark, annotator, tmp_path):
    path = tmp_path / "resume.zip"
    path.write_bytes(make_zip([("a.jpg", jpeg(20)), ("b.jpg", jpeg(21))]))
    job = services.create_import_job("ingest_zip", benchmark, user=annotator, path=str(path))
    # A first run that died after "a.jpg" was recorded (its worker stopped beating long ago):
    services.ingest_image(benchmark, jpeg(20), original_name="a.jpg", job=job)
    JobEntry.objects.create(job=job, key="a.jpg", outcome="ok", message="added")
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, done=1, heartbeat_at=timezone.now() - timedelta(hours=1))
    job = run_now(requeue(job))
    # The summary counts both runs: a.jpg from the first, b.jpg from this one.
    assert job.result == {"added": 2, "skipped": 0, "errors": 0} and job.runs == 1
    assert job.done == 2 and Image.objects.count() == 2


def test_uploaded_archive_is_deleted_after_success_and_a_corrupt_zip_fails_clearly(benchmark, annotator, tmp_path, settings):
    staged = stage_upload(ContentFile(make_zip([("a.jpg", jpeg(22))])), ".zip")
    assert (Path(settings.MEDIA_ROOT) / staged).exists()
    job = services.create_import_job("ingest_zip", benchmark, user=annotator, staged=staged)
    assert run_now(job).status == Job.Status.SUCCEEDED and not (Path(settings.MEDIA_ROOT) / staged).exists()

    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 this is not really a zip")
    job = run_zip(benchmark, annotator, bad.read_bytes(), tmp_path)
    assert job.status == Job.Status.FAILED and "not a readable zip" in job.message
    assert Image.objects.count() == 1


# ---- server folder -------------------------------------------------------------------------------


def test_ingest_folder_command(benchmark, tmp_path, make_user):
    task = benchmark.tasks.first()
    folder = tmp_path / "photos"
    (folder / task.slug).mkdir(parents=True)
    (folder / "one.jpg").write_bytes(jpeg(30))
    (folder / task.slug / "two.png").write_bytes(encode(photo((600, 600), 31), "PNG"))
    (folder / "readme.txt").write_text("hello")
    out = io.StringIO()
    call_command("ingest_folder", benchmark.slug, str(folder), "--source", "archive", stdout=out)
    assert "added': 2" in out.getvalue() and "error readme.txt" in out.getvalue()
    assert Image.objects.count() == 2
    assert list(Image.objects.get(original_name="two.png").tasks.all()) == [task]
    job = Job.objects.get(kind="ingest_folder")
    call_command("ingest_folder", benchmark.slug, "--resume", str(job.pk), stdout=io.StringIO())
    assert Image.objects.count() == 2
    with pytest.raises(CommandError, match="not a folder"):
        call_command("ingest_folder", benchmark.slug, str(tmp_path / "missing"))
    with pytest.raises(CommandError, match="Unknown task"):
        call_command("ingest_folder", benchmark.slug, str(folder), "--task", "nope")


# ---- URL lists -----------------------------------------------------------------------------------


class ImageHandler(http.server.BaseHTTPRequestHandler):
    routes: dict = {}

    def do_GET(self):
        route = self.routes.get(self.path)
        if route is None:
            self.send_response(404)
            self.end_headers()
            return
        status, ctype, body, delay = route
        if delay:
            time.sleep(delay)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def image_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ImageHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_url_list_downloads_with_checks(benchmark, researcher, tmp_path, settings, monkeypatch, image_server):
    settings.BENCHFORGE_URL_IMPORT_ALLOW_PRIVATE = True
    settings.BENCHFORGE_MAX_UPLOAD_BYTES = 400_000
    monkeypatch.setattr(outbound, "READ_TIMEOUT", 0.5)
    server, base = image_server
    task = benchmark.tasks.first()
    ImageHandler.routes = {
        "/a.jpg": (200, "image/jpeg", jpeg(40), 0),
        "/b.png": (200, "image/png", encode(photo((600, 600), 41), "PNG"), 0),
        "/page.html": (200, "text/html", b"<html>hi</html>", 0),
        "/huge.jpg": (200, "image/jpeg", b"\xff" * 500_000, 0),
        "/slow.jpg": (200, "image/jpeg", jpeg(42), 2),
        "/liar.jpg": (200, "image/jpeg", b"<html>not really</html>", 0),
    }
    listing = tmp_path / "urls.csv"
    listing.write_text(
        "url,task,source,license\n"
        f"{base}/a.jpg,{task.slug},Museum archive,CC0\n"
        f"{base}/b.png,{task.name},,\n"
        f"{base}/missing.jpg,,,\n"
        f"{base}/page.html,,,\n"
        f"{base}/huge.jpg,,,\n"
        f"{base}/slow.jpg,,,\n"
        f"{base}/liar.jpg,,,\n"
        f"{base}/a.jpg,nonexistent-task,,\n"
        "ftp://example.org/x.jpg,,,\n"
    )
    job = services.create_import_job("ingest_url_list", benchmark, user=researcher, path=str(listing), license="unknown")
    job = run_now(job)
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.result == {"added": 2, "skipped": 0, "errors": 7}, entries(job)
    by_url = {}
    for e in job.entries.all():
        by_url.setdefault(e.key.split(": ", 1)[1], []).append(e)
    assert "HTTP 404" in by_url[f"{base}/missing.jpg"][0].message
    assert "content-type 'text/html'" in by_url[f"{base}/page.html"][0].message
    assert "limit" in by_url[f"{base}/huge.jpg"][0].message
    assert "timed out" in by_url[f"{base}/slow.jpg"][0].message
    assert "Not a readable image" in by_url[f"{base}/liar.jpg"][0].message
    assert any("Unknown task 'nonexistent-task'" in e.message for e in by_url[f"{base}/a.jpg"])
    assert "http://" in by_url["ftp://example.org/x.jpg"][0].message
    a = Image.objects.get(original_name="a.jpg")
    assert (a.source, a.license, list(a.tasks.all())) == ("Museum archive", "CC0", [task])
    b = Image.objects.get(original_name="b.png")
    assert (b.source, b.license, list(b.tasks.all())) == (f"{base}/b.png", "unknown", [task])


class CountingHandler(http.server.BaseHTTPRequestHandler):
    """Serves /<n>.jpg after a pause, counting the requests in flight per server (site) and in all."""

    images: dict = {}
    lock = threading.Lock()
    in_flight: dict = {}
    peaks: dict = {}

    def do_GET(self):
        site = self.server.server_address[1]
        with self.lock:
            self.in_flight[site] = self.in_flight.get(site, 0) + 1
            self.in_flight["all"] = self.in_flight.get("all", 0) + 1
            for key in (site, "all"):
                self.peaks[key] = max(self.peaks.get(key, 0), self.in_flight[key])
        try:
            time.sleep(0.15)
            body = self.images[self.path]
        finally:
            # Uncounted before the body goes out: a client that has read it may send its next request
            # before this thread runs again, and that request must not meet this one still counted.
            with self.lock:
                self.in_flight[site] -= 1
                self.in_flight["all"] -= 1
        self.send_response(200)
        self.send_header("Content-Type", "image/jpeg")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_url_list_downloads_many_images_at_once_but_few_from_one_site(benchmark, researcher, tmp_path, settings):
    """Downloads wait on the network, so a URL list fetches BENCHFORGE_DOWNLOADS images at once
    (not one per core), never more than BENCHFORGE_DOWNLOADS_PER_SITE from one site, and a run
    of one site's URLs does not hold up the others; every image still lands under its own line."""
    settings.BENCHFORGE_URL_IMPORT_ALLOW_PRIVATE = True
    settings.BENCHFORGE_DOWNLOADS, settings.BENCHFORGE_DOWNLOADS_PER_SITE = 8, 3
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), CountingHandler) for _ in range(3)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    CountingHandler.images = {f"/{n}.jpg": jpeg(500 + n) for n in range(36)}
    CountingHandler.in_flight, CountingHandler.peaks = {}, {}
    try:
        # In runs of one site, as lists often are: the other sites' files must not wait behind them.
        lines = [f"http://127.0.0.1:{servers[n // 12].server_address[1]}/{n}.jpg" for n in range(36)]
        listing = tmp_path / "urls.txt"
        listing.write_text("\n".join(lines) + "\n")
        job = run_now(services.create_import_job("ingest_url_list", benchmark, user=researcher, path=str(listing)))
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.result == {"added": 36, "skipped": 0, "errors": 0}, entries(job)
    per_site = [CountingHandler.peaks[server.server_address[1]] for server in servers]
    assert per_site == [3, 3, 3], per_site  # as many as allowed from a site, never more
    assert CountingHandler.peaks["all"] == 8, CountingHandler.peaks  # every download thread busy
    for entry in job.entries.all():
        url = entry.key.split(": ", 1)[1]
        image = Image.objects.get(pk=entry.data["image_id"])
        assert image.original_name == url.rsplit("/", 1)[1]
        assert image.md5 == hashlib.md5(CountingHandler.images["/" + image.original_name]).hexdigest()


def test_loaders_take_the_oldest_file_whose_site_has_room_and_cancel_the_rest_on_shutdown():
    release, started = threading.Event(), []

    def file(site, n):
        def load():
            started.append(n)
            release.wait(10)
            return b"image %d" % n

        return ingesting.IngestFile(load, site=site)

    loaders = ingesting._PacedLoaders(3, per_site=2)
    futures = [loaders.submit(file(site, n)) for n, site in enumerate("aaaab")]
    deadline = time.monotonic() + 10
    while len(started) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # a wrong fourth start would show now
    assert sorted(started) == [0, 1, 4]  # site a's two, then b's file: not a third of a's
    release.set()
    assert [f.result(10) for f in futures] == [b"image %d" % n for n in range(5)]
    loaders.shutdown()

    release.clear()
    loaders = ingesting._PacedLoaders(1, per_site=1)
    futures = [loaders.submit(file("a", n)) for n in range(3)]
    while not futures[0].running():
        time.sleep(0.01)
    stopping = threading.Thread(target=loaders.shutdown)
    stopping.start()
    while not futures[2].cancelled():  # shutdown took the waiting files away before the first ends
        time.sleep(0.01)
    release.set()
    stopping.join(10)
    assert not stopping.is_alive() and futures[0].result() == b"image 0"
    assert futures[1].cancelled() and futures[2].cancelled()
    with pytest.raises(RuntimeError):
        loaders.submit(file("a", 9))


def test_sites_are_told_apart_by_scheme_host_and_port():
    assert outbound.site_of("http://Example.org/a.jpg") == outbound.site_of("http://example.ORG/b.png?x=1")
    others = {outbound.site_of(u) for u in ("http://example.org:8080/a", "https://example.org/a", "http://example.com/a")}
    assert len(others) == 3 and outbound.site_of("http://example.org/a") not in others


def test_url_list_refuses_internal_addresses_by_default(benchmark, researcher, tmp_path, image_server):
    server, base = image_server
    ImageHandler.routes = {"/a.jpg": (200, "image/jpeg", jpeg(43), 0)}
    listing = tmp_path / "urls.txt"
    listing.write_text(f"# one per line\n{base}/a.jpg\n")
    job = run_now(services.create_import_job("ingest_url_list", benchmark, user=researcher, path=str(listing)))
    (entry,) = job.entries.all()
    assert entry.outcome == "error" and "internal address" in entry.message
    assert Image.objects.count() == 0


def test_parse_url_list_plain_text_and_csv():
    rows = services.parse_url_list("http://a/1.jpg\n\n# note\nhttp://a/2.jpg\n")
    assert [(r.line, r.url) for r in rows] == [(1, "http://a/1.jpg"), (4, "http://a/2.jpg")]
    rows = services.parse_url_list("URL,License\nhttp://a/1.jpg,CC0\n")
    assert rows[0].url == "http://a/1.jpg" and rows[0].license == "CC0"


# ---- near duplicates --------------------------------------------------------------------------


def test_the_near_duplicate_index_follows_deleted_and_reused_rows(benchmark):
    """The index is kept per process and re-checked by its newest row only: a deleted image is
    never reported, and an id handed out again (a rollback on SQLite) is not matched by its old hash."""
    first, middle, _ = add_images(benchmark, 3, start=70)
    probe = services.ingest_image(benchmark, jpeg(1070, quality=60)).image  # near `first`
    assert [m[0] for m in services.find_near_duplicates(probe)] == [first]
    first.delete()
    assert services.find_near_duplicates(probe) == []
    assert services.find_near_duplicates(middle) == []  # the index now holds the probe's hashes
    row = {f.attname: getattr(probe, f.attname) for f in Image._meta.concrete_fields if f.attname not in ("id", "created_at")}
    pk = probe.pk
    probe.delete()
    # The newest id comes back with other content, as after a rollback: now near `middle`.
    Image.objects.create(
        **{**row, "near_duplicate_of_id": None, "md5": "0" * 32, "phash": middle.phash ^ 1, "dhash": middle.dhash ^ 1}, id=pk
    )
    assert [m[0].pk for m in services.find_near_duplicates(middle)] == [pk]


def test_near_duplicate_flagged_against_the_closest_earlier_image(benchmark, reviewer):
    original = services.ingest_image(benchmark, jpeg(50, quality=95)).image
    other = services.ingest_image(benchmark, jpeg(51)).image
    recompressed = services.ingest_image(benchmark, jpeg(50, quality=60)).image
    assert recompressed.md5 != original.md5
    assert recompressed.near_duplicate_of == original
    assert recompressed.near_duplicate_distance == hamming(recompressed.phash, original.phash) < 8
    assert other.near_duplicate_of is None and original.near_duplicate_of is None
    assert [m[0] for m in services.find_near_duplicates(original)] == [recompressed]

    kept = services.resolve_near_duplicate(recompressed, keep=True, user=reviewer)
    assert kept.near_duplicate_resolved and kept.status == Image.Status.PENDING
    with pytest.raises(DomainError):
        services.resolve_near_duplicate(other, keep=False, user=reviewer)


def test_dropping_a_near_duplicate_rejects_it_as_similar(benchmark, reviewer):
    services.ingest_image(benchmark, jpeg(52, quality=95))
    dup = services.ingest_image(benchmark, jpeg(52, quality=50)).image
    dropped = services.resolve_near_duplicate(dup, keep=False, user=reviewer)
    assert dropped.status == Image.Status.REJECTED and dropped.reject_reason == "similar"


def test_threshold_zero_turns_near_duplicate_detection_off(benchmark):
    services.set_near_dup_threshold(benchmark, 0)
    services.ingest_image(benchmark, jpeg(53, quality=95))
    assert services.ingest_image(benchmark, jpeg(53, quality=60)).image.near_duplicate_of is None
    with pytest.raises(DomainError):
        services.set_near_dup_threshold(benchmark, 40)


# ---- contamination ----------------------------------------------------------------------------


def test_hash_lists_flag_existing_and_new_images(benchmark, researcher):
    seen_md5 = jpeg(60)
    seen_visually = jpeg(61, quality=95)
    clean = services.ingest_image(benchmark, jpeg(62)).image
    existing = services.ingest_image(benchmark, seen_md5).image
    import hashlib

    csv_list = f"md5,label\n{hashlib.md5(seen_md5).hexdigest()},train/0001.jpg\n".encode()
    sft, added, flagged = services.import_known_set(
        name="LAION subset", kind="sft", rows=services.parse_hash_list(csv_list, "laion.csv"), user=researcher
    )
    assert (added, flagged) == (1, 1)
    # Importing the same list again adds no hash twice and flags nothing new.
    assert services.import_known_set(name="LAION subset", rows=services.parse_hash_list(csv_list, "laion.csv"))[1:] == (0, 0)
    assert sft.hashes.count() == 1
    existing.refresh_from_db()
    assert existing.contaminated
    match = existing.contamination_matches.get()
    assert (match.known_set, match.kind, match.known_hash.label) == (sft, "md5", "train/0001.jpg")

    # A pHash list made with imagehash (full decode) catches a re-encoded copy on ingest.
    ref = str(imagehash.phash(PILImage.open(io.BytesIO(seen_visually))))
    jsonl = (json.dumps({"phash": ref, "id": "mmb-42"}) + "\n").encode()
    prior, _, flagged = services.import_known_set(
        name="MMBench dev", kind="benchmark", rows=services.parse_hash_list(jsonl, "mmb.jsonl")
    )
    assert flagged == 0
    copy = services.ingest_image(benchmark, encode(photo((640, 520), 61), "JPEG", quality=70)).image
    assert copy.contaminated
    assert copy.contamination_matches.get().known_set == prior
    assert "MMBench dev" in services.IngestOutcome(copy, True).message
    clean.refresh_from_db()
    assert not clean.contaminated

    services.delete_known_set(sft)
    existing.refresh_from_db()
    assert not existing.contaminated and copy.contaminated


@pytest.mark.parametrize(
    "content, name, message",
    [
        (b"md5\nnot-a-hash\n", "x.csv", "line 2: md5 must be 32"),
        (b"phash\n123\n", "x.csv", "phash must be 16"),
        (b"filename\nx.jpg\n", "x.csv", "'md5' and/or a 'phash' column"),
        (b'{"md5": "d41d8cd98f00b204e9800998ecf8427e"}\n{oops\n', "x.jsonl", "line 2: not valid JSON"),
        (b"\xff\xfe\x00", "x.csv", "UTF-8"),
    ],
)
def test_bad_hash_lists_are_refused_whole(content, name, message):
    with pytest.raises(DomainError, match=message):
        services.parse_hash_list(content, name)
    assert KnownHash.objects.count() == 0 and KnownImageSet.objects.count() == 0


def test_import_known_set_from_a_folder_of_images(benchmark, tmp_path):
    folder = tmp_path / "prior"
    folder.mkdir()
    (folder / "a.jpg").write_bytes(jpeg(70))
    (folder / "junk.txt").write_text("x")
    image = services.ingest_image(benchmark, jpeg(70)).image
    out = io.StringIO()
    call_command("import_known_set", "Prior bench", str(folder), "--kind", "benchmark", stdout=out)
    assert "1 hashes added (0 already in the set), 1 images newly flagged" in out.getvalue()
    assert "skipped junk.txt" in out.getvalue()
    image.refresh_from_db()
    assert image.contaminated
    assert ContaminationMatch.objects.get().kind == "md5"


# ---- screening --------------------------------------------------------------------------------


def test_screening_accept_reject_and_bulk(benchmark, annotator):
    ids = [services.ingest_image(benchmark, jpeg(80 + i)).image.pk for i in range(3)]
    assert services.screen_images(benchmark, ids[:2], action="accept", user=annotator) == 2
    services.screen_images(benchmark, [ids[2]], action="reject", reason="privacy", user=annotator)
    rejected = Image.objects.get(pk=ids[2])
    assert (rejected.status, rejected.reject_reason, rejected.screened_by) == ("rejected", "privacy", annotator)
    with pytest.raises(DomainError, match="needs a note"):
        services.screen_images(benchmark, ids, action="reject", reason="other", user=annotator)
    with pytest.raises(DomainError, match="Choose a rejection reason"):
        services.screen_images(benchmark, ids, action="reject", reason="ugly", user=annotator)
    services.screen_images(benchmark, ids, action="reject", reason="other", note="watermark", user=annotator)
    assert set(Image.objects.values_list("reject_note", flat=True)) == {"watermark"}
    services.screen_images(benchmark, ids, action="reset", user=annotator)
    assert set(Image.objects.values_list("status", "reject_reason")) == {("pending", "")}
    other = services.create_benchmark(name="Elsewhere")
    with pytest.raises(DomainError, match="do not exist in this benchmark"):
        services.screen_images(other, ids, action="accept", user=annotator)


# ---- crashes: a killed server, a finished job delivered again ------------------------------------


def test_an_import_left_running_by_a_killed_server_resumes_and_its_upload_is_cleaned(
    benchmark, researcher, settings, monkeypatch
):
    media = Path(settings.MEDIA_ROOT)
    staged = stage_upload(ContentFile(make_zip([("a.jpg", jpeg(60)), ("b.jpg", jpeg(61)), ("c.jpg", jpeg(62))])), ".zip")
    job = services.create_import_job("ingest_zip", benchmark, user=researcher, staged=staged)
    real = ingesting.Ingester._store
    calls = {"n": 0}

    def dies_on_the_second_image(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # the process is gone: no handler runs, nothing is marked
        return real(*args, **kwargs)

    monkeypatch.setattr(imports_module, "INGEST_BATCH", 1)  # a batch is the unit that commits whole
    monkeypatch.setattr(ingesting.Ingester, "_store", dies_on_the_second_image)
    with pytest.raises(KeyboardInterrupt):
        run_now(job)
    monkeypatch.setattr(ingesting.Ingester, "_store", real)
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and not job.is_interrupted  # its heartbeat is still fresh
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT = 0  # ... until the heartbeat timeout passes
    assert job.is_interrupted and job.state == "interrupted" and (media / staged).exists()
    assert Image.objects.count() == 1 and job.done == 1

    job = run_now(requeue(job))
    assert job.status == Job.Status.SUCCEEDED and job.result == {"added": 3, "skipped": 0, "errors": 0}
    assert Image.objects.count() == 3 and not (media / staged).exists()
    # Delivered again, the finished job stays as it was (it used to flip to failed).
    assert run_now(job).status == Job.Status.SUCCEEDED and run_now(job).result == job.result


def test_an_abandoned_upload_is_swept(benchmark, researcher, settings):
    media = Path(settings.MEDIA_ROOT)
    staged = stage_upload(ContentFile(make_zip([("a.jpg", jpeg(63))])), ".zip")
    job = services.create_import_job("ingest_zip", benchmark, user=researcher, staged=staged)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, heartbeat_at=timezone.now() - timedelta(days=30))
    call_command("sweep_uploads", stdout=io.StringIO())
    assert not (media / staged).exists()

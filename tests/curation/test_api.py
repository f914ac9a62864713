"""The image API: listing, upload, screening, imports and known sets, per role and membership."""

import hashlib
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from curation import services
from curation.imaging import hash_to_hex
from curation.models import Image, KnownHash, KnownImageSet
from jobs.models import Job
from tests.factories import (
    add_images,
    encode,
    jpeg,
    make_zip,
    media_files,
    photo,
    stored_files_match_rows,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


def upload(name, data, content_type="image/jpeg"):
    return SimpleUploadedFile(name, data, content_type=content_type)


IMAGES = "/api/v1/benchmarks/demo/images/"
SCREEN = "/api/v1/benchmarks/demo/images/screen/"
IMPORT = "/api/v1/benchmarks/demo/images/import/"


# ---- list and detail ---------------------------------------------------------------------------


def test_anonymous_requests_get_401(client, benchmark):
    for url in (IMAGES, SCREEN, IMPORT, "/api/v1/known-sets/"):
        assert client.get(url, HTTP_ACCEPT="application/json").status_code == 401


def test_members_list_images_with_filters(api_for, annotator, benchmark):
    counting, ocr = benchmark.tasks.get(slug="counting"), benchmark.tasks.get(slug="ocr")
    a, b = add_images(benchmark, 2, tasks=[counting])
    c = services.ingest_image(benchmark, jpeg(1010, size=(400, 300)), tasks=[ocr]).image
    services.screen_images(benchmark, [a.pk], action="accept", user=annotator)
    api = api_for(annotator)

    body = api.get(IMAGES).json()
    assert body["count"] == 3 and [r["id"] for r in body["results"]] == [a.pk, b.pk, c.pk]
    first = body["results"][0]
    assert first["tasks"] == ["counting"] and first["phash"] == hash_to_hex(a.phash)
    assert first["thumbnail_url"] == f"/media/{a.thumbnail.name}" and first["file_url"] == f"/media/{a.file.name}"

    def ids(query):
        resp = api.get(IMAGES + query)
        assert resp.status_code == 200, resp.content
        return [r["id"] for r in resp.json()["results"]]

    assert ids("?status=accepted") == [a.pk]
    assert ids("?status=pending&task=counting") == [b.pk]
    assert ids("?flag=low_resolution") == [c.pk]
    assert ids("?task=ocr") == [c.pk]


@pytest.mark.parametrize("query, field", [("?flag=shiny", "flag"), ("?status=maybe", "status"), ("?task=nope", "task")])
def test_unknown_filter_values_are_refused_with_a_detail(api_for, annotator, benchmark, query, field):
    resp = api_for(annotator).get(IMAGES + query)
    assert resp.status_code == 400
    body = resp.json()
    assert field in body and body["detail"].startswith(f"{field}: ")


def test_list_query_count_does_not_grow_with_images(api_for, researcher, benchmark, django_assert_max_num_queries):
    task = benchmark.tasks.first()
    first = add_images(benchmark, 2, tasks=[task], collected_by=researcher)
    services.import_known_set(name="Seen", rows=[{"md5": first[0].md5, "phash": None}])
    api = api_for(researcher)
    with django_assert_max_num_queries(12) as few:
        api.get(IMAGES)
    more = add_images(benchmark, 13, start=10, tasks=[task], collected_by=researcher)
    services.import_known_set(name="Also seen", rows=[{"md5": i.md5, "phash": None} for i in more[:5]])
    with django_assert_max_num_queries(len(few.captured_queries)):
        body = api.get(IMAGES).json()
    assert body["count"] == 15 and body["results"][0]["contaminated_by"] == ["Seen"]
    assert body["results"][-1]["contaminated_by"] == [] and body["results"][2]["contaminated_by"] == ["Also seen"]


def test_image_detail_is_scoped_to_the_benchmark(api_for, annotator, outsider, benchmark, private_benchmark):
    mine = add_images(benchmark, 1)[0]
    theirs = services.ingest_image(private_benchmark, jpeg(1100)).image
    api = api_for(annotator)
    assert api.get(f"{IMAGES}{mine.pk}/").json()["sha256"] == mine.sha256
    assert api.get(f"{IMAGES}{theirs.pk}/").status_code == 404  # exists, but in another benchmark
    assert api.get(f"/api/v1/benchmarks/private/images/{theirs.pk}/").status_code == 404  # not a member
    assert api_for(outsider).get(IMAGES).status_code == 404


# ---- upload --------------------------------------------------------------------------------------


def test_upload_reports_each_file_and_a_bad_one_stops_nothing(api_for, annotator, benchmark, settings):
    task = benchmark.tasks.get(slug="chart")
    files = [
        upload("one.jpg", jpeg(1200)),
        upload("not-really.jpg", b"hello, I am text"),
        upload("two.png", encode(photo((600, 600), 1201), "PNG"), "image/png"),
        upload("broken.jpg", jpeg(1202)[:2000]),
        upload("empty.jpg", b""),
    ]
    resp = api_for(annotator).post(
        IMAGES, {"files": files, "tasks": ["chart"], "source": "field trip", "license": "CC0"}, format="multipart"
    )
    assert resp.status_code == 201, resp.content
    results = resp.json()["results"]
    assert [(r["name"], r["outcome"]) for r in results] == [
        ("one.jpg", "added"),
        ("not-really.jpg", "error"),
        ("two.png", "added"),
        ("broken.jpg", "error"),
        ("empty.jpg", "error"),
    ]
    assert "Not a readable image" in results[1]["message"]
    assert "truncated" in results[3]["message"] and "empty" in results[4]["message"]
    images = Image.objects.order_by("pk")
    assert [i.original_name for i in images] == ["one.jpg", "two.png"]
    assert all(i.collected_by == annotator and i.source == "field trip" and i.license == "CC0" for i in images)
    assert all(list(i.tasks.all()) == [task] for i in images)
    assert results[0]["image_id"] == images[0].pk
    assert stored_files_match_rows(settings) and len(media_files(settings)) == 4

    again = api_for(annotator).post(IMAGES, {"files": [upload("copy.jpg", jpeg(1200))]}, format="multipart")
    assert again.status_code == 200
    (result,) = again.json()["results"]
    assert result["outcome"] == "duplicate" and result["duplicate_of"] == images[0].pk
    assert Image.objects.count() == 2 and stored_files_match_rows(settings)


def test_upload_validation_errors_have_a_detail(api_for, annotator, reviewer, outsider, benchmark, settings):
    api = api_for(annotator)
    none = api.post(IMAGES, {"source": "x"}, format="multipart")
    assert none.status_code == 400 and "files" in none.json()["detail"]
    empty = api.post(IMAGES)  # no body at all: not a form, so nothing to read lists from
    assert empty.status_code == 400 and "files" in empty.json()["detail"]
    bad_task = api.post(IMAGES, {"files": [upload("a.jpg", jpeg(1300))], "tasks": ["no-such-task"]}, format="multipart")
    assert bad_task.status_code == 400 and "no-such-task" in bad_task.json()["detail"]
    settings.BENCHFORGE_MAX_UPLOAD_BYTES = 1000
    big = api.post(IMAGES, {"files": [upload("big.jpg", jpeg(1301))]}, format="multipart")
    assert big.status_code == 200 and "limit is" in big.json()["results"][0]["message"]
    assert Image.objects.count() == 0 and media_files(settings) == []
    assert api_for(outsider).post(IMAGES, {"files": [upload("a.jpg", jpeg(1300))]}, format="multipart").status_code == 404
    settings.BENCHFORGE_MAX_UPLOAD_BYTES = 50_000_000
    assert api_for(reviewer).post(IMAGES, {"files": [upload("a.jpg", jpeg(1300))]}, format="multipart").status_code == 201


# ---- screening ---------------------------------------------------------------------------------------


def test_bulk_screening_answers_the_new_state_and_counts(api_for, annotator, reviewer, benchmark):
    a, b, c = add_images(benchmark, 3)
    api = api_for(annotator)
    resp = api.post(SCREEN, {"ids": [a.pk, b.pk], "action": "accept"}, format="json")
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["changed"] == 2
    assert [(i["id"], i["status"]) for i in body["images"]] == [(a.pk, "accepted"), (b.pk, "accepted")]
    assert body["counts"] == {"pending": 1, "accepted": 2, "rejected": 0}

    resp = api_for(reviewer).post(
        SCREEN, {"ids": [c.pk], "action": "reject", "reason": "other", "note": "watermark"}, format="json"
    )
    (image,) = resp.json()["images"]
    assert (image["status"], image["reject_reason"], image["reject_note"]) == ("rejected", "other", "watermark")
    assert image["reject_reason_label"] == "Other (see note)"
    c.refresh_from_db()
    assert c.screened_by == reviewer and c.screened_at is not None

    # Form-encoded works too (curl users).
    assert api.post(SCREEN, {"ids": [a.pk], "action": "reset"}).json()["images"][0]["status"] == "pending"


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"ids": [], "action": "accept"}, "ids: "),
        ({"ids": ["x"], "action": "accept"}, "valid integer"),
        ({"ids": [1], "action": "approve"}, "action: "),
        ({"action": "accept"}, "ids: This field is required"),
    ],
)
def test_malformed_screening_requests(api_for, annotator, benchmark, payload, message):
    resp = api_for(annotator).post(SCREEN, payload, format="json")
    assert resp.status_code == 400 and message in resp.json()["detail"]


def test_screening_rules_come_back_as_clear_errors(api_for, annotator, outsider, benchmark, private_benchmark):
    (image,) = add_images(benchmark, 1)
    foreign = services.ingest_image(private_benchmark, jpeg(1400)).image
    api = api_for(annotator)
    no_note = api.post(SCREEN, {"ids": [image.pk], "action": "reject", "reason": "other"}, format="json")
    assert no_note.status_code == 400 and "needs a note" in no_note.json()["detail"]
    bad_reason = api.post(SCREEN, {"ids": [image.pk], "action": "reject", "reason": "ugly"}, format="json")
    assert bad_reason.status_code == 400 and "privacy" in bad_reason.json()["detail"]
    mixed = api.post(SCREEN, {"ids": [image.pk, foreign.pk], "action": "accept"}, format="json")
    assert mixed.status_code == 400 and "do not exist in this benchmark" in mixed.json()["detail"]
    assert api_for(outsider).post(SCREEN, {"ids": [image.pk], "action": "accept"}, format="json").status_code == 404
    image.refresh_from_db()
    foreign.refresh_from_db()
    assert image.status == foreign.status == "pending"


# ---- imports -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["annotator", "reviewer"])
def test_only_researchers_start_imports(api_for, make_user, benchmark, role):
    user = make_user(role, benchmarks=[benchmark])
    resp = api_for(user).post(
        IMPORT, {"kind": "zip", "file": upload("a.zip", make_zip([("a.jpg", jpeg(1500))]))}, format="multipart"
    )
    assert resp.status_code == 403 and "researcher" in resp.json()["detail"]
    assert Job.objects.count() == 0


def test_zip_import_job_runs_and_is_polled(api_for, researcher, benchmark, settings, django_capture_on_commit_callbacks):
    archive = make_zip([("counting/a.jpg", jpeg(1501)), ("b.jpg", jpeg(1502)), ("bad.jpg", b"nope")])
    api = api_for(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post(
            IMPORT,
            {"kind": "zip", "file": upload("photos.zip", archive, "application/zip"), "tasks": ["writing"], "license": "CC-BY"},
            format="multipart",
        )
    assert resp.status_code == 202, resp.content
    body = resp.json()
    job = Job.objects.get(pk=body["job_id"])
    assert body["status_url"] == f"/api/v1/jobs/{job.pk}/" and body["report_url"] == f"/jobs/{job.pk}/"
    polled = api.get(body["status_url"]).json()
    assert polled["status"] == "succeeded" and polled["percent"] == 100
    assert polled["result"] == {"added": 2, "skipped": 0, "errors": 1}
    assert {e.key: e.outcome for e in job.entries.all()} == {"counting/a.jpg": "ok", "b.jpg": "ok", "bad.jpg": "error"}
    a = Image.objects.get(original_name="a.jpg")
    assert sorted(a.tasks.values_list("slug", flat=True)) == ["counting", "writing"] and a.license == "CC-BY"
    # The uploaded archive is removed once the job succeeded; only image files remain.
    assert not any(p.is_file() for p in (Path(settings.MEDIA_ROOT) / "imports").rglob("*"))
    assert stored_files_match_rows(settings)


def test_url_list_import_is_accepted_and_bad_files_are_refused_before_any_job(
    api_for, researcher, benchmark, django_capture_on_commit_callbacks
):
    api = api_for(researcher)
    not_zip = api.post(IMPORT, {"kind": "zip", "file": upload("x.zip", b"plain text")}, format="multipart")
    assert not_zip.status_code == 400 and "not a zip archive" in not_zip.json()["detail"]
    empty_list = api.post(IMPORT, {"kind": "url_list", "file": upload("u.txt", b"# nothing here\n")}, format="multipart")
    assert empty_list.status_code == 400 and "no URLs" in empty_list.json()["detail"]
    binary = api.post(IMPORT, {"kind": "url_list", "file": upload("u.txt", b"\xff\xfe\x00garbage")}, format="multipart")
    assert binary.status_code == 400 and "UTF-8" in binary.json()["detail"]
    no_kind = api.post(IMPORT, {"file": upload("u.txt", b"http://x/a.jpg")}, format="multipart")
    assert no_kind.status_code == 400 and "kind" in no_kind.json()["detail"]
    bad_task = api.post(
        IMPORT, {"kind": "zip", "file": upload("a.zip", make_zip([("a.jpg", jpeg(1))])), "tasks": ["nope"]}, format="multipart"
    )
    assert bad_task.status_code == 400 and "nope" in bad_task.json()["detail"]
    assert Job.objects.count() == 0

    # A list of internal URLs: the job runs and reports each line (downloads refused by default).
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post(IMPORT, {"kind": "url_list", "file": upload("u.txt", b"http://127.0.0.1:9/a.jpg\n")}, format="multipart")
    assert resp.status_code == 202
    job = Job.objects.get(pk=resp.json()["job_id"])
    assert job.kind == "ingest_url_list" and job.status == "succeeded"
    assert "internal address" in job.entries.get().message


# ---- known sets ----------------------------------------------------------------------------------------


def test_known_sets_are_researcher_only(api_for, annotator, reviewer, benchmark):
    for user in (annotator, reviewer):
        api = api_for(user)
        assert api.get("/api/v1/known-sets/").status_code == 403
        resp = api.post(
            "/api/v1/known-sets/", {"name": "X", "file": upload("x.csv", b"md5\n" + b"a" * 32 + b"\n")}, format="multipart"
        )
        assert resp.status_code == 403
    assert KnownImageSet.objects.count() == 0


def test_known_set_import_flags_images_and_reimport_adds_nothing(api_for, researcher, benchmark):
    seen, clean = add_images(benchmark, 2)
    listing = "md5,label\n" + f"{seen.md5},train/1.jpg\n" + f"{'0' * 32},train/2.jpg\n"
    api = api_for(researcher)

    def post():
        return api.post(
            "/api/v1/known-sets/",
            {
                "name": "LAION slice",
                "kind": "sft",
                "description": "pretraining",
                "file": upload("laion.csv", listing.encode(), "text/csv"),
            },
            format="multipart",
        )

    resp = post()
    assert resp.status_code == 201, resp.content
    assert resp.json() | {"id": 0} == {"id": 0, "name": "LAION slice", "hashes_added": 2, "images_flagged": 1}
    assert post().json()["hashes_added"] == 0 and KnownHash.objects.count() == 2
    seen.refresh_from_db()
    clean.refresh_from_db()
    assert seen.contaminated and not clean.contaminated
    (listed,) = api.get("/api/v1/known-sets/").json()["results"]
    assert (listed["name"], listed["kind"], listed["hashes"], listed["images_matched"]) == ("LAION slice", "sft", 2, 1)

    set_id = resp.json()["id"]
    assert api.delete(f"/api/v1/known-sets/{set_id}/").status_code == 204
    seen.refresh_from_db()
    assert not seen.contaminated and KnownHash.objects.count() == 0


def test_known_set_jsonl_with_phash_and_bad_lists(api_for, researcher, benchmark):
    image = add_images(benchmark, 1)[0]
    api = api_for(researcher)
    line = json.dumps({"phash": hash_to_hex(image.phash), "id": "prior-7"}).encode()
    ok = api.post(
        "/api/v1/known-sets/", {"name": "Prior", "kind": "benchmark", "file": upload("p.jsonl", line)}, format="multipart"
    )
    assert ok.status_code == 201 and ok.json()["images_flagged"] == 1
    bad = api.post("/api/v1/known-sets/", {"name": "Broken", "file": upload("b.csv", b"md5\nxyz\n")}, format="multipart")
    assert bad.status_code == 400 and "line 2: md5 must be 32" in bad.json()["detail"]
    no_name = api.post(
        "/api/v1/known-sets/", {"file": upload("b.csv", b"md5\n" + hashlib.md5(b"x").hexdigest().encode())}, format="multipart"
    )
    assert no_name.status_code == 400 and "name" in no_name.json()["detail"]
    assert list(KnownImageSet.objects.values_list("name", flat=True)) == ["Prior"]
    assert api.delete("/api/v1/known-sets/999999/").status_code == 404


def test_schema_lists_the_image_endpoints(api_for, annotator):
    paths = api_for(annotator).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
    for path in (
        "/api/v1/benchmarks/{slug}/images/",
        "/api/v1/benchmarks/{slug}/images/screen/",
        "/api/v1/benchmarks/{slug}/images/import/",
        "/api/v1/known-sets/",
        "/api/v1/known-sets/{id}/",
    ):
        assert path in paths


def test_a_benchmark_has_a_language_english_unless_chosen(api_for, researcher):
    api = api_for(researcher)
    made = api.post("/api/v1/benchmarks/", {"name": "Chinese set", "language": "zh"}, format="json")
    assert made.status_code == 201 and made.json()["language"] == "zh"
    assert api.post("/api/v1/benchmarks/", {"name": "Plain set"}, format="json").json()["language"] == "en"
    refused = api.post("/api/v1/benchmarks/", {"name": "Klingon set", "language": "tlh"}, format="json")
    assert refused.status_code == 400 and "language" in refused.json()

"""Image pages (screening grid, upload and imports, near duplicates, contamination, known sets)
and the media files behind them, per role and membership."""

import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from curation import services
from curation.models import Image, KnownImageSet
from jobs.models import Job
from jobs.staging import stage_upload
from tests.factories import add_images, jpeg, make_zip, stored_files_match_rows

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]

GRID = "/b/demo/images/"
UPLOAD = "/b/demo/images/upload/"
IMPORT = "/b/demo/images/import/"
NEARDUP = "/b/demo/images/near-duplicates/"
CONTAMINATION = "/b/demo/images/contamination/"


def html(resp) -> str:
    assert resp.status_code == 200, resp.status_code
    return resp.content.decode()


def messages_of(resp) -> list[str]:
    return [str(m) for m in resp.wsgi_request._messages]


# ---- who may open which page -----------------------------------------------------------------------


@pytest.mark.parametrize("url", [GRID, "/b/demo/images/progress/", UPLOAD, NEARDUP, CONTAMINATION, "/known-sets/"])
def test_pages_need_a_login(client, benchmark, url):
    resp = client.get(url)
    assert resp.status_code == 302 and resp["Location"].startswith("/accounts/login/")


def test_members_open_the_image_pages_and_outsiders_get_404(client_for, annotator, reviewer, outsider):
    for url in [GRID, "/b/demo/images/progress/", UPLOAD, NEARDUP, CONTAMINATION]:
        assert client_for(annotator).get(url).status_code == 200, url
        assert client_for(reviewer).get(url).status_code == 200, url
        assert client_for(outsider).get(url).status_code == 404, url


def test_researcher_only_pages(client_for, annotator, reviewer, researcher, benchmark):
    for user in (annotator, reviewer):
        c = client_for(user)
        assert c.get("/known-sets/").status_code == 403
        assert c.post("/known-sets/", {"name": "x"}).status_code == 403
        assert c.post(IMPORT, {"kind": "zip"}).status_code == 403
    assert client_for(researcher).get("/known-sets/").status_code == 200


def test_nav_links_follow_the_role(client_for, annotator, researcher, benchmark):
    nav = re.search(r'<header class="site-header".*?</header>', html(client_for(annotator).get(GRID)), re.S)[0]
    assert 'href="/b/demo/images/"' in nav and 'href="/b/demo/images/upload/"' in nav
    assert "/known-sets/" not in nav and "/settings/" not in nav
    nav = re.search(r'<header class="site-header".*?</header>', html(client_for(researcher).get(GRID)), re.S)[0]
    assert "/known-sets/" in nav and "/b/demo/settings/" in nav


# ---- screening grid ------------------------------------------------------------------------------


def test_grid_shows_tiles_counts_progress_and_the_shortcut_legend(client_for, annotator, benchmark):
    counting = benchmark.tasks.get(slug="counting")
    counting.quota = 4
    counting.save()
    images = add_images(benchmark, 3, tasks=[counting])
    services.screen_images(benchmark, [images[0].pk], action="accept", user=annotator)
    services.screen_images(benchmark, [images[1].pk], action="reject", reason="privacy", user=annotator)
    resp = client_for(annotator).get(GRID)
    page = html(resp)
    assert [i.pk for i in resp.context["page"]] == [i.pk for i in images]
    assert page.count('class="tile ') == 3
    assert f'data-id="{images[1].pk}" data-status="rejected"' in page and "Personal privacy" in page
    assert re.search(r'id="count-accepted"[^>]*>Accepted <b>1</b>', page)
    assert re.search(r'id="count-pending"[^>]*>Pending <b>1</b>', page)
    row = re.search(r'<tr data-task="counting">(.*?)</tr>', page, re.S)[1]
    assert re.findall(r'<td class="num[^"]*">(\d+)</td>', row) == ["1", "4", "1", "1"]  # accepted, quota, pending, rejected
    assert 'data-width="25%"' in row
    legend = re.search(r'<aside class="legend" id="shortcut-legend".*?</aside>', page, re.S)[0]
    for key in ["a", "u", "x", "1", "6", "h", "j", "k", "l"]:
        assert f"<kbd>{key}</kbd>" in legend
    assert "reject: other (see note)" in legend
    assert 'data-screen-url="/api/v1/benchmarks/demo/images/screen/"' in page


def test_grid_filters_by_task_status_and_flag(client_for, annotator, benchmark):
    ocr = benchmark.tasks.get(slug="ocr")
    tagged, plain = add_images(benchmark, 2)
    tagged.tasks.add(ocr)
    small = services.ingest_image(benchmark, jpeg(2000, size=(300, 200))).image
    services.screen_images(benchmark, [plain.pk], action="accept", user=annotator)
    c = client_for(annotator)

    def ids(query):
        return [i.pk for i in c.get(GRID + query).context["page"]]

    assert ids("?task=ocr") == [tagged.pk]
    assert ids("?status=accepted") == [plain.pk]
    assert ids("?flag=low_resolution") == [small.pk]
    assert ids("?flag=untagged&status=pending") == [small.pk]
    assert ids("?status=bogus&flag=bogus") == [tagged.pk, plain.pk, small.pk]  # unknown values are ignored


def test_grid_is_paginated_and_its_query_count_does_not_grow(client_for, annotator, benchmark, django_assert_max_num_queries):
    tasks = list(benchmark.tasks.all()[:2])
    Image.objects.bulk_create([_row(benchmark, i) for i in range(5)])
    for image in Image.objects.all():
        image.tasks.set(tasks)
    c = client_for(annotator)
    with django_assert_max_num_queries(12) as few:
        c.get(GRID)
    rows = [_row(benchmark, i) for i in range(5, 130)]
    rows[3].contaminated = rows[4].low_resolution = True
    Image.objects.bulk_create(rows)
    for image in Image.objects.filter(pk__gt=5)[:60]:
        image.tasks.set(tasks)
    with django_assert_max_num_queries(len(few.captured_queries)):
        resp = c.get(GRID + "?page=2")
    assert len(resp.context["page"]) == 48 and resp.context["page"].paginator.count == 130
    assert "page 2 of 3" in resp.content.decode()


def _row(benchmark, n):
    sha = f"{n:064x}"
    return Image(
        benchmark=benchmark,
        file=f"images/{sha[:2]}/{sha[2:4]}/{sha}.jpg",
        thumbnail=f"thumbs/{sha[:2]}/{sha[2:4]}/{sha}.jpg",
        sha256=sha,
        md5=f"{n:032x}",
        phash=n,
        dhash=-n,
        width=800,
        height=600,
        format="jpeg",
        file_size=1000,
    )


def test_progress_partial_redraws_the_task_table(client_for, annotator, benchmark):
    (image,) = add_images(benchmark, 1, tasks=[benchmark.tasks.get(slug="chart")])
    services.screen_images(benchmark, [image.pk], action="accept", user=annotator)
    page = html(client_for(annotator).get("/b/demo/images/progress/"))
    assert page.startswith('<table class="table compact" id="task-progress">')
    row = re.search(r'<tr data-task="chart">(.*?)</tr>', page, re.S)[1]
    assert '<td class="num accepted">1</td>' in row


# ---- upload page and imports --------------------------------------------------------------------------


def test_upload_page_offers_drop_zone_to_members_and_imports_to_researchers(client_for, annotator, researcher, benchmark):
    page = html(client_for(annotator).get(UPLOAD))
    assert 'id="dropzone"' in page and 'data-api-url="/api/v1/benchmarks/demo/images/"' in page
    assert 'id="import-form"' not in page
    page = html(client_for(researcher).get(UPLOAD))
    assert 'id="import-form"' in page and 'action="/b/demo/images/import/"' in page
    assert client_for(annotator).post(UPLOAD).status_code == 405  # uploads go through the API


def test_import_form_starts_a_tracked_job_with_a_progress_bar(
    client_for, researcher, benchmark, settings, django_capture_on_commit_callbacks
):
    c = client_for(researcher)
    archive = SimpleUploadedFile("photos.zip", make_zip([("a.jpg", jpeg(2100)), ("b.jpg", jpeg(2101)), ("c.txt", b"x")]))
    ocr = benchmark.tasks.get(slug="ocr")
    with django_capture_on_commit_callbacks(execute=True):
        resp = c.post(IMPORT, {"kind": "zip", "file": archive, "tasks": [ocr.pk], "source": "scan", "license": "CC0"})
    assert resp.status_code == 302 and resp["Location"] == UPLOAD + "#imports"
    job = Job.objects.get()
    assert job.kind == "ingest_zip" and job.status == "succeeded" and job.result == {"added": 2, "skipped": 0, "errors": 1}
    assert all(list(i.tasks.all()) == [ocr] and i.source == "scan" for i in Image.objects.all())
    page = html(c.get(UPLOAD))
    assert f'id="job-{job.pk}"' in page and f'href="/jobs/{job.pk}/"' in page and '<progress max="100" value="100"' in page
    report = html(c.get(f"/jobs/{job.pk}/"))
    assert "a.jpg" in report and "c.txt" in report and "Not a readable image" in report
    assert stored_files_match_rows(settings)


def test_a_running_import_polls_its_progress(client_for, researcher, benchmark):
    staged = stage_upload(SimpleUploadedFile("x.zip", make_zip([("a.jpg", jpeg(1))])), ".zip")
    job = services.create_import_job("ingest_zip", benchmark, user=researcher, staged=staged)
    page = html(client_for(researcher).get(UPLOAD))
    assert f'hx-get="/jobs/{job.pk}/progress/"' in page  # queued: the bar refreshes itself


def test_import_form_errors_start_nothing(client_for, researcher, benchmark):
    c = client_for(researcher)
    resp = c.post(IMPORT, {"kind": "zip", "file": SimpleUploadedFile("x.zip", b"not a zip")}, follow=True)
    assert any("not a zip archive" in m for m in messages_of(resp))
    resp = c.post(IMPORT, {"kind": "zip"}, follow=True)
    assert any("Import not started: file:" in m for m in messages_of(resp))
    assert Job.objects.count() == 0


# ---- near duplicates -----------------------------------------------------------------------------------


def near_pair(benchmark):
    original = services.ingest_image(benchmark, jpeg(2200, quality=95)).image
    copy = services.ingest_image(benchmark, jpeg(2200, quality=55)).image
    assert copy.near_duplicate_of == original
    return original, copy


def test_near_duplicate_pairs_are_shown_side_by_side_with_both_distances(client_for, annotator, benchmark):
    original, copy = near_pair(benchmark)
    page = html(client_for(annotator).get(NEARDUP))
    pair = re.search(rf'<article class="pair card" id="pair-{copy.pk}">(.*?)</article>', page, re.S)[1]
    assert copy.thumbnail.url in pair and original.thumbnail.url in pair
    from curation.imaging import hamming

    assert f'<b class="phash-distance">{hamming(copy.phash, original.phash)}</b>' in pair
    assert f'<b class="dhash-distance">{hamming(copy.dhash, original.dhash)}</b>' in pair
    assert 'data-key="k"' in pair and 'data-key="d"' in pair


def test_keep_and_drop_near_duplicates(client_for, annotator, outsider, benchmark):
    original, copy = near_pair(benchmark)
    url = f"/b/demo/images/{copy.pk}/near-duplicate/"
    assert client_for(outsider).post(url, {"decision": "keep"}).status_code == 404
    c = client_for(annotator)
    resp = c.post(url, {"decision": "maybe"}, HTTP_REFERER=NEARDUP, follow=True)
    assert any("Choose 'keep'" in m for m in messages_of(resp))
    resp = c.post(url, {"decision": "drop", "page": "1"})
    assert resp.status_code == 302 and resp["Location"] == NEARDUP + "?page=1"
    copy.refresh_from_db()
    assert (copy.status, copy.reject_reason, copy.near_duplicate_resolved, copy.screened_by) == (
        "rejected",
        "similar",
        True,
        annotator,
    )
    assert f"pair-{copy.pk}" not in html(c.get(NEARDUP))
    unflagged = c.post(f"/b/demo/images/{original.pk}/near-duplicate/", {"decision": "keep"}, HTTP_HX_REQUEST="true")
    assert unflagged.status_code == 409 and "is not flagged as a near duplicate (any more): reload the page" in unflagged.text

    other_copy = services.ingest_image(benchmark, jpeg(2200, quality=40)).image
    c.post(f"/b/demo/images/{other_copy.pk}/near-duplicate/", {"decision": "keep"})
    other_copy.refresh_from_db()
    assert other_copy.near_duplicate_resolved and other_copy.status == "pending"
    assert "No near duplicates are waiting" in html(c.get(NEARDUP))
    assert c.post(f"/b/demo/images/{original.pk}/near-duplicate/", {"decision": "keep"}, HTTP_REFERER=NEARDUP).status_code == 302


# ---- contamination and known sets -----------------------------------------------------------------------


def test_contamination_report_names_the_set_the_match_kind_and_distance(client_for, annotator, researcher, benchmark):
    exact, visual, clean = add_images(benchmark, 3)
    services.import_known_set(name="LAION slice", kind="sft", rows=[{"md5": exact.md5, "phash": None, "label": "t/1.jpg"}])
    services.import_known_set(
        name="MMBench dev", kind="benchmark", rows=[{"md5": "", "phash": visual.phash ^ 0b101, "label": "mmb-9"}]
    )
    page = html(client_for(annotator).get(CONTAMINATION))
    rows = dict(re.findall(r'<tr data-image="(\d+)">(.*?)</tr>', page, re.S))
    assert set(rows) == {str(exact.pk), str(visual.pk)}
    assert "LAION slice" in rows[str(exact.pk)] and '<td class="kind">md5</td>' in rows[str(exact.pk)]
    assert "t/1.jpg" in rows[str(exact.pk)] and '<td class="num distance">0</td>' in rows[str(exact.pk)]
    assert "MMBench dev" in rows[str(visual.pk)] and '<td class="kind">phash</td>' in rows[str(visual.pk)]
    assert '<td class="num distance">2</td>' in rows[str(visual.pk)]
    assert 'href="/known-sets/?from=demo"' not in page  # annotators are not sent to a page they cannot open
    assert 'href="/known-sets/?from=demo"' in html(client_for(researcher).get(CONTAMINATION))


def test_known_sets_page_imports_lists_and_deletes(client_for, researcher, benchmark):
    (image,) = add_images(benchmark, 1)
    c = client_for(researcher)
    listing = SimpleUploadedFile("seen.csv", f"md5,label\n{image.md5},x\n".encode())
    resp = c.post("/known-sets/", {"name": "Seen before", "kind": "benchmark", "file": listing}, follow=True)
    assert any("1 hashes added" in m and "1 stored images newly flagged" in m for m in messages_of(resp))
    row = re.search(r'<tr data-set="Seen before">(.*?)</tr>', resp.content.decode(), re.S)[1]
    assert re.findall(r'<td class="num">(\d+)</td>', row) == ["1", "1"]
    image.refresh_from_db()
    assert image.contaminated

    bad = c.post("/known-sets/", {"name": "Broken", "kind": "other", "file": SimpleUploadedFile("b.csv", b"md5\nnope\n")})
    assert bad.status_code == 200 and "md5 must be 32 hexadecimal digits" in bad.content.decode()
    assert not KnownImageSet.objects.filter(name="Broken").exists()

    known = KnownImageSet.objects.get()
    assert c.get(f"/known-sets/{known.pk}/delete/").status_code == 405
    resp = c.post(f"/known-sets/{known.pk}/delete/", follow=True)
    assert any("Deleted 'Seen before'" in m for m in messages_of(resp))
    image.refresh_from_db()
    assert not image.contaminated and KnownImageSet.objects.count() == 0
    assert c.post("/known-sets/999/delete/").status_code == 404


# ---- media files ----------------------------------------------------------------------------------------


def test_media_is_served_only_to_users_who_may_see_the_image(client_for, annotator, outsider, researcher, benchmark, settings):
    image = add_images(benchmark, 1)[0]
    for name in (image.file.name, image.thumbnail.name):
        resp = client_for(annotator).get(f"/media/{name}")
        assert resp.status_code == 200
        assert b"".join(resp.streaming_content) == (Path(settings.MEDIA_ROOT) / name).read_bytes()
        assert resp["Content-Type"] == "image/jpeg" and "private" in resp["Cache-Control"]
        assert client_for(researcher).get(f"/media/{name}").status_code == 200
        assert client_for(outsider).get(f"/media/{name}").status_code == 404


def test_media_never_serves_uploaded_archives_or_paths_outside_stored_images(client_for, researcher, benchmark, settings):
    image = add_images(benchmark, 1)[0]
    archive = stage_upload(SimpleUploadedFile("x.zip", make_zip([("a.jpg", jpeg(1))])), ".zip")
    (Path(settings.MEDIA_ROOT) / "secret.txt").write_text("not for you")
    c = client_for(researcher)
    sha = image.sha256
    for path in [
        "imports/" + Path(archive).name,
        "secret.txt",
        f"images/{sha[:2]}/{sha[2:4]}/../../../secret.txt",
        f"images/{sha[:2]}/{sha[2:4]}/%2e%2e/%2e%2e/secret.txt",
        f"images/../imports/{Path(archive).name}",
        f"images/{sha[:2]}/{sha[2:4]}/{sha}.jpg/../../../../secret.txt",
        f"images/ff/ff/{sha}.jpg",  # the folders must be the hash's own prefix
        f"images/{sha[:2]}/{sha[2:4]}/{'0' * 64}.jpg",  # well formed but no such image
        "/etc/passwd",
        "..%2fsettings.py",
    ]:
        assert c.get("/media/" + path).status_code == 404, path
    assert c.get(f"/media/{image.file.name}").status_code == 200


def test_media_file_missing_from_storage_is_a_404(client_for, researcher, benchmark, settings):
    image = add_images(benchmark, 1)[0]
    (Path(settings.MEDIA_ROOT) / image.thumbnail.name).unlink()
    assert client_for(researcher).get(f"/media/{image.thumbnail.name}").status_code == 404


def test_the_task_form_gives_name_and_keywords_the_full_width(client_for, researcher, benchmark):
    html = client_for(researcher).get("/b/demo/taxonomy/counting/").content.decode()
    for name in ("name", "collection_keywords"):
        assert re.search(rf'<input type="text" name="{name}"[^>]* class="wide"', html), name

"""Import messages a person can act on: files in a folder that names no task are warned about,
per file and in the job's summary; a near duplicate says which hash matched."""

import time

import pytest

from curation import services
from curation.models import Image
from curation.services.ingest import near_duplicate_match
from jobs.services import run_now
from tests.factories import jpeg, make_zip

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


def run_zip(benchmark, user, data, tmp_path):
    path = tmp_path / f"upload-{time.monotonic_ns()}.zip"
    path.write_bytes(data)
    return run_now(services.create_import_job("ingest_zip", benchmark, user=user, path=str(path)))


def test_zip_files_in_folders_matching_no_task_are_warned_about(benchmark, researcher, tmp_path):
    archive = make_zip(
        [
            ("counting/a.jpg", jpeg(2001)),
            ("Counting-typo/b.jpg", jpeg(2002)),
            ("Counting-typo/c.jpg", jpeg(2003)),
            ("misc/d.jpg", jpeg(2004)),
            ("e.jpg", jpeg(2005)),
        ]
    )
    job = run_zip(benchmark, researcher, archive, tmp_path)
    messages = {e.key: e.message for e in job.entries.all()}
    assert "Warning" not in messages["counting/a.jpg"] and "Warning" not in messages["e.jpg"]
    for key, folder in [("Counting-typo/b.jpg", "Counting-typo"), ("misc/d.jpg", "misc")]:
        assert messages[key].startswith("added")
        assert f"Warning: folder '{folder}' matches no task slug of this benchmark" in messages[key]
        assert "counting" in messages[key]  # the slugs that would have worked
    assert job.result["added"] == 5
    assert job.result["files_in_no_task_folder"] == 3
    assert job.result["no_task_folders"] == "Counting-typo (2), misc (1)"
    tasks = {i.original_name: [t.slug for t in i.tasks.all()] for i in Image.objects.prefetch_related("tasks")}
    assert tasks["a.jpg"] == ["counting"] and tasks["b.jpg"] == [] and tasks["d.jpg"] == []


def test_a_zip_whose_folders_all_name_tasks_has_no_warning_in_its_summary(benchmark, researcher, tmp_path):
    job = run_zip(benchmark, researcher, make_zip([("counting/a.jpg", jpeg(2101)), ("b.jpg", jpeg(2102))]), tmp_path)
    assert job.result == {"added": 2, "skipped": 0, "errors": 0}


def test_server_folder_imports_warn_the_same_way(benchmark, researcher, tmp_path):
    root = tmp_path / "drop"
    (root / "ocr").mkdir(parents=True)
    (root / "scans").mkdir()
    (root / "ocr" / "a.jpg").write_bytes(jpeg(2201))
    (root / "scans" / "b.jpg").write_bytes(jpeg(2202))
    job = run_now(services.create_import_job("ingest_folder", benchmark, user=researcher, path=str(root)))
    messages = {e.key: e.message for e in job.entries.all()}
    assert "Warning" not in messages["ocr/a.jpg"] and "folder 'scans' matches no task slug" in messages["scans/b.jpg"]
    assert job.result["files_in_no_task_folder"] == 1 and job.result["no_task_folders"] == "scans (1)"


def test_the_near_duplicate_message_names_the_hash_that_matched(benchmark):
    radius = benchmark.near_dup_threshold - 1
    original = Image(benchmark=benchmark, phash=0, dhash=0)
    by_dhash = Image(benchmark=benchmark, phash=(1 << (radius + 5)) - 1, dhash=0b11, near_duplicate_of=original)
    assert near_duplicate_match(by_dhash) == "dHash 2 bits apart"
    by_phash = Image(benchmark=benchmark, phash=0b1, dhash=(1 << (radius + 5)) - 1, near_duplicate_of=original)
    assert near_duplicate_match(by_phash) == "pHash 1 bit apart"
    by_both = Image(benchmark=benchmark, phash=0b111, dhash=0b1, near_duplicate_of=original)
    assert near_duplicate_match(by_both) == "pHash 3 bits apart, dHash 1 bit apart"

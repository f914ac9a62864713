"""Imports decode in worker processes (or threads) and write a batch at a time: every stored row
must be what ingesting the files one by one (ingest_image after ingest_image) stores. One file,
imported every way; and a worker process that dies leaves the import to the threads."""

import hashlib
import os
import re
import signal

import pytest
from django.core.files.base import ContentFile

from curation import hashing, services
from curation.models import ContaminationMatch, Image
from curation.services import imports as imports_module
from curation.services import ingest as ingesting
from jobs.models import Job
from jobs.services import run_now
from jobs.staging import stage_upload
from tests.factories import encode, jpeg, make_zip, photo

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


def awkward_zip() -> bytes:
    """Near copies inside one batch and across batches, exact copies (inside the file and of an
    image already stored), contamination by MD5 and by pHash, files that are not images, a task
    folder, an unknown folder and an unsafe name."""
    entries = []
    for n in range(6):
        picture = photo((640, 520), 300 + n)
        entries.append((f"counting/scene-{n}.jpg", encode(picture, "JPEG", quality=92)))
        entries.append((f"ocr/scene-{n}-reposted.jpg", encode(picture.resize((600, 487)), "JPEG", quality=60)))
        entries.append((f"misc/scene-{n}-small.png", encode(picture.resize((320, 260)), "PNG")))
    entries += [
        ("again/scene-0.jpg", entries[0][1]),  # the same bytes twice in one file
        ("known.jpg", jpeg(401)),  # an MD5 on the known list
        ("looks-known.jpg", encode(photo((640, 520), 402), "JPEG", quality=70)),  # a pHash on it
        ("stored-before.jpg", jpeg(403)),  # already in the benchmark
        ("broken.jpg", jpeg(404)[:3000]),
        ("notes.txt", b"not a picture"),
        ("../escape.jpg", jpeg(405)),
        ("tiny.png", encode(photo((40, 30), 406), "PNG")),
    ]
    return make_zip(entries)


def import_zip(benchmark, researcher, data: bytes) -> Job:
    staged = stage_upload(ContentFile(data), ".zip")
    return run_now(services.create_import_job("ingest_zip", benchmark, user=researcher, staged=staged, license="CC0"))


def stored_rows(benchmark, job: Job) -> dict:
    """Every row the import wrote, ids replaced by content (sha256) so two imports compare."""
    images = list(Image.objects.filter(benchmark=benchmark).order_by("pk").prefetch_related("tasks"))
    sha = {image.pk: image.sha256 for image in images}

    def named(value):
        if type(value) is int and value in sha:  # an image id (never a flag: True == 1)
            return sha[value]
        return text(value) if isinstance(value, str) else value

    def text(message: str) -> str:
        return re.sub(r"#(\d+)", lambda m: "#" + sha.get(int(m.group(1)), m.group(1)), message)

    return {
        "images": [
            {
                **{
                    field: getattr(image, field)
                    for field in (
                        "original_name",
                        "sha256",
                        "md5",
                        "phash",
                        "dhash",
                        "width",
                        "height",
                        "format",
                        "file_size",
                        "animated",
                        "low_resolution",
                        "source",
                        "license",
                        "status",
                        "near_duplicate_distance",
                        "contaminated",
                    )
                },
                "file": image.file.name,
                "thumbnail": image.thumbnail.name,
                "near_duplicate_of": sha.get(image.near_duplicate_of_id),
                "tasks": sorted(t.slug for t in image.tasks.all()),
                "job": image.job_id == job.pk,
            }
            for image in images
        ],
        "contamination": sorted(
            (sha[m.image_id], m.known_set.name, m.known_hash.label, m.kind, m.distance)
            for m in ContaminationMatch.objects.filter(image__benchmark=benchmark).select_related("known_set", "known_hash")
        ),
        "entries": sorted(
            (e.key, e.outcome, text(e.message), sorted((k, named(v)) for k, v in e.data.items())) for e in job.entries.all()
        ),
        "job": (job.status, job.result, job.done, job.total),
    }


def test_a_zip_imported_in_batches_in_threads_or_worker_processes_stores_what_one_by_one_stores(
    researcher, monkeypatch, settings
):
    from curation.services import import_known_set, load_preset, parse_hash_list

    data = awkward_zip()
    import imagehash
    from PIL import Image as PILImage

    looks_known = imagehash.phash(PILImage.open(__import__("io").BytesIO(jpeg(402, quality=95))))
    import_known_set(
        name="Training set",
        rows=parse_hash_list(
            f"md5,phash,label\n{hashlib.md5(jpeg(401)).hexdigest()},,train/1.jpg\n,{looks_known},train/2.jpg\n".encode(),
            "train.csv",
        ),
    )
    results = []
    for way in ("one by one", "batched, in threads", "batched, in worker processes"):
        benchmark = load_preset("alignmmbench", slug=f"way-{len(results)}")
        services.ingest_image(benchmark, jpeg(403))  # already there before the import
        monkeypatch.undo()
        monkeypatch.setattr(imports_module, "INGEST_BATCH", 5)  # batches of five: copies inside and across batches
        settings.BENCHFORGE_INGEST_PROCESSES = 0
        if way == "one by one":
            monkeypatch.setattr(ingesting.Ingester, "store", ingesting.Ingester.store_one_by_one)
        elif way == "batched, in worker processes":
            settings.BENCHFORGE_INGEST_PROCESSES = 2
            monkeypatch.setattr(ingesting, "PROCESSES_FROM", 1)
            monkeypatch.setattr(hashing, "submit", sent_to_a_worker_process)
        job = import_zip(benchmark, researcher, data)
        results.append(stored_rows(benchmark, job))
    one_by_one, batched, in_processes = results
    # The file really is awkward: near duplicates, exact copies, contamination both ways, errors.
    flags = [(i["near_duplicate_of"] is not None, i["contaminated"]) for i in one_by_one["images"]]
    assert sum(near for near, _ in flags) >= 10 and sum(c for _, c in flags) >= 2
    assert {kind for _, _, _, kind, _ in one_by_one["contamination"]} == {"md5", "phash"}
    outcomes = [outcome for _, outcome, _, _ in one_by_one["entries"]]
    assert outcomes.count("error") >= 3 and outcomes.count("skipped") >= 2
    for part in ("images", "contamination", "entries", "job"):
        assert batched[part] == one_by_one[part], part
        assert in_processes[part] == one_by_one[part], part


def sent_to_a_worker_process(*args):
    future = real_submit(*args)
    assert future is not None, "analysed in the importing process, not in a worker process"
    return future


real_submit = hashing.submit


def test_an_import_goes_on_in_threads_when_a_worker_process_died(researcher, monkeypatch, settings):
    from curation.services import load_preset

    settings.BENCHFORGE_INGEST_PROCESSES = 2
    monkeypatch.setattr(ingesting, "PROCESSES_FROM", 1)
    pool = hashing._processes(2)
    list(pool.map(abs, [1, 2, 3]))  # the workers are up
    for pid in list(pool._processes):
        os.kill(pid, signal.SIGKILL)  # as the kernel's out-of-memory killer would
    benchmark = load_preset("alignmmbench", slug="after-a-kill")
    job = import_zip(benchmark, researcher, make_zip([(f"p{n}.jpg", jpeg(500 + n)) for n in range(6)]))
    assert job.status == "succeeded" and job.result["added"] == 6, job.message
    assert Image.objects.filter(benchmark=benchmark).count() == 6
    assert hashing._processes(2) is not pool  # the next import starts new workers
    job = import_zip(benchmark, researcher, make_zip([(f"q{n}.jpg", jpeg(600 + n)) for n in range(6)]))
    assert job.status == "succeeded" and job.result["added"] == 6, job.message

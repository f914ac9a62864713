"""An MMBench TSV's images are decoded in worker processes (or threads) and stored a batch at a time: the items, images,
flags and per-line entries must be those of storing the images one by one. One file, every way."""

import re

import pytest

from annotation.models import Item
from curation import hashing
from curation.models import Task
from curation.services import Ingester
from curation.services import ingest as ingesting
from qc.services import imports
from tests.curation.test_batched_ingest import sent_to_a_worker_process, stored_rows
from tests.factories import b64_jpeg_variants
from tests.qc.test_imports import ROWS, row, run_import, tsv

pytestmark = [pytest.mark.usefixtures("fresh_image_indexes")]


def entries_of(job, sha: dict[int, str], external: dict[int, str]) -> list:
    """Each line's entry with image and item ids replaced by content and by the item's index."""

    def plain(key, value):
        if key == "images":
            return [sha[i] for i in value]
        if key == "item":
            return external[value]
        return value

    return sorted(
        (e.key, e.outcome, re.sub(r"item #\d+", "item", e.message), sorted((k, plain(k, v)) for k, v in e.data.items()))
        for e in job.entries.all()
    )


def items_of(benchmark, sha: dict[int, str]) -> list:
    return [
        (i.external_id, i.task.name, i.question, i.choices, i.answer, i.status, [sha[x.image_id] for x in i.item_images.all()])
        for i in Item.objects.filter(benchmark=benchmark).order_by("pk").select_related("task").prefetch_related("item_images")
    ]


@pytest.mark.django_db(transaction=True)
def test_a_tsv_imported_in_batches_in_threads_or_worker_processes_stores_what_one_by_one_stores(
    researcher, monkeypatch, settings
):
    from curation.models import Image
    from curation.services import create_benchmark

    # The test file plus near copies and exact copies spread over several batches of three.
    extra = [row(100 + n, image=image) for n, image in enumerate(b64_jpeg_variants(8))]
    data = tsv(ROWS + extra + [row(200, image="101"), row(201, image=extra[0][-1])])
    results = []
    for way in ("one by one", "batched, in threads", "batched, in worker processes"):
        monkeypatch.setattr(imports, "INGEST_BATCH", 3)
        settings.BENCHFORGE_INGEST_PROCESSES = 0
        if way == "one by one":
            monkeypatch.setattr(Ingester, "store", ingesting.Ingester.store_one_by_one)
        elif way == "batched, in worker processes":
            settings.BENCHFORGE_INGEST_PROCESSES = 2
            monkeypatch.setattr(ingesting, "PROCESSES_FROM", 1)
            monkeypatch.setattr(hashing, "submit", sent_to_a_worker_process)
        benchmark = create_benchmark(name=f"MMBench {way}", user=researcher)
        job = run_import(benchmark, researcher, data)
        job.refresh_from_db()
        sha = dict(Image.objects.filter(benchmark=benchmark).values_list("pk", "sha256"))
        external = dict(Item.objects.filter(benchmark=benchmark).values_list("pk", "external_id"))
        rows = stored_rows(benchmark, job)
        rows["entries"] = entries_of(job, sha, external)
        results.append((rows, items_of(benchmark, sha)))
        monkeypatch.undo()
    (one_rows, one_items), *others = results
    assert len(one_items) >= 12 and sum(i["near_duplicate_of"] is not None for i in one_rows["images"]) >= 3
    for batch_rows, batch_items in others:
        assert batch_items == one_items
        for part in ("images", "contamination", "entries", "job"):
            assert batch_rows[part] == one_rows[part], part


def every_item_row(benchmark, sha: dict[int, str]) -> list:
    """Every row stored for the benchmark's items (item, images, criteria, history, source), with
    ids replaced by content and times left out, in file order."""
    skip = {"id", "benchmark", "task", "seed", "created_at", "updated_at"}
    tasks = dict(Task.objects.filter(benchmark=benchmark).values_list("pk", "slug"))
    rows = []
    for item in (
        Item.objects.filter(benchmark=benchmark)
        .order_by("external_source__line")
        .select_related("task", "external_source")
        .prefetch_related("item_images", "criteria", "revisions")
    ):
        source = item.external_source
        rows.append(
            {
                **{f.attname: getattr(item, f.attname) for f in Item._meta.concrete_fields if f.name not in skip},
                "task": (item.task.name, item.task.slug, item.task.category.name),
                "images": [(x.order, sha[x.image_id]) for x in item.item_images.all()],
                "criteria": sorted((c.order, c.kind, c.text) for c in item.criteria.all()),
                "revisions": [
                    (
                        r.version,
                        r.action,
                        r.changed_by_id,
                        {
                            **r.snapshot,
                            "task": tasks[r.snapshot["task"]],
                            "images": [sha[i] for i in r.snapshot.get("images", [])],
                        },
                    )
                    for r in sorted(item.revisions.all(), key=lambda r: r.version)
                ],
                "source": (source.format, source.index, source.split, source.line, source.copies, source.job_id is not None),
            }
        )
    return rows


MLLM = (
    b'{"id": "q1", "question": "What is in the picture?", "level": "Perception", "capability": "Recognition",'
    b' "criteria": "1. names the animal\\n2. says what it does"}\n'
    b'{"id": "q2", "question": "Why?", "question_type": "close-ended", "reference_answer": "Because."}\n'
    b'{"id": "q1", "question": "again"}\n'
    b'{"id": "q3", "question": "", "level": "Reasoning"}\n'
    b'{"id": "q4", "question": "Compare them.", "question_type": "compound", "criteria": ["a", "b", "c", "d"]}\n'
    b'{"id": "q5", "question": "How many?", "question_type": "sideways"}\n'
    b'{"id": "q6", "question": "Where?", "level": "Perception", "capability": "Localisation"}\n'
)


@pytest.mark.parametrize("fmt", [imports.MMBENCH_TSV, imports.MLLM_BENCH])
@pytest.mark.django_db(transaction=True)
def test_a_file_stored_a_row_at_a_time_or_in_one_batch_stores_the_same_rows(researcher, monkeypatch, fmt):
    from curation.models import Image
    from curation.services import create_benchmark

    if fmt == imports.MMBENCH_TSV:
        extra = [row(100 + n, image=image) for n, image in enumerate(b64_jpeg_variants(6))]
        data, name = tsv(ROWS + extra + [row(200, image="101"), row(201, image=extra[0][-1])]), "bench.tsv"
    else:
        data, name = MLLM, "questions.jsonl"
    results = []
    for chunk in (1, 100_000):
        monkeypatch.setattr(imports, "CHUNK", chunk)
        monkeypatch.setattr(imports, "INGEST_BATCH", chunk)
        monkeypatch.setattr(imports, "INGEST_BATCH_BYTES", chunk * 10**6)
        benchmark = create_benchmark(name=f"Import in chunks of {chunk}", user=researcher)
        job = run_import(benchmark, researcher, data, name=name, fmt=fmt)
        job.refresh_from_db()
        assert job.status == "succeeded", job.message
        sha = dict(Image.objects.filter(benchmark=benchmark).values_list("pk", "sha256"))
        external = dict(Item.objects.filter(benchmark=benchmark).values_list("pk", "external_id"))
        rows = stored_rows(benchmark, job)
        rows["entries"] = entries_of(job, sha, external)
        rows["items"] = every_item_row(benchmark, sha)
        results.append(rows)
        monkeypatch.undo()
    one, whole = results
    assert len(one["items"]) >= (12 if fmt == imports.MMBENCH_TSV else 4)
    assert any(i["criteria"] for i in one["items"]) or fmt == imports.MMBENCH_TSV
    assert sum(e[1] == "error" for e in one["entries"]) >= 3
    for part in one:
        assert whole[part] == one[part], part

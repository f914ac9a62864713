"""An MMBench TSV's images are decoded in threads and stored a batch at a time: the items, images,
flags and per-line entries must be those of storing the images one by one. One file, both ways."""

import re

import pytest

from annotation.models import Item
from curation.services import Ingester
from curation.services import ingest as ingesting
from qc.services import imports
from tests.curation.test_batched_ingest import stored_rows
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
def test_a_tsv_imported_in_threaded_batches_stores_what_one_by_one_stores(researcher, monkeypatch):
    from curation.models import Image
    from curation.services import create_benchmark

    # The test file plus near copies and exact copies spread over several batches of three.
    extra = [row(100 + n, image=image) for n, image in enumerate(b64_jpeg_variants(8))]
    data = tsv(ROWS + extra + [row(200, image="101"), row(201, image=extra[0][-1])])
    results = []
    for way in ("one by one", "batched"):
        monkeypatch.setattr(imports, "INGEST_BATCH", 3)
        if way == "one by one":
            monkeypatch.setattr(Ingester, "store", ingesting.Ingester.store_one_by_one)
        benchmark = create_benchmark(name=f"MMBench {way}", user=researcher)
        job = run_import(benchmark, researcher, data)
        job.refresh_from_db()
        sha = dict(Image.objects.filter(benchmark=benchmark).values_list("pk", "sha256"))
        external = dict(Item.objects.filter(benchmark=benchmark).values_list("pk", "external_id"))
        rows = stored_rows(benchmark, job)
        rows["entries"] = entries_of(job, sha, external)
        results.append((rows, items_of(benchmark, sha)))
        monkeypatch.undo()
    (one_rows, one_items), (batch_rows, batch_items) = results
    assert len(one_items) >= 12 and sum(i["near_duplicate_of"] is not None for i in one_rows["images"]) >= 3
    assert batch_items == one_items
    for part in ("images", "contamination", "entries", "job"):
        assert batch_rows[part] == one_rows[part], part

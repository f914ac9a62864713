"""A release build streams: rows go to the bundle, the archives and Parquet a chunk at a time, so
its memory does not grow with the release, and how it is chunked never changes what it writes.
(bench/export.py measures peak memory at 5,000 and 50,000 items.)"""

import io
import threading
import tracemalloc
import zipfile

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image as PILImage

from annotation.models import Item, ItemImage
from curation.services import ingest_image, screen_images
from exports import parquet, services
from tests.exports.conftest import stored

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


def parquet_rows(release) -> dict[str, list[dict]]:
    tables = {}
    with zipfile.ZipFile(stored(release, "parquet")) as archive:
        for name in archive.namelist():
            if name.endswith(".parquet"):
                with archive.open(name) as handle:
                    data = pq.ParquetFile(io.BytesIO(handle.read()))
                    tables[name] = (data.read().to_pylist(), data.num_row_groups)
    return tables


def test_small_chunks_write_the_same_release(built, researcher, monkeypatch):
    release = built()
    files = dict(release.files.values_list("kind", "sha256"))
    counts, rows = release.counts, parquet_rows(release)
    # Three items at a time through the snapshot and the bundles, two rows per Parquet row group:
    # images shared across chunks, MCQ rows pointing back at an earlier chunk's image, counts.
    monkeypatch.setattr(services, "SNAPSHOT_CHUNK", 3)
    monkeypatch.setattr(parquet, "GROUP_ROWS", 2)
    services.start_build(release, user=researcher, here=True)
    release.refresh_from_db()
    assert release.counts == counts
    rechunked = dict(release.files.values_list("kind", "sha256"))
    for kind in ("public.tar.gz", "public.zip", "private.tar.gz", "private.zip"):
        assert rechunked[kind] == files[kind], kind
    again = parquet_rows(release)
    assert {name: table for name, (table, _) in again.items()} == {name: table for name, (table, _) in rows.items()}
    assert all(groups > 1 for _, groups in again.values())


def noise_jpeg(seed: int, side: int = 600) -> bytes:
    """A JPEG that does not compress (noise): about 0.9 bytes a pixel at quality 90."""
    pixels = np.random.default_rng(seed).integers(0, 256, (side, side, 3), dtype=np.uint8)
    out = io.BytesIO()
    PILImage.fromarray(pixels).save(out, "JPEG", quality=90)
    return out.getvalue()


def test_a_build_holds_a_few_images_in_memory_not_all_of_them(
    benchmark, counting, researcher, monkeypatch, django_capture_on_commit_callbacks, tmp_path
):
    images = []
    for n in range(40):
        image = ingest_image(benchmark, noise_jpeg(n), tasks=[counting]).image
        screen_images(benchmark, [image.pk], action="accept", user=researcher)
        images.append(image)
    total = sum(image.file_size for image in images)
    items = Item.objects.bulk_create(
        Item(
            benchmark=benchmark,
            task=counting,
            kind=Item.Kind.MCQ if n % 2 else Item.Kind.SINGLE_TURN,
            question=f"What does noise picture {n} show?",
            choices=["nothing", "a cat"] if n % 2 else [],
            answer="A" if n % 2 else "",
            reference_answer="Nothing recognisable: random coloured noise.",
            status="accepted",
            author=researcher,
        )
        for n in range(len(images))
    )
    ItemImage.objects.bulk_create(ItemImage(item=item, image=image) for item, image in zip(items, images))
    monkeypatch.setattr(parquet, "GROUP_BYTES", 1 << 20)
    release = services.create_release(benchmark, user=researcher, version="1.0.0")
    # pyarrow imports pandas on first use (about 25 MB of modules): not the build's to count.
    warm = parquet._SplitWriter(tmp_path / "warm.parquet")
    warm.add(parquet._record({"images": []}, bytes, lambda name: ("", "")))
    warm.close()
    tracemalloc.start()
    try:
        with django_capture_on_commit_callbacks(execute=True):
            services.start_build(release, user=researcher)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    release.refresh_from_db()
    assert release.counts["images"] == 40 and release.files.count() == 5
    # Holding every image at once (the Parquet export used to, and the MCQ file's base64) is `total`.
    # tracemalloc counts every thread of the process: the threads alive are named, should another one
    # have allocated during the build (a 4-process run once saw 12.8 MB where 5.1-5.5 MB is usual).
    threads = [thread.name for thread in threading.enumerate()]
    assert peak < total / 2, f"peak {peak / 1e6:.1f} MB of Python memory for {total / 1e6:.1f} MB of images; threads {threads}"

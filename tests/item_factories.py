"""Small builders shared by the item tests (images without decoding, complete item fields)."""

import hashlib
import itertools

from curation.models import Image

_counter = itertools.count(1)


def make_image(benchmark, *, status="accepted", contaminated=False, tasks=()):
    """An Image row as ingest would leave it (no file on disk needed for these tests)."""
    n = next(_counter)
    digest = hashlib.sha256(f"image-{n}".encode()).hexdigest()
    image = Image.objects.create(
        benchmark=benchmark, file=f"images/{digest[:2]}/{digest[2:4]}/{digest}.jpg", sha256=digest,
        md5=hashlib.md5(digest.encode()).hexdigest(), phash=n, dhash=n, width=800, height=600, format="JPEG",
        file_size=1000, status=status, contaminated=contaminated,
    )
    image.tasks.set(tasks)
    return image


def complete_fields(image, **overrides):
    """Fields of a single-turn item that is ready to submit."""
    fields = {
        "question": "How many apples are on the table?",
        "reference_answer": "There are three red apples on the wooden table, two on the left and one on the right.",
        "criteria": [{"kind": "exact", "text": "The count is three."}],
        "images": [image.pk],
    }
    fields.update(overrides)
    return fields

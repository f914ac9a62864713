"""Ingesting one image (validate, hash, store content-addressed, flag) and a batch of uploads.
Hash values are signed 64-bit ints (see curation.imaging); files are content-addressed."""

import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.utils import timezone

from benchforge.errors import DomainError

from ..imaging import ImageLimits, ImageRejected, analyse_image, hamming
from ..models import Benchmark, Image, Task
from . import contamination, dedup

THUMBNAIL_PX = 256


def image_limits(benchmark: Benchmark) -> ImageLimits:
    return ImageLimits(max_bytes=settings.BENCHFORGE_MAX_UPLOAD_BYTES, min_short_edge=benchmark.min_short_edge)


def _content_name(folder: str, sha256: str, ext: str) -> str:
    return f"{folder}/{sha256[:2]}/{sha256[2:4]}/{sha256}.{ext}"


def _store(name: str, data: bytes) -> bool:
    """Write content-addressed bytes once; True when this call created the file. A name always
    carries the same bytes: on local disk a concurrent writer's copy gets another name and is
    dropped here; on S3 the storage overwrites in place (file_overwrite), rewriting the same bytes."""
    if default_storage.exists(name):
        return False
    saved = default_storage.save(name, ContentFile(data))
    if saved != name:  # another process wrote the same content meanwhile: keep theirs
        default_storage.delete(saved)
        return False
    return True


def _remove_if_unreferenced(names: list[str], sha256: str) -> None:
    if names and not Image.objects.filter(sha256=sha256).exists():
        for name in names:
            default_storage.delete(name)


def _bits(n: int) -> str:
    return f"{n} bit{'' if n == 1 else 's'} apart"


def near_duplicate_match(image: Image) -> str:
    """Which hash made `image` a near duplicate, and by how much ("dHash 2 bits apart"): a match
    can come from either hash, and quoting the pHash distance of a dHash match misleads."""
    other = image.near_duplicate_of
    radius = image.benchmark.near_dup_threshold - 1
    distances = (("pHash", hamming(image.phash, other.phash)), ("dHash", hamming(image.dhash, other.dhash)))
    matched = [f"{name} {_bits(d)}" for name, d in distances if d <= radius]
    return ", ".join(matched) or f"pHash {_bits(distances[0][1])}"


@dataclass
class IngestOutcome:
    image: Image
    created: bool  # False: an exact duplicate (same MD5) already in the benchmark

    @property
    def message(self) -> str:
        if not self.created:
            return f"exact duplicate of image #{self.image.pk}; not stored again"
        notes = []
        if self.image.low_resolution:
            notes.append(f"low resolution ({self.image.width}x{self.image.height})")
        if self.image.near_duplicate_of_id:
            notes.append(f"near duplicate of #{self.image.near_duplicate_of_id} ({near_duplicate_match(self.image)})")
        if self.image.contaminated:
            sets = ", ".join(m.known_set.name for m in self.image.contamination_matches.select_related("known_set"))
            notes.append(f"matches known set(s): {sets}")
        return "added" + (": " + "; ".join(notes) if notes else "")

    def as_dict(self) -> dict:
        return {
            "image_id": self.image.pk,
            "created": self.created,
            "message": self.message,
            "duplicate_of": None if self.created else self.image.pk,
            "near_duplicate_of": self.image.near_duplicate_of_id,
            "contaminated": self.image.contaminated,
            "low_resolution": self.image.low_resolution,
        }


def check_tasks(benchmark: Benchmark, tasks) -> list[Task]:
    tasks = list(tasks)
    foreign = [t.name for t in tasks if t.benchmark_id != benchmark.pk]
    if foreign:
        raise DomainError(f"Task(s) {', '.join(foreign)} belong to another benchmark.")
    return tasks


def ingest_image(
    benchmark: Benchmark,
    data: bytes,
    *,
    original_name: str = "",
    source: str = "",
    license: str = "",
    collected_by=None,
    collected_at=None,
    tasks=(),
    job=None,
) -> IngestOutcome:
    """Validate, hash and store one image; flag low resolution, near duplicates, contamination.

    Raises ImageRejected (bad file) or DomainError. The file is written before the row, in one
    transaction, and removed again if anything fails, so a failure leaves nothing behind.
    """
    tasks = check_tasks(benchmark, tasks)
    # Same bytes as a stored image: already validated once, so skip the decode (cheap re-imports).
    existing = Image.objects.filter(benchmark=benchmark, md5=hashlib.md5(data).hexdigest()).first()
    if existing is not None:
        return IngestOutcome(existing, created=False)
    analysis = analyse_image(data, limits=image_limits(benchmark), thumbnail_size=THUMBNAIL_PX)

    file_name = _content_name("images", analysis.sha256, analysis.extension)
    thumb_name = _content_name("thumbs", analysis.sha256, "jpg")
    written: list[str] = []
    try:
        with transaction.atomic():
            for name, content in ((file_name, data), (thumb_name, analysis.thumbnail)):
                if _store(name, content):
                    written.append(name)
            image = Image.objects.create(
                benchmark=benchmark,
                file=file_name,
                thumbnail=thumb_name,
                original_name=original_name[:255],
                sha256=analysis.sha256,
                md5=analysis.md5,
                phash=analysis.phash,
                dhash=analysis.dhash,
                width=analysis.width,
                height=analysis.height,
                format=analysis.format,
                file_size=len(data),
                animated=analysis.animated,
                low_resolution=analysis.low_resolution,
                source=source[:1000],
                license=license[:200],
                collected_by=collected_by,
                collected_at=collected_at or timezone.now(),
                job=job,
            )
            image.tasks.set(tasks)
            dedup.flag_near_duplicate(image)
            contamination.flag_contamination(image)
    except IntegrityError:
        # Someone stored the same bytes in this benchmark a moment ago: that copy wins.
        _remove_if_unreferenced(written, analysis.sha256)
        existing = Image.objects.filter(benchmark=benchmark, md5=analysis.md5).first()
        if existing is None:
            raise
        return IngestOutcome(existing, created=False)
    except BaseException:
        _remove_if_unreferenced(written, analysis.sha256)
        raise
    return IngestOutcome(image, created=True)


def ingest_uploads(benchmark: Benchmark, files, *, user, tasks=(), source: str = "", license: str = "") -> list[dict]:
    """Ingest uploaded files one by one; one bad file never stops the others.
    Returns one result per file: {name, outcome: added|duplicate|error, message, image_id...}."""
    results = []
    max_bytes = settings.BENCHFORGE_MAX_UPLOAD_BYTES
    for upload in files:
        name = getattr(upload, "name", "") or "upload"
        try:
            if upload.size > max_bytes:
                raise DomainError(f"The file is {upload.size / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.0f} MB.")
            outcome = ingest_image(
                benchmark, upload.read(), original_name=name, source=source, license=license, collected_by=user, tasks=tasks
            )
        except (ImageRejected, DomainError) as exc:
            results.append({"name": name, "outcome": "error", "message": exc.message})
            continue
        results.append({"name": name, "outcome": "added" if outcome.created else "duplicate", **outcome.as_dict()})
    return results

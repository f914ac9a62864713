"""Near duplicates: finding and flagging them, and a person's decision on a flagged pair."""

from django.db import transaction
from django.utils.translation import gettext

from benchforge.bulk import update_rows
from benchforge.errors import Conflict, DomainError

from ..imaging import hamming
from ..models import Benchmark, Image
from .indexes import HASH_COLUMNS, image_indexes
from .screening import screen_images


def find_near_duplicates(image: Image, radius: int | None = None) -> list[tuple[Image, int, int]]:
    """Other images of the benchmark whose pHash or dHash is within `radius` bits
    (default: fewer bits than the benchmark threshold), as (image, phash_d, dhash_d), nearest first."""
    if radius is None:
        radius = image.benchmark.near_dup_threshold - 1
    if radius < 0:
        return []
    candidate_ids: set[int] = set()
    for field, index in zip(HASH_COLUMNS, image_indexes.get(image.benchmark_id)):
        ids, _ = index.query(getattr(image, field), radius, exclude=image.pk)
        candidate_ids.update(ids.tolist())
    # Re-read from the database: the index may hold rows deleted elsewhere.
    found = []
    for other in Image.objects.filter(benchmark_id=image.benchmark_id, pk__in=candidate_ids):
        pd, dd = hamming(image.phash, other.phash), hamming(image.dhash, other.dhash)
        if min(pd, dd) <= radius:
            found.append((other, pd, dd))
    found.sort(key=lambda t: (t[1], t[2], t[0].pk))
    return found


def flag_near_duplicate(image: Image) -> None:
    matches = find_near_duplicates(image)
    if matches:
        other, phash_distance, _ = matches[0]
        image.near_duplicate_of = other
        image.near_duplicate_distance = phash_distance
        image.save(update_fields=["near_duplicate_of", "near_duplicate_distance"])


def flag_near_duplicates_of_batch(benchmark: Benchmark, images: list[Image]) -> None:
    """flag_near_duplicate for new images stored together (saved, in their order): each is compared
    with the images before it (a smaller id), as if they had come one after another."""
    radius = benchmark.near_dup_threshold - 1
    if radius < 0 or not images:
        return
    candidates: dict[int, set[int]] = {image.pk: set() for image in images}
    for field, index in zip(HASH_COLUMNS, image_indexes.get(benchmark.pk)):
        for image, (ids, _) in zip(images, index.query_many([getattr(image, field) for image in images], radius)):
            candidates[image.pk].update(i for i in ids.tolist() if i < image.pk)
    wanted = set().union(*candidates.values())
    # Re-read from the database: the index may hold rows deleted elsewhere.
    hashes = {
        pk: (phash, dhash)
        for pk, phash, dhash in Image.objects.filter(benchmark_id=benchmark.pk, pk__in=wanted).values_list("pk", "phash", "dhash")
    }
    flagged = []
    for image in images:
        found = []
        for pk in candidates[image.pk] & hashes.keys():
            pd, dd = hamming(image.phash, hashes[pk][0]), hamming(image.dhash, hashes[pk][1])
            if min(pd, dd) <= radius:
                found.append((pd, dd, pk))
        if found:
            image.near_duplicate_distance, _, image.near_duplicate_of_id = min(found)
            flagged.append((image.pk, image.near_duplicate_of_id, image.near_duplicate_distance))
    update_rows(Image, ("near_duplicate_of_id", "near_duplicate_distance"), flagged)


def resolve_near_duplicate(image: Image, *, keep: bool, user) -> Image:
    """After a person compared the pair: keep both, or drop this one as similar content."""
    if image.near_duplicate_of_id is None:
        raise Conflict(
            gettext("Image #%(id)s is not flagged as a near duplicate (any more): reload the page.") % {"id": image.pk}
        )
    if keep:
        image.near_duplicate_resolved = True
        image.save(update_fields=["near_duplicate_resolved"])
    else:
        with transaction.atomic():
            screen_images(
                image.benchmark,
                [image.pk],
                action="reject",
                user=user,
                reason=Image.RejectReason.SIMILAR,
                note=f"near duplicate of image #{image.near_duplicate_of_id}",
            )
            Image.objects.filter(pk=image.pk).update(near_duplicate_resolved=True)
    image.refresh_from_db()
    return image


def set_near_dup_threshold(benchmark: Benchmark, threshold: int) -> Benchmark:
    if not 0 <= threshold <= 32:
        raise DomainError(gettext("The near-duplicate threshold must be between 0 (off) and 32 bits."))
    benchmark.near_dup_threshold = threshold
    benchmark.save(update_fields=["near_dup_threshold"])
    return benchmark

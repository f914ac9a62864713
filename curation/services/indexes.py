"""The in-process hash indexes (near duplicates, contamination), refreshed from the database."""

from django.db.models import Count, Max

from ..models import Image, KnownHash
from ..neardup import IndexRegistry


def _load_image_hashes(key, after_id):
    benchmark_id, field = key
    rows = Image.objects.filter(benchmark_id=benchmark_id, pk__gt=after_id).order_by("pk").values_list("pk", field)
    return [r[0] for r in rows], [r[1] for r in rows]


def _image_rows_fingerprint(key, last_id):
    benchmark_id, _field = key
    return tuple(
        Image.objects.filter(benchmark_id=benchmark_id, pk__lte=last_id)
        .aggregate(n=Count("pk"), newest=Max("created_at"))
        .values()
    )


def _load_known_hashes(key, after_id):
    rows = KnownHash.objects.filter(pk__gt=after_id, phash__isnull=False).order_by("pk").values_list("pk", "phash")
    return [r[0] for r in rows], [r[1] for r in rows]


def _known_rows_fingerprint(key, last_id):
    return tuple(
        KnownHash.objects.filter(pk__lte=last_id, phash__isnull=False)
        .aggregate(n=Count("pk"), newest=Max("known_set__created_at"))
        .values()
    )


image_indexes = IndexRegistry(_load_image_hashes, _image_rows_fingerprint)


known_index = IndexRegistry(_load_known_hashes, _known_rows_fingerprint)

"""The in-process hash indexes (near duplicates, contamination), refreshed from the database.

Ids only grow (AUTOINCREMENT on SQLite, sequences on Postgres), so rows up to the last id loaded
can only have been deleted since, never added, unless a rollback handed their ids out again (a
test's transaction, an aborted import on SQLite). The fingerprint is therefore the newest loaded row
that is still there and its creation time: one indexed single-row read per use, where counting the
loaded rows grew with the benchmark (it was most of a large import's database time). A row deleted
below it stays in the index until the next rebuild; that is harmless, because every caller re-reads
the candidates the index returns from the database."""

from ..models import Image, KnownHash
from ..neardup import IndexRegistry


def _load_image_hashes(benchmark_id, after_id):
    rows = list(
        Image.objects.filter(benchmark_id=benchmark_id, pk__gt=after_id)
        .order_by("pk")
        .values_list("pk", "phash", "dhash", "created_at")
    )
    # The newest row's (pk, created_at) is _image_rows_fingerprint's answer once these are loaded.
    newest = (rows[-1][0], rows[-1][3]) if rows else None
    return [r[0] for r in rows], ([r[1] for r in rows], [r[2] for r in rows]), newest


def _image_rows_fingerprint(benchmark_id, last_id):
    return (
        Image.objects.filter(benchmark_id=benchmark_id, pk__lte=last_id).order_by("-pk").values_list("pk", "created_at").first()
    )


def _load_known_hashes(key, after_id):
    rows = KnownHash.objects.filter(pk__gt=after_id, phash__isnull=False).order_by("pk").values_list("pk", "phash")
    return [r[0] for r in rows], [r[1] for r in rows]


def _known_rows_fingerprint(key, last_id):
    return (
        KnownHash.objects.filter(pk__lte=last_id, phash__isnull=False)
        .order_by("-pk")
        .values_list("pk", "known_set_id", "known_set__created_at")
        .first()
    )


# Per benchmark: (pHash index, dHash index) over the same rows, loaded and checked together.
image_indexes = IndexRegistry(_load_image_hashes, _image_rows_fingerprint, columns=2)
HASH_COLUMNS = ("phash", "dhash")  # the order of image_indexes' indexes


known_index = IndexRegistry(_load_known_hashes, _known_rows_fingerprint)

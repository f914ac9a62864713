"""Contamination: known image sets (SFT data, prior benchmarks) and matching images against them."""

import io
from pathlib import Path
from typing import NamedTuple

from django.db import transaction
from django.utils.translation import gettext

from benchforge.bulk import bulk_insert, update_rows
from benchforge.errors import DomainError
from benchforge_harness.tabular import CSV, LINES, TSV, FileProblem, Record, TableReader, format_for

from ..imaging import ImageLimits, ImageRejected, analyse_image, hamming, hex_to_hash
from ..models import Benchmark, ContaminationMatch, Image, KnownHash, KnownImageSet
from ..neardup import HashIndex
from .indexes import known_index


def _contamination_radius(benchmark: Benchmark) -> int:
    return benchmark.near_dup_threshold - 1


def flag_contamination(image: Image) -> list[ContaminationMatch]:
    best: dict[int, tuple[KnownHash, str, int]] = {}
    for known in KnownHash.objects.filter(md5=image.md5):
        best[known.known_set_id] = (known, ContaminationMatch.Kind.MD5, 0)
    radius = _contamination_radius(image.benchmark)
    if radius >= 0:
        ids, dists = known_index.get("phash").query(image.phash, radius)
        distance_of = dict(zip(ids.tolist(), dists.tolist()))
        for known in KnownHash.objects.filter(pk__in=distance_of):
            d = hamming(known.phash, image.phash)  # recomputed: the index may be stale
            if d <= radius and (known.known_set_id not in best or best[known.known_set_id][2] > d):
                best[known.known_set_id] = (known, ContaminationMatch.Kind.PHASH, d)
    created = [
        ContaminationMatch.objects.get_or_create(
            image=image, known_set_id=set_id, defaults={"known_hash": known, "kind": kind, "distance": d}
        )[0]
        for set_id, (known, kind, d) in best.items()
    ]
    if created and not image.contaminated:
        image.contaminated = True
        image.save(update_fields=["contaminated"])
    return created


def flag_contamination_of_batch(benchmark: Benchmark, images: list[Image]) -> None:
    """flag_contamination for new images stored together (saved), with one lookup of each kind."""
    if not images:
        return
    by_md5: dict[str, list[KnownHash]] = {}
    for known in KnownHash.objects.filter(md5__in={i.md5 for i in images}).order_by("pk"):
        by_md5.setdefault(known.md5, []).append(known)
    radius = _contamination_radius(benchmark)
    near: dict[int, list[int]] = {}
    if radius >= 0:
        found = known_index.get("phash").query_many([image.phash for image in images], radius)
        near = {image.pk: ids.tolist() for image, (ids, _) in zip(images, found)}
    wanted = {pk for found in near.values() for pk in found}
    known_by_pk = {k.pk: k for k in KnownHash.objects.filter(pk__in=wanted).order_by("pk")} if wanted else {}
    matches, flagged = [], []
    for image in images:
        best: dict[int, tuple[KnownHash, str, int]] = {}
        for known in by_md5.get(image.md5, []):
            best[known.known_set_id] = (known, ContaminationMatch.Kind.MD5, 0)
        for pk in sorted(near.get(image.pk, [])):
            known = known_by_pk.get(pk)
            if known is None:
                continue
            d = hamming(known.phash, image.phash)  # recomputed: the index may be stale
            if d <= radius and (known.known_set_id not in best or best[known.known_set_id][2] > d):
                best[known.known_set_id] = (known, ContaminationMatch.Kind.PHASH, d)
        matches += [
            ContaminationMatch(image=image, known_set_id=set_id, known_hash=known, kind=kind, distance=d)
            for set_id, (known, kind, d) in best.items()
        ]
        if best:
            image.contaminated = True
            flagged.append(image)
    bulk_insert(matches)
    update_rows(Image, ("contaminated",), [(image.pk, True) for image in flagged])


_HEX = set("0123456789abcdef")


def parse_hash_list(data: bytes, filename: str) -> list[dict]:
    """Rows {md5, phash, label} from a CSV (md5 and/or phash columns), a JSON Lines file or a JSON
    list of such objects. All or nothing: any bad row refuses the whole file, naming the lines."""
    fmt = format_for(filename, default=CSV)
    fmt = CSV if fmt in (TSV, LINES) else fmt
    reader = TableReader(io.BytesIO(data), name=filename or "The hash list", format=fmt, fold_header=True)
    records: list[tuple[Record, dict]] = []
    try:
        for record in reader:
            if fmt == CSV and not {"md5", "phash"} & set(reader.header or []):
                raise DomainError(gettext("The CSV needs a header row with an 'md5' and/or a 'phash' column."))
            if not record.problem and not record.blank:  # a row of empty cells carries no hash
                records.append((record, record.value))
        if fmt == CSV and not {"md5", "phash"} & set(reader.header or []):
            raise DomainError(gettext("The CSV needs a header row with an 'md5' and/or a 'phash' column."))
        rows = _hash_rows(reader, records)
        reader.refuse_if_problems()
    except FileProblem as exc:
        raise DomainError(exc.message) from None
    if not rows:
        raise DomainError(gettext("The hash list has no rows."))
    return rows


def _hash_rows(reader: TableReader, records) -> list[dict]:
    rows = []
    for record, obj in records:
        md5 = str(obj.get("md5") or "").strip().lower()
        phash_text = str(obj.get("phash") or "").strip()
        label = str(obj.get("label") or obj.get("name") or obj.get("id") or obj.get("file") or "")[:500]
        if md5 and (len(md5) != 32 or not set(md5) <= _HEX):
            reader.problem(record, "md5 must be 32 hexadecimal digits")
            continue
        try:
            phash = hex_to_hash(phash_text) if phash_text else None
        except ValueError:
            reader.problem(record, "phash must be 16 hexadecimal digits (as imagehash prints it)")
            continue
        if not md5 and phash is None:
            reader.problem(record, "neither md5 nor phash")
            continue
        rows.append({"md5": md5, "phash": phash, "label": label})
    return rows


def hash_image_folder(root: Path) -> tuple[list[dict], list[str]]:
    """Hash every image under a folder for a known set; returns rows and per-file problems."""
    rows, problems = [], []
    for path in sorted(p for p in Path(root).rglob("*") if p.is_file()):
        try:
            result = analyse_image(path.read_bytes(), limits=ImageLimits(min_short_edge=0))
        except ImageRejected as exc:
            problems.append(f"{path.relative_to(root)}: {exc.message}")
            continue
        rows.append({"md5": result.md5, "phash": result.phash, "label": path.relative_to(root).as_posix()})
    return rows, problems


class KnownSetImport(NamedTuple):
    known_set: KnownImageSet
    hashes_added: int
    images_flagged: int


@transaction.atomic
def import_known_set(
    *, name: str, rows: list[dict], kind: str = KnownImageSet.Kind.OTHER, description: str = "", user=None
) -> KnownSetImport:
    """Create (or extend) a known image set, then flag existing images that match it.

    Hashes the set already holds are not added again, so re-importing a list changes nothing."""
    if not name.strip():
        raise DomainError(gettext("A known image set needs a name."))
    if kind not in KnownImageSet.Kind.values:
        raise DomainError(gettext("Unknown set kind '%(kind)s'.") % {"kind": kind})
    known_set, _ = KnownImageSet.objects.get_or_create(
        name=name.strip(), defaults={"kind": kind, "description": description, "created_by": user}
    )
    present = set(KnownHash.objects.filter(known_set=known_set).values_list("md5", "phash"))
    fresh = []
    for row in rows:
        key = (row["md5"] or "", row["phash"])
        if key not in present:
            present.add(key)
            fresh.append(KnownHash(known_set=known_set, md5=key[0], phash=key[1], label=row.get("label", "")))
    bulk_insert(fresh)
    return KnownSetImport(known_set, len(fresh), rescan_contamination(known_set))


def rescan_contamination(known_set: KnownImageSet) -> int:
    """Match every stored image against one known set; returns how many images got a new match."""
    md5_hits = dict(KnownHash.objects.filter(known_set=known_set).exclude(md5="").values_list("md5", "pk"))
    known = list(KnownHash.objects.filter(known_set=known_set, phash__isnull=False).values_list("pk", "phash"))
    index = HashIndex()
    if known:
        index.add_many([k for k, _ in known], [h for _, h in known])
    thresholds = dict(Benchmark.objects.values_list("pk", "near_dup_threshold"))
    new_matches = []
    already = set(ContaminationMatch.objects.filter(known_set=known_set).values_list("image_id", flat=True))
    for image_id, benchmark_id, md5, phash in Image.objects.values_list("pk", "benchmark_id", "md5", "phash").iterator(
        chunk_size=5000
    ):
        if image_id in already:
            continue
        if md5 in md5_hits:
            new_matches.append(
                ContaminationMatch(image_id=image_id, known_set=known_set, known_hash_id=md5_hits[md5], kind="md5")
            )
            continue
        radius = thresholds[benchmark_id] - 1
        if radius >= 0 and len(index):
            ids, dists = index.query(phash, radius)
            if len(ids):
                new_matches.append(
                    ContaminationMatch(
                        image_id=image_id, known_set=known_set, known_hash_id=int(ids[0]), kind="phash", distance=int(dists[0])
                    )
                )
    bulk_insert(new_matches, ignore_conflicts=True)
    Image.objects.filter(pk__in=[m.image_id for m in new_matches]).update(contaminated=True)
    return len(new_matches)


def delete_known_set(known_set: KnownImageSet) -> None:
    """Remove a set; images flagged only by it lose the contaminated flag."""
    with transaction.atomic():
        image_ids = list(known_set.matches.values_list("image_id", flat=True))
        known_set.delete()
        still = set(ContaminationMatch.objects.filter(image_id__in=image_ids).values_list("image_id", flat=True))
        Image.objects.filter(pk__in=set(image_ids) - still).update(contaminated=False)

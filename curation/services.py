"""Writes for the curation app: taxonomy (benchmarks, presets, tasks, members) and images
(ingest, duplicates, contamination, screening)."""

import csv
import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NamedTuple
from urllib.parse import urlsplit

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.utils import timezone
from django.utils.text import slugify

from benchforge import outbound
from benchforge.errors import DomainError
from jobs import services as jobs
from jobs.staging import open_staged, stage_upload

from .imaging import ImageLimits, ImageRejected, analyse_image, hamming, hex_to_hash
from .models import Benchmark, Category, ContaminationMatch, Image, KnownHash, KnownImageSet, Task
from .neardup import HashIndex, IndexRegistry
from .presets import PRESETS, CategorySpec


def unique_task_slug(name: str) -> str:
    return slugify(name.replace("/", " ").replace("&", "and"))[:80] or "task"


@transaction.atomic
def create_benchmark(*, name: str, slug: str = "", description: str = "", user=None, preset: str = "") -> Benchmark:
    slug = slug or slugify(name)[:80]
    if not slug:
        raise DomainError("A benchmark needs a name made of letters or digits.")
    if Benchmark.objects.filter(slug=slug).exists():
        raise DomainError(f"A benchmark with the slug '{slug}' already exists; choose another name or slug.", code="duplicate")
    benchmark = Benchmark.objects.create(name=name, slug=slug, description=description, created_by=user)
    if user is not None:
        benchmark.members.add(user)
    if preset:
        load_preset(preset, benchmark=benchmark)
    return benchmark


@transaction.atomic
def load_preset(key: str, *, benchmark: Benchmark | None = None, slug: str = "", user=None) -> Benchmark:
    """Create or complete a benchmark's taxonomy from a preset.

    Re-running is safe: existing categories and tasks are matched by name/slug and only
    missing ones are added, so researchers' edits (quotas, guidelines) are never overwritten.
    """
    preset = PRESETS.get(key)
    if preset is None:
        raise DomainError(f"Unknown preset '{key}'. Available presets: {', '.join(sorted(PRESETS))}.", code="unknown_preset")
    if benchmark is None:
        benchmark, created = Benchmark.objects.get_or_create(
            slug=slug or preset.key,
            defaults={"name": preset.name, "description": preset.description, "created_by": user},
        )
        if user is not None:
            benchmark.members.add(user)
    if not benchmark.preset:
        benchmark.preset = preset.key
        benchmark.save(update_fields=["preset"])

    def add(spec: CategorySpec, parent: Category | None, order: int):
        category, _ = Category.objects.get_or_create(
            benchmark=benchmark, name=spec.name,
            defaults={"parent": parent, "description": spec.description, "order": order},
        )
        for i, task in enumerate(spec.tasks):
            Task.objects.get_or_create(
                benchmark=benchmark, slug=unique_task_slug(task.name),
                defaults={
                    "category": category, "name": task.name, "description": task.description,
                    "collection_keywords": list(task.keywords), "guideline": task.guideline,
                    "judge_rules": task.judge_rules, "quota": task.quota or preset.default_quota, "order": i,
                },
            )
        for j, child in enumerate(spec.children):
            add(child, category, j)

    for order, spec in enumerate(preset.categories):
        add(spec, None, order)
    return benchmark


def update_task(task: Task, **fields) -> Task:
    allowed = {"name", "description", "collection_keywords", "guideline", "judge_rules", "quota"}
    unknown = set(fields) - allowed
    if unknown:
        raise DomainError(f"These task fields cannot be edited: {', '.join(sorted(unknown))}.")
    for key, value in fields.items():
        setattr(task, key, value)
    task.full_clean()
    task.save()
    return task


def set_members(benchmark: Benchmark, users) -> None:
    benchmark.members.set(users)


# =========================================================================================
# Images: ingest, exact and near duplicates, contamination, screening.
# Hash values are signed 64-bit ints (see curation.imaging); files are content-addressed.
# =========================================================================================

THUMBNAIL_PX = 256
_JUNK_NAMES = ("__MACOSX/", ".DS_Store", "Thumbs.db")


def image_limits(benchmark: Benchmark) -> ImageLimits:
    return ImageLimits(max_bytes=settings.BENCHFORGE_MAX_UPLOAD_BYTES, min_short_edge=benchmark.min_short_edge)


def _content_name(folder: str, sha256: str, ext: str) -> str:
    return f"{folder}/{sha256[:2]}/{sha256[2:4]}/{sha256}.{ext}"


def _store(name: str, data: bytes) -> bool:
    """Write content-addressed bytes once; True when this call created the file."""
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


# ---- near-duplicate and contamination indexes (one per process, refreshed from the DB) ----

def _load_image_hashes(key, after_id):
    benchmark_id, field = key
    rows = Image.objects.filter(benchmark_id=benchmark_id, pk__gt=after_id).order_by("pk").values_list("pk", field)
    return [r[0] for r in rows], [r[1] for r in rows]


def _image_rows_fingerprint(key, last_id):
    benchmark_id, _field = key
    return tuple(Image.objects.filter(benchmark_id=benchmark_id, pk__lte=last_id)
                 .aggregate(n=Count("pk"), newest=Max("created_at")).values())


def _load_known_hashes(key, after_id):
    rows = KnownHash.objects.filter(pk__gt=after_id, phash__isnull=False).order_by("pk").values_list("pk", "phash")
    return [r[0] for r in rows], [r[1] for r in rows]


def _known_rows_fingerprint(key, last_id):
    return tuple(KnownHash.objects.filter(pk__lte=last_id, phash__isnull=False)
                 .aggregate(n=Count("pk"), newest=Max("known_set__created_at")).values())


image_indexes = IndexRegistry(_load_image_hashes, _image_rows_fingerprint)
known_index = IndexRegistry(_load_known_hashes, _known_rows_fingerprint)


def find_near_duplicates(image: Image, radius: int | None = None) -> list[tuple[Image, int, int]]:
    """Other images of the benchmark whose pHash or dHash is within `radius` bits
    (default: fewer bits than the benchmark threshold), as (image, phash_d, dhash_d), nearest first."""
    if radius is None:
        radius = image.benchmark.near_dup_threshold - 1
    if radius < 0:
        return []
    candidate_ids: set[int] = set()
    for field in ("phash", "dhash"):
        ids, _ = image_indexes.get((image.benchmark_id, field)).query(getattr(image, field), radius, exclude=image.pk)
        candidate_ids.update(ids.tolist())
    # Re-read from the database: the index may hold rows deleted elsewhere.
    found = []
    for other in Image.objects.filter(benchmark_id=image.benchmark_id, pk__in=candidate_ids):
        pd, dd = hamming(image.phash, other.phash), hamming(image.dhash, other.dhash)
        if min(pd, dd) <= radius:
            found.append((other, pd, dd))
    found.sort(key=lambda t: (t[1], t[2], t[0].pk))
    return found


def _flag_near_duplicate(image: Image) -> None:
    matches = find_near_duplicates(image)
    if matches:
        other, phash_distance, _ = matches[0]
        image.near_duplicate_of = other
        image.near_duplicate_distance = phash_distance
        image.save(update_fields=["near_duplicate_of", "near_duplicate_distance"])


def _contamination_radius(benchmark: Benchmark) -> int:
    return benchmark.near_dup_threshold - 1


def _flag_contamination(image: Image) -> list[ContaminationMatch]:
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


# ---- ingest one image ----------------------------------------------------------------------

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
            notes.append(f"near duplicate of #{self.image.near_duplicate_of_id} ({self.image.near_duplicate_distance} bits)")
        if self.image.contaminated:
            sets = ", ".join(m.known_set.name for m in self.image.contamination_matches.select_related("known_set"))
            notes.append(f"matches known set(s): {sets}")
        return "added" + (": " + "; ".join(notes) if notes else "")

    def as_dict(self) -> dict:
        return {
            "image_id": self.image.pk, "created": self.created, "message": self.message,
            "duplicate_of": None if self.created else self.image.pk,
            "near_duplicate_of": self.image.near_duplicate_of_id, "contaminated": self.image.contaminated,
            "low_resolution": self.image.low_resolution,
        }


def _check_tasks(benchmark: Benchmark, tasks) -> list[Task]:
    tasks = list(tasks)
    foreign = [t.name for t in tasks if t.benchmark_id != benchmark.pk]
    if foreign:
        raise DomainError(f"Task(s) {', '.join(foreign)} belong to another benchmark.")
    return tasks


def ingest_image(
    benchmark: Benchmark, data: bytes, *, original_name: str = "", source: str = "", license: str = "",
    collected_by=None, collected_at=None, tasks=(), job=None,
) -> IngestOutcome:
    """Validate, hash and store one image; flag low resolution, near duplicates, contamination.

    Raises ImageRejected (bad file) or DomainError. The file is written before the row, in one
    transaction, and removed again if anything fails, so a failure leaves nothing behind.
    """
    tasks = _check_tasks(benchmark, tasks)
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
                benchmark=benchmark, file=file_name, thumbnail=thumb_name, original_name=original_name[:255],
                sha256=analysis.sha256, md5=analysis.md5, phash=analysis.phash, dhash=analysis.dhash,
                width=analysis.width, height=analysis.height, format=analysis.format, file_size=len(data),
                animated=analysis.animated, low_resolution=analysis.low_resolution,
                source=source[:1000], license=license[:200], collected_by=collected_by,
                collected_at=collected_at or timezone.now(), job=job,
            )
            image.tasks.set(tasks)
            _flag_near_duplicate(image)
            _flag_contamination(image)
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


def _ingest_unit(run, key: str, func) -> None:
    """Run one unit of an import and record what happened to it. The image row and the unit's
    entry commit together, so a killed worker leaves neither and the unit is redone on resume."""
    try:
        with transaction.atomic():
            outcome = func()
            run.record(key, "ok" if outcome.created else "skipped", outcome.message, outcome.as_dict())
    except (ImageRejected, DomainError) as exc:
        run.record(key, "error", exc.message)


# ---- bulk imports as resumable jobs ----------------------------------------------------------

IMPORT_KINDS = ("ingest_zip", "ingest_folder", "ingest_url_list")


def create_import_job(kind: str, benchmark: Benchmark, *, user=None, path: str = "", staged: str = "", source: str = "",
                      license: str = "", tasks=()):
    """A queued import job reading a staged upload (`staged`, a storage name) or a server path."""
    if kind not in IMPORT_KINDS:
        raise DomainError(f"Unknown import kind '{kind}'.")
    if bool(path) == bool(staged):
        raise DomainError("An import reads either an uploaded file or a path on the server.")
    tasks = _check_tasks(benchmark, tasks)
    params = {"source": source, "license": license, "task_ids": [t.pk for t in tasks]}
    params.update({"staged": staged} if staged else {"path": str(path)})
    return jobs.create_job(kind, user=user, benchmark=benchmark, params=params)


def _job_context(job):
    params = job.params
    tasks = list(Task.objects.filter(pk__in=params.get("task_ids", []), benchmark=job.benchmark))
    common = {"source": params.get("source", ""), "license": params.get("license", ""),
              "collected_by": job.created_by, "job": job}
    return tasks, common


def _summary(run) -> dict:
    """Counts over every run of the job (a resumed import reports all it did, not its last run)."""
    counts = run.outcome_counts()
    return {"added": counts.get("ok", 0), "skipped": counts.get("skipped", 0), "errors": counts.get("error", 0)}


def _open_source(job):
    """The job's input as a binary file: its staged upload, or the server path it names."""
    if job.params.get("staged"):
        return open_staged(job.params["staged"])
    return open(job.params["path"], "rb")


def _task_from_folder(name: str, by_slug: dict[str, Task]) -> list[Task]:
    parts = PurePosixPath(name).parts
    return [by_slug[parts[0]]] if len(parts) > 1 and parts[0] in by_slug else []


def _unsafe_member_name(name: str) -> bool:
    path = PurePosixPath(name.replace("\\", "/"))
    return path.is_absolute() or ".." in path.parts or (len(name) > 1 and name[1] == ":")


def run_zip_import(run):
    job = run.job
    tasks, common = _job_context(job)
    done = run.done_keys()
    by_slug = {t.slug: t for t in job.benchmark.tasks.all()}
    max_bytes = settings.BENCHFORGE_MAX_UPLOAD_BYTES
    try:
        source = _open_source(job)
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DomainError(f"The upload is not a readable zip archive ({exc}).") from None
    with source, archive:
        members = _zip_members(archive)
        check_zip_members(members)
        run.set_total(len(members))
        seen: dict[str, int] = {}
        for member in members:
            # Keys must be stable across runs (resume) and unique even for repeated names.
            seen[member.filename] = seen.get(member.filename, 0) + 1
            key = member.filename if seen[member.filename] == 1 else f"{member.filename} (copy {seen[member.filename]})"
            if key in done:
                continue

            def ingest(member=member):
                if _unsafe_member_name(member.filename):
                    raise DomainError("Unsafe name inside the zip (absolute path or '..'); entry ignored.")
                if member.file_size > max_bytes:
                    raise DomainError(f"Entry is {member.file_size / 1e6:.1f} MB uncompressed; the limit is {max_bytes / 1e6:.0f} MB.")
                if member.flag_bits & 0x1:
                    raise DomainError("Entry is encrypted; re-create the zip without a password.")
                try:
                    with archive.open(member) as fh:
                        data = fh.read(max_bytes + 1)
                except (zipfile.BadZipFile, OSError, EOFError) as exc:
                    raise DomainError(f"Entry cannot be extracted ({exc}).") from None
                return ingest_image(job.benchmark, data, original_name=PurePosixPath(member.filename).name,
                                    tasks=tasks + _task_from_folder(member.filename, by_slug), **common)

            _ingest_unit(run, key, ingest)
    return _summary(run)


def run_folder_import(run):
    job = run.job
    tasks, common = _job_context(job)
    done = run.done_keys()
    by_slug = {t.slug: t for t in job.benchmark.tasks.all()}
    root = Path(job.params["path"])
    if not root.is_dir():
        raise DomainError(f"{root} is not a folder on this server.")
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and p.name not in _JUNK_NAMES)
    run.set_total(len(files))
    for path in files:
        key = path.relative_to(root).as_posix()
        if key in done:
            continue

        def ingest(path=path, key=key):
            if path.stat().st_size > settings.BENCHFORGE_MAX_UPLOAD_BYTES:
                raise DomainError(f"File is larger than {settings.BENCHFORGE_MAX_UPLOAD_BYTES / 1e6:.0f} MB.")
            return ingest_image(job.benchmark, path.read_bytes(), original_name=path.name,
                                tasks=tasks + _task_from_folder(key, by_slug), **common)

        _ingest_unit(run, key, ingest)
    return _summary(run)


# ---- URL lists -------------------------------------------------------------------------------

@dataclass
class UrlRow:
    line: int
    url: str
    tasks: str = ""
    source: str = ""
    license: str = ""


def parse_url_list(text: str) -> list[UrlRow]:
    """CSV with a `url` column (optional task, source, license) or plain text, one URL a line."""
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")), "")
    if "url" in [c.strip().lower() for c in first.split(",")]:
        reader = csv.DictReader(io.StringIO(text))
        fields = {(f or "").strip().lower(): f for f in reader.fieldnames or []}
        rows = []
        for record in reader:
            get = lambda name: (record.get(fields.get(name, ""), "") or "").strip()  # noqa: E731
            if get("url"):
                rows.append(UrlRow(reader.line_num, get("url"), get("task"), get("source"), get("license")))
        return rows
    return [UrlRow(i, ln.strip()) for i, ln in enumerate(lines, 1) if ln.strip() and not ln.lstrip().startswith("#")]


def _resolve_tasks(benchmark: Benchmark, spec: str, by_key: dict[str, Task]) -> list[Task]:
    tasks = []
    for name in (p.strip() for p in spec.replace("|", ";").split(";") if p.strip()):
        task = by_key.get(name.lower())
        if task is None:
            raise DomainError(f"Unknown task '{name}' in this benchmark (use a task slug or name).")
        tasks.append(task)
    return tasks


def run_url_list_import(run):
    job = run.job
    tasks, common = _job_context(job)
    done = run.done_keys()
    try:
        with _open_source(job) as handle:
            text = handle.read().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DomainError(f"The URL list cannot be read as UTF-8 text ({exc}).") from None
    rows = parse_url_list(text)
    run.set_total(len(rows))
    by_key = {}
    for task in job.benchmark.tasks.all():
        by_key[task.name.lower()] = task
        by_key[task.slug.lower()] = task
    max_bytes = settings.BENCHFORGE_MAX_UPLOAD_BYTES
    with outbound.download_client() as client:
        for row in rows:
            key = f"line {row.line}: {row.url}"
            if key in done:
                continue

            def ingest(row=row):
                row_tasks = _resolve_tasks(job.benchmark, row.tasks, by_key)
                data = outbound.download(client, row.url, max_bytes=max_bytes)
                options = {**common, "source": row.source or common["source"] or row.url,
                           "license": row.license or common["license"]}
                return ingest_image(job.benchmark, data, original_name=PurePosixPath(urlsplit(row.url).path).name,
                                    tasks=tasks + [t for t in row_tasks if t not in tasks], **options)

            _ingest_unit(run, key, ingest)
    return _summary(run)


# ---- screening -------------------------------------------------------------------------------

SCREEN_ACTIONS = ("accept", "reject", "reset")


def screen_images(benchmark: Benchmark, image_ids, *, action: str, user, reason: str = "", note: str = "") -> int:
    """Accept, reject (with a protocol reason) or reset images; returns how many changed."""
    if action not in SCREEN_ACTIONS:
        raise DomainError(f"Unknown action '{action}'; use one of {', '.join(SCREEN_ACTIONS)}.")
    ids = {int(i) for i in image_ids}
    if not ids:
        raise DomainError("Select at least one image.")
    images = Image.objects.filter(benchmark=benchmark, pk__in=ids)
    if images.count() != len(ids):
        raise DomainError("Some selected images do not exist in this benchmark; reload the page.", code="not_found")
    note = note.strip()
    if action == "reject":
        if reason not in Image.RejectReason.values:
            raise DomainError("Choose a rejection reason: " + "; ".join(f"{v} ({label})" for v, label in Image.RejectReason.choices) + ".")
        if reason == Image.RejectReason.OTHER and not note:
            raise DomainError("Rejecting for 'other' needs a note saying why.")
        fields = {"status": Image.Status.REJECTED, "reject_reason": reason, "reject_note": note}
    elif action == "accept":
        fields = {"status": Image.Status.ACCEPTED, "reject_reason": "", "reject_note": ""}
    else:
        fields = {"status": Image.Status.PENDING, "reject_reason": "", "reject_note": ""}
    return images.update(screened_by=user, screened_at=timezone.now(), **fields)


def resolve_near_duplicate(image: Image, *, keep: bool, user) -> Image:
    """After a person compared the pair: keep both, or drop this one as similar content."""
    if image.near_duplicate_of_id is None:
        raise DomainError(f"Image #{image.pk} is not flagged as a near duplicate.")
    if keep:
        image.near_duplicate_resolved = True
        image.save(update_fields=["near_duplicate_resolved"])
    else:
        with transaction.atomic():
            screen_images(image.benchmark, [image.pk], action="reject", user=user,
                          reason=Image.RejectReason.SIMILAR, note=f"near duplicate of image #{image.near_duplicate_of_id}")
            Image.objects.filter(pk=image.pk).update(near_duplicate_resolved=True)
    image.refresh_from_db()
    return image


def set_near_dup_threshold(benchmark: Benchmark, threshold: int) -> Benchmark:
    if not 0 <= threshold <= 32:
        raise DomainError("The near-duplicate threshold must be between 0 (off) and 32 bits.")
    benchmark.near_dup_threshold = threshold
    benchmark.save(update_fields=["near_dup_threshold"])
    return benchmark


# ---- contamination: known image sets ---------------------------------------------------------

_HEX = set("0123456789abcdef")


def parse_hash_list(data: bytes, filename: str) -> list[dict]:
    """Rows {md5, phash, label} from a CSV (md5 and/or phash columns) or JSONL hash list.

    Refuses the whole file, listing the bad lines, if any row is invalid (nothing half-imported).
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DomainError("The hash list must be UTF-8 text (CSV or JSONL).") from None
    records: list[tuple[int, dict]] = []
    if filename.lower().endswith((".jsonl", ".ndjson", ".json")):
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                raise DomainError(f"Line {n} is not valid JSON.") from None
            if not isinstance(obj, dict):
                raise DomainError(f"Line {n} must be a JSON object with md5 and/or phash.")
            records.append((n, obj))
    else:
        reader = csv.DictReader(io.StringIO(text))
        names = [(f or "").strip().lower() for f in reader.fieldnames or []]
        if "md5" not in names and "phash" not in names:
            raise DomainError("The CSV needs a header row with an 'md5' and/or a 'phash' column.")
        for obj in reader:
            records.append((reader.line_num, {(k or "").strip().lower(): v for k, v in obj.items()}))
    rows, problems = [], []
    for n, obj in records:
        md5 = str(obj.get("md5") or "").strip().lower()
        phash_text = str(obj.get("phash") or "").strip()
        label = str(obj.get("label") or obj.get("name") or obj.get("id") or obj.get("file") or "")[:500]
        if md5 and (len(md5) != 32 or not set(md5) <= _HEX):
            problems.append(f"line {n}: md5 must be 32 hexadecimal digits")
            continue
        try:
            phash = hex_to_hash(phash_text) if phash_text else None
        except ValueError:
            problems.append(f"line {n}: phash must be 16 hexadecimal digits (as imagehash prints it)")
            continue
        if not md5 and phash is None:
            problems.append(f"line {n}: neither md5 nor phash")
            continue
        rows.append({"md5": md5, "phash": phash, "label": label})
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise DomainError("The hash list was not imported: " + "; ".join(problems[:5]) + more + ".")
    if not rows:
        raise DomainError("The hash list has no rows.")
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
def import_known_set(*, name: str, rows: list[dict], kind: str = KnownImageSet.Kind.OTHER,
                     description: str = "", user=None) -> KnownSetImport:
    """Create (or extend) a known image set, then flag existing images that match it.

    Hashes the set already holds are not added again, so re-importing a list changes nothing."""
    if not name.strip():
        raise DomainError("A known image set needs a name.")
    if kind not in KnownImageSet.Kind.values:
        raise DomainError(f"Unknown set kind '{kind}'.")
    known_set, _ = KnownImageSet.objects.get_or_create(
        name=name.strip(), defaults={"kind": kind, "description": description, "created_by": user})
    present = set(KnownHash.objects.filter(known_set=known_set).values_list("md5", "phash"))
    fresh = []
    for row in rows:
        key = (row["md5"] or "", row["phash"])
        if key not in present:
            present.add(key)
            fresh.append(KnownHash(known_set=known_set, md5=key[0], phash=key[1], label=row.get("label", "")))
    KnownHash.objects.bulk_create(fresh, batch_size=2000)
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
    for image_id, benchmark_id, md5, phash in Image.objects.values_list("pk", "benchmark_id", "md5", "phash").iterator(chunk_size=5000):
        if image_id in already:
            continue
        if md5 in md5_hits:
            new_matches.append(ContaminationMatch(image_id=image_id, known_set=known_set, known_hash_id=md5_hits[md5], kind="md5"))
            continue
        radius = thresholds[benchmark_id] - 1
        if radius >= 0 and len(index):
            ids, dists = index.query(phash, radius)
            if len(ids):
                new_matches.append(ContaminationMatch(image_id=image_id, known_set=known_set, known_hash_id=int(ids[0]),
                                                      kind="phash", distance=int(dists[0])))
    ContaminationMatch.objects.bulk_create(new_matches, batch_size=2000, ignore_conflicts=True)
    Image.objects.filter(pk__in=[m.image_id for m in new_matches]).update(contaminated=True)
    return len(new_matches)


def delete_known_set(known_set: KnownImageSet) -> None:
    """Remove a set; images flagged only by it lose the contaminated flag."""
    with transaction.atomic():
        image_ids = list(known_set.matches.values_list("image_id", flat=True))
        known_set.delete()
        still = set(ContaminationMatch.objects.filter(image_id__in=image_ids).values_list("image_id", flat=True))
        Image.objects.filter(pk__in=set(image_ids) - still).update(contaminated=False)


def tasks_by_slugs(benchmark: Benchmark, slugs) -> list[Task]:
    slugs = [s for s in slugs if s]
    tasks = list(benchmark.tasks.filter(slug__in=slugs))
    missing = set(slugs) - {t.slug for t in tasks}
    if missing:
        raise DomainError(f"Unknown task(s) in this benchmark: {', '.join(sorted(missing))}.", code="unknown_task")
    return tasks


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
            outcome = ingest_image(benchmark, upload.read(), original_name=name, source=source, license=license,
                                   collected_by=user, tasks=tasks)
        except (ImageRejected, DomainError) as exc:
            results.append({"name": name, "outcome": "error", "message": exc.message})
            continue
        results.append({"name": name, "outcome": "added" if outcome.created else "duplicate", **outcome.as_dict()})
    return results


def check_zip_members(members: list[zipfile.ZipInfo]) -> None:
    """Refuse an archive with more entries, or more unpacked bytes, than an import may hold."""
    limit = settings.BENCHFORGE_MAX_ARCHIVE_ENTRIES
    if len(members) > limit:
        raise DomainError(f"The zip holds {len(members):,} files; an import takes at most {limit:,}. Split it into several zips.")
    unpacked, cap = sum(m.file_size for m in members), settings.BENCHFORGE_MAX_ARCHIVE_UNPACKED_BYTES
    if unpacked > cap:
        raise DomainError(f"The zip unpacks to {unpacked / 1e9:.1f} GB; an import takes at most {cap / 1e9:.1f} GB. "
                          "Split it into several zips.")


def _zip_members(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    return [m for m in archive.infolist() if not m.is_dir() and not any(j in m.filename for j in _JUNK_NAMES)]


def _check_import_file(kind: str, file) -> None:
    """Refuse an upload that cannot be what the user said it is, before any job starts."""
    if kind == "zip":
        if not zipfile.is_zipfile(file):
            raise DomainError("The file is not a zip archive; choose a .zip of images (or pick 'URL list').")
        file.seek(0)
        try:
            with zipfile.ZipFile(file) as archive:
                check_zip_members(_zip_members(archive))
        except zipfile.BadZipFile as exc:
            raise DomainError(f"The zip archive is damaged ({exc}).") from None
    else:
        try:
            text = file.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise DomainError("The URL list must be UTF-8 text: one URL per line, or a CSV with a url column.") from None
        if not parse_url_list(text):
            raise DomainError("The URL list has no URLs: one URL per line, or a CSV with a url column.")
    file.seek(0)


def start_upload_import(benchmark: Benchmark, *, user, kind: str, file, tasks=(), source: str = "", license: str = ""):
    """Stage an uploaded zip or URL list and start its import job."""
    if kind not in ("zip", "url_list"):
        raise DomainError("Choose what the file is: a zip of images or a URL list.")
    tasks = _check_tasks(benchmark, tasks)
    _check_import_file(kind, file)
    staged = stage_upload(file, ".zip" if kind == "zip" else ".txt")
    job = create_import_job("ingest_zip" if kind == "zip" else "ingest_url_list", benchmark, user=user, staged=staged,
                            source=source, license=license, tasks=tasks)
    return jobs.enqueue(job)


def start_preset_load(benchmark: Benchmark, preset: str, *, user):
    """Load a preset into a benchmark as a job (the page does not wait for it)."""
    if preset not in PRESETS:
        raise DomainError(f"Unknown preset '{preset}'. Available presets: {', '.join(sorted(PRESETS))}.", code="unknown_preset")
    return jobs.start_job("load_preset", user=user, benchmark=benchmark, total=1, params={"preset": preset})


def run_preset_load(run) -> dict:
    preset = run.params["preset"]
    with run.unit(preset) as unit:
        load_preset(preset, benchmark=run.benchmark)
        unit.ok(f"taxonomy has {run.benchmark.tasks.count()} tasks")
    return {"tasks": run.benchmark.tasks.count()}

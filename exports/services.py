"""Releases: define one, build it (a job: snapshot the items, images and taxonomy, then write the
bundles), freeze it for good, compare two.

A build reads the benchmark once, into the release's own rows (ReleaseItem, ReleaseImage, the
taxonomy); every file is then written from those rows alone, so building the same release twice
gives byte-identical archives, and a frozen release never depends on items that change later.

Under simultaneous requests (docs/architecture.md, "State changes") a release's row is the lock
that builds and freezes take turns on: one build job at a time (a second press joins it), a frozen
release is never built again, and each unit of a build writes only while its job is still the
release's job, so the release always names the job that built the files it has.
"""

import base64
import csv
import hashlib
import json
import random
import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

import benchforge_harness
from annotation.contract import MMBENCH_COLUMNS, image_name, mmbench_row_of_release, release_row
from annotation.models import Item
from annotation.selectors import with_payload_data
from annotation.services import change_status_many, lock_items, withhold_in_app
from annotation.withholding import DEFAULT_PRIVATE, fields_withheld, withhold_row
from annotation.workflow import ACCEPTED, QC_PASSED, RELEASED, REWRITTEN, TRANSITIONS
from benchforge import permissions
from benchforge.concurrency import create_unique, lock, lock_or_none, retried
from benchforge.errors import AlreadyExists, Conflict, DomainError
from benchforge.inputs import is_digits
from benchforge_harness import (
    DEFAULT_LANGUAGE,
    SCHEMA_VERSION,
    distribution,
    sha256_file,
    write_manifest,
    write_tar_gz,
    write_zip,
)
from jobs import services as jobs
from jobs.selectors import get_job

from . import card, parquet, provenance
from .models import PRIVATE_PARTS, SEMVER, FrozenRelease, Release, ReleaseFile, ReleaseImage, ReleaseItem
from .selectors import release_state

BUILD_JOB = "release_build"
# Released items stay in the next version unless a researcher narrows the scope.
DEFAULT_STATUSES = [ACCEPTED, REWRITTEN, QC_PASSED, RELEASED]
VARIANTS = ("public", "private")


# ---- defining -----------------------------------------------------------------------------------


def create_release(benchmark, *, user, **definition) -> Release:
    """A new draft release (`definition`: the arguments of `_checked`). A version the benchmark has
    already is refused (409, naming the release that has it)."""
    release, created = _define(_checked(benchmark, **definition), user=user)
    if not created:
        raise _exists(release)
    return release


def submit_release(benchmark, *, user, **definition) -> tuple[Release, bool]:
    """What the release form and the API do: define a release and start its build; (release, created).
    The same request sent twice (a double click, a client's retry) is answered with the release the
    first one made, and starts no second build; a different request for an existing version is
    refused (409, naming the release that has it)."""
    wanted = _checked(benchmark, **definition)
    release, created = _define(wanted, user=user)
    if created:
        return start_build(release, user=user), True
    if release.created_by_id != user.pk or _definition_of(release) != _definition_of(wanted):
        raise _exists(release)
    return _fresh(release), False


def _exists(release: Release) -> AlreadyExists:
    return AlreadyExists(
        gettext("%(benchmark)s already has a release %(version)s (%(status)s): choose another version.")
        % {"benchmark": release.benchmark.name, "version": release.version, "status": release.get_status_display().lower()},
        extra={"existing": {"version": release.version, "status": release.status, "job": release.job_id}},
    )


def _definition_of(release: Release) -> tuple:
    return (
        release.notes,
        release.statuses,
        release.tasks,
        release.dev_ratio,
        release.split_seed,
        release.private,
        release.license,
    )


def _checked(
    benchmark,
    *,
    version: str,
    notes: str = "",
    statuses=None,
    tasks=(),
    dev_ratio: float = 0.4,
    split_seed: int = 0,
    private=DEFAULT_PRIVATE,
    license: str = "CC BY-NC-SA 4.0",
) -> Release:
    """The release a definition describes, checked and normalised, not saved."""
    try:
        SEMVER(version)
    except ValidationError:
        raise DomainError(
            gettext("'%(version)s' is not a semantic version: use MAJOR.MINOR.PATCH, e.g. 1.0.0.") % {"version": version}
        ) from None
    unknown = set(private) - set(PRIVATE_PARTS)
    if unknown:
        raise DomainError(
            gettext("Unknown private part(s): %(parts)s; choose among %(known)s.")
            % {"parts": ", ".join(sorted(unknown)), "known": ", ".join(PRIVATE_PARTS)}
        )
    if not 0 <= dev_ratio <= 1:
        raise DomainError(gettext("The dev share is between 0 and 1 (0.4 gives the usual 4:6 dev/test split)."))
    task_ids = [getattr(t, "pk", t) for t in tasks]
    if benchmark.tasks.filter(pk__in=task_ids).count() != len(set(task_ids)):
        raise DomainError(gettext("Some tasks are not tasks of this benchmark."))
    return Release(
        benchmark=benchmark,
        version=version,
        notes=notes,
        statuses=list(statuses or DEFAULT_STATUSES),
        tasks=task_ids,
        dev_ratio=dev_ratio,
        split_seed=split_seed,
        private=sorted(set(private)),
        license=license,
    )


def _define(release: Release, *, user) -> tuple[Release, bool]:
    """(the new release, True), or (the release that has its version, False): the version's unique
    constraint decides between simultaneous requests, never a check made before them."""
    permissions.require_researcher(user, "Building a release")
    benchmark = release.benchmark

    def create() -> Release:
        release.created_by = user
        release.source = Release.objects.filter(benchmark=benchmark, status=Release.Status.FROZEN).order_by("-frozen_at").first()
        release.save()
        return release

    return create_unique(
        create, lambda: Release.objects.filter(benchmark=benchmark, version=release.version).select_related("benchmark").first()
    )


def start_build(release: Release, *, user, here: bool = False) -> Release:
    """Build (or rebuild, while not frozen) the release as a job; `here`: run it in this process
    now (management commands) instead of handing it to the job runner. A release being built is not
    built twice at once: a second press joins the build under way (the release names its job)."""
    permissions.require_researcher(user, "Building a release")
    with transaction.atomic():
        # Freezes and other presses take turns on this lock, and the status is read after it.
        release = lock(Release, release.pk)
        if release.is_frozen:
            raise FrozenRelease(f"Release {release.version} is frozen: it is built for good.")
        if release.status == Release.Status.BUILDING and _building(release.job_id):
            return _fresh(release)
        job = jobs.create_job(
            BUILD_JOB, user=user, benchmark=release.benchmark, total=1 + 2 * len(VARIANTS) + 1, params={"release": release.pk}
        )
        Release.objects.filter(pk=release.pk).update(status=Release.Status.BUILDING, job=job)
        if not here:
            jobs.enqueue(job)
    if here:
        jobs.run_now(job)
    return _fresh(release)


def _building(job_id) -> bool:
    """Whether this build job is still under way (queued, or running with a live worker)."""
    job = get_job(job_id)
    return job is not None and not job.is_finished and not job.is_interrupted


def _fresh(release: Release) -> Release:
    return Release.objects.select_related("benchmark", "job", "source").get(pk=release.pk)


class BuildTakenOver(DomainError):
    status = 409
    code = "build_taken_over"


def _owned(release_id: int, run) -> Release:
    """Lock the release for one step of its build, refusing when this job no longer builds it: it was
    frozen, deleted, or a newer build took over from this one (whose worker was given up for dead)."""
    release = lock_or_none(Release, release_id)
    if release is None:
        raise BuildTakenOver(f"Release #{release_id} was deleted: job #{run.job.pk} has nothing to build.")
    if release.job_id != run.job.pk or release.status not in (Release.Status.BUILDING, Release.Status.DRAFT):
        raise BuildTakenOver(
            f"Release {release.version} is {release.get_status_display().lower()} by job #{release.job_id}: "
            f"job #{run.job.pk} no longer builds it and stops."
        )
    return release


def run_build(run) -> dict:
    """The build job: the snapshot, then each file; a resumed build redoes only what is missing.
    Each step writes under the release's lock, and only while this job is the release's build."""
    release_id = run.params["release"]
    with transaction.atomic():
        _owned(release_id, run)
        Release.objects.filter(pk=release_id).update(status=Release.Status.BUILDING)  # a resumed build builds again
    release = Release.objects.select_related("benchmark").get(pk=release_id)
    done = run.done_keys()
    try:
        if "snapshot" not in done:
            with transaction.atomic():
                _owned(release_id, run)
                with run.unit("snapshot") as unit:
                    counts = snapshot(release)
                    unit.ok(f"{counts['items']} items, {counts['images']} images")
        release.refresh_from_db()
        with tempfile.TemporaryDirectory(prefix="benchforge-release-") as tmp:
            for variant in VARIANTS:
                folder = Path(tmp) / variant
                write_bundle(release, variant, folder)
                for kind, writer in ((f"{variant}.tar.gz", write_tar_gz), (f"{variant}.zip", write_zip)):
                    if kind in done:
                        continue
                    archive = Path(tmp) / f"{release.top}-{kind}"
                    writer(folder, archive, top=release.top)
                    _store_step(release, run, kind, archive)
            if "parquet" not in done:
                archive = Path(tmp) / f"{release.top}-parquet.zip"
                parquet.write_dataset_zip(release, iter_bundle_rows(release, "public"), archive)
                _store_step(release, run, ReleaseFile.Kind.PARQUET, archive)
        with transaction.atomic():
            _owned(release_id, run)
            Release.objects.filter(pk=release_id).update(status=Release.Status.BUILT)
    except Exception:
        Release.objects.filter(pk=release_id, status=Release.Status.BUILDING, job_id=run.job.pk).update(
            status=Release.Status.DRAFT
        )
        raise
    return release.counts


def _store_step(release: Release, run, kind: str, archive: Path) -> None:
    """Store one built file as a unit of the job, while the job still owns the release."""
    with transaction.atomic():
        _owned(release.pk, run)
        with run.unit(kind) as unit:
            unit.ok(_store_file(release, kind, archive))


def _store_file(release: Release, kind: str, path: Path) -> str:
    suffix = "parquet.zip" if kind == ReleaseFile.Kind.PARQUET else kind
    name = f"releases/{release.benchmark.slug}/{release.version}/{release.top}-{suffix}"
    default_storage.delete(name)  # a rebuild of a draft replaces its files
    with path.open("rb") as handle:
        stored = default_storage.save(name, File(handle))
    digest, size = sha256_file(path), path.stat().st_size
    ReleaseFile.objects.update_or_create(
        release=release, kind=kind, defaults={"storage_name": stored, "sha256": digest, "size": size}
    )
    return f"{Path(stored).name}: {size:,} bytes, sha256 {digest[:12]}…"


# ---- the snapshot ---------------------------------------------------------------------------------

# The rewrite provenance a released rewrite carries in its items.jsonl meta (ids of the platform's
# own rows and local endpoint names stay out: they mean nothing outside it).
REWRITE_PROVENANCE = ("batch_number", "model", "template", "template_version", "source", "edited")


# Items are read, turned into rows and written this many at a time, so a build's memory does
# not grow with the release (bench/export.py measures it at 5,000 and 50,000 items).
SNAPSHOT_CHUNK = 500


class _Unit(NamedTuple):
    pk: int
    seed_id: int | None
    task_id: int


# Items the owners chose to leave out of the releases built from now on (item analysis, a stage above
# exports, registers where they are kept): `find(benchmark)` -> {item id: {"key", "reason", "release"}}.
_left_out_finder = None


def register_left_out(find) -> None:
    global _left_out_finder
    _left_out_finder = find


def left_out_of(benchmark) -> dict[int, dict]:
    return _left_out_finder(benchmark) if _left_out_finder is not None else {}


def _in_scope(release: Release) -> tuple[list[_Unit], list[dict]]:
    """The items the release takes, by id (in id order): ids only, so a large release is cheap; and
    those of its scope its owners left out ({"item_id", "key", "reason", "release"}, for its diff)."""
    items = Item.objects.filter(benchmark=release.benchmark, status__in=release.statuses)
    if release.tasks:
        items = items.filter(task__in=release.tasks)
    units = [_Unit(*values) for values in items.order_by("pk").values_list("pk", "seed_id", "task_id")]
    marked = left_out_of(release.benchmark)
    left_out = [{"item_id": u.pk, **marked[u.pk]} for u in units if u.pk in marked]
    units = [u for u in units if u.pk not in marked]
    seeds = {u.pk for u in units if u.seed_id is None}
    # A rewrite goes with its seed: one whose seed is not in the release would name a missing group.
    return [u for u in units if u.seed_id is None or u.seed_id in seeds], left_out


def assign_splits(units, *, dev_ratio: float, seed: int, previous=None) -> dict:
    """units: (unit key, group key, task); previous: {unit key: split} of the release this one
    follows. A group (a seed and its rewrites) is never split across dev and test. Groups already
    released keep their split, so an item does not change sides between versions; the new groups
    of a task then go, in an order drawn from `seed` (reproducible), to dev while that brings the
    task's dev count closer to its share. Returns {unit key: "dev" | "test"}."""
    previous = previous or {}
    by_task: dict = defaultdict(lambda: defaultdict(list))
    for key, group, task in units:
        by_task[task][group].append(key)
    splits = {}
    for task in sorted(by_task, key=str):
        groups = sorted(by_task[task].items(), key=lambda g: str(g[0]))
        target = dev_ratio * sum(len(keys) for _, keys in groups)
        fresh, in_dev = [], 0
        for group in groups:
            kept = [previous[k] for k in group[1] if k in previous]
            if kept:
                split = Counter(kept).most_common(1)[0][0]
                splits.update(dict.fromkeys(group[1], split))
                in_dev += len(group[1]) if split == "dev" else 0
            else:
                fresh.append(group)
        random.Random(f"{seed}:{task}").shuffle(fresh)
        for _, keys in fresh:
            closer = abs(in_dev + len(keys) - target) < abs(in_dev - target)
            split = "dev" if closer else "test"
            in_dev += len(keys) if closer else 0
            splits.update(dict.fromkeys(keys, split))
    return splits


@transaction.atomic
def snapshot(release: Release) -> dict:
    """Copy what the release holds into its own rows; replaces an earlier snapshot of a draft, and the
    files built from it (they no longer match: every file a release has is from its latest build).
    Items are loaded and written SNAPSHOT_CHUNK at a time."""
    ReleaseItem.objects.filter(release=release).delete()
    ReleaseImage.objects.filter(release=release).delete()
    old_files = list(ReleaseFile.objects.filter(release=release).values_list("storage_name", flat=True))
    ReleaseFile.objects.filter(release=release).delete()
    transaction.on_commit(lambda: [default_storage.delete(name) for name in old_files])
    units, left_out = _in_scope(release)
    if not units:
        raise DomainError(
            gettext("No item of %(benchmark)s is %(stages)s in this scope: nothing to release.")
            % {"benchmark": release.benchmark.name, "stages": ", ".join(release.statuses)}
        )
    previous = dict(release.source.items.values_list("item_id", "split")) if release.source_id else {}
    splits = assign_splits(
        [(u.pk, u.seed_id or u.pk, u.task_id) for u in units],
        dev_ratio=release.dev_ratio,
        seed=release.split_seed,
        previous=previous,
    )
    counts, image_names = _Counts(), set()
    for start in range(0, len(units), SNAPSHOT_CHUNK):
        chunk = Item.objects.filter(pk__in=[u.pk for u in units[start : start + SNAPSHOT_CHUNK]])
        items = list(with_payload_data(chunk.select_related("task__category__parent")).order_by("pk"))
        origins = provenance.for_items(items)
        rows, images = [], []
        for order, item in enumerate(items, start):
            row = release_row(item, split=splits[item.pk])
            rewrite = origins.get(item.pk, {}).get("rewrite")
            if rewrite:
                # What wrote this rewrite, in items.jsonl itself (docs/rewrite.md): its batch, model and template version.
                row["meta"]["rewrite"] = {key: rewrite.get(key) for key in REWRITE_PROVENANCE}
            rows.append(
                ReleaseItem(
                    release=release,
                    key=row["id"],
                    item_id=item.pk,
                    task=item.task.name,
                    split=row["split"],
                    row=row,
                    provenance=origins.get(item.pk, {}),
                    order=order,
                )
            )
            for link in (item.seed or item).item_images.all():
                image = link.image
                if image_name(image) in image_names:
                    continue
                image_names.add(image_name(image))
                images.append(
                    ReleaseImage(
                        release=release,
                        name=image_name(image),
                        sha256=image.sha256,
                        storage_name=image.file.name,
                        size=image.file_size,
                        source=image.source,
                        license=image.license,
                    )
                )
        ReleaseItem.objects.bulk_create(rows, batch_size=1000)
        ReleaseImage.objects.bulk_create(images, batch_size=1000)
        for row in rows:
            counts.add(row)
    totals = counts.result()
    totals["images"] = len(image_names)
    Release.objects.filter(pk=release.pk).update(
        built_at=timezone.now().replace(microsecond=0),
        taxonomy=taxonomy_of(release.benchmark),
        language=release.benchmark.language,
        counts=totals,
        construction={**provenance.construction(release.benchmark, units), "left_out": left_out},
    )
    return totals


class _Counts:
    """A release's counts (items, seeds, per split and per task), added up row by row."""

    def __init__(self):
        self.items = self.seeds = 0
        self.splits: Counter = Counter()
        self.per_task: dict = defaultdict(Counter)

    def add(self, row: ReleaseItem) -> None:
        self.items += 1
        self.seeds += row.row["seed_id"] is None
        self.splits[row.split] += 1
        self.per_task[row.task][row.split] += 1

    def result(self) -> dict:
        return {
            "items": self.items,
            "seeds": self.seeds,
            "dev": self.splits["dev"],
            "test": self.splits["test"],
            "tasks": {task: dict(sorted(c.items())) for task, c in sorted(self.per_task.items())},
        }


def taxonomy_of(benchmark) -> dict:
    tasks = benchmark.tasks.select_related("category__parent")  # in taxonomy order
    categories = benchmark.categories.select_related("parent").order_by("order", "name")
    return {
        "name": benchmark.name,
        "categories": [{"name": c.name, "parent": c.parent.name if c.parent_id else None} for c in categories],
        "tasks": [
            {
                "name": t.name,
                "category": (t.category.parent or t.category).name,
                "subcategory": t.category.name if t.category.parent_id else None,
                "description": t.description,
                "judge_rule": t.judge_rules or None,
            }
            for t in tasks
        ],
    }


# ---- bundles ------------------------------------------------------------------------------------


def iter_bundle_rows(release: Release, variant: str) -> Iterator[dict]:
    """The release's items.jsonl rows in order, read from the database a chunk at a time."""
    rows = release.items.order_by("order").values_list("row", flat=True).iterator(chunk_size=SNAPSHOT_CHUNK)
    for row in rows:
        yield withhold_row(row, release.private) if variant == "public" else row


def bundle_rows(release: Release, variant: str) -> list[dict]:
    return list(iter_bundle_rows(release, variant))


def write_bundle(release: Release, variant: str, folder: Path) -> None:
    """The bundle folder of one variant, from the release's rows only (same rows, same bytes).
    Rows are streamed to the files, never held all at once."""
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "images").mkdir(parents=True)
    with (folder / "items.jsonl").open("wb") as out:
        for row in iter_bundle_rows(release, variant):
            out.write((json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
    for image in release.images.order_by("name").iterator(chunk_size=SNAPSHOT_CHUNK):
        with default_storage.open(image.storage_name, "rb") as source, open(folder / image.name, "wb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
    _write_text(folder / "taxonomy.json", json.dumps(release.taxonomy, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    _write_mcq_tsv(iter_bundle_rows(release, variant), folder)
    _write_harness(folder)
    shutil.copyfile(INSPECT_TASK, folder / INSPECT_TASK.name)
    (folder / "charts").mkdir()
    _write_text(folder / "charts" / "items_per_task.svg", card.task_chart(release.counts, release.taxonomy))
    for path, text, _card in card.bundle_extras(release, variant):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        _write_text(folder / path, text)
    _write_text(folder / "README.md", card.dataset_card(release, variant))
    _write_text(folder / "LICENSE", card.license_text(release))
    write_manifest(
        folder,
        name=release.benchmark.slug,
        title=release.benchmark.name,
        version=release.version,
        variant=variant,
        # The release's own date, not the build's: a rebuild of the same release writes the same bytes.
        created_at=release.created_at.replace(microsecond=0).isoformat(),
        schema_version=SCHEMA_VERSION,
        harness_version=benchforge_harness.__version__,
        # the harness asks and judges every item that does not name its own language in this one
        language=release.language or DEFAULT_LANGUAGE,
        counts=release.counts,
        withheld=[] if variant == "private" else release.private,
        source_release=release.source.version if release.source_id else None,
    )


def _write_text(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))


def _write_harness(folder: Path) -> None:
    """The harness twice: its source in folder/harness (runs as `python -m benchforge_harness`, builds with
    `python -m build`) and the wheel built from that very copy (`pip install ./<wheel>`)."""
    source = folder / "benchforge_harness"
    files = distribution.copy_source(source)
    digest = hashlib.sha256("".join(f"{name}\0{sha256_file(source / name)}\n" for name in files).encode()).hexdigest()
    if digest not in _HARNESS_WHEELS:  # the build is reproducible: the same source, the same bytes
        with tempfile.TemporaryDirectory(prefix="harness-wheel-") as out:
            wheel = distribution.build_wheel(out, root=source)
            _HARNESS_WHEELS[digest] = (wheel.name, wheel.read_bytes())
    name, data = _HARNESS_WHEELS[digest]
    (folder / name).write_bytes(data)


# The release as Inspect tasks (`inspect eval inspect_task.py`); it reads the bundle's own files.
INSPECT_TASK = Path(__file__).with_name("bundle_files") / "inspect_task.py"

# Harness wheels built in this process, by the digest of their source (one per harness version in practice).
_HARNESS_WHEELS: dict[str, tuple[str, bytes]] = {}


def _write_mcq_tsv(rows: Iterable[dict], folder: Path) -> None:
    """folder/mcq.tsv (when there are multiple-choice rows) in MMBench's columns: an image once as
    base64, then by the index of the first row that carried it. Written row by row."""
    first_row: dict[str, int] = {}
    out = writer = None
    try:
        for index, row in enumerate(r for r in rows if r["choices"]):
            if writer is None:
                out = (folder / "mcq.tsv").open("w", encoding="utf-8", newline="")
                writer = csv.DictWriter(out, fieldnames=MMBENCH_COLUMNS, delimiter="\t", lineterminator="\n")
                writer.writeheader()
            image = row["images"][0] if row["images"] else ""
            if image and image in first_row:
                image_value = str(first_row[image])
            elif image:
                first_row[image] = index
                image_value = base64.b64encode((folder / image).read_bytes()).decode("ascii")
            else:
                image_value = ""
            writer.writerow(mmbench_row_of_release(row, index=index, image=image_value))
    finally:
        if out is not None:
            out.close()


def set_notes(release: Release, notes: str, *, user) -> Release:
    """Change a release's notes (researchers); a frozen release refuses (FrozenRelease, as every change)."""
    permissions.require_researcher(user, "Editing a release")
    release.notes = notes
    release.save(update_fields=["notes"])
    return release


def delete_release(release: Release, *, user) -> None:
    """Delete a release that is not frozen (researchers); a frozen release refuses."""
    permissions.require_researcher(user, "Deleting a release")
    release.delete()


# ---- freezing -----------------------------------------------------------------------------------


@retried
def freeze(release: Release, *, user) -> Release:
    """Freeze a built release: from now on it refuses every change. Its items become released."""
    permissions.require_researcher(user, "Freezing a release")
    with transaction.atomic():
        release = lock(Release, release.pk)
        if release.is_frozen:
            raise FrozenRelease(f"Release {release.version} is already frozen.")
        if release.status == Release.Status.BUILDING and _building(release.job_id):
            raise Conflict(
                gettext("Release %(version)s is being built (job #%(job)s): wait until its build finishes, then freeze it.")
                % {"version": release.version, "job": release.job_id},
                code="building",
            )
        if release.status != Release.Status.BUILT or not release.files.exists():
            raise Conflict(
                gettext("Release %(version)s is %(status)s: build it before freezing.")
                % {"version": release.version, "status": str(release_state(release)["label"]).lower()},
                code="not_built",
            )
        # The items as they are now, locked: one flagged or sent back since the build must not be frozen in.
        items = lock_items(release.items.values_list("item_id", flat=True))
        moved = [i for i in items if i.status != RELEASED and RELEASED not in TRANSITIONS[i.status]]
        if moved:
            raise Conflict(
                gettext(
                    "%(n)s item(s) of release %(version)s changed since it was built (e.g. item #%(item)s is now "
                    "'%(status)s'): build it again before freezing."
                )
                % {"n": len(moved), "version": release.version, "item": moved[0].pk, "status": moved[0].status_label},
                extra={"items": [i.pk for i in moved[:100]]},
            )
        change_status_many(
            [i for i in items if i.status != RELEASED],
            RELEASED,
            user=user,
            action="released",
            note=f"In release {release.version}.",
        )
        # From now on the app hides from annotators what the release keeps private (annotation.selectors.withheld_from).
        withhold_in_app(
            {
                item_id: fields_withheld(release.private, split)
                for item_id, split in release.items.values_list("item_id", "split")
                if fields_withheld(release.private, split)
            }
        )
        Release.objects.filter(pk=release.pk).update(status=Release.Status.FROZEN, frozen_at=timezone.now(), frozen_by=user)
    release.refresh_from_db()
    return release


# ---- comparing ------------------------------------------------------------------------------------


def compare(old: Release, new: Release, *, hide=()) -> dict:
    """Items added, removed and changed from `old` to `new` (matched by release id), each as
    {"id", "item_id", "row"} (the newer row, the older for a removed item), a changed one with
    "fields": [{"field", "old", "new"}]; `hide`: private parts to leave out (for people who may
    not see them), both from the rows and from what counts as a change."""
    if old.benchmark_id != new.benchmark_id:
        raise DomainError(gettext("Releases of different benchmarks cannot be compared."))

    def rows(release):
        return {
            key: (item_id, withhold_row(row, hide)) for key, item_id, row in release.items.values_list("key", "item_id", "row")
        }

    before, after = rows(old), rows(new)

    def entry(key, side):
        item_id, row = side[key]
        return {"id": key, "item_id": item_id, "row": row}

    changed = []
    for key in sorted(set(before) & set(after), key=_natural):
        then, now = before[key][1], after[key][1]
        fields = [
            {"field": name, "old": then.get(name), "new": now.get(name)}
            for name in sorted(set(then) | set(now))
            if name != "meta" and then.get(name) != now.get(name)
        ]
        if fields:
            changed.append({**entry(key, after), "fields": fields})
    # An item its owners left out (item analysis) is named with why.
    left_out = {row["item_id"]: row["reason"] for row in (new.construction or {}).get("left_out", ())}
    removed = []
    for key in sorted(set(before) - set(after), key=_natural):
        found = entry(key, before)
        if found["item_id"] in left_out:
            found["left_out"] = left_out[found["item_id"]]
        removed.append(found)
    return {
        "from": old.version,
        "to": new.version,
        "added": [entry(key, after) for key in sorted(set(after) - set(before), key=_natural)],
        "removed": removed,
        "changed": changed,
    }


def diff(old: Release, new: Release, *, hide=()) -> dict:
    """The API's diff: ids of the items added and removed, and the changed items' fields."""
    found = compare(old, new, hide=hide)
    return {
        "from": found["from"],
        "to": found["to"],
        "added": [e["id"] for e in found["added"]],
        "removed": [e["id"] for e in found["removed"]],
        "left_out": [{"id": e["id"], "reason": e["left_out"]} for e in found["removed"] if "left_out" in e],
        "changed": [{"id": e["id"], "fields": e["fields"]} for e in found["changed"]],
    }


def _natural(key: str):
    return (0, int(key), "") if is_digits(key) else (1, 0, key)

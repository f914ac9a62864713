"""Ingesting one image (validate, hash, store content-addressed, flag) and a batch of uploads.
Hash values are signed 64-bit ints (see curation.imaging); files are content-addressed."""

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, default_storage
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop, ngettext

from benchforge.bulk import bulk_insert, insert_rows, unsaved
from benchforge.errors import DomainError
from jobs import reports

from .. import hashing
from ..content import Disk, stored_files, write_once
from ..imaging import ImageLimits, ImageRejected, analyse_image, hamming
from ..models import Benchmark, Image, Task
from . import contamination, dedup

THUMBNAIL_PX = 256


def image_limits(benchmark: Benchmark) -> ImageLimits:
    return ImageLimits(max_bytes=settings.BENCHFORGE_MAX_UPLOAD_BYTES, min_short_edge=benchmark.min_short_edge)


def _local_disk() -> Disk | None:
    """Where content-addressed files are written directly, when media is on local disk."""
    if isinstance(default_storage, FileSystemStorage):
        return Disk(default_storage.location, default_storage.file_permissions_mode, default_storage.directory_permissions_mode)
    return None


def _store(name: str, data: bytes) -> bool:
    """Write content-addressed bytes once; True when this call created the file. A name always
    carries the same bytes: on local disk one exclusive create (curation.content.write_once);
    elsewhere a concurrent writer's copy gets another name and is dropped here, or the storage
    overwrites in place (S3's file_overwrite), rewriting the same bytes."""
    disk = _local_disk()
    if disk is not None:
        return write_once(disk, name, data)
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


def _bits(name: str, n: int) -> str:
    return ngettext("%(hash)s %(n)s bit apart", "%(hash)s %(n)s bits apart", n) % {"hash": name, "n": n}


def near_duplicate_match(image: Image) -> str:
    """Which hash made `image` a near duplicate, and by how much ("dHash 2 bits apart"): a match
    can come from either hash, and quoting the pHash distance of a dHash match misleads."""
    other = image.near_duplicate_of
    radius = image.benchmark.near_dup_threshold - 1
    distances = (("pHash", hamming(image.phash, other.phash)), ("dHash", hamming(image.dhash, other.dhash)))
    matched = [_bits(name, d) for name, d in distances if d <= radius]
    return ", ".join(matched) or _bits("pHash", distances[0][1])


# What an ingest reports per file: the plain outcomes are declared (jobs.reports: shown in the
# reader's language); one with notes is written in the job's language (jobs.runner).
ADDED = gettext_noop("added")
EXACT_DUPLICATE = gettext_noop("exact duplicate of image #%(id)s; not stored again")
reports.declare(ADDED, EXACT_DUPLICATE)


@dataclass
class IngestOutcome:
    image: Image
    created: bool  # False: an exact duplicate (same MD5) already in the benchmark

    @property
    def message(self) -> str:
        if not self.created:
            return reports.text(EXACT_DUPLICATE, id=self.image.pk)
        notes = []
        if self.image.low_resolution:
            notes.append(
                gettext("low resolution (%(width)sx%(height)s)") % {"width": self.image.width, "height": self.image.height}
            )
        if self.image.near_duplicate_of_id:
            notes.append(
                gettext("near duplicate of #%(id)s (%(match)s)")
                % {"id": self.image.near_duplicate_of_id, "match": near_duplicate_match(self.image)}
            )
        if self.image.contaminated:
            sets = ", ".join(m.known_set.name for m in self.image.contamination_matches.select_related("known_set"))
            notes.append(gettext("matches known set(s): %(sets)s") % {"sets": sets})
        return gettext("added: %(notes)s") % {"notes": "; ".join(notes)} if notes else reports.text(ADDED)

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
        raise DomainError(gettext("Task(s) %(tasks)s belong to another benchmark.") % {"tasks": ", ".join(map(str, foreign))})
    return tasks


_new_image_row = unsaved(Image)


def _image_row(benchmark, analysis, *, data, original_name, source, license, collected_by, collected_at, job) -> Image:
    """The (unsaved) Image row of an analysed file: one place for both ingest paths, one at a time
    and batched, so they store the same fields."""
    names = [name for name, _ in stored_files(analysis, data)]
    return _new_image_row(
        benchmark=benchmark,
        file=names[0],
        thumbnail=names[-1],
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

    written: list[str] = []
    try:
        with transaction.atomic():
            for name, content in stored_files(analysis, data):
                if _store(name, content):
                    written.append(name)
            image = _image_row(
                benchmark,
                analysis,
                data=data,
                original_name=original_name,
                source=source,
                license=license,
                collected_by=collected_by,
                collected_at=collected_at,
                job=job,
            )
            image.save(force_insert=True)
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
                raise DomainError(
                    gettext("The file is %(size)s MB; the limit is %(limit)s MB.")
                    % {"size": f"{upload.size / 1e6:.1f}", "limit": f"{max_bytes / 1e6:.0f}"}
                )
            outcome = ingest_image(
                benchmark, upload.read(), original_name=name, source=source, license=license, collected_by=user, tasks=tasks
            )
        except (ImageRejected, DomainError) as exc:
            results.append({"name": name, "outcome": "error", "message": exc.message})
            continue
        results.append({"name": name, "outcome": "added" if outcome.created else "duplicate", **outcome.as_dict()})
    return results


# ---- many images at once: analysed in worker processes, the database side a batch at a time ----


@dataclass
class IngestFile:
    """One file for `Ingester`: `load` returns its bytes (called in a worker thread: a read or a
    download) and may raise DomainError; the rest is what ingest_image takes."""

    load: Callable[[], bytes]
    size: int = 0  # expected bytes, when known: how batches are kept small in memory
    original_name: str = ""
    source: str = ""
    license: str = ""
    tasks: Sequence[Task] = ()
    site: str = ""  # where a download comes from (outbound.site_of): Ingester paces loads per site


Outcome = IngestOutcome | ImageRejected | DomainError


def ingest_threads() -> int:
    """Threads that read (or download) files and hand them to the analysis: BENCHFORGE_INGEST_THREADS,
    by default one per core."""
    return max(1, settings.BENCHFORGE_INGEST_THREADS or _cores())


def ingest_processes() -> int:
    """Worker processes that decode, hash and write (curation.hashing): BENCHFORGE_INGEST_PROCESSES,
    by default one per core where there are several; 0 analyses in the threads."""
    chosen = settings.BENCHFORGE_INGEST_PROCESSES
    return max(0, chosen) if chosen is not None else (_cores() if _cores() > 1 else 0)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) or 1


# A batch of fewer files is analysed in the threads: a few uploads are not worth the messages.
PROCESSES_FROM = 32


def messages(batch: Sequence, processes: int) -> list[Sequence]:
    """A batch split as the analysis gets it: two messages per worker process (each process
    busy while the other message travels), or a file at a time in the threads."""
    size = -(-len(batch) // (2 * processes)) if processes else 1
    return [batch[n : n + size] for n in range(0, len(batch), size)]


@dataclass
class _Prepared(hashing.Analysed):
    """A file read and analysed (hashing.Analysed), with its bytes; `error` may also be the
    DomainError of a file that could not be read (then nothing else is set)."""

    data: bytes = b""


def _load(file: IngestFile) -> bytes | ImageRejected | DomainError:
    try:
        return file.load()
    except (ImageRejected, DomainError) as exc:
        return exc


class _PacedLoaders:
    """Threads that load files, at most `per_site` at once from one site: each thread takes the
    oldest waiting file whose site has room. (Threads that waited for their site's turn while
    holding a place made a list with a long run of one site's URLs load `per_site` at a time
    even where other sites' files waited behind them.)"""

    def __init__(self, threads: int, per_site: int):
        self._per_site = max(1, per_site)
        self._waiting: list[tuple[IngestFile, Future]] = []
        self._running: dict[str, int] = {}
        self._changed = threading.Condition()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name="benchforge-load", daemon=True) for _ in range(max(1, threads))]
        for thread in self._threads:
            thread.start()

    def submit(self, file: IngestFile) -> Future:
        future: Future = Future()
        with self._changed:
            if self._closed:
                raise RuntimeError("the loaders are shut down")
            self._waiting.append((file, future))
            self._changed.notify()
        return future

    def shutdown(self) -> None:
        """Cancel the files not started; wait for the loads running."""
        with self._changed:
            self._closed = True
            for _, future in self._waiting:
                future.cancel()
            self._waiting.clear()
            self._changed.notify_all()
        for thread in self._threads:
            thread.join()

    def _next(self) -> tuple[IngestFile, Future] | None:
        for n, (file, future) in enumerate(self._waiting):
            if self._running.get(file.site, 0) < self._per_site:
                del self._waiting[n]
                self._running[file.site] = self._running.get(file.site, 0) + 1
                return file, future
        return None

    def _work(self) -> None:
        while True:
            with self._changed:
                taken = self._next()
                while taken is None:
                    if self._closed:
                        return
                    self._changed.wait()
                    taken = self._next()
            file, future = taken
            try:
                if future.set_running_or_notify_cancel():
                    future.set_result(_load(file))
            except BaseException as exc:  # a loader's own bug: the batch waiting on it sees it
                future.set_exception(exc)
            finally:
                with self._changed:
                    self._running[file.site] -= 1
                    # This thread looks for its next file itself; another may now fit a waiting one.
                    self._changed.notify()


class Ingester:
    """Ingests files the way ingest_image does, with the same outcomes, but reads them in
    threads, decodes, hashes and writes them in worker processes (curation.hashing; in the
    threads for a small batch or where processes cannot start), and does the database side a
    batch at a time: one MD5 lookup, one insert, one near-duplicate and one contamination pass
    per batch. `submit` a list of files (the work starts on them at once), then `store` the
    ticket it returned: submitting the next batch before storing this one keeps the workers
    busy while the database works.

    Images of a batch are checked for near duplicates against the benchmark's earlier images and
    against the batch's earlier files, in order, exactly as one ingest_image after another would."""

    def __init__(
        self,
        benchmark: Benchmark,
        *,
        collected_by=None,
        collected_at=None,
        job=None,
        threads: int | None = None,
        processes: int | None = None,
        loaders: int = 1,
        per_site: int | None = None,
    ):
        self.benchmark = benchmark
        self.limits = image_limits(benchmark)
        self.collected_by, self.collected_at, self.job = collected_by, collected_at, job
        self.processes = ingest_processes() if processes is None else processes
        self._pool = ThreadPoolExecutor(max_workers=threads or ingest_threads(), thread_name_prefix="benchforge-ingest")
        # Files that come over the network (a URL list) wait on it, not on a core: `loaders`
        # threads fetch a submitted batch's files at once instead of one after another, at most
        # `per_site` from one site (IngestFile.site).
        self._loaders = _PacedLoaders(loaders, per_site or loaders) if loaders > 1 else None

    def __enter__(self) -> "Ingester":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._loaders is not None:
            self._loaders.shutdown()

    def _prepare(self, files: Sequence[IngestFile], processes: int, loads: list[Future] | None = None) -> list[_Prepared]:
        loaded = [load.result() for load in loads] if loads is not None else [_load(file) for file in files]
        datas = [data for data in loaded if isinstance(data, bytes)]
        analysed = iter(self._analyse(datas, processes))
        prepared = []
        for data in loaded:
            if not isinstance(data, bytes):
                prepared.append(_Prepared(md5="", error=data))
                continue
            done = next(analysed)
            prepared.append(_Prepared(done.md5, done.analysis, done.error, done.written, data=data))
        return prepared

    def _analyse(self, datas: list[bytes], processes: int) -> list[hashing.Analysed]:
        disk = _local_disk()
        future = hashing.submit(processes, datas, self.limits, THUMBNAIL_PX, disk) if processes and datas else None
        analysed = None
        if future is not None:
            try:
                analysed = future.result()
            except BrokenProcessPool:  # a worker died (killed, out of memory): these files are analysed here
                hashing.discard()
        if analysed is None:
            analysed = hashing.analyse_many(datas, self.limits, THUMBNAIL_PX, disk)
        if disk is None:  # storage other than local disk (S3): written here, through it (I/O)
            for data, done in zip(datas, analysed):
                if done.analysis is not None:
                    done.written = tuple(name for name, content in stored_files(done.analysis, data) if _store(name, content))
        return analysed

    def submit(self, files: Sequence[IngestFile]) -> list:
        """Start on `files`; returns the ticket `store` takes. A big batch goes to the worker
        processes in a few messages (two per process), a small one to the threads a file at a time."""
        processes = self.processes if len(files) >= PROCESSES_FROM else 0
        ticket = []
        for chunk in messages(files, processes):
            # With loaders, the whole batch starts loading now, not a message at a time.
            loads = [self._loaders.submit(file) for file in chunk] if self._loaders is not None else None
            ticket.append((chunk, self._pool.submit(self._prepare, chunk, processes, loads)))
        return ticket

    @staticmethod
    def _ready(ticket: list) -> tuple[list[IngestFile], list[_Prepared]]:
        files = [file for chunk, _ in ticket for file in chunk]
        prepared = [ready for _, future in ticket for ready in future.result()]
        return files, prepared

    def store(self, ticket: list, record: Callable[[list[Outcome]], None] | None = None) -> list[Outcome]:
        """Write a submitted batch; returns one outcome per file, in order (an IngestOutcome, or the
        ImageRejected / DomainError that refused it). `record(outcomes)` runs inside the transaction
        that stores them, so what the caller writes about them commits with them; it gets one
        entry per file of the batch, None for the files that transaction did not settle."""
        files, prepared = self._ready(ticket)
        try:
            return self._store(files, prepared, record)
        except IntegrityError:
            # Another process stored some of these bytes meanwhile: one at a time, each settles its race.
            return self.store_one_by_one(ticket, record)

    def store_one_by_one(self, ticket: list, record=None) -> list[Outcome]:
        """`store` through ingest_image, a file at a time (each with its own transaction and
        `record` call): what the batch must be equal to."""
        files, prepared = self._ready(ticket)
        outcomes: list = [None] * len(files)
        for n, (file, ready) in enumerate(zip(files, prepared)):
            with transaction.atomic():
                outcomes[n] = ready.error if isinstance(ready.error, DomainError) else self._one(file, ready.data)
                if record is not None:
                    record([outcome if m == n else None for m, outcome in enumerate(outcomes)])
        for ready in prepared:  # files the workers wrote that no image uses after all
            if ready.written:
                _remove_if_unreferenced(list(ready.written), ready.analysis.sha256)
        return outcomes

    def _one(self, file: IngestFile, data: bytes) -> Outcome:
        try:
            return ingest_image(
                self.benchmark,
                data,
                original_name=file.original_name,
                source=file.source,
                license=file.license,
                collected_by=self.collected_by,
                collected_at=self.collected_at,
                tasks=file.tasks,
                job=self.job,
            )
        except (ImageRejected, DomainError) as exc:
            return exc

    def _store(self, files, prepared: list[_Prepared], record) -> list[Outcome]:
        outcomes: list = [None] * len(files)
        md5s = {p.md5 for p in prepared if p.md5}
        written = [(name, p.analysis.sha256) for p in prepared if p.analysis is not None for name in p.written]
        try:
            with transaction.atomic():
                existing = {image.md5: image for image in Image.objects.filter(benchmark=self.benchmark, md5__in=md5s)}
                collected_at = self.collected_at or timezone.now()  # one time for the images stored together
                fresh: dict[str, tuple[int, Image]] = {}  # md5 -> (position, new image)
                for n, (file, ready) in enumerate(zip(files, prepared)):
                    # In ingest_image's order: the tasks, the MD5 (before the decode's verdict), the decode.
                    try:
                        tasks = check_tasks(self.benchmark, file.tasks)
                    except DomainError as exc:
                        outcomes[n] = exc
                        continue
                    if isinstance(ready.error, DomainError):  # the file could not even be read
                        outcomes[n] = ready.error
                    elif ready.md5 in existing:
                        outcomes[n] = IngestOutcome(existing[ready.md5], created=False)
                    elif ready.md5 in fresh:
                        outcomes[n] = ready.md5  # a copy of an earlier file of this batch: settled below
                    elif ready.error is not None:
                        outcomes[n] = ready.error
                    else:
                        fresh[ready.md5] = (n, self._new_image(file, ready, tasks, collected_at))
                images = [image for _, image in fresh.values()]
                bulk_insert(images, ids=True)
                insert_rows(
                    Image.tasks.through,
                    ("image_id", "task_id"),
                    [(image.pk, task_id) for image in images for task_id in dict.fromkeys(t.pk for t in image._ingest_tasks)],
                )
                dedup.flag_near_duplicates_of_batch(self.benchmark, images)
                contamination.flag_contamination_of_batch(self.benchmark, images)
                for n, image in fresh.values():
                    outcomes[n] = IngestOutcome(image, created=True)
                for n, outcome in enumerate(outcomes):
                    if isinstance(outcome, str):
                        outcomes[n] = IngestOutcome(fresh[outcome][1], created=False)
                if record is not None:
                    record(outcomes)
        except BaseException:
            for name, sha256 in written:
                _remove_if_unreferenced([name], sha256)
            raise
        kept = {image.sha256 for _, image in fresh.values()}
        for name, sha256 in written:  # written for a file that became no image (its tasks were refused)
            if sha256 not in kept:
                _remove_if_unreferenced([name], sha256)
        return outcomes

    def _new_image(self, file: IngestFile, ready: _Prepared, tasks, collected_at) -> Image:
        image = _image_row(
            self.benchmark,
            ready.analysis,
            data=ready.data,
            original_name=file.original_name,
            source=file.source,
            license=file.license,
            collected_by=self.collected_by,
            collected_at=collected_at,
            job=self.job,
        )
        image._ingest_tasks = tasks
        return image


def ingest_stream(ingester: Ingester, batches, *, record=None):
    """Store batches of IngestFiles one after another, the next one decoding while this one is
    written; yields (batch, outcomes) per batch. `batches` yields (files, context) pairs; the
    context comes back with the outcomes, and `record(context, outcomes)` runs inside each
    batch's transaction."""
    pending = None
    for files, context in batches:
        ticket = ingester.submit(files)
        if pending is not None:
            yield pending[1], ingester.store(pending[0], _bound(record, pending[1]))
        pending = (ticket, context)
    if pending is not None:
        yield pending[1], ingester.store(pending[0], _bound(record, pending[1]))


def _bound(record, context):
    return None if record is None else (lambda outcomes: record(context, outcomes))

"""Bulk imports as resumable jobs: a zip, a server folder, a URL list."""

import io
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext

from benchforge import outbound
from benchforge.errors import DomainError
from benchforge_harness.tabular import CSV, LINES, FileProblem, TableReader
from jobs import services as jobs
from jobs.staging import open_staged, stage_upload

from ..models import Benchmark, Task
from . import ingest as ingesting
from .ingest import Ingester, IngestFile, IngestOutcome, check_tasks

_JUNK_NAMES = ("__MACOSX/", ".DS_Store", "Thumbs.db")


# Files decoded together and written in one transaction with their entries (a killed worker
# leaves neither, and the batch is redone on resume): this many, or fewer when their bytes reach
# INGEST_BATCH_BYTES (two batches are in memory at once: one decoding, one being written).
INGEST_BATCH = 128
INGEST_BATCH_BYTES = 4 << 20


@dataclass
class _Unit:
    key: str
    file: IngestFile
    warning: str = ""


def _refuse(exc: DomainError):
    def load() -> bytes:
        raise exc

    return load


def _ingest_units(run, units, *, loaders: int = 1, per_site: int | None = None) -> None:
    """Ingest the units (an iterable of _Unit) in batches, decoding in threads while the
    database takes the batch before; each unit's entry says what happened (warning appended).
    `loaders`, `per_site`: files loaded at once, and from one site (Ingester)."""

    def batches():
        chunk: list[_Unit] = []
        size = 0
        for unit in units:
            chunk.append(unit)
            size += unit.file.size
            if len(chunk) >= INGEST_BATCH or size >= INGEST_BATCH_BYTES:
                yield [u.file for u in chunk], chunk
                chunk, size = [], 0
        if chunk:
            yield [u.file for u in chunk], chunk

    def record(chunk: list[_Unit], outcomes) -> None:
        rows = []
        for unit, outcome in zip(chunk, outcomes):
            note = f" Warning: {unit.warning}" if unit.warning else ""
            if outcome is None:
                continue
            if isinstance(outcome, IngestOutcome):
                rows.append((unit.key, "ok" if outcome.created else "skipped", outcome.message + note, outcome.as_dict()))
            else:
                rows.append((unit.key, "error", outcome.message + note, None))
        run.record_many(rows)

    job = run.job
    with Ingester(run.benchmark, collected_by=job.created_by, job=job, loaders=loaders, per_site=per_site) as ingester:
        for _ in ingesting.ingest_stream(ingester, batches(), record=record):
            pass


IMPORT_KINDS = ("ingest_zip", "ingest_folder", "ingest_url_list")


def create_import_job(
    kind: str, benchmark: Benchmark, *, user=None, path: str = "", staged: str = "", source: str = "", license: str = "", tasks=()
):
    """A queued import job reading a staged upload (`staged`, a storage name) or a server path."""
    if kind not in IMPORT_KINDS:
        raise DomainError(gettext("Unknown import kind '%(kind)s'.") % {"kind": kind})
    if bool(path) == bool(staged):
        raise DomainError("An import reads either an uploaded file or a path on the server.")
    tasks = check_tasks(benchmark, tasks)
    params = {"source": source, "license": license, "task_ids": [t.pk for t in tasks]}
    params.update({"staged": staged} if staged else {"path": str(path)})
    return jobs.create_job(kind, user=user, benchmark=benchmark, params=params)


def _job_context(job):
    """The job's tasks, and the source and license it gives every file."""
    params = job.params
    tasks = list(Task.objects.filter(pk__in=params.get("task_ids", []), benchmark_id=job.benchmark_id))
    return tasks, {"source": params.get("source", ""), "license": params.get("license", "")}


def _summary(run, unmatched: dict[str, int] | None = None) -> dict:
    """Counts over every run of the job (a resumed import reports all it did, not its last run),
    and the files whose folder named no task (counted over the whole input, so also on resume)."""
    counts = run.outcome_counts()
    summary = {"added": counts.get("ok", 0), "skipped": counts.get("skipped", 0), "errors": counts.get("error", 0)}
    if unmatched:
        summary["files_in_no_task_folder"] = sum(unmatched.values())
        summary["no_task_folders"] = ", ".join(f"{name} ({n})" for name, n in sorted(unmatched.items()))
    return summary


def _open_source(job):
    """The job's input as a binary file: its staged upload, or the server path it names."""
    if job.params.get("staged"):
        return open_staged(job.params["staged"], max_bytes=settings.BENCHFORGE_MAX_ARCHIVE_BYTES)
    return open(job.params["path"], "rb")


def _task_from_folder(name: str, by_slug: dict[str, Task]) -> list[Task]:
    parts = PurePosixPath(name).parts
    return [by_slug[parts[0]]] if len(parts) > 1 and parts[0] in by_slug else []


def _unmatched_folder(name: str, by_slug: dict[str, Task]) -> str:
    """The top folder of a file when it names no task of the benchmark ('' when it does, or
    when the file is at the top): such a file would silently import without a task from it."""
    if _unsafe_member_name(name):
        return ""  # refused anyway (absolute path or '..')
    parts = PurePosixPath(name).parts
    return parts[0] if len(parts) > 1 and parts[0] not in by_slug else ""


def _folder_warning(folder: str, by_slug: dict[str, Task]) -> str:
    if not folder:
        return ""
    return (
        f"folder '{folder}' matches no task slug of this benchmark, so it gave this image no task "
        f"(task folders: {', '.join(sorted(by_slug)) or 'none'})."
    )


def _unsafe_member_name(name: str) -> bool:
    path = PurePosixPath(name.replace("\\", "/"))
    return path.is_absolute() or ".." in path.parts or (len(name) > 1 and name[1] == ":")


def _zip_members(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    return [m for m in archive.infolist() if not m.is_dir() and not any(j in m.filename for j in _JUNK_NAMES)]


def check_zip_members(members: list[zipfile.ZipInfo]) -> None:
    """Refuse an archive with more entries, or more unpacked bytes, than an import may hold."""
    limit = settings.BENCHFORGE_MAX_ARCHIVE_ENTRIES
    if len(members) > limit:
        raise DomainError(
            gettext("The zip holds %(n)s files; an import takes at most %(limit)s. Split it into several zips.")
            % {"n": f"{len(members):,}", "limit": f"{limit:,}"}
        )
    unpacked, cap = sum(m.file_size for m in members), settings.BENCHFORGE_MAX_ARCHIVE_UNPACKED_BYTES
    if unpacked > cap:
        raise DomainError(
            gettext("The zip unpacks to %(size)s GB; an import takes at most %(cap)s GB. Split it into several zips.")
            % {"size": f"{unpacked / 1e9:.1f}", "cap": f"{cap / 1e9:.1f}"}
        )


def run_zip_import(run):
    job = run.job
    tasks, common = _job_context(job)
    done = run.done_keys()
    by_slug = {t.slug: t for t in run.benchmark.tasks.all()}
    max_bytes = settings.BENCHFORGE_MAX_UPLOAD_BYTES
    source = None
    try:
        source = _open_source(job)
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as exc:
        if source is not None:
            source.close()  # from S3: a temporary copy of the whole archive
        raise DomainError(gettext("The upload is not a readable zip archive (%(problem)s).") % {"problem": exc}) from None
    with source, archive:
        members = _zip_members(archive)
        check_zip_members(members)
        run.set_total(len(members))
        unmatched = Counter(f for f in (_unmatched_folder(m.filename, by_slug) for m in members) if f)
        seen: dict[str, int] = {}

        def units():
            for member in members:
                # Keys must be stable across runs (resume) and unique even for repeated names.
                seen[member.filename] = seen.get(member.filename, 0) + 1
                key = member.filename if seen[member.filename] == 1 else f"{member.filename} (copy {seen[member.filename]})"
                if key in done:
                    continue

                def load(member=member) -> bytes:
                    if _unsafe_member_name(member.filename):
                        raise DomainError("Unsafe name inside the zip (absolute path or '..'); entry ignored.")
                    if member.file_size > max_bytes:
                        raise DomainError(
                            f"Entry is {member.file_size / 1e6:.1f} MB uncompressed; the limit is {max_bytes / 1e6:.0f} MB."
                        )
                    if member.flag_bits & 0x1:
                        raise DomainError("Entry is encrypted; re-create the zip without a password.")
                    try:
                        with archive.open(member) as fh:  # zipfile reads members safely from several threads
                            return fh.read(max_bytes + 1)
                    except (zipfile.BadZipFile, OSError, EOFError) as exc:
                        raise DomainError(f"Entry cannot be extracted ({exc}).") from None

                file = IngestFile(
                    load,
                    size=member.file_size,
                    original_name=PurePosixPath(member.filename).name,
                    tasks=tasks + _task_from_folder(member.filename, by_slug),
                    **common,
                )
                yield _Unit(key, file, _folder_warning(_unmatched_folder(member.filename, by_slug), by_slug))

        _ingest_units(run, units())
    return _summary(run, unmatched)


def run_folder_import(run):
    job = run.job
    tasks, common = _job_context(job)
    done = run.done_keys()
    by_slug = {t.slug: t for t in run.benchmark.tasks.all()}
    root = Path(job.params["path"])
    if not root.is_dir():
        raise DomainError(f"{root} is not a folder on this server.")
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and p.name not in _JUNK_NAMES)
    run.set_total(len(files))
    unmatched = Counter(f for f in (_unmatched_folder(p.relative_to(root).as_posix(), by_slug) for p in files) if f)

    def units():
        for path in files:
            key = path.relative_to(root).as_posix()
            if key in done:
                continue

            def load(path=path) -> bytes:
                if path.stat().st_size > settings.BENCHFORGE_MAX_UPLOAD_BYTES:
                    raise DomainError(f"File is larger than {settings.BENCHFORGE_MAX_UPLOAD_BYTES / 1e6:.0f} MB.")
                return path.read_bytes()

            file = IngestFile(
                load, size=path.stat().st_size, original_name=path.name, tasks=tasks + _task_from_folder(key, by_slug), **common
            )
            yield _Unit(key, file, _folder_warning(_unmatched_folder(key, by_slug), by_slug))

    _ingest_units(run, units())
    return _summary(run, unmatched)


@dataclass
class UrlRow:
    line: int
    url: str
    tasks: str = ""
    source: str = ""
    license: str = ""


def parse_url_list(data: bytes | str, name: str = "The URL list") -> list[UrlRow]:
    """CSV with a `url` column (optional task, source, license) or plain text, one URL a line
    ('#' comments and blank lines skipped). All or nothing: a line the reader refuses (not UTF-8,
    too long, a NUL) refuses the file, as a DomainError naming the line."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        lines = TableReader(io.BytesIO(data), name=name, format=LINES)
        first = next((r.value for r in lines if not r.problem), "")
        if "url" not in [c.strip().lower() for c in first.split(",")]:
            lines = TableReader(io.BytesIO(data), name=name, format=LINES)
            rows = [UrlRow(r.line, r.value) for r in lines if not r.problem]
            lines.refuse_if_problems()
            return rows
        reader = TableReader(io.BytesIO(data), name=name, format=CSV, fold_header=True)
        rows = []
        for record in reader:
            if record.problem:
                continue
            get = lambda column: (record.value.get(column) or "").strip()  # noqa: E731
            if get("url") and not get("url").startswith("#"):
                rows.append(UrlRow(record.line, get("url"), get("task"), get("source"), get("license")))
        reader.refuse_if_problems()
        return rows
    except FileProblem as exc:
        raise DomainError(exc.message) from None


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
            data = handle.read()
    except OSError as exc:
        raise DomainError(gettext("The URL list cannot be read (%(problem)s).") % {"problem": exc}) from None
    rows = parse_url_list(data)
    run.set_total(len(rows))
    by_key = {}
    for task in run.benchmark.tasks.all():
        by_key[task.name.lower()] = task
        by_key[task.slug.lower()] = task
        if task.name_en:
            by_key[task.name_en.lower()] = task
    max_bytes = settings.BENCHFORGE_MAX_UPLOAD_BYTES
    with outbound.download_client() as client:  # shared by the download threads

        def units():
            for row in rows:
                key = f"line {row.line}: {row.url}"
                if key in done:
                    continue
                try:
                    row_tasks = _resolve_tasks(run.benchmark, row.tasks, by_key)
                except DomainError as exc:
                    yield _Unit(key, IngestFile(_refuse(exc)))
                    continue
                file = IngestFile(
                    lambda url=row.url: outbound.download(client, url, max_bytes=max_bytes),
                    original_name=PurePosixPath(urlsplit(row.url).path).name,
                    source=row.source or common["source"] or row.url,
                    license=row.license or common["license"],
                    tasks=tasks + [t for t in row_tasks if t not in tasks],
                    site=outbound.site_of(row.url),
                )
                yield _Unit(key, file)

        _ingest_units(run, units(), loaders=settings.BENCHFORGE_DOWNLOADS, per_site=settings.BENCHFORGE_DOWNLOADS_PER_SITE)
    return _summary(run)


def _check_import_file(kind: str, file) -> None:
    """Refuse an upload that cannot be what the user said it is, before any job starts."""
    if kind == "zip":
        if not zipfile.is_zipfile(file):
            raise DomainError(gettext("The file is not a zip archive; choose a .zip of images (or pick 'URL list')."))
        file.seek(0)
        try:
            with zipfile.ZipFile(file) as archive:
                check_zip_members(_zip_members(archive))
        except zipfile.BadZipFile as exc:
            raise DomainError(gettext("The zip archive is damaged (%(problem)s).") % {"problem": exc}) from None
    else:
        if not parse_url_list(file.read(), getattr(file, "name", "") or "The URL list"):
            raise DomainError(gettext("The URL list has no URLs: one URL per line, or a CSV with a url column."))
    file.seek(0)


def start_upload_import(benchmark: Benchmark, *, user, kind: str, file, tasks=(), source: str = "", license: str = ""):
    """Stage an uploaded zip or URL list and start its import job."""
    if kind not in ("zip", "url_list"):
        raise DomainError(gettext("Choose what the file is: a zip of images or a URL list."))
    tasks = check_tasks(benchmark, tasks)
    _check_import_file(kind, file)
    staged = stage_upload(file, ".zip" if kind == "zip" else ".txt")
    job = create_import_job(
        "ingest_zip" if kind == "zip" else "ingest_url_list",
        benchmark,
        user=user,
        staged=staged,
        source=source,
        license=license,
        tasks=tasks,
    )
    return jobs.enqueue(job)

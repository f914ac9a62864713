"""External benchmarks imported as a Benchmark of external items, so QC (and review, and exports)
treat them like our own. One job kind, `qc_import`, per file:

  mmbench_tsv   MMBench-style TSV (METHODS section 6): index, question, hint, A-D, answer,
                category, l2-category, split, image. Streamed by benchforge_harness.tabular's reader, one row
                at a time (a 1 GB file is never held in memory). The image is base64, or a short number: the
                index of another row whose image it shares, or a list of either for several images.
                Rows with index i + k*1,000,000 are circular copies of row i: collapsed into it.
                Test rows may lack the answer.
  mllm_bench    MLLM-Bench questions, JSON (a list) or JSONL: id, question, level, capability,
                question_type, criteria (numbered lines), optional reference_answer.
  alignmmbench  AlignMMBench metadata.jsonl: annotation's importer (annotation/alignmmbench.py).

The file is read twice: a first pass checks all of it and stores nothing (a problem of the file,
such as a byte that is not UTF-8, fails the import with nothing imported), the second imports.
Each row is a unit of the job keyed by its line: a malformed row is an error entry saying what is
wrong with it ("line 7: answer 'E' is not among the non-empty options (A-C)"), the valid rows
import. Images go through curation's pipeline (hashes, dedup, contamination flags) and are
accepted (their publisher screened them). Resuming skips the rows already done.
"""

from __future__ import annotations

import ast
import base64
import binascii
import os
import re
import time
from contextlib import contextmanager
from pathlib import Path

from django.core.files.storage import default_storage
from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from annotation.models import Item
from annotation.services import import_external_items, start_alignmmbench_import
from benchforge import permissions
from benchforge.bulk import insert_rows, update_rows
from benchforge.errors import DomainError
from benchforge.inputs import is_digits
from benchforge_harness.tabular import JSON, TSV, FileProblem, Limits, TableReader, json_depth_exceeds, loads_bounded
from curation.models import Benchmark, Category, Image, Task
from curation.services import (
    CREATED_BENCHMARK,
    INGEST_BATCH,
    INGEST_BATCH_BYTES,
    Ingester,
    IngestFile,
    IngestOutcome,
    create_benchmark,
    discard_created_benchmark,
    screen_images,
    unique_task_slug,
)
from jobs import services as jobs
from jobs.runner import OK, SKIPPED, JobRun
from jobs.staging import open_staged, stage_upload

from ..models import ExternalSource

IMPORT_JOB = "qc_import"
MMBENCH_TSV, MLLM_BENCH, ALIGNMMBENCH = "mmbench_tsv", "mllm_bench", "alignmmbench"
FORMATS = {
    MMBENCH_TSV: gettext_lazy("MMBench-style TSV"),
    MLLM_BENCH: gettext_lazy("MLLM-Bench questions (JSON or JSONL)"),
    ALIGNMMBENCH: "AlignMMBench metadata.jsonl",
}
REQUIRED_COLUMNS = ("index", "question", "A", "B", "image")
LETTERS = "ABCD"
CIRCULAR_STEP = 1_000_000
MAX_REFERENCE_DIGITS = 8  # a shared-image reference is a short number; base64 of an image never is
CHUNK = 200
PARSED = "\x00options, answer, split"  # a queued row's checked MCQ fields (no header is named so: no NUL in a cell)
PROGRESS_SECONDS = 2.0
QUESTION_TYPES = {
    "open-ended": Item.QuestionType.OPEN,
    "open": Item.QuestionType.OPEN,
    "close-ended": Item.QuestionType.CLOSED,
    "closed-ended": Item.QuestionType.CLOSED,
    "closed": Item.QuestionType.CLOSED,
    "compound": Item.QuestionType.COMPOUND,
}

# The reader's limits: a TSV row carries its images as base64 (MMBench's are tens of kB; a cell
# may hold a few large images), an MLLM-Bench row a few kB of text.
LIMITS = Limits()


def at_line(line: int, problem) -> str:
    """A row's report: where it is in the file, then what happened to it."""
    return _("line %(line)s: %(problem)s") % {"line": line, "problem": problem}


class RowProblem(ValueError):
    """What is wrong with one row (its message completes "line N: ...")."""


# ---------------------------------------------------------------- starting an import


def start_import(*, user, file, format: str, name: str = "", benchmark: Benchmark | None = None):
    """Stage an uploaded file and import it as a job into `benchmark`, or into a new external
    benchmark called `name`. Returns the job."""
    permissions.require_researcher(user, "Importing a benchmark")
    if format not in FORMATS:
        raise DomainError(
            _("Unknown format '%(format)s'; use one of: %(formats)s.") % {"format": format, "formats": ", ".join(FORMATS)}
        )
    created = benchmark is None
    if benchmark is None:
        if not name.strip():
            raise DomainError(_("Give the imported benchmark a name."))
        benchmark = create_benchmark(
            name=name.strip(), user=user, preset="alignmmbench" if format == ALIGNMMBENCH else "", description="Imported."
        )
        Benchmark.objects.filter(pk=benchmark.pk).update(is_external=True)
        benchmark.is_external = True
    if format == ALIGNMMBENCH:
        return start_alignmmbench_import(benchmark, user=user, file=file, created_benchmark=created)
    suffix = ".tsv" if format == MMBENCH_TSV else Path(getattr(file, "name", "") or "q.jsonl").suffix[:10] or ".jsonl"
    staged = stage_upload(file, suffix)
    return jobs.start_job(
        IMPORT_JOB,
        user=user,
        benchmark=benchmark,
        params={
            "staged": staged,
            "filename": Path(getattr(file, "name", "") or f"upload{suffix}").name,
            "format": format,
            CREATED_BENCHMARK: created,
        },
    )


def import_path(benchmark: Benchmark, path, *, user, format: str = MMBENCH_TSV):
    """Import a file on this server now (management commands, benches); returns the finished job."""
    permissions.require_researcher(user, "Importing a benchmark")
    job = jobs.create_job(
        IMPORT_JOB, user=user, benchmark=benchmark, params={"path": str(path), "filename": Path(path).name, "format": format}
    )
    return jobs.run_now(job)


# ---------------------------------------------------------------- reading the file


@contextmanager
def _open(job):
    """The job's file as a binary stream, and its size (for progress)."""
    staged = job.params.get("staged")
    if staged:
        size = default_storage.size(staged)
        with open_staged(staged) as handle:
            yield handle, size
        return
    path = Path(job.params["path"])
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise DomainError(f"{path.name} cannot be read ({exc.strerror}).") from None
    with handle:
        yield handle, os.path.getsize(path)


class _Taxonomy:
    """Categories and tasks named by the file, made on first use (matched by name)."""

    def __init__(self, benchmark: Benchmark):
        self.benchmark = benchmark
        categories = Category.objects.filter(benchmark=benchmark)
        tasks = Task.objects.filter(benchmark=benchmark).select_related("category")
        # English names too: a Chinese preset's tasks are named in English in the released files.
        self.categories = {n.lower(): c for c in categories for n in (c.name_en, c.name) if n}
        self.tasks = {n.lower(): t for t in tasks for n in (t.name_en, t.name) if n}
        self.slugs = set(Task.objects.filter(benchmark=benchmark).values_list("slug", flat=True))

    def task(self, category_name: str, task_name: str) -> Task:
        category_name = (category_name or "").strip() or "General"
        task_name = (task_name or "").strip() or category_name
        task = self.tasks.get(task_name.lower())
        if task is not None:
            return task
        category = self.categories.get(category_name.lower())
        if category is None:
            category = Category.objects.create(benchmark=self.benchmark, name=category_name[:200], order=len(self.categories))
            self.categories[category_name.lower()] = category
        slug, n = unique_task_slug(task_name), 1
        while slug in self.slugs:
            n += 1
            slug = f"{unique_task_slug(task_name)[:75]}-{n}"
        self.slugs.add(slug)
        task = Task.objects.create(benchmark=self.benchmark, category=category, name=task_name[:200], slug=slug)
        self.tasks[task_name.lower()] = task
        return task


class _Batch:
    """Rows ready to become items, created a chunk at a time with their entries and sources."""

    def __init__(self, run: JobRun, fmt: str):
        self.run, self.fmt = run, fmt
        self.rows: list[tuple[str, int, dict, dict]] = []  # (key, line, spec, source fields)
        self.imported: set[str] = set()

    def add(self, key: str, line: int, spec: dict, source: dict) -> None:
        self.rows.append((key, line, spec, source))
        if len(self.rows) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        rows, self.rows = self.rows, []
        if not rows:
            return
        job = self.run.job
        images = {i for _k, _l, spec, _s in rows for i in spec.get("images", [])}
        pending = list(Image.objects.filter(pk__in=images, status=Image.Status.PENDING).values_list("pk", flat=True))
        with transaction.atomic():
            if pending:  # screened by their publisher
                screen_images(self.run.benchmark, pending, action="accept", user=job.created_by)
            items, problems = import_external_items(self.run.benchmark, [spec for _k, _l, spec, _s in rows], user=job.created_by)
            made = {item.external_id: item for item in items}
            entries, sources = [], []
            for n, (key, line, spec, source) in enumerate(rows):
                if n in problems:
                    entries.append((key, "error", f"{key}: {' '.join(problems[n])}", {"row": True}))
                    continue
                item = made[spec["external_id"]]
                self.imported.add(spec["external_id"])
                sources.append((item.pk, job.pk, self.fmt, line, source["index"], source.get("split", "")))
                entries.append(
                    (
                        key,
                        "ok",
                        f"{key}: item #{item.pk}",
                        {"row": True, "item": item.pk, "line": line, **source, "images": spec.get("images", [])},
                    )
                )
            insert_rows(ExternalSource, ("item_id", "job_id", "format", "line", "index", "split"), sources)
            self.run.record_many(entries)


class _RowsWithImages:
    """Rows of a TSV in file order, each waiting for its images before it becomes an item: the
    images are decoded and hashed in threads and stored a batch at a time by curation's Ingester
    (the next batch decoding while this one is written). Rows finish in the order they were read."""

    def __init__(self, run: JobRun, ingester: Ingester, finish, name: str):
        self.run, self.ingester, self.finish, self.name = run, ingester, finish, name
        self.open: list[tuple] = []  # (line, index, row, task, image ids or None, files)
        self.files: list[IngestFile] = []
        self.bytes = 0  # of self.files
        self.flight: tuple | None = None  # (ticket, rows) submitted, not stored yet

    def add(self, line: int, index: int, row: dict, task: Task, *, images=(), shares=()) -> None:
        """Queue a row: with its own decoded `images`, or `shares` (the indexes of earlier rows
        whose images it uses; settled when it comes up, after those rows)."""
        files = [
            IngestFile(
                lambda data=data: data, size=len(data), original_name=f"{self.name}#{index}", source=self.name, tasks=[task]
            )
            for data in images
        ]
        self.open.append((line, index, row, task, shares, files))
        self.files += files
        self.bytes += sum(f.size for f in files)
        if len(self.files) >= INGEST_BATCH or self.bytes >= INGEST_BATCH_BYTES:
            self._submit()

    def waits_for(self, indexes) -> bool:
        rows = self.open + (self.flight[1] if self.flight else [])
        return bool({r[1] for r in rows} & set(indexes))

    def _submit(self) -> None:
        ticket = self.ingester.submit(self.files)
        if self.flight is not None:
            self._complete(*self.flight)
        self.flight, self.open, self.files, self.bytes = (ticket, self.open), [], [], 0

    def flush(self) -> None:
        if self.open:
            self._submit()
        if self.flight is not None:
            flight, self.flight = self.flight, None
            self._complete(*flight)

    def _complete(self, ticket, rows) -> None:
        outcomes = iter(self.ingester.store(ticket))
        for line, index, row, task, shares, files in rows:
            found = [next(outcomes) for _ in files]
            refused = next((o for o in found if not isinstance(o, IngestOutcome)), None)
            if refused is not None:
                problem = _("the image is not a usable image (%(why)s)") % {"why": refused.message}
                self.run.record(f"line {line}", "error", at_line(line, problem), {"row": True})
                continue
            try:
                self.finish(line, index, row, task, shares, [o.image.pk for o in found])
            except RowProblem as exc:
                self.run.record(f"line {line}", "error", at_line(line, exc), {"row": True})


class _Progress:
    """How far the pass over the file is: checking it (the first pass) or reading it (the second)."""

    def __init__(self, run: JobRun, handle, size: int, name: str, checking: bool = False):
        self.run, self.handle, self.size, self.name, self.checking = run, handle, size, name, checking
        self.last = 0.0

    def tick(self, rows: int, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < PROGRESS_SECONDS:
            return
        self.last = now
        try:
            percent = min(100, round(100 * self.handle.tell() / self.size)) if self.size else None
        except (OSError, ValueError):
            percent = None
        said = {"name": self.name, "rows": rows, "percent": percent}
        if percent is None:
            message = (
                _("Checking %(name)s: %(rows)s row(s) so far.")
                if self.checking
                else _("Reading %(name)s: %(rows)s row(s) so far.")
            )
        elif self.checking:
            message = _("Checking %(percent)s%% of %(name)s: %(rows)s row(s) so far.")
        else:
            message = _("Reading %(percent)s%% of %(name)s: %(rows)s row(s) so far.")
        self.run.say(message % said)


# ---------------------------------------------------------------- MMBench TSV


def _image_values(value: str) -> list[str]:
    value = value.strip()
    if value.startswith("["):
        if json_depth_exceeds(value, 1):
            raise RowProblem(_("the image list must be a flat list of base64 images or row indexes (it nests lists)"))
        try:
            entries = loads_bounded(value)
        except ValueError:
            try:  # a Python-style list with single quotes; flat (checked above), so literal_eval is safe
                entries = ast.literal_eval(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise RowProblem(_("the image column starts a list that cannot be read")) from None
        if not isinstance(entries, list) or not entries or not all(isinstance(e, (str, int)) for e in entries):
            raise RowProblem(_("the image list must hold base64 images or row indexes"))
        return [str(e).strip() for e in entries]
    return [value]


def _is_reference(value: str) -> bool:
    return is_digits(value) and len(value) <= MAX_REFERENCE_DIGITS


def _decode(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise RowProblem(_("the image is not valid base64")) from None


def _mcq_fields(row: dict) -> tuple[list[str], str, str]:
    """Options (2-4, consecutive from A), answer letter ('' when absent), split."""
    values = [(row.get(letter) or "").strip() for letter in LETTERS]
    while values and not values[-1]:
        values.pop()
    gaps = [LETTERS[n] for n, v in enumerate(values) if not v]
    if gaps:
        raise RowProblem(
            _("option %(letter)s is empty but a later option is not; options must run from A without gaps") % {"letter": gaps[0]}
        )
    if len(values) < 2:
        raise RowProblem(_("fewer than 2 options (%(n)s): a multiple-choice item needs at least A and B") % {"n": len(values)})
    seen: dict[str, str] = {}
    for letter, text in zip(LETTERS, values):
        folded = " ".join(text.casefold().split())
        if folded in seen:
            raise RowProblem(
                _("repeated options: %(first)s and %(second)s are both '%(text)s'")
                % {"first": seen[folded], "second": letter, "text": text[:60]}
            )
        seen[folded] = letter
    split = (row.get("split") or "").strip()
    answer = (row.get("answer") or "").strip().upper()
    letters = LETTERS[: len(values)]
    if answer and answer not in letters:
        raise RowProblem(
            _("answer '%(answer)s' is not among the non-empty options (A-%(last)s)")
            % {"answer": answer[:10], "last": letters[-1]}
        )
    if not answer and split.lower() != "test":
        raise RowProblem(
            _("no answer key (only test rows may lack one; this row's split is '%(split)s')") % {"split": split or "empty"}
        )
    return values, answer, split


def run_import(run: JobRun) -> dict:
    """Two passes over the file: the first reads all of it and stores nothing, so a file-level
    problem (encoding, header, structure, too many bad rows) fails the job with nothing imported
    (and removes the benchmark the import made for itself); the second stores the rows."""
    if run.benchmark is None:
        raise DomainError(
            "This import's file was refused and the benchmark made for it removed; start a new import with the corrected file."
        )
    fmt = run.params.get("format", MMBENCH_TSV)
    try:
        if fmt == MLLM_BENCH:
            _check_file(run, JSON, _check_mllm_row)
            return _run_mllm(run)
        _check_file(run, TSV, _check_tsv_row)
        return _run_tsv(run)
    except FileProblem as exc:
        removed = discard_created_benchmark(run.job)
        raise DomainError(f"{exc.message} {removed}".strip()) from None


def _reader(handle, name: str, fmt: str, *, counting: bool = True) -> TableReader:
    limits = LIMITS if counting else Limits(max_problems=2**62)  # the first pass counted them already
    if fmt == TSV:
        return TableReader(handle, name=name, format=TSV, limits=limits, required=REQUIRED_COLUMNS)
    return TableReader(handle, name=name, format=JSON, limits=limits)


def _check_file(run: JobRun, fmt: str, check_row) -> None:
    """The first pass: every line decoded and parsed, each row's own checks made, nothing stored.
    Raises FileProblem for a problem of the file (or more row problems than the reader allows)."""
    name = run.job.params.get("filename") or "file"
    with _open(run.job) as (handle, size):
        progress = _Progress(run, handle, size, name, checking=True)
        reader = _reader(handle, name, fmt)
        for record in reader:
            progress.tick(reader.rows)
            if record.problem or record.blank:
                continue
            try:
                _check_cells(record)
                check_row(record.value)
            except RowProblem as exc:
                reader.problem(record, str(exc))
        if fmt == TSV and reader.header is None:
            raise FileProblem(f"{name} is empty. Nothing was imported.")


def _check_cells(record) -> None:
    """A TSV row short of a required column (pandas would read NaN there) is a row problem; other
    columns a short row lacks are read as empty, as pandas reads them."""
    missing = [c for c in record.missing if c in REQUIRED_COLUMNS]
    if missing:
        raise RowProblem(
            _("missing columns: %(columns)s (the row has %(cells)s of %(all)s)")
            % {
                "columns": ", ".join(missing),
                "cells": len(record.value) - len(record.missing),
                "all": len(record.value),
            }
        )


def _check_tsv_row(row: dict) -> None:
    """What a TSV row can be checked for without the database (the second pass checks the rest)."""
    if not re.fullmatch(r"[0-9]+", row["index"].strip()):
        raise RowProblem(_("index '%(index)s' is not a whole number") % {"index": row["index"].strip()[:20]})
    if int(row["index"]) >= CIRCULAR_STEP:
        return
    if not row["question"].strip():
        raise RowProblem(_("missing columns: the question is empty"))
    _mcq_fields(row)
    values = _image_values(row["image"])
    if not values or not all(values):
        raise RowProblem(_("missing columns: the image is empty"))


def _check_mllm_row(obj: dict) -> None:
    missing = [f for f in ("id", "question") if obj.get(f) in (None, "")]
    if missing:
        raise RowProblem(_("missing fields: %(fields)s") % {"fields": ", ".join(missing)})
    _question_type(obj)
    _criteria(obj.get("criteria"))


def _question_type(obj: dict) -> str:
    qtype = str(obj.get("question_type") or "open-ended").strip().lower()
    if qtype not in QUESTION_TYPES:
        raise RowProblem(_("question_type '%(type)s' is not open-ended, close-ended or compound") % {"type": qtype[:40]})
    return QUESTION_TYPES[qtype]


def _run_tsv(run: JobRun) -> dict:
    """The second pass over an MMBench TSV: rows stored as items (their images ingested), rows that
    share another row's image once that row is stored, circular copies collapsed into their item."""
    tsv = _TsvImport(run)
    tsv.read_rows()
    tsv.finish_waiting()  # their rows are all read now
    tsv.batch.flush()
    tsv.collapse_copies()
    return _summary(run, tsv.name)


class _TsvImport:
    """One run of a TSV import, its state explicit: what earlier runs stored (first line of each
    index, the images of each stored row), the rows waiting for a row not read yet, and the
    circular copies, settled once every row is read."""

    def __init__(self, run: JobRun) -> None:
        self.run, self.job, self.benchmark = run, run.job, run.benchmark
        self.name = self.job.params.get("filename") or "file.tsv"
        self.done = run.done_keys()
        self.first_line: dict[int, int] = {}  # index -> the line it was first seen on
        self.images_of: dict[int, list[int]] = {}  # index -> image ids of an imported (or skipped) row
        for data in run.recorded(outcomes=(OK, SKIPPED)).values():
            if data.get("index") is not None and data.get("line"):
                self.first_line.setdefault(int(data["index"]), int(data["line"]))
                if data.get("images"):
                    self.images_of[int(data["index"])] = data["images"]
        existing = Item.objects.filter(benchmark=self.benchmark).exclude(external_id="").values_list("external_id", flat=True)
        self.existing = set(existing)
        self.taxonomy = _Taxonomy(self.benchmark)
        self.batch = _Batch(run, MMBENCH_TSV)
        self.waiting: list[tuple[int, dict, list[str], Task]] = []  # rows sharing an image of a row not read yet
        self.copies: list[tuple[int, int]] = []  # (line, index) of circular copies

    # ------------------------------------------------------------ reading the file

    def read_rows(self) -> None:
        rows_read = 0
        ingesting = Ingester(self.benchmark, collected_by=self.job.created_by, job=self.job)
        with ingesting as ingester, _open(self.job) as (handle, size):
            pending = _RowsWithImages(self.run, ingester, self.finish_queued, self.name)
            progress = _Progress(self.run, handle, size, self.name)
            reader = _reader(handle, self.name, TSV, counting=False)
            for record in reader:
                rows_read += 1
                progress.tick(rows_read)
                if f"line {record.line}" in self.done or record.blank:
                    continue
                try:
                    self._read_row(record, pending)
                except RowProblem as exc:
                    self.run.record(f"line {record.line}", "error", at_line(record.line, exc), {"row": True})
            progress.tick(rows_read, force=True)
            pending.flush()

    def _read_row(self, record, pending: _RowsWithImages) -> None:
        """One row: checked, then skipped, kept as a circular copy, queued with its images, or left
        waiting for the row whose image it shares. Raises RowProblem for a row refused."""
        line = record.line
        if record.problem:
            raise RowProblem(record.problem)
        _check_cells(record)
        row = record.value
        raw_index = row["index"].strip()
        if not re.fullmatch(r"[0-9]+", raw_index):
            raise RowProblem(_("index '%(index)s' is not a whole number") % {"index": raw_index[:20]})
        index = int(raw_index)
        if index >= CIRCULAR_STEP:
            self.copies.append((line, index))
            return
        if index in self.first_line:
            raise RowProblem(
                _("duplicate index %(index)s (first on line %(line)s)") % {"index": index, "line": self.first_line[index]}
            )
        self.first_line[index] = line
        if not row["question"].strip():
            raise RowProblem(_("missing columns: the question is empty"))
        mcq = _mcq_fields(row)
        if str(index) in self.existing:
            self.run.record(
                f"line {line}",
                "skipped",
                at_line(line, _("index %(index)s is already in the benchmark") % {"index": index}),
                {"row": True, "index": index, "line": line, "already": True},
            )
            return
        task = self.taxonomy.task(row.get("l2-category", ""), row.get("category", ""))
        values = _image_values(row["image"])
        if not values or not all(values):
            raise RowProblem(_("missing columns: the image is empty"))
        # The row waits without its base64 text (it can be megabytes): the decoded bytes are enough.
        queued = {**row, "image": "", PARSED: mcq}
        if not any(_is_reference(v) for v in values):
            pending.add(line, index, queued, task, images=[_decode(value) for value in values])
            return
        if not all(_is_reference(v) for v in values):
            raise RowProblem(_("the image list mixes base64 images and row indexes"))
        shared = [int(v) for v in values]
        # Rows it points to that are read already are done, or still being stored (then it waits
        # in line behind them); rows not read yet are waited for to the end.
        if all(i in self.images_of or pending.waits_for([i]) for i in shared):
            pending.add(line, index, queued, task, shares=shared)
        else:
            self.waiting.append((line, queued, values, task))

    # ------------------------------------------------------------ storing a row

    def finish_row(self, line: int, index: int, row: dict, task: Task, image_ids: list[int]) -> None:
        options, answer, split = row[PARSED]
        spec = {
            "task": task,
            "external_id": str(index),
            "kind": Item.Kind.MCQ,
            "question_type": Item.QuestionType.CLOSED,
            "question": row["question"].strip(),
            "hint": (row.get("hint") or "").strip(),
            "choices": options,
            "answer": answer,
            "images": image_ids,
        }
        self.images_of[index] = image_ids
        self.batch.add(f"line {line}", line, spec, {"index": str(index), "split": split})

    def finish_queued(self, line: int, index: int, row: dict, task: Task, shares: list[int], image_ids: list[int]) -> None:
        """A queued row whose images are stored (or whose shared rows are settled)."""
        if not shares:
            self.finish_row(line, index, row, task, image_ids)
        elif all(i in self.images_of for i in shares):
            self.finish_row(line, index, row, task, [i for v in shares for i in self.images_of[v]])
        else:  # a row it shares with was refused: said at the end, as for any row it waited for
            self.waiting.append((line, row, [str(i) for i in shares], task))

    def finish_waiting(self) -> None:
        """The rows that waited for a row read after them: stored, or refused naming that row."""
        for line, row, values, task in self.waiting:
            key = f"line {line}"
            absent = [v for v in values if int(v) not in self.first_line]
            failed = [v for v in values if int(v) in self.first_line and int(v) not in self.images_of]
            if absent:
                problem = _("the image refers to index %(index)s, which no row of the file has") % {"index": absent[0]}
                self.run.record(key, "error", at_line(line, problem), {"row": True})
            elif failed:
                problem = _("the image is that of index %(index)s, which was not imported (see its line)") % {"index": failed[0]}
                self.run.record(key, "error", at_line(line, problem), {"row": True})
            else:
                try:
                    self.finish_row(line, int(row["index"]), row, task, [i for v in values for i in self.images_of[int(v)]])
                except RowProblem as exc:
                    self.run.record(key, "error", at_line(line, exc), {"row": True})

    # ------------------------------------------------------------ circular copies

    def _copy_entry(self, line: int, index: int, collapsed: dict[str, list[str]]) -> tuple:
        key = f"line {line}"
        base, k = index % CIRCULAR_STEP, index // CIRCULAR_STEP
        if base not in self.first_line:
            problem = _("circular copy %(k)s of index %(base)s, whose own row is not in the file") % {"k": k, "base": base}
            return key, "error", at_line(line, problem), {"row": True}
        if str(base) in self.batch.imported or str(base) in self.existing or base in self.images_of:
            collapsed.setdefault(str(base), []).append(str(index))
            said = _("circular copy %(k)s of index %(base)s, collapsed into it") % {"k": k, "base": base}
        else:
            said = _("circular copy %(k)s of index %(base)s, which was not imported") % {"k": k, "base": base}
        return key, "skipped", at_line(line, said), {"row": True, "copy_of": base}

    def collapse_copies(self) -> None:
        """Each circular copy recorded (collapsed into its item, or why not); the items keep their copies' indexes."""
        collapsed: dict[str, list[str]] = {}
        entries = [self._copy_entry(line, index, collapsed) for line, index in self.copies if f"line {line}" not in self.done]
        for start in range(0, len(entries), 500):
            self.run.record_many(entries[start : start + 500])
        sources = ExternalSource.objects.filter(item__benchmark=self.benchmark, item__external_id__in=list(collapsed))
        update_rows(
            ExternalSource,
            ("copies",),
            [
                (pk, sorted(set(copies) | set(collapsed[external_id]), key=int))
                for pk, copies, external_id in sources.values_list("pk", "copies", "item__external_id")
            ],
        )


def _import_outcome(outcome: str, data: dict) -> str | None:
    if outcome == "error":
        return "errors"
    if data.get("copy_of") is not None:
        return "circular_copies"
    if data.get("already"):
        return "already_imported"
    return "imported" if outcome == "ok" else None


def _summary(run: JobRun, name: str) -> dict:
    tally = run.tally(_import_outcome)
    counts = {name: tally[name] for name in ("imported", "errors", "circular_copies", "already_imported")}
    counts["without_answer"] = Item.objects.filter(benchmark=run.benchmark, external_source__job=run.job, answer="").count()
    counts["images"] = Image.objects.filter(job=run.job).count()
    run.set_total(sum(run.outcome_counts().values()))
    run.say(
        ngettext(
            "%(name)s: %(imported)s item(s) imported (%(without_answer)s test row(s) without an answer), "
            "%(circular_copies)s circular copy collapsed, %(already_imported)s already there, "
            "%(errors)s row(s) with errors.",
            "%(name)s: %(imported)s item(s) imported (%(without_answer)s test row(s) without an answer), "
            "%(circular_copies)s circular copies collapsed, %(already_imported)s already there, "
            "%(errors)s row(s) with errors.",
            counts["circular_copies"],
        )
        % {"name": name, **counts}
    )
    return counts


# ---------------------------------------------------------------- MLLM-Bench questions


def _criteria(value) -> list[dict]:
    if value in (None, ""):
        return []
    if isinstance(value, list):
        texts = [str(v).strip() for v in value if str(v).strip()]
    elif isinstance(value, str):
        texts = [re.sub(r"^\s*\d+[.)]\s*", "", line).strip() for line in value.splitlines() if line.strip()]
    else:
        raise RowProblem(_("'criteria' must be text or a list of texts"))
    if len(texts) > 3:  # an item keeps at most three: the rest stay in the third
        texts = texts[:2] + ["\n".join(texts[2:])]
    return [{"kind": "guideline", "text": text} for text in texts]


def _run_mllm(run: JobRun) -> dict:
    job = run.job
    name = job.params.get("filename") or "questions.jsonl"
    done = run.done_keys()
    existing = set(Item.objects.filter(benchmark=run.benchmark).exclude(external_id="").values_list("external_id", flat=True))
    taxonomy = _Taxonomy(run.benchmark)
    batch = _Batch(run, MLLM_BENCH)
    seen: dict[str, str] = {}
    rows = 0
    with _open(job) as (handle, size):
        progress = _Progress(run, handle, size, name)
        for record in _reader(handle, name, JSON, counting=False):
            line, obj = record.line, record.value
            rows += 1
            progress.tick(rows)
            key = record.where
            if key in done:
                continue
            try:
                if record.problem:
                    raise RowProblem(record.problem)
                missing = [f for f in ("id", "question") if obj.get(f) in (None, "")]
                if missing:
                    raise RowProblem(_("missing fields: %(fields)s") % {"fields": ", ".join(missing)})
                qid = str(obj["id"]).strip()
                if qid in seen:
                    raise RowProblem(_("duplicate id %(id)s (first on %(where)s)") % {"id": qid, "where": seen[qid]})
                seen[qid] = key
                question_type = _question_type(obj)
                if qid in existing:
                    run.record(
                        key,
                        "skipped",
                        f"{key}: " + _("id %(id)s is already in the benchmark") % {"id": qid},
                        {"row": True, "already": True},
                    )
                    continue
                spec = {
                    "task": taxonomy.task(str(obj.get("level") or ""), str(obj.get("capability") or "")),
                    "external_id": qid,
                    "kind": Item.Kind.SINGLE_TURN,
                    "question_type": question_type,
                    "question": str(obj["question"]).strip(),
                    "reference_answer": str(obj.get("reference_answer") or obj.get("answer") or "").strip(),
                    "criteria": _criteria(obj.get("criteria")),
                }
                batch.add(key, line, spec, {"index": qid})
            except RowProblem as exc:
                run.record(key, "error", f"{key}: {exc}", {"row": True})
    batch.flush()
    return _summary(run, name)

"""Import an AlignMMBench `metadata.jsonl` as external items (the body of a tracked job).

One JSON object per line: question_id "GGGGGGGG-k" (k=0 is the seed, k>=1 its rewrites, which
share the seed's image and reference answer), image_path, history (list of {"user", "assistant"}
exchanges before the final prompt), prompt (the question), ref_answer, task, category.

Every problem is one job entry naming its line or question_id, and the import keeps going.
Items are matched by question_id (external_id), so re-running or resuming adds nothing twice.
"""

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils.translation import gettext_noop, pgettext_lazy

from benchforge.errors import DomainError
from benchforge_harness.tabular import JSONL, FileProblem, TableReader
from curation.models import Image, Task
from curation.services import discard_created_benchmark
from jobs import reports

from .models import Item
from .services.imports import import_external_items

QUESTION_ID = re.compile(r"^(?P<group>[^\s-]+)-(?P<k>\d+)$")
INCOHERENCE_TASK = "incoherence"
CHUNK = 500


@dataclass
class Row:
    line: int
    question_id: str
    group: str
    k: int
    data: dict
    task: Task | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def is_seed(self) -> bool:
        return self.k == 0


def _history_turns(history) -> list[dict]:
    if not isinstance(history, list):
        raise ValueError('\'history\' must be a list of {"user", "assistant"} exchanges')
    turns = []
    for n, exchange in enumerate(history, 1):
        if (
            not isinstance(exchange, dict)
            or not isinstance(exchange.get("user"), str)
            or not isinstance(exchange.get("assistant"), str)
        ):
            raise ValueError(f"history exchange {n} must have 'user' and 'assistant' texts")
        turns += [{"role": "user", "content": exchange["user"]}, {"role": "assistant", "content": exchange["assistant"]}]
    return turns


def _parse(obj, line: int, tasks: dict[str, Task]) -> Row:
    """One JSON object -> Row; ValueError says what is wrong with it."""
    if not isinstance(obj, dict):
        raise ValueError("a row must be a JSON object")
    match = QUESTION_ID.match(str(obj.get("question_id", "")))
    if not match:
        raise ValueError(f"question_id {obj.get('question_id')!r} is not of the form GROUP-k (e.g. 00000000-0)")
    for key in ("prompt", "ref_answer", "task", "image_path"):
        if not isinstance(obj.get(key), str):
            raise ValueError(f"'{key}' is missing or not text")
    _history_turns(obj.get("history", []))
    task = tasks.get(obj["task"].strip().lower())
    if task is None:
        raise ValueError(
            f"task '{obj['task']}' is not a task of this benchmark (its tasks: "
            f"{', '.join(sorted({t.name_en or t.name for t in tasks.values()}))}); load the AlignMMBench preset first"
        )
    category = str(obj.get("category") or "").strip()
    if category and category.lower() not in (task.category.name.lower(), task.category.name_en.lower()):
        # Named as the file names them: the released files use the English names.
        here = task.category.name_en or task.category.name
        raise ValueError(f"task '{obj['task'].strip()}' is in category '{here}' here, not '{category}'")
    return Row(line, obj["question_id"], match["group"], int(match["k"]), obj, task)


def _row_key(row_or_qid, line: int) -> str:
    qid = row_or_qid.question_id if isinstance(row_or_qid, Row) else row_or_qid
    return f"{qid} (line {line})" if qid else f"line {line}"


@contextmanager
def _open(job):
    """The metadata file as a binary stream, and a name for messages: the staged upload, or a server path."""
    from jobs.staging import open_staged

    staged = job.params.get("staged")
    name = Path(job.params.get("filename") or staged or job.params.get("path", "metadata.jsonl")).name
    try:
        handle = open_staged(staged) if staged else Path(job.params["path"]).open("rb")
    except OSError as exc:
        raise DomainError(f"{name} cannot be read ({exc.strerror or exc}).") from None
    with handle:
        yield handle, name


def _read_rows(run, tasks) -> tuple[list[Row], set[str], int]:
    """Parsed rows, the question_ids of rows refused (each recorded), and the number of non-empty
    lines. Reads the whole file before anything is stored: a problem of the file (FileProblem)
    leaves nothing behind."""
    with _open(run.job) as (handle, name):
        reader = TableReader(handle, name=name, format=JSONL)
        lines = list(reader)
    run.set_total(len(lines))
    rows, refused, first_line, problems = [], set(), {}, []
    for record in lines:
        n, obj = record.line, record.value
        if record.problem:
            problems.append((f"line {n}", f"line {n}: {record.problem}; row skipped"))
            refused.add(f"line {n}")
            continue
        try:
            row = _parse(obj, n, tasks)
        except ValueError as exc:
            qid = obj.get("question_id")
            problems.append((_row_key(qid, n), reader.problem(n, str(exc)) + "; row skipped"))
            refused.add(str(qid) if qid else f"line {n}")
            continue
        if row.question_id in first_line:
            problems.append(
                (
                    _row_key(row, n),
                    f"line {n}: question_id {row.question_id} already appeared on line "
                    f"{first_line[row.question_id]}; the first one was kept",
                )
            )
            refused.add(f"line {n}")
            continue
        first_line[row.question_id] = n
        rows.append(row)
    run.record_many([(key, "error", message, {"row": True}) for key, message in problems])
    return rows, refused, len(lines)


def _attach_images(run, rows: list[Row], done: set[str]) -> dict[str, int]:
    """Ingest images found next to metadata.jsonl (accepted: screened by their publisher).
    Returns {image_path: image id} for the images stored (in this run or an earlier one)."""
    from curation.services import (
        INGEST_BATCH,
        INGEST_BATCH_BYTES,
        Ingester,
        IngestFile,
        IngestOutcome,
        ingest_stream,
        screen_images,
    )

    job = run.job
    wanted: dict[str, list[Row]] = {}
    for row in rows:
        wanted.setdefault(row.data["image_path"], []).append(row)
    run.set_total(run.job.total + len([p for p in wanted if f"image {p}" not in done]))
    earlier = {
        key[len("image ") :]: data.get("image_id") for key, data in run.recorded(keys=[f"image {p}" for p in wanted]).items()
    }
    found = {path: image_id for path, image_id in earlier.items() if image_id}
    # Only a metadata file on this server can have images next to it; an upload comes alone.
    base = Path(job.params["path"]).parent.resolve() if job.params.get("path") else None

    def batches():
        """(files, [(image path, its rows)]) a batch at a time; missing files are recorded here."""
        files, paths, batch_bytes = [], [], 0
        for image_path, users in wanted.items():
            key = f"image {image_path}"
            if key in done:
                continue
            candidate = (base / image_path).resolve() if base else None
            if candidate is None or not candidate.is_relative_to(base) or not candidate.is_file():
                run.record(key, "skipped", reports.text(IMAGE_NOT_PROVIDED, path=image_path, n=len(users)), {"image": True})
                continue
            tasks = sorted({r.task for r in users}, key=lambda t: t.pk)
            size = candidate.stat().st_size
            files.append(
                IngestFile(candidate.read_bytes, size=size, original_name=candidate.name, source="AlignMMBench", tasks=tasks)
            )
            paths.append((image_path, users))
            batch_bytes += size
            if len(files) >= INGEST_BATCH or batch_bytes >= INGEST_BATCH_BYTES:  # two batches are in memory at once
                yield files, paths
                files, paths, batch_bytes = [], [], 0
        if files:
            yield files, paths

    def record(paths, outcomes) -> None:
        """In the batch's transaction: accept the images (screened by their publisher), one entry each."""
        stored = [o.image.pk for o in outcomes if isinstance(o, IngestOutcome) and o.image.status != Image.Status.ACCEPTED]
        if stored:
            screen_images(run.benchmark, stored, action="accept", user=job.created_by)
        entries = []
        for (image_path, users), outcome in zip(paths, outcomes):
            key = f"image {image_path}"
            if outcome is None:
                continue
            if isinstance(outcome, IngestOutcome):
                image_id = outcome.image.pk
                entries.append((key, "ok", f"image {image_path} stored as #{image_id}", {"image": True, "image_id": image_id}))
                found[image_path] = image_id
            else:
                message = (
                    f"image {image_path} could not be stored ({outcome.message}); {len(users)} item(s) imported without image"
                )
                entries.append((key, "error", message, {"image": True}))
        run.record_many(entries)

    with Ingester(run.benchmark, collected_by=job.created_by) as ingester:
        for _ in ingest_stream(ingester, batches(), record=record):
            pass
    return found


def _spec(row: Row, images: dict[str, int], seed: Item | None) -> dict:
    data = row.data
    turns = _history_turns(data.get("history", []))
    spec = {
        "task": row.task,
        "external_id": row.question_id,
        "seed": seed,
        "question": data["prompt"],
        "kind": Item.Kind.MULTI_TURN if turns else Item.Kind.SINGLE_TURN,
        "history": turns,
        "incoherent": bool(turns) and INCOHERENCE_TASK in (row.task.slug, (row.task.name_en or row.task.name).lower()),
    }
    if seed is None:
        spec["reference_answer"] = data["ref_answer"]
        spec["images"] = [images[data["image_path"]]] if data["image_path"] in images else []
    return spec


def _create(run, rows: list[Row], specs: list[dict]) -> dict[str, Item]:
    """Create items chunk by chunk; a chunk's items and its rows' entries commit together, so a
    crash leaves no item without its entry (a resumed run would count it as someone else's)."""
    created: dict[str, Item] = {}
    for start in range(0, len(specs), CHUNK):
        chunk_rows, chunk_specs = rows[start : start + CHUNK], specs[start : start + CHUNK]
        with transaction.atomic():
            items, problems = import_external_items(run.benchmark, chunk_specs, user=run.job.created_by)
            made = {item.external_id: item for item in items}
            entries = []
            for index, row in enumerate(chunk_rows):
                key = _row_key(row, row.line)
                if index in problems:
                    entries.append((key, "error", f"line {row.line}: {' '.join(problems[index])} Row skipped.", {"row": True}))
                elif row.question_id in made:
                    item = made[row.question_id]
                    entries.append(
                        (
                            key,
                            "ok",
                            " ".join(row.notes),
                            {"row": True, "seed": item.seed_id is None, "multi_turn": item.kind == Item.Kind.MULTI_TURN},
                        )
                    )
            run.record_many(entries)
        created.update(made)
    return created


def _unit_outcome(outcome: str, data: dict) -> list[str]:
    if data.get("image"):
        return ["images_attached" if outcome == "ok" else "images_not_provided"]
    if outcome == "error":
        return ["errors"]
    if outcome == "ok":
        return ["imported"] + ["seeds"] * bool(data.get("seed")) + ["multi_turn"] * bool(data.get("multi_turn"))
    return ["already_imported"] if data.get("already") else []


# What the import job reports (jobs.reports: stored in English, shown in the reader's language).
IMAGE_NOT_PROVIDED = gettext_noop("image %(path)s not provided; %(n)s item(s) imported without image")
IMPORTED = gettext_noop(
    "Imported %(imported)s items (%(seeds)s seeds, %(rewrites)s rewrites, %(multi_turn)s multi-turn); "
    "%(already_imported)s were already there; %(errors)s row(s) with errors."
)
IMPORTED_WITHOUT_IMAGES = gettext_noop(
    "Imported %(imported)s items (%(seeds)s seeds, %(rewrites)s rewrites, %(multi_turn)s multi-turn); "
    "%(already_imported)s were already there; %(errors)s row(s) with errors; %(images_not_provided)s image(s) "
    "not provided, their items were imported without image."
)
reports.declare(IMAGE_NOT_PROVIDED, IMPORTED, IMPORTED_WITHOUT_IMAGES)
reports.declare_result_labels(
    {
        "rows": pgettext_lazy("job result", "Rows"),
        "imported": pgettext_lazy("job result", "Imported"),
        "already_imported": pgettext_lazy("job result", "Already imported"),
        "seeds": pgettext_lazy("job result", "Seeds"),
        "rewrites": pgettext_lazy("job result", "Rewrites"),
        "multi_turn": pgettext_lazy("job result", "Multi-turn"),
        "images_attached": pgettext_lazy("job result", "Images attached"),
        "images_not_provided": pgettext_lazy("job result", "Images not provided"),
    }
)


def _summary(run, total: int) -> dict:
    """What the job did over all its runs, from its entries (a resumed import counts everything)."""
    rows = run.tally(_unit_outcome)
    images = {name: rows[name] for name in ("images_attached", "images_not_provided")}
    return {
        "rows": total,
        "imported": rows["imported"],
        "already_imported": rows["already_imported"],
        "seeds": rows["seeds"],
        "rewrites": rows["imported"] - rows["seeds"],
        "multi_turn": rows["multi_turn"],
        "errors": rows["errors"],
        **images,
    }


def run_import(run) -> dict:
    benchmark = run.benchmark
    if benchmark is None:
        raise DomainError(
            "This import's file was refused and the benchmark made for it removed; start a new import with the corrected file."
        )
    tasks = {}
    for task in Task.objects.filter(benchmark=benchmark).select_related("category"):
        tasks[task.slug.lower()] = task
        tasks[task.name.lower()] = task
        if task.name_en:  # the released files name the tasks in English
            tasks[task.name_en.lower()] = task
    done = run.done_keys()
    try:
        parsed, refused_ids, total = _read_rows(run, tasks)
    except FileProblem as exc:
        removed = discard_created_benchmark(run.job)
        raise DomainError(f"{exc.message} {removed}".strip()) from None
    rows = [row for row in parsed if _row_key(row, row.line) not in done]  # earlier runs did the rest
    existing = dict(Item.objects.filter(benchmark=benchmark).exclude(external_id="").values_list("external_id", "pk"))
    # Rows already in the benchmark (imported by another job or by hand) are not imported again.
    run.record_many(
        [
            (_row_key(row, row.line), "skipped", f"{row.question_id} is already in the benchmark", {"row": True, "already": True})
            for row in rows
            if row.question_id in existing
        ]
    )
    todo = [row for row in rows if row.question_id not in existing]
    images = _attach_images(run, todo, done)

    seed_rows = {row.group: row for row in parsed if row.is_seed}
    new_seeds = [row for row in todo if row.is_seed]
    seeds = _create(run, new_seeds, [_spec(row, images, None) for row in new_seeds])
    seed_items = {**{e: Item(pk=pk) for e, pk in existing.items()}, **seeds}

    rewrite_rows, rewrite_specs, orphans = [], [], []
    for row in (r for r in todo if not r.is_seed):
        seed_row = seed_rows.get(row.group)
        seed = seed_items.get(seed_row.question_id) if seed_row else None
        if seed is None:
            if seed_row or f"{row.group}-0" in refused_ids:
                reason = f"its seed row {row.group}-0 was not imported (see that row's error)"
            else:
                reason = f"there is no seed row {row.group}-0 in the file"
            orphans.append((_row_key(row, row.line), "error", f"line {row.line}: {reason}; rewrite skipped", {"row": True}))
            continue
        if row.data["ref_answer"] != seed_row.data["ref_answer"] or row.data["image_path"] != seed_row.data["image_path"]:
            # Rewrites share their seed's image and reference: a row that differs keeps its own as a seed of its own.
            row.notes.append(
                f"its image or ref_answer differs from seed {seed_row.question_id}'s, so it was imported "
                "as a separate seed (not linked as a rewrite)"
            )
            rewrite_rows.append(row)
            rewrite_specs.append(_spec(row, images, None))
            continue
        rewrite_rows.append(row)
        rewrite_specs.append(_spec(row, images, seed))
    run.record_many(orphans)
    _create(run, rewrite_rows, rewrite_specs)

    result = _summary(run, total)
    run.say(reports.text(IMPORTED_WITHOUT_IMAGES if result["images_not_provided"] else IMPORTED, **result))
    return result

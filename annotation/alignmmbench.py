"""Import an AlignMMBench `metadata.jsonl` as external items (the body of a tracked job).

One JSON object per line: question_id "GGGGGGGG-k" (k=0 is the seed, k>=1 its rewrites, which
share the seed's image and reference answer), image_path, history (list of {"user", "assistant"}
exchanges before the final prompt), prompt (the question), ref_answer, task, category.

Every problem is one job entry naming its line or question_id, and the import keeps going.
Items are matched by question_id (external_id), so re-running or resuming adds nothing twice.
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from benchforge.errors import DomainError
from curation.imaging import ImageRejected
from curation.models import Image, Task
from jobs import services as jobs

from .models import Item
from .services import import_external_items

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
        raise ValueError("'history' must be a list of {\"user\", \"assistant\"} exchanges")
    turns = []
    for n, exchange in enumerate(history, 1):
        if not isinstance(exchange, dict) or not isinstance(exchange.get("user"), str) or not isinstance(exchange.get("assistant"), str):
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
        raise ValueError(f"task '{obj['task']}' is not a task of this benchmark (its tasks: "
                         f"{', '.join(sorted({t.name for t in tasks.values()}))}); load the AlignMMBench preset first")
    category = str(obj.get("category") or "").strip()
    if category and category.lower() != task.category.name.lower():
        raise ValueError(f"task '{task.name}' is in category '{task.category.name}' here, not '{category}'")
    return Row(line, obj["question_id"], match["group"], int(match["k"]), obj, task)


def _read_rows(job, tasks) -> tuple[list[Row], set[str], int]:
    """Parsed rows, the question_ids of rows refused, and the number of non-empty lines."""
    path = Path(job.params["path"])
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DomainError(f"{path.name} cannot be read as UTF-8 text ({exc}).") from None
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    jobs.start_job(job.pk, total=len(lines))
    rows, refused, first_line = [], set(), {}
    for n, line in lines:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            jobs.record_entry(job.pk, f"line {n}", "error", f"line {n} is not valid JSON ({exc.msg} at column {exc.colno}); row skipped")
            refused.add(f"line {n}")
            continue
        try:
            row = _parse(obj, n, tasks)
        except ValueError as exc:
            qid = obj.get("question_id") if isinstance(obj, dict) else None
            jobs.record_entry(job.pk, f"{qid} (line {n})" if qid else f"line {n}", "error", f"line {n}: {exc}; row skipped")
            refused.add(str(qid) if qid else f"line {n}")
            continue
        if row.question_id in first_line:
            jobs.record_entry(job.pk, f"{row.question_id} (line {n})", "error",
                              f"line {n}: question_id {row.question_id} already appeared on line {first_line[row.question_id]}; "
                              "the first one was kept")
            refused.add(f"line {n}")
            continue
        first_line[row.question_id] = n
        rows.append(row)
    return rows, refused, len(lines)


def _attach_images(job, rows: list[Row]) -> tuple[dict[str, int], int]:
    """Ingest images found next to metadata.jsonl (accepted: screened by their publisher).
    Returns {image_path: image id} and how many paths were not provided."""
    from curation.services import ingest_image, screen_images

    base = Path(job.params["path"]).parent.resolve()
    wanted: dict[str, list[Row]] = {}
    for row in rows:
        wanted.setdefault(row.data["image_path"], []).append(row)
    found, missing = {}, 0
    for image_path, users in wanted.items():
        candidate = (base / image_path).resolve()
        provided = not job.params.get("uploaded") and candidate.is_relative_to(base) and candidate.is_file()
        if not provided:
            missing += 1
            jobs.record_entry(job.pk, f"image {image_path}", "skipped",
                              f"image {image_path} not provided; {len(users)} item(s) imported without image")
            continue
        try:
            outcome = ingest_image(job.benchmark, candidate.read_bytes(), original_name=candidate.name, source="AlignMMBench",
                                   collected_by=job.created_by, tasks=sorted({r.task for r in users}, key=lambda t: t.pk))
        except (ImageRejected, DomainError) as exc:
            missing += 1
            jobs.record_entry(job.pk, f"image {image_path}", "error",
                              f"image {image_path} could not be stored ({exc.message}); {len(users)} item(s) imported without image")
            continue
        if outcome.image.status != Image.Status.ACCEPTED:
            screen_images(job.benchmark, [outcome.image.pk], action="accept", user=job.created_by)
        found[image_path] = outcome.image.pk
    return found, missing


def _spec(row: Row, images: dict[str, int], seed: Item | None) -> dict:
    data = row.data
    turns = _history_turns(data.get("history", []))
    spec = {"task": row.task, "external_id": row.question_id, "seed": seed, "question": data["prompt"],
            "kind": Item.Kind.MULTI_TURN if turns else Item.Kind.SINGLE_TURN, "history": turns,
            "incoherent": bool(turns) and row.task.name.lower() == INCOHERENCE_TASK}
    if seed is None:
        spec["reference_answer"] = data["ref_answer"]
        spec["images"] = [images[data["image_path"]]] if data["image_path"] in images else []
    return spec


def _create(job, rows: list[Row], specs: list[dict], *, done_before: int) -> tuple[dict[str, Item], int]:
    """Create items chunk by chunk (each chunk one transaction); returns them by question_id
    and how many rows were refused."""
    created: dict[str, Item] = {}
    refused = 0
    for start in range(0, len(specs), CHUNK):
        chunk_rows, chunk_specs = rows[start:start + CHUNK], specs[start:start + CHUNK]
        items, problems = import_external_items(job.benchmark, chunk_specs, user=job.created_by)
        for index, found in problems.items():
            row = chunk_rows[index]
            jobs.record_entry(job.pk, f"{row.question_id} (line {row.line})", "error", f"line {row.line}: {' '.join(found)} Row skipped.")
            refused += 1
        created.update({item.external_id: item for item in items})
        for row in chunk_rows:
            if row.notes and row.question_id in created:
                jobs.record_entry(job.pk, f"{row.question_id} (line {row.line})", "ok", " ".join(row.notes))
        jobs.job_progress(job.pk, done_before + start + len(chunk_rows))
    return created, refused


def run_import(job) -> dict:
    benchmark = job.benchmark
    tasks = {}
    for task in Task.objects.filter(benchmark=benchmark).select_related("category"):
        tasks[task.slug.lower()] = task
        tasks[task.name.lower()] = task
    rows, refused_ids, total = _read_rows(job, tasks)
    errors = len(refused_ids)
    existing = dict(Item.objects.filter(benchmark=benchmark).exclude(external_id="").values_list("external_id", "pk"))
    todo = [row for row in rows if row.question_id not in existing]
    images, missing = _attach_images(job, todo)

    seed_rows = {row.group: row for row in rows if row.is_seed}
    new_seeds = [row for row in todo if row.is_seed]
    done = total - len(todo)
    seeds, refused = _create(job, new_seeds, [_spec(row, images, None) for row in new_seeds], done_before=done)
    errors += refused
    seed_items = {**{e: Item(pk=pk) for e, pk in existing.items()}, **seeds}

    rewrite_rows, rewrite_specs = [], []
    for row in (r for r in todo if not r.is_seed):
        seed_row = seed_rows.get(row.group)
        seed = seed_items.get(seed_row.question_id) if seed_row else None
        if seed is None:
            if seed_row or f"{row.group}-0" in refused_ids:
                reason = f"its seed row {row.group}-0 was not imported (see that row's error)"
            else:
                reason = f"there is no seed row {row.group}-0 in the file"
            jobs.record_entry(job.pk, f"{row.question_id} (line {row.line})", "error", f"line {row.line}: {reason}; rewrite skipped")
            errors += 1
            continue
        if row.data["ref_answer"] != seed_row.data["ref_answer"] or row.data["image_path"] != seed_row.data["image_path"]:
            # Rewrites share their seed's image and reference: a row that differs keeps its own as a seed of its own.
            row.notes.append(f"its image or ref_answer differs from seed {seed_row.question_id}'s, so it was imported "
                             "as a separate seed (not linked as a rewrite)")
            rewrite_rows.append(row)
            rewrite_specs.append(_spec(row, images, None))
            continue
        rewrite_rows.append(row)
        rewrite_specs.append(_spec(row, images, seed))
    rewrites, refused = _create(job, rewrite_rows, rewrite_specs, done_before=done + len(new_seeds))
    errors += refused

    created = {**seeds, **rewrites}
    multi_turn = sum(1 for item in created.values() if item.kind == Item.Kind.MULTI_TURN)
    result = {
        "rows": total, "imported": len(created), "already_imported": len(rows) - len(todo),
        "seeds": sum(1 for i in created.values() if i.seed_id is None),
        "rewrites": sum(1 for i in created.values() if i.seed_id is not None), "multi_turn": multi_turn,
        "errors": errors, "images_attached": len(images), "images_not_provided": missing,
    }
    message = (f"Imported {result['imported']} items ({result['seeds']} seeds, {result['rewrites']} rewrites, "
               f"{multi_turn} multi-turn); {result['already_imported']} were already there; {errors} row(s) with errors")
    if missing:
        message += f"; {missing} image(s) not provided, their items were imported without image"
    jobs.job_progress(job.pk, total, message=message + ".")
    return result

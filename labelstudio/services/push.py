"""Push items to a Label Studio project, as a tracked job.

- Idempotent: an item already in the project is never sent twice, even when a previous push
  stopped after Label Studio stored tasks but before we recorded them (tasks carry the item id
  in their meta and are adopted, with what their pre-annotation shows).
- Tasks follow their items: a re-push refreshes (data, meta and pre-annotation) every task whose
  item changed since the task last showed it, whatever changed it (an edit here, a pull, a
  decision, a status change), and whatever waits in Label Studio: an annotation not pulled yet is
  read later against the pre-annotation its annotator started from, which is kept.
"""

from __future__ import annotations

import html
from contextlib import contextmanager
from typing import TYPE_CHECKING

from django.core.files.storage import default_storage
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from annotation.contract import item_payload
from annotation.models import Item
from annotation.selectors import with_payload_data
from benchforge import permissions
from benchforge.errors import Conflict, DomainError
from curation.models import Image
from jobs import reports
from jobs import services as jobs
from jobs.runner import ERROR, OK, SKIPPED

from .. import adapter as ls
from ..models import LabelStudioLink, LabelStudioTask
from ..selectors import PUSH_JOB
from .common import MAX_EARLIER_PREFILLS, Report
from .connection import open_client

if TYPE_CHECKING:
    from jobs.models import Job

# One import request stays well below Label Studio's upload limit even with large images inline.
BATCH_TASKS = 25
BATCH_BYTES = 32 * 1024 * 1024
PUSH_LOCK_BASE = 0x4C53_0000_0000  # advisory lock keys of Label Studio pushes: this + benchmark id

ITEM_GONE = gettext_noop("The item no longer exists.")
PUSH_THE_SEED = gettext_noop("A rewrite shares the reference answer and criteria of its seed: push seed item #%(id)s instead.")
ALREADY_PUSHED = gettext_noop("Already in the project as task %(task)s.")
PUSHED = gettext_noop("Pushed as task %(task)s (item version %(version)s).")
REFRESHED = gettext_noop("Task %(task)s refreshed (item version %(old)s -> %(version)s).")
PUSH_SUMMARY = gettext_noop(
    "%(pushed)s pushed, %(refreshed)s refreshed, %(already_pushed)s already in the project, "
    "%(skipped)s skipped, %(errors)s errors. Project: %(url)s"
)
reports.declare(ITEM_GONE, PUSH_THE_SEED, ALREADY_PUSHED, PUSHED, REFRESHED, PUSH_SUMMARY)


def _instructions(benchmark) -> str:
    return (
        f"<p>Questions of the benchmark <b>{html.escape(benchmark.name)}</b>. For each one, check and correct the "
        "question, the options and answer key (multiple-choice items), the reference answer (complete enough for a "
        "judge who cannot see the image), the question type, up to three grading criteria with their kind and the "
        "image description. Leave a field as it is to keep it. Then give a verdict: <i>OK</i>, or "
        "<i>Needs revision</i> when the item needs more than you can fix here.</p>"
    )


def create_push(benchmark, items, *, project_title: str, user) -> Job:
    """A queued push job (`run_push` is its runner)."""
    permissions.require_researcher(user, "Label Studio push and pull")
    title = " ".join(project_title.split())
    if not title:
        raise DomainError("Give the Label Studio project a title.")
    ids = sorted({getattr(item, "pk", item) for item in items})
    if not ids:
        raise DomainError("There are no items to push: change the filters.")
    if Item.objects.filter(pk__in=ids, benchmark=benchmark).count() != len(ids):
        raise DomainError(f"Some of the items do not belong to {benchmark.name}.")
    return jobs.create_job(
        PUSH_JOB, user=user, benchmark=benchmark, total=len(ids), params={"item_ids": ids, "project_title": title}
    )


def start_push(benchmark, items, *, project_title: str, user) -> Job:
    """Push items in the background (the page shows the job's progress)."""
    return jobs.enqueue(create_push(benchmark, items, project_title=project_title, user=user))


def push_items_to_labelstudio(benchmark, items, *, project_title: str, user) -> Job:
    """Create (or reuse) the project titled `project_title`, add the items not yet in it and
    refresh the tasks of items changed since their task last showed them, now."""
    return jobs.run_now(create_push(benchmark, items, project_title=project_title, user=user))


def start_refresh(link: LabelStudioLink, *, user) -> Job:
    """Push a project's own items again: every task whose item changed since it was shown is refreshed."""
    item_ids = list(link.tasks.values_list("item_id", flat=True))
    return start_push(link.benchmark, item_ids, project_title=link.title, user=user)


def run_push(run) -> dict:
    with _one_push_at_a_time(run.benchmark):
        return _push(run, run.benchmark, run.user)


@contextmanager
def _one_push_at_a_time(benchmark):
    """Pushes of one benchmark run one after the other. Two at once would race twice: both
    creating a project for the same new title, and one adopting (by their meta) the tasks the
    other has just imported but not yet recorded. A session-level advisory lock on Postgres (it
    spans the push's many short transactions); SQLite serialises writers anyway."""
    if connection.vendor != "postgresql":
        yield
        return
    key = PUSH_LOCK_BASE + benchmark.pk
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [key])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [key])


def _push(run, benchmark, user) -> dict:
    job = run.job
    ids = job.params["item_ids"]
    done = run.done_keys()
    with open_client(benchmark) as client:
        client.check()
        items = with_payload_data(Item.objects.filter(benchmark=benchmark, pk__in=ids))
        payloads = {item.pk: item_payload(item) for item in items}
        link = _project_for(client, benchmark, job.params["project_title"], user, list(payloads.values()))
        known = _known_tasks(client, link)
        report = Report(run, "pushed", "refreshed", "already_pushed", "skipped", "errors")
        new, stale, quiet = [], [], []
        for item_id in ids:
            key, payload = f"item {item_id}", payloads.get(item_id)
            if key in done:
                continue  # an earlier run of this job did it
            if payload is None:
                quiet.append(("errors", key, ERROR, reports.text(ITEM_GONE), None))
            elif payload["seed_id"]:
                quiet.append(("skipped", key, SKIPPED, reports.text(PUSH_THE_SEED, id=payload["seed_id"]), None))
            elif item_id in known and known[item_id].pushed_version == payload["version"]:
                task = known[item_id].task_id
                quiet.append(("already_pushed", key, SKIPPED, reports.text(ALREADY_PUSHED, task=task), {"task_id": task}))
            elif item_id in known:
                stale.append(payload)
            else:
                new.append(payload)
        report.add_many(quiet)
        task_names = dict(benchmark.tasks.values_list("slug", "name"))
        imported = []
        for batch in _batches(report, new, task_names):
            task_ids = client.import_tasks(link.project_id, [task for _, task in batch])
            with transaction.atomic():  # the task rows and their entries together
                rows = LabelStudioTask.objects.bulk_create(
                    LabelStudioTask(
                        link=link,
                        item_id=payload["id"],
                        task_id=task_id,
                        pushed_version=payload["version"],
                        baseline=ls.field_values(payload),
                        shown=ls.field_values(payload),
                    )
                    for (payload, _), task_id in zip(batch, task_ids)
                )
                imported += rows
                report.add_many(
                    (
                        "pushed",
                        f"item {row.item_id}",
                        OK,
                        reports.text(PUSHED, task=row.task_id, version=row.pushed_version),
                        {"task_id": row.task_id},
                    )
                    for row in rows
                )
        ours = client.predictions_of(link.project_id, ls.PREDICTION_MODEL_VERSION) if imported or stale else {}
        _note_prefills(imported, ours)
        if stale:
            for batch in _batches(report, stale, task_names):
                for payload, task in batch:
                    _refresh(client, known[payload["id"]], payload, task, ours.get(known[payload["id"]].task_id, []), report)
    counts = report.counts
    run.say(reports.text(PUSH_SUMMARY, **counts, url=link.project_url))
    return {**counts, "project_id": link.project_id, "link_id": link.pk, "project_url": link.project_url}


def _note_prefills(rows: list[LabelStudioTask], ours: dict[int, list[dict]]) -> None:
    """Record which prediction is the pre-annotation of each task just imported (Label Studio's
    import answers task ids only): what tells an annotation started from it. A push that dies
    before this leaves it unknown, and annotations are then read against it by time."""
    for row in rows:
        if ours.get(row.task_id):
            row.prefill = _prefill_of(max(ours[row.task_id], key=lambda p: p["id"]))
    LabelStudioTask.objects.bulk_update([row for row in rows if row.prefill], ["prefill"], batch_size=500)


def _prefill_of(prediction: dict | None) -> dict:
    if not prediction:
        return {}
    return {"prediction": prediction.get("id"), "at": prediction.get("created_at")}


def _refresh(client, row: LabelStudioTask, payload: dict, task: dict, old_predictions: list[dict], report: Report) -> None:
    """Show an item changed since its task last showed it: new data, meta and pre-annotation. The
    old pre-annotation is kept (with its baseline) for annotations its annotators started from it."""
    client.update_task(row.task_id, data=task["data"], meta=task["meta"])
    prefill = task.get("predictions", [{}])[0].get("result", [])
    prediction = client.replace_prediction(
        row.task_id, old_ids=[p["id"] for p in old_predictions], result=prefill, model_version=ls.PREDICTION_MODEL_VERSION
    )
    values = ls.field_values(payload)
    with transaction.atomic():
        old = row.pushed_version
        current = row.prefills()[0]
        row.earlier = [current, *row.earlier][:MAX_EARLIER_PREFILLS]
        row.pushed_version = payload["version"]
        row.baseline = values
        row.shown = values
        row.prefill = _prefill_of(prediction)
        row.save(update_fields=["pushed_version", "baseline", "shown", "prefill", "earlier"])
        report.add(
            "refreshed",
            f"item {payload['id']}",
            OK,
            reports.text(REFRESHED, task=row.task_id, old=old, version=payload["version"]),
            {"task_id": row.task_id},
        )


def _project_for(client, benchmark, title: str, user, payloads: list[dict]) -> LabelStudioLink:
    """The project titled `title` on this server (created if new), its labeling config widened
    to show what the new items need (dialogue history, options)."""
    link = LabelStudioLink.objects.filter(benchmark=benchmark, url=client.url, title=title).first()
    if link is None:
        config = ls.labeling_config(**ls.config_sections(payloads))
        project = client.create_project(title=title, label_config=config, instructions=_instructions(benchmark))
        try:
            with transaction.atomic():
                return LabelStudioLink.objects.create(
                    benchmark=benchmark, url=client.url, project_id=project["id"], title=title, created_by=user
                )
        except IntegrityError:  # another server process pushed the same title meanwhile
            client.delete_project(project["id"])  # no orphan project left behind
            raise Conflict(f"Another push created the project '{title}' at the same time: push again.") from None
    project = client.project_or_none(link.project_id)
    if project is None:
        _mark_gone(link)
        raise DomainError(gone_message(link), code="labelstudio_project_gone")
    pushed = Item.objects.filter(labelstudio_tasks__link=link).values("history", "choices", "kind")
    config = ls.labeling_config(**ls.config_sections(list(pushed) + payloads))
    if project.get("label_config") != config:
        client.update_project(link.project_id, label_config=config)
    return link


def gone_message(link: LabelStudioLink) -> str:
    return (
        f"The Label Studio project '{link.title}' (#{link.project_id} on {link.url}) no longer exists: it was deleted "
        "in Label Studio. Unlink it (the Label Studio page, or manage.py labelstudio unlink) to forget it here and "
        "free its title."
    )


def _mark_gone(link: LabelStudioLink) -> None:
    if link.gone_at is None:
        link.gone_at = timezone.now()
        link.save(update_fields=["gone_at"])


def unlink(link: LabelStudioLink, *, user) -> None:
    """Forget a project here (its task records go with it; the items keep every change pulled).
    Nothing is deleted in Label Studio."""
    permissions.require_researcher(user, "Label Studio push and pull")
    link.delete()


def _known_tasks(client, link: LabelStudioLink) -> dict[int, LabelStudioTask]:
    """Item id -> task for the project. When Label Studio holds tasks we have no record of (a
    push that stopped between the import and our bookkeeping), they are adopted by their meta,
    with what their pre-annotation shows as the baseline (what both sides held at that push)."""
    rows = {row.item_id: row for row in link.tasks.all()}
    if client.get_project(link.project_id).get("task_number", 0) <= len(rows):
        return rows
    found = {}
    for task in client.iter_tasks_with_work(link.project_id):
        meta = task.get("meta") or {}
        item_id = meta.get("benchforge_item")
        if isinstance(item_id, int) and item_id not in rows and item_id not in found:
            found[item_id] = task
    known_task_ids = {row.task_id for row in rows.values()}
    # Tasks of items deleted here since are left alone (their annotators' work stays in Label Studio).
    kinds = dict(Item.objects.filter(benchmark=link.benchmark, pk__in=found).values_list("pk", "kind"))
    for item_id, kind in kinds.items():
        task = found[item_id]
        if task["id"] in known_task_ids:
            continue
        ours = [p for p in task.get("predictions") or [] if p.get("model_version") == ls.PREDICTION_MODEL_VERSION]
        prediction = max(ours, key=lambda p: p["id"]) if ours else None
        values = ls.prefill_values(task["id"], prediction["result"] if prediction else [], kind=kind)
        rows[item_id] = LabelStudioTask.objects.create(
            link=link,
            item_id=item_id,
            task_id=task["id"],
            pushed_version=(task.get("meta") or {}).get("benchforge_version") or 1,
            baseline=values,
            shown=values,
            prefill=_prefill_of(prediction),
        )
    return rows


def _batches(report: Report, payloads: list[dict], task_names: dict[str, str]):
    """Tasks with their images inline, grouped so one import request stays small. An item whose
    image file cannot be read is reported and left out; the others go on."""
    image_ids = {image["id"] for payload in payloads for image in payload["images"]}
    images = Image.objects.in_bulk(image_ids)
    batch, size = [], 0
    for payload in payloads:
        try:
            sources = {image["id"]: _image_data_url(images[image["id"]]) for image in payload["images"]}
        except (OSError, KeyError) as exc:
            report.add("errors", f"item {payload['id']}", ERROR, f"Could not read an image of the item: {exc}.")
            continue
        payload = {**payload, "task": task_names.get(payload["task"], payload["task"])}
        task = ls.task_for_item(payload, image_src=lambda image, sources=sources: sources[image["id"]])
        batch.append((payload, task))
        size += sum(len(s) for s in sources.values())
        if len(batch) >= BATCH_TASKS or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _image_data_url(image: Image) -> str:
    with default_storage.open(image.file.name, "rb") as handle:
        return ls.data_url(handle.read(), image.format)

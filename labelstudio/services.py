"""Push items to a Label Studio project and pull annotations back into items, as tracked jobs.

- Pushing is idempotent: an item already in the project is never sent twice, even when a
  previous push stopped after Label Studio stored tasks but before we recorded them (tasks
  carry the item id in their meta and are adopted).
- Pulling applies an annotation through annotation.services.update_item, so validation,
  versions and history apply; an annotation already pulled changes nothing.
- Re-pushing refreshes the task of an item changed here since (data and pre-annotation),
  unless Label Studio holds an annotation of it not pulled yet (the report says so).
- A pull compares each field an annotation changes with the value the task was last synced
  with: a field also edited here since, to another value, is a conflict (both values in the
  report, nothing of the task applied); a status change or an edit of another field is not.
- The researcher chooses what a pull applies: every annotation or only accepted ones (verdict
  OK), and with several annotators the latest or a disagreement to decide here.

Tokens are read from the environment variable the benchmark's connection names; they are
never stored.
"""

from __future__ import annotations

import html
import os
import re
from contextlib import contextmanager
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy, gettext_noop, pgettext_lazy

from annotation.contract import item_payload
from annotation.models import Item
from annotation.selectors import with_payload_data
from annotation.services import update_item
from benchforge import outbound, permissions
from benchforge.errors import DomainError, StaleVersion
from curation.models import Image
from jobs import reports
from jobs import services as jobs
from jobs.runner import ERROR, OK, SKIPPED

if TYPE_CHECKING:
    from jobs.models import Job

from . import adapter as ls
from .client import LabelStudioClient, LabelStudioError
from .models import DEFAULT_TOKEN_ENV, TOKEN_ENV_PATTERN, URL_ENV, LabelStudioLink, LabelStudioTask
from .selectors import PULL_JOB, PUSH_JOB, connection_for

PULL_ACTION = "labelstudio"  # ItemRevision.action of an edit that came from Label Studio
# One import request stays well below Label Studio's upload limit even with large images inline.
BATCH_TASKS = 25
BATCH_BYTES = 32 * 1024 * 1024
FIELD_NAMES = ls.FIELD_NAMES
PUSH_LOCK_BASE = 0x4C53_0000_0000  # advisory lock keys of Label Studio pushes: this + benchmark id
# What a pull applies (job params): every annotation or only accepted ones (verdict OK: the
# community edition has no review state), and with several annotators of one task the latest
# one, or a disagreement flagged for the researcher to decide in benchforge.
ALL, ACCEPTED = "all", "accepted"
LATEST, FLAG = "latest", "flag"
APPLY_CHOICES = {ALL: gettext_lazy("every annotation"), ACCEPTED: gettext_lazy("only accepted annotations (verdict OK)")}
SEVERAL_CHOICES = {
    LATEST: gettext_lazy("the latest annotation wins"),
    FLAG: gettext_lazy("flag a disagreement for a decision here"),
}


class _Report:
    """A job's per-item entries, each tagged with the count it adds to; the counts are read back
    from every entry of the job, so a resumed push or pull reports all its runs did."""

    def __init__(self, run, *counts: str):
        self.run = run
        self.names = counts

    def add(self, count: str, key: str, outcome: str, message: str, data: dict | None = None) -> None:
        self.run.record(key, outcome, message, {**(data or {}), "count": count})

    @property
    def counts(self) -> dict[str, int]:
        tally = self.run.tally(lambda outcome, data: data.get("count"))
        return {name: tally[name] for name in self.names}


# ---- connection -------------------------------------------------------------------------------------


def save_connection(benchmark, *, url: str, token_env: str, user):
    permissions.require_researcher(user, "Label Studio push and pull")
    connection = connection_for(benchmark)
    connection.url = url.strip()
    connection.token_env = token_env.strip() or DEFAULT_TOKEN_ENV
    connection.updated_by = user
    try:
        connection.full_clean(exclude=["benchmark"])
    except ValidationError as exc:
        raise DomainError(
            " ".join(f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items()), code="invalid"
        ) from None
    check_server_url(connection.url)
    connection.save()
    return connection


def _may_be_private(url: str) -> bool:
    """A Label Studio URL a researcher typed may only point at a public address (the server sends
    a token there), unless it is the operator's LABEL_STUDIO_URL or BENCHFORGE_LABEL_STUDIO_ALLOW_PRIVATE
    is on (Label Studio on the same private network)."""
    trusted = os.environ.get(URL_ENV, "").rstrip("/")
    return settings.BENCHFORGE_LABEL_STUDIO_ALLOW_PRIVATE or bool(trusted and url.rstrip("/") == trusted)


def check_server_url(url: str) -> None:
    if url:
        outbound.check_url(url, allow_private=_may_be_private(url))


def open_client(benchmark, *, url: str = "") -> LabelStudioClient:
    connection = connection_for(benchmark)
    url = url or connection.server_url
    check_server_url(url)
    if not url:
        raise LabelStudioError(
            f"No Label Studio URL for {benchmark.name}: set it on the benchmark's Label Studio page or in the "
            f"{URL_ENV} environment variable.",
            code="labelstudio_config",
        )
    if not re.fullmatch(TOKEN_ENV_PATTERN, connection.token_env):
        raise LabelStudioError(f"'{connection.token_env}' is not a Label Studio token variable name.", code="labelstudio_config")
    # Every request connects to the address checked for the URL's host (no second lookup: no rebinding).
    return LabelStudioClient(
        url,
        os.environ.get(connection.token_env, ""),
        token_env=connection.token_env,
        transport=outbound.PinnedTransport(allow_private=_may_be_private(url)),
    )


# ---- push -------------------------------------------------------------------------------------------


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
    ids = sorted({item.pk for item in items})
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
    refresh the tasks of items changed here since, now."""
    return jobs.run_now(create_push(benchmark, items, project_title=project_title, user=user))


def run_push(run) -> dict:
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
    with _one_push_at_a_time(benchmark):
        return _push_locked(run, benchmark, user)


def _push_locked(run, benchmark, user) -> dict:
    job = run.job
    ids = job.params["item_ids"]
    done = run.done_keys()
    with open_client(benchmark) as client:
        client.check()
        items = with_payload_data(Item.objects.filter(benchmark=benchmark, pk__in=ids))
        payloads = {item.pk: item_payload(item) for item in items}
        link = _project_for(client, benchmark, job.params["project_title"], user, list(payloads.values()))
        known = _known_tasks(client, link)
        report = _Report(run, "pushed", "refreshed", "already_pushed", "skipped", "errors")
        pending, stale = [], []
        for item_id in ids:
            key, payload = f"item {item_id}", payloads.get(item_id)
            if key in done:
                continue  # an earlier run of this job did it
            if payload is None:
                report.add("errors", key, ERROR, reports.text(ITEM_GONE))
            elif payload["seed_id"]:
                report.add(
                    "skipped",
                    key,
                    SKIPPED,
                    reports.text(PUSH_THE_SEED, id=payload["seed_id"]),
                )
            elif item_id in known and known[item_id].pushed_version == payload["version"]:
                report.add("already_pushed", key, SKIPPED, reports.text(ALREADY_PUSHED, task=known[item_id].task_id))
            elif item_id in known:
                stale.append(payload)
            else:
                pending.append(payload)
        task_names = dict(benchmark.tasks.values_list("slug", "name"))
        for batch in _batches(report, pending, task_names):
            task_ids = client.import_tasks(link.project_id, [task for _, task in batch])
            with transaction.atomic():  # the task rows and their entries together
                for (payload, _), task_id in zip(batch, task_ids):
                    LabelStudioTask.objects.create(
                        link=link,
                        item_id=payload["id"],
                        task_id=task_id,
                        pushed_version=payload["version"],
                        shown=ls.synced_values(payload),
                        synced=ls.synced_values(payload),
                    )
                    pushed = reports.text(PUSHED, task=task_id, version=payload["version"])
                    report.add("pushed", f"item {payload['id']}", OK, pushed)
        for batch in _batches(report, stale, task_names):
            for payload, task in batch:
                _refresh(client, known[payload["id"]], payload, task, report)
    counts = report.counts
    run.say(reports.text(PUSH_SUMMARY, **counts, url=link.project_url))
    return {**counts, "project_id": link.project_id, "link_id": link.pk, "project_url": link.project_url}


def _refresh(client, row: LabelStudioTask, payload: dict, task: dict, report: _Report) -> None:
    """Show an item changed here since its last sync in its task: new data, new pre-annotation.
    Not while Label Studio holds an annotation of it that was not pulled: that work would then
    be compared with values its annotator never saw."""
    key = f"item {payload['id']}"
    pending = [
        a
        for a in ls.latest_per_annotator(client.task_annotations(row.task_id))
        if (a.get("id"), str(a.get("updated_at") or "")) != (row.pulled_annotation_id, row.pulled_annotation_updated_at)
    ]
    if pending:
        report.add(
            "skipped",
            key,
            SKIPPED,
            f"Task {row.task_id} not refreshed: it has {len(pending)} annotation(s) not pulled yet "
            f"(by {', '.join(sorted({ls.annotator(a) for a in pending}))}). Pull the project, then push again.",
            {"task_id": row.task_id},
        )
        return
    client.update_task(row.task_id, data=task["data"], meta=task["meta"])
    prefill = task.get("predictions", [{}])[0].get("result", [])
    client.replace_predictions(row.task_id, result=prefill, model_version=ls.PREDICTION_MODEL_VERSION)
    with transaction.atomic():
        old = row.pushed_version
        row.pushed_version = payload["version"]
        row.shown = row.synced = ls.synced_values(payload)
        row.save(update_fields=["pushed_version", "shown", "synced"])
        report.add(
            "refreshed",
            key,
            OK,
            f"Task {row.task_id} refreshed (item version {old} -> {payload['version']}).",
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
            raise DomainError(f"Another push created the project '{title}' at the same time: push again.") from None
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
    push that stopped between the import and our bookkeeping), they are adopted by their meta."""
    rows = {row.item_id: row for row in link.tasks.all()}
    if client.get_project(link.project_id).get("task_number", 0) <= len(rows):
        return rows
    found = {}
    for task in client.iter_tasks(link.project_id, include="id,meta"):
        meta = task.get("meta") or {}
        item_id = meta.get("benchforge_item")
        if isinstance(item_id, int) and item_id not in rows and item_id not in found:
            found[item_id] = (task["id"], meta.get("benchforge_version") or 1)
    known_task_ids = {row.task_id for row in rows.values()}
    for item_id in Item.objects.filter(benchmark=link.benchmark, pk__in=found).values_list("pk", flat=True):
        task_id, version = found[item_id]
        if task_id not in known_task_ids:
            # What the task shows is unknown (no `synced`): it is refreshed on this push if the item changed.
            rows[item_id] = LabelStudioTask.objects.create(link=link, item_id=item_id, task_id=task_id, pushed_version=version)
    return rows


def _batches(report: _Report, payloads: list[dict], task_names: dict[str, str]):
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


# ---- pull -------------------------------------------------------------------------------------------


def create_pull(link: LabelStudioLink, *, user, apply: str = ALL, several: str = LATEST) -> Job:
    permissions.require_researcher(user, "Label Studio push and pull")
    if apply not in APPLY_CHOICES:
        raise DomainError(f"Apply '{apply}'? Choose one of: {', '.join(APPLY_CHOICES)}.")
    if several not in SEVERAL_CHOICES:
        raise DomainError(f"With several annotations, '{several}'? Choose one of: {', '.join(SEVERAL_CHOICES)}.")
    return jobs.create_job(
        PULL_JOB,
        user=user,
        benchmark=link.benchmark,
        total=link.tasks.count(),
        params={"link_id": link.pk, "project_id": link.project_id, "apply": apply, "several": several},
    )


def start_pull(link: LabelStudioLink, *, user, apply: str = ALL, several: str = LATEST) -> Job:
    """Pull in the background (the page shows the job's progress)."""
    return jobs.enqueue(create_pull(link, user=user, apply=apply, several=several))


def pull_from_labelstudio(link: LabelStudioLink, *, user, apply: str = ALL, several: str = LATEST) -> Job:
    """Apply the annotations of every task of the project to its item, now: every annotation or
    only accepted ones (`apply`), the latest or a flagged disagreement when a task has several
    annotators (`several`)."""
    return jobs.run_now(create_pull(link, user=user, apply=apply, several=several))


def run_pull(run) -> dict:
    link = LabelStudioLink.objects.select_related("benchmark").get(pk=run.params["link_id"])
    return _pull(run, link, run.user)


# What push and pull jobs report (jobs.reports: stored in English, shown in the reader's language).
ITEM_GONE = gettext_noop("The item no longer exists.")
PUSH_THE_SEED = gettext_noop("A rewrite shares the reference answer and criteria of its seed: push seed item #%(id)s instead.")
ALREADY_PUSHED = gettext_noop("Already in the project as task %(task)s.")
PUSHED = gettext_noop("Pushed as task %(task)s (item version %(version)s).")
PUSH_SUMMARY = gettext_noop(
    "%(pushed)s pushed, %(refreshed)s refreshed, %(already_pushed)s already in the project, "
    "%(skipped)s skipped, %(errors)s errors. Project: %(url)s"
)
NOT_ANNOTATED = gettext_noop("Task %(task)s has no annotation yet.")
reports.declare(ITEM_GONE, PUSH_THE_SEED, ALREADY_PUSHED, PUSHED, PUSH_SUMMARY, NOT_ANNOTATED)
reports.declare_result_labels(
    {
        "pushed": pgettext_lazy("job result", "Pushed"),
        "refreshed": pgettext_lazy("job result", "Refreshed"),
        "already_pushed": pgettext_lazy("job result", "Already in the project"),
        "applied": pgettext_lazy("job result", "Applied"),
        "unchanged": pgettext_lazy("job result", "Unchanged"),
        "already_pulled": pgettext_lazy("job result", "Already pulled"),
        "not_annotated": pgettext_lazy("job result", "Not annotated"),
        "not_accepted": pgettext_lazy("job result", "Not accepted"),
        "disagreements": pgettext_lazy("job result", "Disagreements"),
        "conflicts": pgettext_lazy("job result", "Conflicts"),
        "project_id": pgettext_lazy("job result", "Project id"),
        "link_id": pgettext_lazy("job result", "Link id"),
        "project_url": pgettext_lazy("job result", "Project URL"),
    }
)

PULL_COUNTS = (
    "applied",
    "unchanged",
    "already_pulled",
    "not_annotated",
    "not_accepted",
    "disagreements",
    "conflicts",
    "errors",
)


def _pull(run, link: LabelStudioLink, user) -> dict:
    rows = list(link.tasks.order_by("task_id"))
    run.set_total(len(rows))
    done = run.done_keys()
    apply, several = run.params.get("apply", ALL), run.params.get("several", LATEST)
    report = _Report(run, *PULL_COUNTS)
    with open_client(link.benchmark, url=link.url) as client:
        if client.project_or_none(link.project_id) is None:
            _mark_gone(link)
            raise LabelStudioError(gone_message(link), code="labelstudio_project_gone")
        annotated = {
            task["id"]
            for task in client.iter_tasks(link.project_id, include="id,total_annotations")
            if task.get("total_annotations")
        }
        for row in rows:
            key = f"item {row.item_id}"
            if key in done:
                continue
            if row.task_id not in annotated:
                report.add("not_annotated", key, SKIPPED, reports.text(NOT_ANNOTATED, task=row.task_id))
                continue
            try:
                outcome, count, message, data = _pull_task(client, row, user, apply=apply, several=several)
            except ls.LabelStudioResultError as exc:  # names the task (and the field) already
                outcome, count, message, data = ERROR, "errors", exc.message, {"task_id": row.task_id, "field": exc.field}
            except LabelStudioError:
                raise  # the server went away or refused us: the job fails with that message
            except DomainError as exc:  # the item refused the change (validation, released...)
                outcome, count, message, data = (
                    ERROR,
                    "errors",
                    gettext("Task %(task)s: %(problem)s") % {"task": row.task_id, "problem": exc.message},
                    {"task_id": row.task_id},
                )
            report.add(count, key, outcome, message, data)
    link.last_pulled_at = timezone.now()
    link.save(update_fields=["last_pulled_at"])
    counts = report.counts
    run.say(", ".join(f"{n} {name.replace('_', ' ')}" for name, n in counts.items()) + ".")
    return counts


def _accepted(answer: ls.LabelStudioAnswer) -> bool:
    # Label Studio's community edition (the one NOTES.md and our tests run) has no review state
    # on annotations; the verdict of our labeling config is the acceptance.
    return answer.verdict == "ok"


def _pull_task(client, row: LabelStudioTask, user, *, apply: str, several: str) -> tuple[str, str, str, dict]:
    annotations = ls.latest_per_annotator(client.task_annotations(row.task_id))
    if not annotations:
        return SKIPPED, "not_annotated", f"Task {row.task_id} has only skipped annotations.", {"task_id": row.task_id}
    answers = [(a, ls.parse_result(row.task_id, a.get("result"))) for a in annotations]
    if apply == ACCEPTED:
        answers = [(a, answer) for a, answer in answers if _accepted(answer)]
        if not answers:
            return (
                SKIPPED,
                "not_accepted",
                f"Task {row.task_id}: no accepted annotation (verdict OK) yet; not applied.",
                {"task_id": row.task_id},
            )

    item = with_payload_data(Item.objects.filter(pk=row.item_id)).get()
    current = ls.synced_values(item_payload(item))
    # An annotation is read against the pre-annotation its annotator saw (`shown`); a change
    # conflicts only with a field edited here since the last sync (`synced`). A task adopted from
    # an interrupted push has no record of either: its item's values, while still at that version.
    shown, synced = row.shown or None, row.synced or None
    if shown is None and item.version == row.pushed_version:
        shown = synced = current

    annotation, answer = answers[0]  # the latest
    annotation_id, updated_at = annotation.get("id"), str(annotation.get("updated_at") or "")
    who = ls.annotator(annotation)
    data = {"task_id": row.task_id, "annotation_id": annotation_id, "annotator": who, "verdict": answer.verdict}
    pulled = row.pulled_annotation_id == annotation_id and row.pulled_annotation_updated_at == updated_at
    if pulled and (several == LATEST or len(answers) == 1):
        return SKIPPED, "already_pulled", f"Annotation {annotation_id} of task {row.task_id} was already pulled.", data

    changes = ls.item_changes(shown or current, answer, task_id=row.task_id, kind=item.kind)
    if several == FLAG and len(answers) > 1:
        proposals = [
            (a, ls.item_changes(shown or current, other, task_id=row.task_id, kind=item.kind)) for a, other in answers[1:]
        ]
        if any(not _same_changes(changes, other) for _, other in proposals):
            return _disagreement(row, [(annotation, changes), *proposals], data)
    if synced is None:  # unknown sync state and edited here since: never overwrite, show both
        apply_now = {}
        conflicts = {name: {"local": current[name], "labelstudio": v, "synced": None} for name, v in changes.items()}
    else:
        apply_now, conflicts = ls.three_way(synced, current, changes)
    verdict = f" Verdict: {ls.VERDICTS[answer.verdict]}." if answer.verdict else ""
    if conflicts:
        return _conflict(row, item.version, conflicts, data)
    if item.kind == Item.Kind.MCQ and {"choices", "answer", "reference_answer"} & set(apply_now):
        problem = ls.answer_key_problem({**current, **apply_now})
        if problem:
            raise ls.LabelStudioResultError(row.task_id, problem[1], field=problem[0])
    synced = {**(synced or current), **changes}
    if not apply_now:
        _mark_pulled(row, annotation, answer.verdict, synced=synced, version=item.version)
        return OK, "unchanged", f"Task {row.task_id}: nothing to change (annotation by {who}).{verdict}", data
    note = f"Label Studio task {row.task_id}, annotation {annotation_id} by {who}"
    if answer.verdict:
        note += f" (verdict: {ls.VERDICTS[answer.verdict]})"
    try:
        with transaction.atomic():
            item = update_item(item, apply_now, expected_version=item.version, user=user, action=PULL_ACTION, note=note)
            _mark_pulled(row, annotation, answer.verdict, synced=synced, version=item.version)
    except StaleVersion:  # edited here while we were applying: the next pull compares again
        return SKIPPED, "conflicts", f"Task {row.task_id}: item #{row.item_id} was saved here meanwhile; pull again.", data
    fields = ", ".join(FIELD_NAMES[name] for name in apply_now)
    return OK, "applied", f"Task {row.task_id}: applied {fields} by {who} (item now version {item.version}).{verdict}", data


def _same_changes(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(ls.same_value(name, a[name], b[name]) for name in a)


def _disagreement(row: LabelStudioTask, proposals, data: dict) -> tuple[str, str, str, dict]:
    """Annotators of one task who ask different things: nothing applied, each one's changes shown
    so the researcher decides in benchforge (edit the item, or have them agree and pull again)."""
    shown = []
    for annotation, changes in proposals:
        asked = "; ".join(f"{FIELD_NAMES[name]} {_short(value)}" for name, value in changes.items()) or "no change"
        shown.append(f"{ls.annotator(annotation)} (annotation {annotation.get('id')}): {asked}")
    message = (
        f"Disagreement: {len(proposals)} annotators of task {row.task_id} ask different things, so nothing was applied. "
        + " | ".join(shown)
        + ". Decide in benchforge: edit item #"
        + f"{row.item_id}, or have them agree in Label Studio and pull again."
    )
    annotations = [{"annotator": ls.annotator(a), "annotation_id": a.get("id"), "changes": changes} for a, changes in proposals]
    return SKIPPED, "disagreements", message, {**data, "disagreement": True, "annotations": annotations}


def _conflict(row: LabelStudioTask, local_version, fields: dict, data: dict) -> tuple[str, str, str, dict]:
    shown = "; ".join(
        f"{FIELD_NAMES[name]}: here {_short(v['local'])}, in Label Studio {_short(v['labelstudio'])}"
        for name, v in fields.items()
    )
    message = (
        f"Conflict: item #{row.item_id} was edited here since task {row.task_id} was last synced (item version "
        f"{row.pushed_version} then, {local_version} now), on fields the annotation of {data.get('annotator')} also "
        f"changes, so nothing of it was applied. {shown}. Copy what should stay into the item by hand, or push again "
        "to show the task the current values."
    )
    return (
        SKIPPED,
        "conflicts",
        message,
        {**data, "conflict": True, "pushed_version": row.pushed_version, "local_version": local_version, "fields": fields},
    )


def _short(value, limit: int = 120) -> str:
    if isinstance(value, list) and all(isinstance(c, dict) for c in value):
        value = " | ".join(f"[{c['kind']}] {c['text']}" for c in value) or "(none)"
    elif isinstance(value, list):
        value = " | ".join(value) or "(none)"
    text = str(value or "(empty)")
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _mark_pulled(row: LabelStudioTask, annotation: dict, verdict: str | None, *, synced: dict, version: int) -> None:
    row.pulled_annotation_id = annotation.get("id")
    row.pulled_annotation_updated_at = str(annotation.get("updated_at") or "")
    row.pulled_at = timezone.now()
    row.verdict = verdict or ""
    row.annotator = ls.annotator(annotation)[:200]
    row.synced = synced
    row.pushed_version = version
    row.save(
        update_fields=[
            "pushed_version",
            "pulled_annotation_id",
            "pulled_annotation_updated_at",
            "pulled_at",
            "verdict",
            "annotator",
            "synced",
        ]
    )

"""Pull annotations back into items, as a tracked job.

Each annotation not read yet (or edited since) is read against the pre-annotation its annotator
started from: what they left as it showed them, even a stale value, is no change. What they
changed is merged three ways, key by key (labelstudio.adapter.field_values), against the
baseline: changed in Label Studio only -> applied through annotation.services.update_item
(validation, a new version, history); changed here only -> kept (the next push shows it); both,
differently -> a conflict the researcher decides on the project's page. A key the annotation
leaves out is never changed. Items past review take a change only as the project's rule says
(`common.review_route`); otherwise it waits for a decision too. The annotation is then marked
read, so no message ever asks for the same pull (or push) again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy, gettext_noop, pgettext_lazy

from annotation.contract import item_payload
from annotation.models import Item
from annotation.selectors import with_payload_data
from annotation.services import update_item
from benchforge import permissions
from benchforge.errors import DomainError, StaleVersion
from jobs import reports
from jobs import services as jobs
from jobs.runner import ERROR, OK, SKIPPED

from .. import adapter as ls
from ..client import LabelStudioError
from ..models import LabelStudioLink, LabelStudioTask
from ..selectors import PULL_JOB
from .common import (
    AS_IS,
    PULL_ACTION,
    SENT_BACK,
    WAITS,
    Report,
    after_change,
    agree,
    review_route,
    save_sync_state,
    status_label,
)
from .connection import open_client
from .push import ITEM_GONE, _mark_gone, gone_message

if TYPE_CHECKING:
    from jobs.models import Job

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
ITEMS_PER_QUERY = 500

NOT_ANNOTATED = gettext_noop("Task %(task)s has no annotation yet.")
ALREADY_PULLED = gettext_noop("Task %(task)s: every annotation was already pulled.")
reports.declare(NOT_ANNOTATED, ALREADY_PULLED)
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
        "held": pgettext_lazy("job result", "Held for a decision (reviewed items)"),
        "to_review": pgettext_lazy("job result", "Sent through review"),
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
    "held",
    "to_review",
    "errors",
)
# Why a key waits for the researcher (LabelStudioTask.pending[key]["reason"]).
CONFLICT, DISAGREEMENT, HELD = "conflict", "disagreement", "held"


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


def _pull(run, link: LabelStudioLink, user) -> dict:
    rows = list(link.tasks.order_by("task_id"))
    run.set_total(len(rows))
    done = run.done_keys()
    apply, several = run.params.get("apply", ALL), run.params.get("several", LATEST)
    report = Report(run, *PULL_COUNTS)
    with open_client(link.benchmark, url=link.url) as client:
        if client.project_or_none(link.project_id) is None:
            _mark_gone(link)
            raise LabelStudioError(gone_message(link), code="labelstudio_project_gone")
        # One paged listing for the whole project (annotations included), not a request per task.
        work = {task["id"]: task.get("annotations") or [] for task in client.iter_tasks_with_work(link.project_id)}
    quiet, todo = [], []
    for row in rows:
        key = f"item {row.item_id}"
        if key in done:
            continue
        annotations = ls.latest_per_annotator(work.get(row.task_id))
        if not annotations:
            quiet.append(("not_annotated", key, SKIPPED, reports.text(NOT_ANNOTATED, task=row.task_id), {"task_id": row.task_id}))
        elif all(row.pulled.get(str(a.get("id"))) == _stamp(a) for a in annotations):
            quiet.append(
                ("already_pulled", key, SKIPPED, reports.text(ALREADY_PULLED, task=row.task_id), {"task_id": row.task_id})
            )
        else:
            todo.append((row, annotations))
    report.add_many(quiet)
    for start in range(0, len(todo), ITEMS_PER_QUERY):
        chunk = todo[start : start + ITEMS_PER_QUERY]
        items = with_payload_data(Item.objects.filter(pk__in=[row.item_id for row, _ in chunk])).in_bulk()
        for row, annotations in chunk:
            key = f"item {row.item_id}"
            if row.item_id not in items:  # deleted here since the pull started (its task record went with it)
                report.add("errors", key, ERROR, reports.text(ITEM_GONE), {"task_id": row.task_id})
                continue
            try:
                count, outcome, message, data = _pull_task(
                    row, items[row.item_id], annotations, user=user, rule=link.reviewed, apply=apply, several=several
                )
            except ls.LabelStudioResultError as exc:  # names the task (and the field) already
                count, outcome, message, data = "errors", ERROR, exc.message, {"task_id": row.task_id, "field": exc.field}
            except DomainError as exc:  # the item refused the change (validation, released...)
                message = gettext("Task %(task)s: %(problem)s") % {"task": row.task_id, "problem": exc.message}
                count, outcome, data = "errors", ERROR, {"task_id": row.task_id}
            report.add(count, key, outcome, message, data)
    link.last_pulled_at = timezone.now()
    link.save(update_fields=["last_pulled_at"])
    counts = report.counts
    run.say(", ".join(f"{n} {name.replace('_', ' ')}" for name, n in counts.items()) + ".")
    return counts


def _stamp(annotation: dict) -> str:
    return str(annotation.get("updated_at") or "")


def _accepted(answer: ls.LabelStudioAnswer) -> bool:
    # Label Studio's community edition (the one NOTES.md and our tests run) has no review state
    # on annotations; the verdict of our labeling config is the acceptance.
    return answer.verdict == "ok"


def _forget(pending: dict, annotation_id) -> None:
    """An annotation read again (edited in Label Studio) no longer asks what it asked before."""
    for key in list(pending):
        proposals = [p for p in pending[key]["proposals"] if p["annotation"] != annotation_id]
        if proposals:
            pending[key]["proposals"] = proposals
        else:
            del pending[key]


def _proposal(annotation: dict, value) -> dict:
    return {"annotation": annotation.get("id"), "annotator": ls.annotator(annotation), "value": value}


def _pull_task(row: LabelStudioTask, item: Item, annotations, *, user, rule: str, apply: str, several: str):
    """Read a task's annotations not read yet into its item: (count, outcome, message, data)."""
    fresh = [a for a in annotations if row.pulled.get(str(a.get("id"))) != _stamp(a)]
    read = [(a, ls.parse_result(row.task_id, a.get("result"))) for a in fresh]
    latest = read[-1][0]
    data = {"task_id": row.task_id, "annotation_id": latest.get("id"), "annotator": ls.annotator(latest)}
    if apply == ACCEPTED:
        read = [(a, answer) for a, answer in read if _accepted(answer)]
        if not read:
            message = f"Task {row.task_id}: no accepted annotation (verdict OK) yet; not applied."
            return "not_accepted", SKIPPED, message, data

    here = ls.field_values(item_payload(item))
    prefills = row.prefills()
    # A task adopted before baselines were kept: what both sides held is known only if the item is
    # unchanged since; otherwise every difference is a conflict (never overwrite what is unknown).
    unknown = not row.baseline and item.version != row.pushed_version
    if not row.baseline:
        prefills[0]["base"] = dict(here)
        prefills[0]["shown"] = row.shown or dict(here)
    asks = []
    for annotation, answer in read:
        started = ls.started_from(annotation, prefills)
        given = ls.given_values(answer, task_id=row.task_id, kind=item.kind)
        asks.append((annotation, answer, started, ls.proposals(given, started["shown"])))

    disagreements = _disagreements(asks) if several == FLAG else {}
    merge = _TaskMerge(item, here, row.pending, prefills, review_route(item, rule), unknown)
    for annotation, _answer, started, changes in asks:
        merge.take(annotation, started, changes, disagreements)
    merge.wait_on(disagreements)

    changes = ls.item_changes(here, merge.state, task_id=row.task_id)
    if item.kind == Item.Kind.MCQ and {"choices", "answer", "reference_answer"} & set(changes):
        problem = ls.answer_key_problem({**here, **merge.state})
        if problem:
            raise ls.LabelStudioResultError(row.task_id, problem[1], field=problem[0])
    try:
        item = _save_pull(row, item, asks, changes, merge, user=user)
    except StaleVersion:  # saved here while we were applying: the next pull reads it again
        return "conflicts", SKIPPED, f"Task {row.task_id}: item #{row.item_id} was saved here meanwhile; pull again.", data

    data.update(
        applied=merge.applied,
        waiting={key: merge.pending[key]["reason"] for key in (*merge.conflicts, *merge.held, *disagreements)},
        version=item.version,
    )
    counts, message = _pull_report(row, item, asks, merge, disagreements)
    if not counts:
        return "unchanged", OK, message, data
    return counts if len(counts) > 1 else counts[0], OK if merge.applied else SKIPPED, message, data


def _disagreements(asks: list) -> dict[str, list]:
    """Keys that annotators ask different things of: {key: [(annotation, value)...]} (with FLAG none
    of them is applied)."""
    disagreements: dict[str, list] = {}
    for key in {key for *_, changes in asks for key in changes}:
        values = [(a, changes[key]) for a, _, _, changes in asks if key in changes]
        if any(not ls.same(key, value, values[0][1]) for _, value in values):
            disagreements[key] = values
    return disagreements


class _TaskMerge:
    """One task's annotations merged into its item, key by key, the state explicit: the item's
    values as they become (`state`), what waits for a decision (`pending`), the prefills that
    learn agreed values, and the keys applied, in conflict, or held (reviewed work changes only
    through review)."""

    def __init__(self, item: Item, here: dict, pending: dict, prefills: list, route, unknown: bool) -> None:
        self.item, self.prefills, self.route, self.unknown = item, prefills, route, unknown
        self.state, self.pending = dict(here), dict(pending)
        self.applied: list[str] = []
        self.conflicts: list[str] = []
        self.held: list[str] = []

    def take(self, annotation: dict, started: dict, changes: dict, disagreements: dict) -> None:
        """What one annotation asks (its proposals since the prefill it started from)."""
        _forget(self.pending, annotation.get("id"))
        for key, value in changes.items():
            if key in disagreements:
                continue
            if key in self.pending:  # waits for a decision already: this is one more proposal for it
                self.pending[key]["proposals"].append(_proposal(annotation, value))
                continue
            self._merge(annotation, started, key, value)

    def _merge(self, annotation: dict, started: dict, key: str, value) -> None:
        state = self.state
        if self.unknown and started is self.prefills[0]:
            merged = ls.Merge(conflicts={key: {"base": None, "here": state[key], "labelstudio": value}})
            if ls.same(key, state[key], value):
                merged = ls.Merge(agreed={key: value})
        else:
            merged = ls.merge(started["base"], state, {key: value})
        if key in merged.apply and self.route is None:
            self.pending[key] = {
                "reason": HELD,
                "status": self.item.status,
                "base": started["base"][key],
                "here": state[key],
                "proposals": [_proposal(annotation, value)],
            }
            self.held.append(key)
        elif key in merged.apply:
            state[key] = value
            agree(self.prefills, key, value)
            self.applied.append(key)
        elif key in merged.agreed:
            agree(self.prefills, key, value)
        elif key in merged.conflicts:
            conflict = merged.conflicts[key]
            self.pending[key] = {
                "reason": CONFLICT,
                "base": conflict["base"],
                "here": conflict["here"],
                "proposals": [_proposal(annotation, value)],
            }
            self.conflicts.append(key)

    def wait_on(self, disagreements: dict) -> None:
        """Keys the annotators disagree on wait for a decision with every proposal."""
        for key, values in disagreements.items():
            self.pending[key] = {
                "reason": DISAGREEMENT,
                "base": self.prefills[0]["base"].get(key),
                "here": self.state[key],
                "proposals": [_proposal(a, value) for a, value in values],
            }


def _save_pull(row: LabelStudioTask, item: Item, asks: list, changes: dict, merge: _TaskMerge, *, user) -> Item:
    """The item's changes (then its review route) and the task's sync state, in one transaction."""
    note = f"Label Studio task {row.task_id}, " + "; ".join(
        f"annotation {a.get('id')} by {ls.annotator(a)}"
        + (f" (verdict: {ls.VERDICTS[answer.verdict]})" if answer.verdict else "")
        for a, answer, *_ in asks
    )
    with transaction.atomic():
        if changes:
            item = update_item(item, changes, expected_version=item.version, user=user, action=PULL_ACTION, note=note)
            item = after_change(item, merge.route, user=user, note=note)
        row.pending = merge.pending
        for annotation, *_ in asks:
            row.pulled[str(annotation.get("id"))] = _stamp(annotation)
        row.pulled_at = timezone.now()
        row.verdict = asks[-1][1].verdict or ""
        row.annotator = ls.annotator(asks[-1][0])[:200]
        save_sync_state(row, merge.prefills, "pending", "pulled", "pulled_at", "verdict", "annotator")
    return item


def _pull_report(row: LabelStudioTask, item: Item, asks: list, merge: _TaskMerge, disagreements: dict) -> tuple[list, str]:
    """The counts a pull adds to (empty: nothing changed) and the task's line in the job report."""
    who = ", ".join(dict.fromkeys(ls.annotator(a) for a, *_ in asks))
    pending, route = merge.pending, merge.route
    counts, parts = [], []
    if merge.applied:
        counts.append("applied")
        fields = ", ".join(ls.KEY_NAMES[key] for key in merge.applied)
        parts.append(f"applied {fields} by {who} (item now version {item.version})")
        if route in (WAITS, SENT_BACK):
            counts.append("to_review")
            parts.append(
                "the item waits for review with it"
                if route == WAITS
                else "the item was reviewed before, so it went back to its author for another review"
            )
    if merge.conflicts:
        counts.append("conflicts")
        parts.append(
            "conflict on "
            + "; ".join(
                f"{ls.KEY_NAMES[key]} (here {_short(pending[key]['here'])}, in Label Studio "
                f"{_short(pending[key]['proposals'][-1]['value'])})"
                for key in merge.conflicts
            )
            + ": edited on both sides since they last agreed"
        )
    if merge.held:
        counts.append("held")
        parts.append(
            f"{', '.join(ls.KEY_NAMES[key] for key in merge.held)} not applied: the item is {status_label(item.status)} "
            "(reviewed work changes only through review)"
        )
    if disagreements:
        counts.append("disagreements")
        parts.append(
            "annotators disagree on "
            + "; ".join(
                f"{ls.KEY_NAMES[key]} (" + ", ".join(f"{ls.annotator(a)} {_short(value)}" for a, value in values) + ")"
                for key, values in disagreements.items()
            )
        )
    if merge.conflicts or merge.held or disagreements:
        parts.append("decide on the project's decisions page in benchforge")
    if not counts:
        verdict = f" Verdict: {ls.VERDICTS[asks[-1][1].verdict]}." if asks[-1][1].verdict else ""
        return counts, f"Task {row.task_id}: nothing to change (annotation by {who}).{verdict}"
    return counts, f"Task {row.task_id}: " + "; ".join(parts) + "."


def _short(value, limit: int = 120) -> str:
    if isinstance(value, list):
        value = " | ".join(value) or "(none)"
    text = str(value or "(empty)")
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


__all__ = [
    "ACCEPTED",
    "ALL",
    "APPLY_CHOICES",
    "AS_IS",
    "CONFLICT",
    "DISAGREEMENT",
    "FLAG",
    "HELD",
    "LATEST",
    "SEVERAL_CHOICES",
    "create_pull",
    "pull_from_labelstudio",
    "run_pull",
    "start_pull",
]

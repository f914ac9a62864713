"""The researcher's decisions on a project's page: what a pull could not apply by itself (a
conflict, a disagreement between annotators, a change to an item past review). Each decision
takes benchforge's value, an annotator's, or a value typed there. The annotations asked are read,
so the same question never comes back; the decided value is the baseline for annotators whose
pre-fill shows it, and the next push shows it to everyone else."""

from __future__ import annotations

from django.db import transaction

from annotation.contract import item_payload
from annotation.models import Item, ItemRevision
from annotation.selectors import with_payload_data
from annotation.services import update_item
from benchforge import permissions
from benchforge.concurrency import lock
from benchforge.errors import Conflict, DomainError

from .. import adapter as ls
from ..models import LabelStudioLink, LabelStudioTask
from .common import Reviewed, after_change, review_route, save_sync_state

HERE, EDIT = "here", "edit"
TAKE = "labelstudio:"  # + the annotation id whose value is taken


def set_reviewed_rule(link: LabelStudioLink, rule: str, *, user) -> LabelStudioLink:
    """What the project's pulls do with changes to items past review (LabelStudioLink.Reviewed)."""
    permissions.require_researcher(user, "Label Studio push and pull")
    if rule not in Reviewed.values:
        raise DomainError(f"'{rule}'? Choose one of: {', '.join(Reviewed.values)}.")
    link.reviewed = rule
    link.save(update_fields=["reviewed"])
    return link


def _typed(key: str, raw: str, *, task_id, kind: str):
    """A value the researcher typed for `key`, checked as an annotation's would be."""
    raw = (raw or "").strip()
    if key == "choices":
        if kind != Item.Kind.MCQ:
            raise DomainError("Only multiple-choice items have options.")
        return ls._options(task_id, raw)
    if key == "answer":
        return raw.upper()
    if key == "question_type" or key in ls.CHOICE_KEYS:
        options = ls.QUESTION_TYPES if key == "question_type" else ls.CRITERION_KINDS
        for code, label in options.items():
            if raw.lower() in (code, label.lower()):
                return code
        if key != "question_type" and not raw:
            return ""
        raise DomainError(f"{ls.KEY_NAMES[key]}: '{raw}'? Choose one of: {', '.join(options.values())}.")
    if key in ("question", "reference_answer") and not raw:
        raise DomainError(f"{ls.KEY_NAMES[key]}: it is empty; write it.")
    return raw


def decide(row: LabelStudioTask, choices: dict[str, tuple[str, str]], *, user) -> dict:
    """Decide the waiting keys of a task: `choices` maps a key to (HERE, ""), (TAKE + annotation
    id, ""), or (EDIT, the value typed). Keys decided meanwhile are left out. The item takes the
    decided values as the researcher's edit (an item past review goes through review again when
    the workflow allows: answered items wait for their round, accepted ones go back to their author)."""
    permissions.require_researcher(user, "Label Studio push and pull")
    with transaction.atomic():
        row = lock(LabelStudioTask, row.pk)
        item = with_payload_data(Item.objects.filter(pk=row.item_id)).get()
        here = ls.field_values(item_payload(item))
        state, pending, prefills, decided = dict(here), dict(row.pending), row.prefills(), {}
        for key, (how, raw) in choices.items():
            if key not in pending:
                continue
            if how == HERE:
                value = here[key]
            elif how.startswith(TAKE):
                found = [p for p in pending[key]["proposals"] if str(p["annotation"]) == how[len(TAKE) :]]
                if not found:
                    raise Conflict(f"{ls.KEY_NAMES[key]}: that annotation asks nothing of it (any more): reload the page.")
                value = found[-1]["value"]
            elif how == EDIT:
                value = _typed(key, raw, task_id=row.task_id, kind=item.kind)
            else:
                raise DomainError(f"{ls.KEY_NAMES[key]}: choose a value to keep.")
            state[key], decided[key] = value, value
        try:
            changes = ls.item_changes(here, state, task_id=row.task_id)
        except ls.LabelStudioResultError as exc:  # the decided values together make no item
            raise DomainError(exc.problem) from None
        if item.kind == Item.Kind.MCQ and {"choices", "answer", "reference_answer"} & set(changes):
            problem = ls.answer_key_problem(state)
            if problem:
                raise DomainError(problem[1])
        route = None
        if changes:
            route = review_route(item, Reviewed.REVIEW)
            fields = ", ".join(ls.KEY_NAMES[key] for key in decided if not ls.same(key, state[key], here[key]))
            note = f"Label Studio task {row.task_id}: {fields} decided on the project's page"
            # The researcher's edit (action "edited"): it makes the item their work too, so they never review it.
            item = update_item(
                item, changes, expected_version=item.version, user=user, action=ItemRevision.Action.EDITED, note=note
            )
            if route:
                item = after_change(item, route, user=user, note=note)
        for key, value in decided.items():
            # Agreed for annotators whose pre-fill showed the decided value; for the others it is a
            # change made here like any edit (theirs would conflict with it) until a push shows it.
            for prefill in prefills:
                if ls.same(key, prefill["shown"].get(key, ls.empty_value(key)), value):
                    prefill["base"][key] = value
            del pending[key]
        row.pending = pending
        save_sync_state(row, prefills, "pending")
    return {"decided": list(decided), "changed": list(changes), "route": route, "item": item}

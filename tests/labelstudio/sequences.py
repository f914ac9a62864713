"""Random sequences of steps on both sides of a Label Studio project, with a model of where every
field must end up (the sync rules of docs/labelstudio.md, written as history: "what both sides last
agreed on" is recomputed from who changed what when, not kept incrementally as the app keeps it).

Steps: an edit here, an annotation from the task's current pre-fill (as the editor makes it), a
second annotation from a stale pre-fill (one a refresh has replaced), a push, a pull, a status
change, the rule for reviewed items, a decision on the project's page. After every step: every
field of every item is where the model says (nothing lost, nothing changed that nobody edited),
its status too, the same keys wait for a decision; after a pull, each entry reports as applied
exactly the keys the model applies; after a push, every task shows its item's current values and
version."""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

import pytest

from annotation.contract import item_payload
from annotation.models import Item
from annotation.selectors import with_payload_data
from annotation.services import change_status, create_item, update_item
from annotation.workflow import ACCEPTED, ANSWERED, DRAFT, IN_REVIEW, QC_FLAGGED, REVISION, WORK_IN_PROGRESS
from benchforge.errors import DomainError
from jobs.models import Job
from labelstudio import adapter as ls
from labelstudio import services as lss
from labelstudio.models import LabelStudioLink, LabelStudioTask

MOVES = {
    DRAFT: [ANSWERED],
    ANSWERED: [DRAFT, IN_REVIEW],
    IN_REVIEW: [ACCEPTED, REVISION],
    REVISION: [ANSWERED],
    ACCEPTED: [REVISION],
}
TEXT_KEYS = ("question", "reference_answer", "description")
KINDS = tuple(ls.CRITERION_KINDS)
TYPES = tuple(ls.QUESTION_TYPES)


def _route(status: str, rule: str) -> str | None:
    """labelstudio.services.common.review_route, as the docs state it."""
    if status in WORK_IN_PROGRESS:
        return "as_is"
    if rule != "review":
        return None
    if status == ANSWERED:
        return "waits"
    return "sent_back" if status in (ACCEPTED, QC_FLAGGED) else None


@dataclass
class Annotation:
    id: int
    annotator: int
    prefill: dict
    edits: dict
    read: bool = False


@dataclass
class Model:
    item: Item
    task_id: int
    value: dict
    status: str
    prefills: list = field(default_factory=list)  # {"id", "t", "at", "shown", "result"}, oldest first
    changes: dict = field(default_factory=dict)  # key -> [(tick, source, value)]
    pending: dict = field(default_factory=dict)  # key -> reason
    annotations: list = field(default_factory=list)
    seen: dict = field(default_factory=dict)  # key -> every value someone gave it (nothing else may appear)

    def base(self, prefill: dict, key: str):
        """What both sides last agreed on for annotators of `prefill`: what it showed, then every
        value Label Studio brought in since, and decisions that kept what it showed."""
        agreed = prefill["shown"][key]
        for tick, source, value in self.changes.get(key, []):
            if tick > prefill["t"] and (source == "ls" or (source == "decision" and ls.same(key, value, prefill["shown"][key]))):
                agreed = value
        return agreed

    def note(self, tick: int, source: str, key: str, value) -> None:
        self.changes.setdefault(key, []).append((tick, source, value))
        self.seen.setdefault(key, []).append(value)


class Sequence:
    def __init__(self, side, benchmark, researcher, images, task, *, seed: int, title: str):
        self.side, self.benchmark, self.researcher = side, benchmark, researcher
        self.rng = random.Random(seed)
        self.title, self.tick, self.rule, self.steps = title, 0, "hold", 0
        self.log: list[str] = []  # what happened, for a failure's message
        self.stats: Counter = Counter()  # what the sequence went through
        self.counter = 0
        base = {"reference_answer": "Ref one.", "criteria": [{"kind": "soft", "text": "Crit one."}], "description": "Desc one."}
        made = [
            create_item(benchmark, task=task, user=researcher, images=[images[0].pk], question="Open question?", **base),
            create_item(
                benchmark,
                task=task,
                user=researcher,
                images=[images[1].pk],
                kind="mcq",
                question_type="closed",
                question="Which one?",
                choices=["3", "4", "5"],
                answer="B",
                **{**base, "reference_answer": "B. 4"},
            ),
        ]
        self.models = []
        for item in made:
            values = ls.field_values(item_payload(self._fresh(item)))
            self.models.append(Model(item=item, task_id=0, value=values, status=DRAFT, seen={k: [v] for k, v in values.items()}))
        self.link = None
        self.push(first=True)

    # ---- helpers

    def _fresh(self, item) -> Item:
        return with_payload_data(Item.objects.filter(pk=item.pk)).get()

    def _all_fresh(self) -> dict[int, Item]:
        # One read for every item of the sequence: the check after each step reads them all.
        return {item.pk: item for item in with_payload_data(Item.objects.filter(pk__in=[m.item.pk for m in self.models]))}

    def _text(self, what: str) -> str:
        self.counter += 1
        return f"{what} {self.counter}."

    def _new_value(self, key: str, current):
        if key == "question_type":
            return self.rng.choice([t for t in TYPES if t != current] or TYPES)
        if key.endswith("_kind"):
            return self.rng.choice([k for k in KINDS if k != current] or KINDS)
        return self._text(key.replace("_", " ").capitalize())

    def _criteria(self, values: dict) -> int:
        return sum(1 for n in range(1, 4) if values[ls.criterion_text_name(n)])

    # ---- steps

    def run(self, steps: int) -> int:
        actions = [
            (self.edit, 3),
            (self.annotate, 5),
            (self.annotate_stale, 3),
            (self.push, 3),
            (self.pull, 4),
            (self.move, 2),
            (self.decide, 3),
            (self.set_rule, 1),
        ]
        for _ in range(steps):
            action = self.rng.choices([a for a, _ in actions], weights=[w for _, w in actions])[0]
            self.tick += 1
            self.log.append(f"{self.tick} {action.__name__}")
            self.stats[action.__name__] += 1
            action()
            self.steps += 1
            self.check(action.__name__)
        self.tick += 1
        self.pull()  # whatever is left is read too
        self.check("final pull")
        return self.steps + 1

    def edit(self):
        model = self.rng.choice(self.models)
        keys = self.rng.sample([*TEXT_KEYS, "question_type", *self._criterion_keys(model.value)], k=self.rng.randint(1, 2))
        new = dict(model.value)
        for key in keys:
            new[key] = self._new_value(key, model.value[key])
        changes = ls.item_changes(model.value, new, task_id=model.task_id)
        item = self._fresh(model.item)
        update_item(item, changes, expected_version=item.version, user=self.researcher)
        for key in keys:
            if not ls.same(key, new[key], model.value[key]):
                model.note(self.tick, "bf", key, new[key])
        model.value = new
        self.log.append(f"  item {model.item.pk}: {changes}")

    def _criterion_keys(self, values: dict) -> list[str]:
        n = self._criteria(values)
        return [key for i in range(1, n + 1) for key in (ls.criterion_kind_name(i), ls.criterion_text_name(i))]

    def _annotation(self, model: Model, prefill: dict, *, stale: bool):
        shown = prefill["shown"]
        n = self._criteria(shown)
        choices = [*TEXT_KEYS, "question_type", *self._criterion_keys(shown)]
        edits = {}
        for key in self.rng.sample(choices, k=self.rng.randint(1, 2)):
            roll = self.rng.random()
            edits[key] = model.value[key] if roll < 0.2 and model.value[key] else self._new_value(key, shown[key])
        if n < 3 and self.rng.random() < 0.25:  # a new criterion, after the last one the pre-fill shows
            edits[ls.criterion_kind_name(n + 1)] = self.rng.choice(KINDS)
            edits[ls.criterion_text_name(n + 1)] = self._text("New criterion")
        result = _editor_result(prefill["result"], edits)
        by = self.rng.choice(self.side.annotators)
        if stale:
            later = model.prefills[model.prefills.index(prefill) + 1]
            # Opened halfway between this pre-fill and the next one. (Not at least 0.5 s ago: in a fast run
            # that put the opening before this pre-fill was made, and the annotation read from an older one.)
            opened = (_moment(prefill["at"]) + (_moment(later["at"]) - _moment(prefill["at"])) / 2).timestamp()
            made = self.side.annotate(
                model.task_id, result, parent_prediction=None, lead_time=max(time.time() - opened, 0.0), by=by
            )
        else:
            # Opened after the pre-fill was made: the time spent on it is never longer than that.
            since = time.time() - _moment(prefill["at"]).timestamp()
            made = self.side.annotate(
                model.task_id, result, parent_prediction=prefill["id"], lead_time=max(since / 2, 0.0), by=by
            )
        for key, value in edits.items():
            model.seen.setdefault(key, []).append(value)
        model.annotations.append(Annotation(id=made["id"], annotator=by, prefill=prefill, edits=edits))
        self.log.append(f"  item {model.item.pk} by {by} from prefill t={prefill['t']}: {edits}")

    def annotate(self):
        model = self.rng.choice(self.models)
        self._annotation(model, model.prefills[-1], stale=False)

    def annotate_stale(self):
        model = self.rng.choice(self.models)
        if len(model.prefills) < 2:
            return self.annotate()
        self._annotation(model, self.rng.choice(model.prefills[:-1]), stale=True)

    def push(self, first: bool = False):
        versions = dict(Item.objects.filter(pk__in=[m.item.pk for m in self.models]).values_list("pk", "version"))
        behind = [m for m in self.models if first or versions[m.item.pk] != m.prefills[-1]["version"]]
        job = lss.push_items_to_labelstudio(
            self.benchmark, [m.item for m in self.models], project_title=self.title, user=self.researcher
        )
        assert job.status == Job.Status.SUCCEEDED, job.message
        assert job.result["pushed" if first else "refreshed"] == len(behind), (job.result, len(behind))
        self.link = LabelStudioLink.objects.get(pk=job.result["link_id"])
        rows = {row.item_id: row for row in self.link.tasks.all()}
        fresh = self._all_fresh()
        for model in self.models:
            model.task_id = rows[model.item.pk].task_id
            item = fresh[model.item.pk]
            prefill = self.side.prefill(model.task_id)
            if model in behind:
                model.prefills.append(
                    {
                        "id": prefill["id"],
                        "at": prefill["created_at"],
                        "t": self.tick,
                        "shown": dict(model.value),
                        "result": prefill["result"],
                        "version": item.version,
                    }
                )
            # The task shows what benchforge holds: values and version.
            assert ls.prefill_values(model.task_id, prefill["result"], kind=item.kind) == model.value
            assert self.side.task(model.task_id)["meta"]["benchforge_version"] == item.version

    def pull(self):
        expected = {m.item.pk: self._expect_pull(m) for m in self.models}
        job = lss.pull_from_labelstudio(self.link, user=self.researcher)
        assert job.status == Job.Status.SUCCEEDED, job.message
        entries = {e.key: e for e in job.entries.all()}
        for model in self.models:
            applied, error = expected[model.item.pk]
            entry = entries[f"item {model.item.pk}"]
            assert (entry.outcome == "error") == error, (entry.message, error)
            # Nothing reported applied but what an annotation changed and the rules apply.
            assert set(entry.data.get("applied", [])) == set(applied), (entry.message, applied, self.log)

    def _expect_pull(self, model: Model):
        latest = {}
        for annotation in model.annotations:
            latest[annotation.annotator] = annotation
        fresh = sorted((a for a in latest.values() if not a.read), key=lambda a: a.id)
        if not fresh:
            return [], False
        route = _route(model.status, self.rule)
        state, pending, applied, noted = dict(model.value), dict(model.pending), [], []
        for annotation in fresh:
            for key, value in annotation.edits.items():
                if ls.same(key, value, annotation.prefill["shown"][key]):
                    continue
                if key in pending:
                    continue
                agreed = model.base(annotation.prefill, key)
                if ls.same(key, value, agreed):
                    continue
                if ls.same(key, state[key], agreed):
                    if route is None:
                        pending[key] = "held"
                        self.stats["held"] += 1
                    else:
                        state[key] = value
                        model.note(self.tick, "ls", key, value)
                        noted.append(key)
                        applied.append(key)
                        self.stats["applied"] += 1
                elif ls.same(key, state[key], value):
                    model.note(self.tick, "ls", key, value)
                    noted.append(key)
                else:
                    pending[key] = "conflict"
                    self.stats["conflict"] += 1
        try:
            ls.criteria_of(state, task_id=model.task_id) if applied else None
        except ls.LabelStudioResultError:  # refused as a whole: nothing of the task applied or read
            for key in noted:
                model.changes[key].pop()
            self.stats["refused"] += 1
            return [], True
        for annotation in fresh:
            annotation.read = True
        model.value, model.pending = state, pending
        if applied and route == "sent_back":
            model.status = REVISION
        return applied, False

    def move(self):
        model = self.rng.choice(self.models)
        target = self.rng.choice(MOVES[model.status])
        change_status(self._fresh(model.item), target, user=self.researcher, action="test")
        self.log.append(f"  item {model.item.pk}: {model.status} -> {target}")
        model.status = target

    def set_rule(self):
        self.rule = self.rng.choice(["hold", "review"])
        lss.set_reviewed_rule(self.link, self.rule, user=self.researcher)

    def decide(self):
        waiting = [m for m in self.models if m.pending]
        if not waiting:
            return self.pull()
        model = self.rng.choice(waiting)
        row = LabelStudioTask.objects.get(link=self.link, item=model.item)
        choices, new = {}, dict(model.value)
        for key in row.pending:
            roll = self.rng.random()
            proposals = row.pending[key]["proposals"]
            if roll < 0.35:
                choices[key], new[key] = (lss.HERE, ""), model.value[key]
            elif roll < 0.75 and proposals:
                proposal = self.rng.choice(proposals)
                choices[key], new[key] = (lss.TAKE + str(proposal["annotation"]), ""), proposal["value"]
            else:
                value = self._new_value(key, model.value[key])
                choices[key], new[key] = (lss.EDIT, _typed(key, value)), value
        self.log.append(f"  item {model.item.pk}: {choices}")
        try:
            ls.criteria_of(new, task_id=model.task_id)
        except ls.LabelStudioResultError:  # values that make no item together: refused, nothing changes
            with pytest.raises(DomainError, match="criterion"):
                lss.decide(row, choices, user=self.researcher)
            return
        lss.decide(row, choices, user=self.researcher)
        changed = any(not ls.same(key, new[key], model.value[key]) for key in choices)
        for key in choices:
            model.note(self.tick, "decision", key, new[key])
        model.value, model.pending = new, {}
        if changed and _route(model.status, "review") == "sent_back":
            model.status = REVISION

    # ---- after every step

    def check(self, step: str):
        rows = {row.item_id: row for row in LabelStudioTask.objects.filter(link=self.link)}
        fresh = self._all_fresh()
        for model in self.models:
            item = fresh[model.item.pk]
            values = ls.field_values(item_payload(item))
            where = f"step {self.steps} ({step}), item #{item.pk}"
            for key, value in values.items():  # no field ever holds what nobody gave it
                assert any(ls.same(key, value, given) for given in model.seen[key]), (where, key, value)
            assert values == model.value, (where, _diff(values, model.value))
            assert item.status == model.status, (where, item.status, model.status)
            waiting = {key: entry["reason"] for key, entry in rows[item.pk].pending.items()}
            assert waiting == model.pending, (where, waiting, model.pending)


def _typed(key: str, value) -> str:
    if key == "question_type":
        return ls.QUESTION_TYPES[value]
    if key.endswith("_kind"):
        return ls.CRITERION_KINDS[value]
    return value


def _editor_result(prefill_result: list[dict], edits: dict) -> list[dict]:
    """The result Label Studio's editor submits for `edits` (by key) made on a pre-annotation."""
    edits = {_FROM_NAME.get(key, key): value for key, value in edits.items()}
    shown = {r["from_name"] for r in prefill_result}
    result = [
        {**_region(r["from_name"], edits[r["from_name"]]), "origin": "prediction-changed"}
        if r["from_name"] in edits
        else {**r, "origin": "prediction"}
        for r in prefill_result
    ]
    result += [{**_region(name, value), "origin": "manual"} for name, value in edits.items() if name not in shown]
    return result + [{**_region("verdict", "ok"), "origin": "manual"}]


_FROM_NAME = {"question": ls.QUESTION}


def _region(name: str, value) -> dict:
    if name == "question_type":
        return {"from_name": name, "to_name": "question", "type": "choices", "value": {"choices": [ls.QUESTION_TYPES[value]]}}
    if name == "verdict":
        return {"from_name": name, "to_name": "question", "type": "choices", "value": {"choices": ["OK"]}}
    if name.endswith("_kind"):
        return {"from_name": name, "to_name": "question", "type": "choices", "value": {"choices": [ls.CRITERION_KINDS[value]]}}
    return {"from_name": name, "to_name": "question", "type": "textarea", "value": {"text": [value]}}


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _diff(a: dict, b: dict) -> dict:
    return {k: (a[k], b.get(k)) for k in a if a[k] != b.get(k)}

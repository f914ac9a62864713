"""QC runs: which items (scope), what a run would cost (estimate), starting one (start_run) and the
`qc_run` job that asks the models (run_qc_part), one job per part of the items.

Each filter is decided by the harness's scoring mode registered for it (benchforge_harness.scoring.MODES):
multiple choice (text-only, all-fail) by CircularEval, open items (judged text-only) by answers
without the image that the pointwise judge grades. The models are asked in turn; with early
stopping, a model's remaining passes on an item are skipped once one fails, and further models
are not asked about an item whose verdict (at the run's threshold) cannot change. Every call is
a unit of the job (llm.sink.JobSink), and so is every call a stop saved (skipped): a killed or failed
part resumes without asking again what was answered. Every answer is kept as a QCAnswer row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from annotation.contract import release_row
from annotation.models import Item
from annotation.selectors import with_payload_data
from annotation.services import change_status_many
from annotation.workflow import ACCEPTED, QC_FLAGGED, QC_PASSED, REWRITTEN
from benchforge import permissions
from benchforge.concurrency import lock
from benchforge.errors import DomainError
from benchforge_harness import InputError
from benchforge_harness.scoring import (
    EXTRACTOR_METHODS,
    FILTER_TITLES,
    SOLVED,
    Estimate,
    calls_per_item,
    check_filter,
    mode_for_filter,
)
from curation.models import Benchmark
from jobs import services as jobs
from jobs.runner import JobRun
from llm.client import check_endpoints, get_client, get_endpoint
from llm.sink import JobSink

from ..models import QCAnswer, QCItem, QCRun

QC_RUN_JOB = "qc_run"
MAX_PARTS = 8
# Items past review and rewriting are what QC looks at; a flagged item may be checked again.
QC_STATUSES = (ACCEPTED, REWRITTEN, QC_PASSED, QC_FLAGGED)
FLAGGABLE = (ACCEPTED, REWRITTEN, QC_PASSED)
FLAG_ACTION = "qc_flagged"

Filter = QCRun.Filter


# ---------------------------------------------------------------- scope


def _check_filter(filter: str) -> None:
    if filter not in Filter.values:
        raise DomainError(
            _("Unknown QC filter '%(filter)s'; use one of: %(filters)s.")
            % {"filter": filter, "filters": ", ".join(Filter.values)}
        )


def _threshold(filter: str, threshold) -> float:
    """The run's threshold: the filter's default (the harness's) when None; the harness decides
    what a threshold may be, said here in the interface's words."""
    _check_filter(filter)
    try:
        return check_filter(filter, threshold)
    except InputError:
        raise DomainError(_("The threshold is a share of the models, from 0 up to (not including) 1.")) from None


def scope(benchmark, *, filter: str, tasks: Iterable = (), item_ids: Iterable[int] | None = None) -> list[Item]:
    """The items a run of `filter` would ask about: past review, in the tasks (all when none) and
    the selection (all when None); multiple choice with 2-4 options and an answer key for the
    circular filters, open items with a reference answer for the judged one."""
    _check_filter(filter)
    queryset = Item.objects.filter(benchmark=benchmark, status__in=QC_STATUSES)
    tasks = list(tasks)
    if tasks:
        queryset = queryset.filter(task__in=tasks)
    if item_ids is not None:
        queryset = queryset.filter(pk__in=list(item_ids))
    if filter == Filter.JUDGED_TEXT_ONLY:
        queryset = queryset.exclude(kind=Item.Kind.MCQ)
        items = list(with_payload_data(queryset.order_by("pk")))
        return [item for item in items if (item.seed.reference_answer if item.seed_id else item.reference_answer).strip()]
    items = queryset.filter(kind=Item.Kind.MCQ).exclude(answer="").order_by("pk")
    return [item for item in with_payload_data(items) if 2 <= len(item.choices or []) <= 4]


def _image_names(item: Item) -> list[str]:
    source = item.seed if item.seed_id else item
    return [link.image.file.name for link in source.item_images.all()]


def harness_item(item: Item, *, with_images: bool, language: str) -> dict:
    """The item as the harness scores it (its release row, asked in the benchmark's `language`),
    keyed by our id, with its images as storage names (load_image reads them) when the filter
    sends them."""
    row = release_row(item)
    row["id"] = str(item.pk)
    row["language"] = language
    row["images"] = _image_names(item) if with_images else []
    return row


def load_image(name: str) -> bytes:
    with default_storage.open(name, "rb") as handle:
        return handle.read()


# ---------------------------------------------------------------- estimate


def _check_models(filter: str, models: list[str], extractor: str, judge: str) -> None:
    if not models:
        raise DomainError(_("Choose at least one model."))
    if len(set(models)) != len(models):
        raise DomainError(_("A model is listed twice; each model counts once in the verdict."))
    if filter == Filter.JUDGED_TEXT_ONLY and not judge:
        raise DomainError(_("The judged text-only filter needs a judge endpoint."))
    for name in [*models, *([extractor] if extractor else []), *([judge] if judge else [])]:
        get_endpoint(name)  # an unknown name is a DomainError naming the models file
    if filter == Filter.ALL_FAIL:
        blind = [name for name in models if not get_endpoint(name).vision]
        if blind:
            raise DomainError(
                ngettext(
                    "The all-fail filter shows the image: %(models)s is declared vision = false in the models file.",
                    "The all-fail filter shows the image: %(models)s are declared vision = false in the models file.",
                    len(blind),
                )
                % {"models": ", ".join(blind)}
            )


def estimate(
    benchmark, *, filter: str, models: list[str], tasks=(), item_ids=None, extractor: str = "", judge: str = "", items=None
) -> dict:
    """What a run would ask if nothing stopped early: {"items", "calls_without_stopping",
    "prompt_tokens", "completion_tokens", "cost" (None when a model has no prices), "per_model"}:
    the filter's scoring mode as the registry says it asks (benchforge_harness.scoring.Estimate),
    every model in turn and, for the judged filter, the judge. Early stopping only ever asks
    fewer; extractor calls (when the rules cannot read a letter) come on top and are not counted."""
    _check_models(filter, models, extractor, judge)
    items = scope(benchmark, filter=filter, tasks=tasks, item_ids=item_ids) if items is None else items
    rows = [harness_item(item, with_images=filter == Filter.ALL_FAIL, language=benchmark.language) for item in items]
    plan = Estimate()
    mode = mode_for_filter(filter)
    for name in models:
        plan.add_mode(mode, rows, model=name, judge=judge, judge_line=f"{judge} (judge)")
    priced = plan.priced(get_endpoint)
    return {
        "items": len(items),
        "calls_without_stopping": priced["calls"],
        "prompt_tokens": priced["prompt_tokens"],
        "completion_tokens": priced["completion_tokens"],
        "cost": priced["cost"],
        "per_model": priced["lines"],
    }


# ---------------------------------------------------------------- start


def start_run(
    benchmark,
    *,
    user,
    filter: str,
    models: list[str],
    tasks=(),
    item_ids=None,
    extractor: str = "",
    judge: str = "",
    threshold: float | None = None,
    min_score: int = 7,
    early_stop: bool = True,
    parts: int = 1,
) -> QCRun:
    """Create the run over its scope and queue one `qc_run` job per part (parts > 1: shares of
    the items that several workers ask at once). Returns the run."""
    permissions.require_researcher(user, "Starting a QC run")
    models = [m.strip() for m in models if m and m.strip()]
    threshold = _threshold(filter, threshold)
    if not 1 <= min_score <= 10:
        raise DomainError(_("The minimum score is a grade from 1 to 10."))
    if not 1 <= parts <= MAX_PARTS:
        raise DomainError(_("A run is split into 1 to %(max)s parts.") % {"max": MAX_PARTS})
    tasks = list(tasks)
    _check_models(filter, models, extractor, judge)
    items = scope(benchmark, filter=filter, tasks=tasks, item_ids=item_ids)
    if not items:
        raise DomainError(
            _("No open items with a reference answer past review in this selection: nothing to check.")
            if filter == Filter.JUDGED_TEXT_ONLY
            else _("No multiple-choice items with an answer key past review in this selection: nothing to check.")
        )
    summary = estimate(benchmark, filter=filter, models=models, extractor=extractor, judge=judge, items=items)
    with get_client() as client:
        check_endpoints(client, [*models, *([extractor] if extractor else []), *([judge] if judge else [])])
    parts = min(parts, len(items))
    with transaction.atomic():
        lock(Benchmark, benchmark.pk)  # runs started at once take turns for their numbers
        number = (QCRun.objects.filter(benchmark=benchmark).aggregate(n=Max("number"))["n"] or 0) + 1
        run = QCRun.objects.create(
            benchmark=benchmark,
            number=number,
            filter=filter,
            model_names=models,
            extractor=extractor,
            judge=judge,
            threshold=threshold,
            min_score=min_score,
            early_stop=early_stop,
            parts=parts,
            scope={"tasks": [t.pk for t in tasks], "items": sorted(item_ids) if item_ids is not None else None},
            estimate=summary,
            created_by=user,
        )
        QCItem.objects.bulk_create([QCItem(run=run, item=item, part=n % parts) for n, item in enumerate(items)])
        mode, totals = mode_for_filter(filter), [0] * parts
        for n, item in enumerate(items):
            totals[n % parts] += calls_per_item(mode, item) * len(models)
        for part in range(parts):
            job = jobs.create_job(
                QC_RUN_JOB, user=user, benchmark=benchmark, total=totals[part], params={"run": run.pk, "part": part}
            )
            run.jobs.add(job)
            jobs.enqueue(job)
    return run


# ---------------------------------------------------------------- the job


def _skip(run: JobRun, sink: JobSink, keys: list[str]) -> None:
    """Calls a stop saved are units too (skipped), so the progress bar ends full."""
    message = "not asked: the item's verdict was settled or an earlier pass failed"
    rows = [(key, "skipped", message, {}) for key in keys if key not in sink.rows]
    for start in range(0, len(rows), 1000):
        run.record_many(rows[start : start + 1000])


def _save_answers(run: QCRun, rows: list[dict]) -> None:
    QCAnswer.objects.bulk_create(
        [QCAnswer(run=run, **row) for row in rows],
        update_conflicts=True,
        unique_fields=["run", "item", "model", "shift"],
        update_fields=["options", "shown_answer", "output", "letter", "method", "correct", "score", "reason", "error"],
    )


def _answer(row: dict) -> dict:
    """A QCAnswer's fields from a row of the harness's result: a CircularEval pass's verdict, or a
    judged item's answer and grade."""
    return {
        "item_id": int(row["id"]),
        "model": row["model"],
        "shift": row.get("pass", 0),
        "options": row.get("options") or {},
        "shown_answer": row.get("shown_answer") or "",
        "output": row.get("output") or row.get("answer") or "",
        "letter": row.get("letter") or "",
        "method": row["method"] or "",
        "correct": bool(row["correct"]) if "correct" in row else row["outcome"] == SOLVED,
        "score": row.get("score"),
        "reason": row.get("reason") or "",
        "error": row.get("error") or "",
    }


def _score(qc: QCRun, run: JobRun, client, sink: JobSink, items: list[dict]):
    """Ask the filter's scoring mode about the items, models in turn, and keep every answer."""
    mode = mode_for_filter(qc.filter)
    said = _("%(filter)s: %(items)s item(s), %(models)s model(s) in turn") % {
        "filter": qc.get_filter_display(),
        "items": len(items),
        "models": len(qc.model_names),
    }
    if qc.early_stop:
        said += _(", each asked only about items still undecided")
    if not qc.with_images:
        said += _(", without images")
    run.say(said)
    settings = {
        "models": qc.model_names,
        "extractor": qc.extractor or None,
        "judge": qc.judge,
        "text_only": not qc.with_images,
        "all_passes": not qc.early_stop,
        "qc_filter": qc.filter,
        "threshold": qc.threshold,
        "stop_when_decided": qc.early_stop,
        "min_score": qc.min_score,
        "image_loader": load_image,
    }
    scored = mode.run(client, items, sink=sink, **mode.accepts(settings))
    _save_answers(qc, [_answer(row) for row in scored.rows.values()])
    _skip(run, sink, scored.unasked)
    return scored


def run_qc_part(run: JobRun) -> dict:
    """The `qc_run` job: ask the models about the part's items not yet settled, then store each
    item's verdict and flag what the filter flags (status qc_flagged)."""
    qc = QCRun.objects.select_related("benchmark", "created_by").get(pk=run.params["run"])
    part = run.params.get("part", 0)
    # Items not settled, and settled ones with a call that failed (early stop off: their verdict was
    # settled by other models): every failed call is asked again, whatever the verdict.
    entries = {e.item_id: e for e in QCItem.objects.filter(run=qc, part=part).filter(Q(done=False) | ~Q(errors=[]))}
    items = [
        harness_item(item, with_images=qc.with_images, language=qc.benchmark.language)
        for item in with_payload_data(Item.objects.filter(pk__in=list(entries)))
    ]
    items.sort(key=lambda i: int(i["id"]))
    # The client bills every request and cache hit to this job run in the usage ledger (the run's
    # page reads it there); the sink records each call as a unit of the job, and the extractor's
    # calls, asked only for replies without a readable letter, grow the job's total.
    client = get_client(payer=(run.job.pk, run.job.runs))
    sink = JobSink(run, unplanned=("extract\t",))
    flags = {}
    try:
        if items:
            flags = _score(qc, run, client, sink, items).flags
    finally:
        sink.close()
        client.close()
    mode = mode_for_filter(qc.filter)
    part_items = QCItem.objects.filter(run=qc, part=part).select_related("item")
    without = sum(calls_per_item(mode, e.item) for e in part_items)
    return _finish_part(qc, run, entries, flags, without * len(qc.model_names))


def calls_made(answers) -> int:
    """Model calls behind these answers: one per pass asked; an open item's answer was also judged."""
    return answers.count() + answers.filter(method__in=["judged", "judge_error"]).count()


def earlier_decisions(qc: QCRun, item_ids, *, kinds=None) -> dict[int, QCItem]:
    """Per item, the latest decision taken on it in another run of the benchmark (only those of
    `kinds`, when given, are returned: a later "remove" overrides an earlier "keep")."""
    latest: dict[int, QCItem] = {}
    entries = (
        QCItem.objects.filter(run__benchmark_id=qc.benchmark_id, item_id__in=list(item_ids))
        .exclude(run=qc)
        .exclude(decision="")
        .select_related("run")
        .order_by("decided_at", "pk")
    )
    for entry in entries:
        latest[entry.item_id] = entry
    return {item_id: e for item_id, e in latest.items() if kinds is None or e.decision in kinds}


def _finish_part(qc: QCRun, run: JobRun, entries: dict[int, QCItem], flags: dict[str, dict], without: int) -> dict:
    changed, to_flag = [], []
    for item_id, flag in flags.items():
        entry = entries[int(item_id)]
        for field in ("solved_by", "failed_by", "errors", "not_asked"):
            setattr(entry, field, flag[field])
        entry.flagged, entry.done = flag["flagged"], flag["decided"]
        changed.append(entry)
        if entry.flagged and entry.done:
            to_flag.append(entry.item_id)
    # Items share a handful of verdicts (which models solved, failed...): one UPDATE per verdict is
    # far cheaper than bulk_update's CASE over every row.
    groups: dict[str, list[int]] = {}
    for entry in changed:
        fields = {f: getattr(entry, f) for f in ("solved_by", "failed_by", "errors", "not_asked", "flagged", "done")}
        groups.setdefault(json.dumps(fields, sort_keys=True), []).append(entry.pk)
    with transaction.atomic():
        for fields, pks in groups.items():
            for start in range(0, len(pks), 1000):
                QCItem.objects.filter(pk__in=pks[start : start + 1000]).update(**json.loads(fields))
        # A researcher who decided to keep (or fix) an item in an earlier run is not overruled by a
        # re-run: the new verdict is recorded on this run's entry, beside that decision (the
        # adjudication list shows "kept earlier"), and the item's status stays.
        kept = set(earlier_decisions(qc, to_flag, kinds=(QCItem.Decision.KEEP, QCItem.Decision.FIX)))
        movable = Item.objects.filter(pk__in=[pk for pk in to_flag if pk not in kept], status__in=FLAGGABLE)
        change_status_many(
            list(movable),
            QC_FLAGGED,
            user=qc.created_by,
            action=FLAG_ACTION,
            # the item's history says it in the harness's words, in no one's language
            note=f"QC run {qc.number}: {FILTER_TITLES[qc.filter]}",
        )
        if not QCItem.objects.filter(run=qc).filter(Q(done=False) | ~Q(errors=[])).exists():
            QCRun.objects.filter(pk=qc.pk).update(status=QCRun.Status.FINISHED, finished_at=timezone.now())
    open_items = [e for e in changed if not e.done or e.errors]
    part_items = QCItem.objects.filter(run=qc, part=run.params.get("part", 0)).values("item_id")
    asked = calls_made(QCAnswer.objects.filter(run=qc, item_id__in=part_items))
    result = {
        "items": part_items.count(),
        "flagged": QCItem.objects.filter(run=qc, item_id__in=part_items, flagged=True, done=True).count(),
        "calls_made": asked,
        "calls_without_stopping": without,
        "extractor_needed": QCAnswer.objects.filter(run=qc, item_id__in=part_items, method__in=EXTRACTOR_METHODS).count(),
    }
    if open_items:
        raise DomainError(
            _("%(n)s item(s) still undecided, or with model calls that failed (%(models)s); resume the job to ask them again.")
            % {"n": len(open_items), "models": ", ".join(sorted({m for e in open_items for m in e.errors}))}
        )
    run.say(
        _(
            "%(flagged)s of %(items)s item(s) flagged; %(made)s passes asked of %(without)s without early stopping "
            "(requests sent and cache hits: the run's usage)."
        )
        % {
            "flagged": result["flagged"],
            "items": result["items"],
            "made": result["calls_made"],
            "without": result["calls_without_stopping"],
        }
    )
    return result

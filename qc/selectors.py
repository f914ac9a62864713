"""Reads of the qc app: runs, a run's report (flag rates per category, per-model vanilla and circular
accuracy, extractor use, calls made vs without stopping), flagged items to adjudicate, each
model's answers per pass, and what other apps ask: `provenance` and `removed_items` (exports)."""

from __future__ import annotations

from collections import Counter, defaultdict

from django.db.models import Count, Q
from django.http import Http404

from annotation.models import Item
from benchforge_harness.scoring import CALL_FAILURES, EXTRACTOR_METHODS, read_counts, stop_savings
from curation.models import Task
from jobs.selectors import failed_unit_data, job_entries, work_state
from llm.selectors import usage_of

from .models import QCAnswer, QCItem, QCRun
from .services.runs import earlier_decisions


def run_state(run: QCRun) -> dict:
    """What a person sees of the run: its jobs' state (a failed part: "Failed" with the reason and
    Resume; a lost worker: "Interrupted"), the run's own once every part succeeded."""
    return work_state(list(run.jobs.all()), label=run.get_status_display(), code=run.status)


def runs_of(benchmark):
    return (
        QCRun.objects.filter(benchmark=benchmark)
        .select_related("created_by")
        .prefetch_related("jobs")
        .annotate(
            n_items=Count("entries", distinct=True),
            n_flagged=Count("entries", filter=Q(entries__flagged=True, entries__done=True), distinct=True),
            n_decided=Count("entries", filter=Q(entries__flagged=True) & ~Q(entries__decision=""), distinct=True),
        )
        .order_by("-number")
    )


def get_run(benchmark, number: int) -> QCRun:
    run = QCRun.objects.filter(benchmark=benchmark, number=number).select_related("benchmark", "created_by").first()
    if run is None:
        raise Http404(f"No QC run {number} in this benchmark.")
    return run


def finished_runs(benchmark) -> list[QCRun]:
    """Every finished QC run of the benchmark, oldest first (what a combined export covers)."""
    return list(QCRun.objects.filter(benchmark=benchmark, status=QCRun.Status.FINISHED).order_by("number"))


def run_jobs(run: QCRun):
    return run.jobs.order_by("pk")


def flagged_entries(run: QCRun, *, undecided_only: bool = False):
    entries = QCItem.objects.filter(run=run, flagged=True, done=True).select_related(
        "item", "item__task__category__parent", "decided_by"
    )
    if undecided_only:
        entries = entries.filter(decision="")
    return entries.order_by("item_id")


def mark_earlier_decisions(run: QCRun, entries) -> list[QCItem]:
    """Each entry with `earlier`: the latest decision on its item in another run (or None), so the
    adjudication list can say "kept earlier" beside this run's verdict."""
    entries = list(entries)
    earlier = earlier_decisions(run, [e.item_id for e in entries])
    for entry in entries:
        entry.earlier = earlier.get(entry.item_id)
    return entries


def waiting_for(user, benchmark):
    """The navigation's QC count: flagged items of the benchmark's runs still waiting for a decision."""
    return QCItem.objects.filter(run__benchmark=benchmark, flagged=True, done=True, decision="")


def get_entry(run: QCRun, item_id: int) -> QCItem:
    entry = QCItem.objects.filter(run=run, item_id=item_id).select_related("item", "decided_by").first()
    if entry is None:
        raise Http404(f"Item #{item_id} is not in QC run {run.number}.")
    return entry


def neighbours(run: QCRun, entry: QCItem) -> tuple[int | None, int | None]:
    """The flagged items before and after this one (J/K move between them)."""
    flagged = QCItem.objects.filter(run=run, flagged=True, done=True)
    before = flagged.filter(item_id__lt=entry.item_id).order_by("-item_id").values_list("item_id", flat=True).first()
    after = flagged.filter(item_id__gt=entry.item_id).order_by("item_id").values_list("item_id", flat=True).first()
    return before, after


def next_undecided(run: QCRun, after_item: int | None = None) -> int | None:
    entries = QCItem.objects.filter(run=run, flagged=True, done=True, decision="").order_by("item_id")
    if after_item is not None:
        later = entries.filter(item_id__gt=after_item).values_list("item_id", flat=True).first()
        if later is not None:
            return later
    return entries.values_list("item_id", flat=True).first()


def answers_by_model(run: QCRun, item_id: int) -> list[dict]:
    """Each model's answers to the item, pass by pass, in the run's model order."""
    rows = defaultdict(list)
    for answer in QCAnswer.objects.filter(run=run, item_id=item_id).order_by("shift"):
        rows[answer.model].append(answer)
    return [{"model": m, "answers": rows.get(m, [])} for m in run.model_names]


def run_usage(run: QCRun) -> dict:
    """What the run's jobs spent, from the usage ledger, over every job run: per endpoint and in
    total, requests sent (retries included), answers from the response cache, retries, failures,
    tokens paid and cost (None when an endpoint has no prices). A fully cached re-run sends no
    request. Requests are counted as they are sent, so a job run whose worker was killed still
    counts every request it sent (llm.ledger). Failures are the calls failed now, after the last
    run (a call that failed and was answered on resume is no failure), not the sum over runs."""
    job_ids = list(run.jobs.values_list("pk", flat=True))
    usage = usage_of(job_ids)
    left = Counter(str(data.get("model") or "") for data in failed_unit_data(job_ids))
    for name, counts in usage["endpoints"].items():
        counts["failures"] = left.get(name, 0)
    usage["total"]["failures"] = sum(left.values())
    return usage


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


JUDGE_METHODS = ("judged", "judge_error")  # a judged-filter answer that was graded (or whose grading failed)


def call_counts(run: QCRun) -> dict:
    """Where the run's calls to the models went and how their answers were read, each count derived
    from the stored rows by one definition (the harness's: scoring.stop_savings and READ_BY):

      made                calls asked: one per pass (QCAnswer row), and one more per judged answer
      every_call          calls of every (model, item) pair when nothing stops: an item's passes are
                          its options (a judged item: the answer and its grading, 2)
      after_a_wrong_pass  calls not made on the pairs asked: CircularEval stops at a model's first
                          wrong (or failed) pass on an item
      qc_stop_pairs       pairs the QC stop left out (the model is in the item's `not_asked`)
      qc_stop_saved_at_least / _at_most
                          what those pairs would have asked in the same run without the QC stop:
                          from one call each to all of them (their answers are unknown)
      read_by_rules / read_by_extractor / unread / no_reply
                          answers by how they were read (QCAnswer.method): by the rules; by the
                          extractor model (0 when the run has none); by neither; no reply (the
                          model's call failed)
      judged              judged filter: answers graded by the judge
    Pairs not asked yet (a part still running) are in none of them."""
    made: Counter = Counter()
    for item_id, model, n, graded in (
        QCAnswer.objects.filter(run=run)
        .values("item_id", "model")
        .annotate(n=Count("id"), graded=Count("id", filter=Q(method__in=JUDGE_METHODS)))
        .values_list("item_id", "model", "n", "graded")
    ):
        made[(item_id, model)] = n + graded
    pairs = []
    for item_id, choices, left_out in QCItem.objects.filter(run=run).values_list("item_id", "item__choices", "not_asked"):
        needed = 2 if not run.is_mcq else len(choices or [])
        least = needed if run.is_mcq and not run.early_stop else 1
        for model in run.model_names:
            if model in left_out:
                pairs.append((needed, None, least))
            elif (item_id, model) in made:
                pairs.append((needed, made[(item_id, model)], least))
    counts = stop_savings(pairs)
    counts["made"] = counts.pop("asked")
    methods = dict(QCAnswer.objects.filter(run=run).values_list("method").annotate(n=Count("id")).order_by())
    read = read_counts(methods)
    counts.update({f"read_by_{k}" if k in ("rules", "extractor") else k: v for k, v in read.items()})
    counts["judged"] = methods.get("judged", 0)
    return counts


def report(run: QCRun) -> dict:
    answers = QCAnswer.objects.filter(run=run)
    entries = QCItem.objects.filter(run=run)
    models = {}
    verdicts = list(entries.values_list("solved_by", "failed_by", "errors"))
    for model in run.model_names:
        mine = answers.filter(model=model)
        # A call that failed for good is not a wrong answer: its item is undecided for this model,
        # left out of the accuracy and counted apart (a resume asks it again).
        solved = sum(1 for s, _f, _e in verdicts if model in s)
        decided = solved + sum(1 for _s, f, _e in verdicts if model in f)
        first = mine.filter(shift=0).exclude(method__in=CALL_FAILURES + ("judge_error",))
        models[model] = {
            "asked": mine.values("item_id").distinct().count(),
            "decided": decided,
            "undecided": sum(1 for _s, _f, e in verdicts if model in e),
            "vanilla": _share(first.filter(correct=True).count(), first.count()),
            "circular": _share(solved, decided),
            "answers": mine.count(),
            "failed_calls": mine.filter(method__in=CALL_FAILURES + ("judge_error",)).count(),
            "needed_extractor": mine.filter(method__in=EXTRACTOR_METHODS).count(),
        }
    per_task = defaultdict(lambda: {"items": 0, "flagged": 0})
    for task_id, flagged, done in entries.values_list("item__task_id", "flagged", "done"):
        row = per_task[task_id]
        row["items"] += 1
        row["flagged"] += bool(flagged and done)
    # One row per task, in taxonomy order, named with its category.
    tasks = Task.objects.filter(pk__in=list(per_task)).select_related("category__parent")
    by_category = [
        {"category": task.label, **per_task[task.pk], "rate": _share(per_task[task.pk]["flagged"], per_task[task.pk]["items"])}
        for task in tasks
    ]
    n_items, n_flagged = entries.count(), entries.filter(flagged=True, done=True).count()
    return {
        "run": run.number,
        "filter": run.filter,
        "items": n_items,
        "flagged": n_flagged,
        "flag_rate": _share(n_flagged, n_items),
        "undecided_items": entries.filter(done=False).count(),
        "decisions": dict(entries.exclude(decision="").values_list("decision").annotate(n=Count("id")).order_by()),
        "calls": call_counts(run),
        "models": models,
        "usage": run_usage(run),
        "categories": by_category,
        "chart": chart(by_category),
    }


CHART_WIDTH, BAR_HEIGHT, LABEL_WIDTH = 600, 22, 260


def chart(categories: list[dict]) -> dict:
    """Bars of the flag rate per category, sized for an SVG drawn with attributes only (no inline style)."""
    bars = []
    span = CHART_WIDTH - LABEL_WIDTH - 60
    for n, row in enumerate(categories):
        rate = row["rate"] or 0.0
        bars.append(
            {
                **row,
                "y": n * (BAR_HEIGHT + 6),
                "text_y": n * (BAR_HEIGHT + 6) + BAR_HEIGHT - 6,
                "width": round(span * rate, 1),
                "label_x": LABEL_WIDTH + round(span * rate, 1) + 6,
                "percent": round(100 * rate),
            }
        )
    return {
        "bars": bars,
        "width": CHART_WIDTH,
        "height": max(1, len(bars)) * (BAR_HEIGHT + 6),
        "label_width": LABEL_WIDTH,
        "bar_height": BAR_HEIGHT,
    }


# ---------------------------------------------------------------- what other apps read


def provenance(item_ids) -> dict[int, dict]:
    """Per item: every QC run that looked at it, what it found and what was decided.
    {item_id: {"runs": [{"run", "number", "benchmark", "filter", "flagged", "decision", "note",
    "models", "solved_by"}]}} (items no run looked at are absent)."""
    result: dict[int, dict] = {}
    entries = (
        QCItem.objects.filter(item_id__in=list(item_ids))
        .select_related("run", "run__benchmark")
        .order_by("item_id", "run__number")
    )
    for entry in entries:
        result.setdefault(entry.item_id, {"runs": []})["runs"].append(
            {
                "run": entry.run_id,
                "number": entry.run.number,
                "benchmark": entry.run.benchmark.slug,
                "filter": entry.run.filter,
                "flagged": entry.flagged and entry.done,
                "decision": entry.decision,
                "note": entry.note,
                "models": list(entry.run.model_names),
                "solved_by": list(entry.solved_by),
            }
        )
    return result


REASONS = {
    "text_only": "answerable without the image (text-only filter)",
    "all_fail": "no model solved it with the image (all-fail filter)",
    "judged_text_only": "answered well without the image (judged text-only filter)",
}


def removed_items(benchmark=None, item_ids=None) -> list[dict]:
    """Items a QC decision removed, and why: [{"item", "external_id", "run", "number", "filter",
    "reason", "note", "decided_by", "decided_at"}], oldest decision first."""
    entries = QCItem.objects.filter(decision=QCItem.Decision.REMOVE).select_related("run", "item", "decided_by")
    if benchmark is not None:
        entries = entries.filter(run__benchmark=benchmark)
    if item_ids is not None:
        entries = entries.filter(item_id__in=list(item_ids))
    return [
        {
            "item": e.item_id,
            "external_id": e.item.external_id,
            "run": e.run_id,
            "number": e.run.number,
            "filter": e.run.filter,
            "reason": REASONS.get(e.run.filter, e.run.filter),
            "note": e.note,
            "decided_by": e.decided_by.username if e.decided_by_id else None,
            "decided_at": e.decided_at.isoformat() if e.decided_at else None,
        }
        for e in entries.order_by("decided_at", "pk")
    ]


# ---------------------------------------------------------------- imports


def import_errors(job):
    return job_entries(job, outcome="error")


def qc_overview(benchmark) -> dict:
    """The dashboard's panel: the latest run and its numbers."""
    latest = runs_of(benchmark).first()
    return {
        "latest": latest,
        "runs": QCRun.objects.filter(benchmark=benchmark).count(),
        "external_items": Item.objects.filter(benchmark=benchmark, is_external=True).count(),
    }

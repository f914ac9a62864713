"""Item analysis: computing it (a job, started when a score of a frozen release is finished), and
what owners do with it: open a review round on flagged items, leave items out of the next release,
choose the size of the anchor split."""

import hashlib
import json

import numpy as np
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop, pgettext_lazy

from benchforge import permissions
from benchforge.concurrency import create_unique, lock
from benchforge.errors import Conflict, DomainError
from benchforge_harness import scoring
from benchforge_harness.anchors import Split
from exports import selectors as exports
from exports.leaderboard import score_model, score_rows, scoring_release
from humaneval.selectors import disagreement_by_item
from jobs import reports
from jobs import services as jobs
from jobs.selectors import get_job
from review.models import ReviewRound
from review.services import open_round

from . import selectors, splits, statistics
from .models import Analysis, ItemStat, LeftOut, ScoreResults

ANALYSIS_JOB = "item_analysis"
ANSWER_SHOWN = 280  # characters of each model's answer kept for the page (20 models: under 6 kB a row)
MAX_K = 100_000
STAT_FIELDS = ("key", "item_id", "flags", "n_models", "discrimination", "ratings", "disagreement")

READ_RESULTS = gettext_noop("results of %(label)s read")
TOO_FEW = gettext_noop("%(n)s model(s) scored with this method: item analysis needs at least %(min)s")
SUPERSEDED = gettext_noop("a newer analysis job took over: nothing written")
reports.declare(READ_RESULTS, TOO_FEW, SUPERSEDED)
reports.declare_result_labels(
    {"flagged": pgettext_lazy("job result", "Flagged items"), "mae": pgettext_lazy("job result", "Anchor split error")}
)


def analysed_methods() -> list[str]:
    """The leaderboard methods whose scoring mode defines a per-item result."""
    return [m.name for m in scoring.MODES.values() if m.leaderboard and m.item_results is not None]


# ---- starting it --------------------------------------------------------------------------------


def request_analysis(release, method: str, *, user, k: int | None = None) -> Analysis:
    """Have the release's analysis for `method` computed again: a new job, unless one is still
    waiting to start (it will read every score finished by then, so it is joined)."""
    if not release.is_frozen:
        raise Conflict(gettext("Release %(version)s is not frozen: it has no scores to analyse.") % {"version": release.version})
    if method not in analysed_methods():
        raise DomainError(
            gettext("Item analysis covers %(methods)s scores, not '%(method)s'.")
            % {"methods": ", ".join(analysed_methods()), "method": method}
        )
    if k is not None and not 1 <= int(k) <= MAX_K:
        raise DomainError(gettext("The anchor split takes from 1 to %(max)s items.") % {"max": MAX_K})
    with transaction.atomic():
        analysis, _ = create_unique(
            lambda: Analysis.objects.create(release=release, method=method),
            lambda: Analysis.objects.filter(release=release, method=method).first(),
        )
        analysis = lock(Analysis, analysis.pk)  # one decision at a time: two finished scores start one job
        if k is not None and int(k) != analysis.k:
            analysis.k = int(k)
            analysis.save(update_fields=["k"])
        current = get_job(analysis.job_id) if analysis.job_id else None
        if current is not None and current.status == current.Status.QUEUED and k is None:
            return analysis
        job = jobs.create_job(ANALYSIS_JOB, user=user, benchmark=release.benchmark, params={"analysis": analysis.pk})
        Analysis.objects.filter(pk=analysis.pk).update(job=job)
        analysis.job = job
        jobs.enqueue(job)
    return analysis


def on_score_done(score) -> None:
    """A score was finished (exports.leaderboard): recompute its release's analysis once it has enough models."""
    if score.method not in analysed_methods():
        return
    if not exports.is_owners_score(score, score.release):
        return  # an outside team's score (evaluation server): not analysed unless its window asks
    if selectors.models_scored(score.release, score.method) >= statistics.MIN_MODELS:
        request_analysis(score.release, score.method, user=score.created_by)


def on_study_closed(study, user) -> None:
    """A study of the release closed (humaneval): its ratings are final, so the analyses that read
    them (judge-people disagreement) are computed again."""
    release = study.release
    for method in Analysis.objects.filter(release=release).values_list("method", flat=True):
        if selectors.models_scored(release, method) >= statistics.MIN_MODELS:
            request_analysis(release, method, user=user)


# ---- the job ------------------------------------------------------------------------------------


def _fingerprint(scores, *extra) -> str:
    data = json.dumps([[s.pk, s.job_id] for s in scores] + list(extra))
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def run_analysis(run) -> dict:
    """Read each score's per-item results (once per scoring run: kept in ScoreResults), then the
    item figures and flags, then the anchor split and its validation. Each step is a unit written
    with its rows, so a killed job resumes at the step it was in; a step whose inputs are unchanged
    is skipped."""
    analysis = Analysis.objects.select_related("release__benchmark").get(pk=run.params["analysis"])
    release, mode = analysis.release, scoring.MODES[analysis.method]
    scores = selectors.latest_scores(release, analysis.method)
    if len(scores) < statistics.MIN_MODELS:
        run.record("models", "skipped", reports.text(TOO_FEW, n=len(scores), min=statistics.MIN_MODELS))
        return {"models": len(scores)}
    run.set_total(len(scores) + 2)
    done = run.done_keys()
    items = None
    for score in scores:
        key = f"results {score.pk} {score.job_id}"
        if key in done:
            continue
        with run.unit(key) as unit:
            if not ScoreResults.objects.filter(score=score, job_id=score.job_id).exists():
                items = items if items is not None else scoring_release(release).items
                found = mode.item_results(score_rows(score), items, score_model(score))
                ScoreResults.objects.update_or_create(
                    score=score, defaults={"job_id": score.job_id, "results": {k: [v, label] for k, (v, label) in found.items()}}
                )
            unit.ok(reports.text(READ_RESULTS, label=score.label))

    fingerprint = _fingerprint(scores)
    matrix = selectors.results_matrix(release, scores)
    if f"figures {fingerprint}" not in done:
        rows = _item_rows(analysis, release, scores, matrix)
        with run.unit(f"figures {fingerprint}") as unit:
            if not _still_current(analysis, run):
                unit.skipped(reports.text(SUPERSEDED))
            else:
                ItemStat.objects.filter(analysis=analysis).delete()
                ItemStat.objects.bulk_create(rows["items"], batch_size=1000)
                Analysis.objects.filter(pk=analysis.pk).update(
                    scored_models=rows["models"], summary=rows["summary"], computed_at=timezone.now(), split={}
                )
                unit.ok(data=rows["summary"]["flags"])

    analysis.refresh_from_db()
    split_key = f"split {_fingerprint(scores, analysis.k, release.split_seed)}"
    if split_key not in done:
        split = _split(analysis, release, matrix)
        with run.unit(split_key) as unit:
            if not _still_current(analysis, run):
                unit.skipped(reports.text(SUPERSEDED))
            else:
                Analysis.objects.filter(pk=analysis.pk).update(split=split)
                anchors = split.get("anchors", [])
                ItemStat.objects.filter(analysis=analysis).exclude(key__in=anchors).update(anchor=False)
                ItemStat.objects.filter(analysis=analysis, key__in=anchors).update(anchor=True)
                unit.ok(data={"k": len(anchors)})
    analysis.refresh_from_db()
    validation = (analysis.split.get("about") or {}).get("validation") or {}
    return {
        "models": len(scores),
        "flagged": sum(analysis.summary.get("flags", {}).values()),
        **({"mae": round(validation["mae"], 4)} if validation else {}),
    }


def _still_current(analysis: Analysis, run) -> bool:
    """Under a lock on the analysis: whether this run's job is still the one that writes it."""
    return lock(Analysis, analysis.pk).job_id == run.job.pk


def _item_rows(analysis: Analysis, release, scores, matrix) -> dict:
    keys, values = matrix["keys"], matrix["values"]
    found = statistics.figures(values)
    rated = disagreement_by_item(release)
    ratings = np.array([rated.get(key, {}).get("ratings", 0) for key in keys], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        disagreement = np.where(
            ratings > 0, np.array([rated.get(key, {}).get("disagree", 0) for key in keys], dtype=float) / ratings, np.nan
        )
    flags = statistics.flags(values, found, ratings, disagreement)
    labels = [s.label for s in scores]
    answers = [s.answers or {} for s in scores]
    fit = found.fit
    items = []
    for i, key in enumerate(keys):
        meta = matrix["items"][i]
        items.append(
            ItemStat(
                analysis=analysis,
                key=key,
                item_id=meta["item_id"],
                order=meta["order"],
                task=meta["task"],
                question=meta["question"],
                expected=meta["expected"],
                n_models=int(found.n_models[i]),
                difficulty=_number(found.difficulty[i]),
                share_right=_number(found.share_right[i]),
                discrimination=_number(found.discrimination[i]),
                irt_a=_number(fit.a[i]) if fit is not None and fit.two_parameter else None,
                irt_b=_number(fit.b[i]) if fit is not None else None,
                ratings=int(ratings[i]),
                disagreement=_number(disagreement[i]),
                flags=flags[i],
                flagged=bool(flags[i]),
                results={
                    labels[m]: [float(values[m, i]), matrix["labels"][m][key]]
                    for m in range(len(scores))
                    if key in matrix["labels"][m]
                },
                answers={labels[m]: answers[m][key][:ANSWER_SHOWN] for m in range(len(scores)) if key in answers[m]},
            )
        )
    counts = {
        code: sum(code in f for f in flags)
        for code in ("saturated", "unanswerable", "negative_discrimination", "judge_disagreement")
    }
    summary = {
        "items": len(keys),
        "models": len(scores),
        "irt": None if fit is None else ("2PL" if fit.two_parameter else "Rasch"),
        "flags": counts,
        "flagged": sum(bool(f) for f in flags),
        "scores": {labels[m]: _number(found.scores[m]) for m in range(len(scores))},
        "abilities": {labels[m]: _number(fit.theta[m]) for m in range(len(scores))} if fit is not None else {},
    }
    models = [{"score": s.pk, "label": s.label, "job": s.job_id} for s in scores]
    return {"items": items, "summary": summary, "models": models}


def _split(analysis: Analysis, release, matrix) -> dict:
    """The anchor split chosen from every model's results, validated by leaving each out."""
    keys, values = matrix["keys"], matrix["values"]
    groups = {key: (meta["task"], meta["category"]) for key, meta in zip(keys, matrix["items"])}
    k = min(analysis.k, len(keys))
    labels = [m["label"] for m in analysis.scored_models]
    validation = splits.validate(values, keys, groups, labels, k, seed=release.split_seed)
    items, chosen, kind, fit = splits.choose(values, keys, groups, k, seed=release.split_seed)
    mode = scoring.MODES[analysis.method]
    split = Split(
        name=selectors.split_name(analysis.method),
        mode=analysis.method,
        scale=mode.scale,
        anchors=chosen,
        items=items,
        interval_scale=validation["interval_scale"] if validation else 1.0,
        about={
            "release": f"{release.benchmark.slug} {release.version}",
            "models": labels,
            "k": k,
            "strata": kind,
            "seed": release.split_seed,
            "irt": "2PL" if fit.two_parameter else "Rasch",
            "chosen": (
                f"{k} items of {len(keys)}, shared over the {kind if kind != 'none' else 'whole release'} in proportion "
                f"to size; within each, a systematic sample over difficulty (the item response model fitted to "
                f"{len(labels)} models), the best of {splits.harness_anchors.CANDIDATES} such samples by the error "
                "the model expects at those models' abilities"
            ),
            "validation": validation,
        },
    )
    return split.to_dict()


def _number(value) -> float | None:
    value = float(value)
    return None if np.isnan(value) or np.isinf(value) else value


# ---- what owners do -----------------------------------------------------------------------------


def leave_out(analysis: Analysis, keys, *, user, reason: str = "") -> int:
    """Leave these items (release ids) out of the releases built from now on; each keeps why (the
    reason given, else its flags in words). An item already left out keeps its first reason."""
    permissions.require_researcher(user, "Leaving items out of the next release")
    release = analysis.release
    stats = list(ItemStat.objects.filter(analysis=analysis, key__in=list(keys)).values(*STAT_FIELDS))
    if not stats:
        raise DomainError(gettext("Choose the items to leave out."))
    reason = reason.strip()
    made = 0
    with transaction.atomic():
        for stat in stats:
            why = reason or selectors.reasons_text(stat["flags"], stat) or gettext("Left out after item analysis.")
            _row, created = create_unique(
                lambda stat=stat, why=why: LeftOut.objects.create(
                    benchmark=release.benchmark,
                    item_id=stat["item_id"],
                    key=stat["key"],
                    release=release,
                    reason=why,
                    created_by=user,
                ),
                lambda stat=stat: LeftOut.objects.filter(benchmark=release.benchmark, item_id=stat["item_id"]).first(),
            )
            made += created
    return made


def take_back(analysis: Analysis, keys, *, user) -> int:
    """Items left out go back into the releases built from now on."""
    permissions.require_researcher(user, "Taking items back into the next release")
    item_ids = ItemStat.objects.filter(analysis=analysis, key__in=list(keys)).values_list("item_id", flat=True)
    deleted, _ = LeftOut.objects.filter(benchmark=analysis.release.benchmark, item_id__in=list(item_ids)).delete()
    return deleted


def open_review(analysis: Analysis, keys, *, user, per_item: int = 1) -> ReviewRound:
    """An expert review round on these items, each with its flags in words shown to its reviewers."""
    permissions.require_researcher(user, "Opening a review round")
    stats = list(ItemStat.objects.filter(analysis=analysis, key__in=list(keys)).values(*STAT_FIELDS))
    if not stats:
        raise DomainError(gettext("Choose the items to review."))
    notes = {s["item_id"]: selectors.reasons_text(s["flags"], s) for s in stats}
    return open_round(
        analysis.release.benchmark, user=user, kind=ReviewRound.Kind.EXPERT, per_item=per_item, items=list(notes), notes=notes
    )

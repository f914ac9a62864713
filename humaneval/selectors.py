"""Reads of the human-evaluation stage: studies as a user may see them, a rater's queue, the
judge's stored verdicts, the agreement figures (every number from benchforge_harness.metrics), the rows of
an export, and what the leaderboard shows beside a judged score."""

import random
from collections import defaultdict
from functools import cache

from django.db import transaction
from django.db.models import F, Sum
from django.db.models.functions import Coalesce
from django.http import Http404
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from annotation.models import Item
from benchforge import permissions
from benchforge_harness import Prompts, judge_rules, metrics
from benchforge_harness.scoring import MODES, NONE_OF_THEM, HumanCheck, recorded_passes
from jobs.selectors import recorded_rows

from .models import Rating, RatingTally, Study, StudyFigures, StudyItem, StudyRater

# ---- the judge's side (stored with the leaderboard score) ---------------------------------------


# ---- what people check of each scoring mode (the harness's registry says) -------------------------

# {study mode: the leaderboard method it rates}, from the scoring registry's human checks.
SCORE_METHODS = {mode.human.study: name for name, mode in MODES.items() if mode.human is not None}


def check_of(study_mode: str) -> HumanCheck:
    """What a study of this mode rates and how its scores' verdicts are read (the registry's)."""
    return MODES[SCORE_METHODS[study_mode]].human


def rates(study_mode: str) -> str:
    """What a rater gives each answer of a study of this mode: "score", "vote" or "choice"."""
    return check_of(study_mode).rates


def compares_with_anchor(study_mode: str) -> bool:
    """Whether the scores a study of this mode rates were judged against an anchor's answers."""
    return MODES[SCORE_METHODS[study_mode]].takes("anchor")


def _human_check(method: str) -> HumanCheck | None:
    mode = MODES.get(method)
    return mode.human if mode is not None else None


def judge_verdicts(score) -> dict[str, dict]:
    """{release item id: the judge's verdict} for every answer of `score` the judge read, as the
    scoring mode's registry entry reads its rows (pointwise {"rating"}; pairwise {"outcome",
    "votes"}, the two answer orders combined as MLLM-Bench's code does). The verdicts are the
    score job's recorded judge calls, under the sink's step prefix ("judge:")."""
    check = _human_check(score.method)
    if score.job_id is None or check is None or check.verdicts is None:
        return {}
    prefix = "judge:"
    rows = {key[len(prefix) :]: data for key, data in recorded_rows(score.job_id, prefix=f"{prefix}{score.label}\t")}
    return {key: verdict for key, verdict in check.verdicts(rows, score.label).items() if key in score.answers}


RULE_METHODS = {"heuristic": "rule", "heuristic_none": "rule", "extractor": "extractor", "extractor_none": "extractor"}


def mcq_passes(score) -> list[dict]:
    """Every pass the multiple-choice scoring of `score` asked, as it read them: [{"key" (release
    item id), "task", "pass", "options" (as that pass showed them), "output" (the model's reply),
    "choice" (the letter read, "none", or None when nothing was settled), "reader" ("rule",
    "extractor" or "" when unsettled), "method"}], passes whose call failed left out.

    The ONE place that knows how the score job stores its CircularEval rows: the job's unit
    records under the sink's step prefix ("mcq:"), keyed as the harness wrote them; the harness's
    own reading (recorded_passes) decides the letter and method."""
    check = _human_check(score.method)
    if score.job_id is None or check is None or check.verdicts is not None:
        return []  # not a mode whose verdicts are the passes it asked
    prefix = "mcq:"
    rows = {key[len(prefix) :]: data for key, data in recorded_rows(score.job_id, prefix=prefix)}
    items = [row for row in score.release.items.order_by("order").values_list("row", flat=True) if row.get("choices")]
    tasks = {row["id"]: row.get("task") or "" for row in items}
    found = []
    for verdict in recorded_passes(items, score.endpoint, rows):
        if verdict["output"] is None:
            continue
        letter = verdict["letter"]
        found.append(
            {
                "key": verdict["id"],
                "task": tasks.get(verdict["id"], ""),
                "pass": verdict["pass"],
                "options": verdict["options"],
                "output": verdict["output"],
                "choice": None if letter is None else ("none" if letter == NONE_OF_THEM else letter),
                "reader": RULE_METHODS.get(verdict["method"], ""),
                "method": verdict["method"],
            }
        )
    return found


def release_rows(release) -> dict[str, dict]:
    """{item id: release row} of the release's open questions (what raters and the judge see)."""
    return {key: row for key, row in release.items.order_by("order").values_list("key", "row") if not row.get("choices")}


# ---- studies and queues --------------------------------------------------------------------------


def scores_shown(study):
    """The study's scores for its page: labels and anchors, never their answer sets."""
    return study.scores.select_related("anchor").only("pk", "label", "method", "anchor__label")


def studies_for(user, benchmark):
    """Researchers see every study of the benchmark; other members the studies they rate."""
    studies = Study.objects.filter(benchmark=benchmark).select_related("release")
    if permissions.is_researcher(user):
        return studies
    return studies.filter(raters__user=user)


def get_study_for(user, benchmark, number: int) -> Study:
    found = studies_for(user, benchmark).filter(number=number).first()
    if found is None:
        raise Http404(f"No study {number} of this benchmark that you take part in.")
    return found


def rater_of(study, user) -> StudyRater | None:
    return study.raters.filter(user=user).first() if user.pk else None


def figures_refusal(user, study) -> str | None:
    """Why `user` may not see the study's figures, verdicts and ratings yet: they are not a
    researcher, or they rate in it themselves and have ratings left to give (seeing the judge's
    verdicts or the others' ratings first would unblind them)."""
    if not permissions.is_researcher(user):
        return _("The figures of a study are for researchers.")
    rater = rater_of(study, user)
    if rater is not None and study.status == Study.Status.OPEN:
        left = Rating.objects.filter(rater=rater, saved_at=None).count()
        if left:
            return ngettext(
                "You rate in this study: its figures show once your %(n)s remaining rating is saved.",
                "You rate in this study: its figures show once your %(n)s remaining ratings are saved.",
                left,
            ) % {"n": left}
    return None


def queue_of(rater: StudyRater):
    return Rating.objects.filter(rater=rater).order_by("position")


def progress(rater: StudyRater) -> dict:
    """{"done", "total"} of the rater's ratings, from their tallies (a row per score)."""
    counts = RatingTally.objects.filter(rater=rater).aggregate(total=Coalesce(Sum("owed"), 0), done=Coalesce(Sum("saved"), 0))
    return {"done": counts["done"], "total": counts["total"]}


def next_pending(rater: StudyRater, after: int | None = None):
    pending = Rating.objects.filter(rater=rater, saved_at=None)
    if after is not None:
        later = pending.filter(position__gt=after).order_by("position").first()
        if later is not None:
            return later
    return pending.order_by("position").first()


def get_rating_for(user, study, pk: int) -> Rating:
    """The user's own rating (another rater's is never shown, saved or not)."""
    found = Rating.objects.filter(pk=pk, study=study, rater__user=user).select_related("item", "rater").first()
    if found is None:
        raise Http404(f"No rating #{pk} of yours in study {study.number}.")
    found.study = study  # as the page already read it, with its release
    return found


def waiting_for(user, benchmark):
    """The navigation's count: ratings this user still owes in the benchmark's open studies."""
    return Rating.objects.filter(study__benchmark=benchmark, study__status=Study.Status.OPEN, rater__user=user, saved_at=None)


# A release row's question type (annotation.contract's words for it), as the page names it.
QUESTION_TYPES = {
    "open-ended": Item.QuestionType.OPEN.label,
    "closed-ended": Item.QuestionType.CLOSED.label,
    "compound": Item.QuestionType.COMPOUND.label,
    "multiple-choice": Item.Kind.MCQ.label,
}


def rating_view(rating: Rating) -> dict:
    """What a rater sees for one rating, as the judge saw the item: never the model's name, the
    judge's verdict or another rater's rating. Pairwise answers in this rater's recorded order."""
    study, item = rating.study, rating.item
    # the one row, by the (release, key) index: no ordering, which would join the release and benchmark
    row = next(iter(study.release.items.filter(key=item.key).order_by().values_list("row", flat=True)[:1]), None) or {}
    rated = rates(study.mode)
    if rated == "choice":
        # The reply and the options as that pass showed them; no answer key, no reading of the reply.
        return {
            "question": row.get("question") or "",
            "hint": row.get("hint") or "",
            "options": dict(item.options),
            "reply": item.answer,
            "task": item.task,
            "images": row.get("images") or [],
        }
    shown = {
        "question": row.get("question") or "",
        "question_type": row.get("question_type") or "",
        "question_type_label": QUESTION_TYPES.get(row.get("question_type") or "", row.get("question_type") or ""),
        "history": [t for t in row.get("history") or [] if isinstance(t, dict)],
        "reference_answer": row.get("reference_answer") or "",
        "criteria": row.get("criteria") or [],
        "task": item.task,
        "images": row.get("images") or [],
    }
    if rated == "score":
        shown["answer"] = item.answer
        shown["task_rule"] = task_rule(study.release, item.task)
    else:
        first, second = (item.anchor_answer, item.answer) if rating.anchor_first else (item.answer, item.anchor_answer)
        shown["answer1"], shown["answer2"] = first, second
    return shown


def task_rule(release, task: str) -> str:
    """The judging rule of a task exactly as the pointwise judge read it: the release's own rule
    (taxonomy.json), else the harness's built-in one."""
    return judge_rules(release.taxonomy, [task]).get(task) or Prompts().task_rule(task)


@cache
def pointwise_rubric() -> str:
    """The 1-10 rubric of the harness's pointwise judge prompt (the part before the task rule)."""
    source = Prompts().get("pointwise").text
    return source.split("{{#task_rule}}")[0].strip()


# ---- agreement -------------------------------------------------------------------------------------

# What a rating holds in an export, by what the study rates (the columns after item, model, task, category and
# rater), with the types both files carry: JSON Lines and Parquet have exactly these columns.
# Besides the rating and the judge's verdict, what the rater was shown: the side the anchor's
# answer was on (pairwise), the pass and its options as that pass showed them (extraction).
MODE_COLUMNS = {
    "score": (("score", "int"), ("judge_score", "float")),
    "vote": (("vote", "str"), ("judge_outcome", "str"), ("judge_votes", "list"), ("anchor_first", "bool")),
    "choice": (
        ("pass", "int"),
        ("options", "options"),
        ("choice", "str"),
        ("reader_choice", "str"),
        ("reader", "str"),
    ),
}
HEAD_COLUMNS = (("study", "int"), ("item", "str"), ("model", "str"), ("task", "str"), ("category", "str"), ("rater", "str"))
TAIL_COLUMNS = (("reason", "str"), ("time", "str"), ("source", "str"))


def export_columns(mode: str, *, split: bool = False) -> list[tuple[str, str]]:
    """[(column, type)] of a study's export, in order; the same for every file format."""
    columns = [*HEAD_COLUMNS, *MODE_COLUMNS[rates(mode)], *TAIL_COLUMNS]
    return columns + [("split", "str")] if split else columns


def _compact(study, *, full: bool):
    """The saved ratings of `study` as tuples, in export order (answer, then rater): only the
    rating, the judge's verdict and the item and model keys (the score's label, never its answers);
    `full` adds the reason, time and source and what the rater was shown."""
    fields = ["item_id", "item__key", "item__score__label", "item__task", "item__category", "rater__pseudonym"]
    fields += ["score", "vote", "choice", "anchor_first", "item__judge", "item__pass_index"]
    if full:
        fields += ["reason", "saved_at", "source"]
        if rates(study.mode) == "choice":
            fields.append("item__options")
    rows = (
        Rating.objects.filter(study=study)
        .exclude(saved_at=None)
        # answer by answer, then rater (the order they were created in): the unique (item, rater)
        # index hands the rows over in that order without sorting them first, so a stream starts at once
        .order_by("item_id", "rater_id")
        .values_list(*fields)
    )
    # In a transaction the server-side cursor is read as the rows are used; outside one, Postgres
    # would compute and keep the whole result before handing over the first row (WITH HOLD).
    with transaction.atomic():
        yield from rows.iterator(chunk_size=5000)


def _mode_values(mode, score, vote, choice, anchor_first, judge, pass_index, options) -> dict:
    judge = judge or {}
    rated = rates(mode)
    if rated == "score":
        rating = judge.get("rating")
        return {"score": score, "judge_score": None if rating is None else float(rating)}
    if rated == "vote":
        votes = judge.get("votes")
        return {
            "vote": vote,
            "judge_outcome": judge.get("outcome"),
            "judge_votes": [str(v) for v in votes] if isinstance(votes, list) else None,
            "anchor_first": anchor_first,
        }
    return {
        "pass": pass_index,
        "options": None if options is None else [{"letter": k, "text": str(v)} for k, v in options.items()],
        "choice": choice,
        "reader_choice": judge.get("choice"),
        "reader": judge.get("reader", ""),
    }


def _split_of(study) -> dict[int, str]:
    """AlignMMBench's 90/10 train/test split per category of the answers, from the study's seed."""
    by_category = defaultdict(list)
    for pk, category in study.items.order_by("position").values_list("pk", "category"):
        by_category[category].append(pk)
    rng = random.Random(f"split:{study.seed}")
    splits = {}
    for category in sorted(by_category):
        ids = sorted(by_category[category])
        rng.shuffle(ids)
        test = max(1, round(len(ids) / 10)) if len(ids) >= 2 else 0
        for n, pk in enumerate(ids):
            splits[pk] = "test" if n < test else "train"
    return splits


def iter_export_rows(study, *, split: bool = False):
    """One row per saved rating, streamed: the item, the model (revealed here), the rater's
    pseudonym, the rating and reason, time and source, the judge's verdict on the same answer and
    what the rater was shown (export_columns). split: a 90/10 train/test split per category of the
    answers (AlignMMBench's), reproducible from the study's seed."""
    splits = _split_of(study) if split else {}
    extraction = rates(study.mode) == "choice"
    for found in _compact(study, full=True):
        item_id, key, label, task, category, rater, score, vote, choice, anchor_first, judge, pass_index = found[:12]
        reason, saved_at, source = found[12:15]
        options = found[15] if extraction else None
        row = {"study": study.number, "item": key, "model": label, "task": task, "category": category, "rater": rater}
        row |= _mode_values(study.mode, score, vote, choice, anchor_first, judge, pass_index, options)
        row |= {"reason": reason, "time": saved_at.isoformat(), "source": source}
        if split:
            row["split"] = splits.get(item_id, "train")
        yield row


def export_rows(study, *, split: bool = False) -> list[dict]:
    return list(iter_export_rows(study, split=split))


def figure_rows(study) -> list[dict]:
    """The compact rows the figures are computed from (what agreement_from_rows reads)."""
    rows = []
    for _item_id, key, label, task, _category, rater, score, vote, choice, anchor_first, judge, pass_index in _compact(
        study, full=False
    ):
        row = {"item": key, "model": label, "task": task, "rater": rater}
        row |= _mode_values(study.mode, score, vote, choice, anchor_first, judge, pass_index, None)
        rows.append(row)
    return rows


def agreement_from_rows(mode: str, rows: list[dict]) -> dict:
    """Every agreement figure of a study from its exported rows, by benchforge_harness.metrics: overall, per
    task and per model. The study page and the API show exactly this, so anyone holding the export
    gets the same numbers."""
    result = {"overall": _agreement(mode, rows), "by_task": {}, "by_model": {}}
    for field, out in (("task", "by_task"), ("model", "by_model")):
        groups = defaultdict(list)
        for row in rows:
            groups[row[field]].append(row)
        result[out] = {name: _agreement(mode, groups[name]) for name in sorted(groups)}
    return result


def _unit(row) -> tuple:
    return (row["model"], row["item"], row.get("pass"))


def _agreement(mode: str, rows: list[dict]) -> dict:
    by_rater: dict = defaultdict(dict)
    units: dict = defaultdict(list)
    undefined: dict = {}
    rated = rates(mode)
    if rated == "score":
        for row in rows:
            by_rater[row["rater"]][_unit(row)] = row["score"]
            units[_unit(row)].append(row["score"])
        judged = [r for r in rows if r.get("judge_score") is not None]
        judge_scores, human = [r["judge_score"] for r in judged], [r["score"] for r in judged]
        judge_human = metrics.agreement(judge_scores, human)
        if metrics.undefined_correlations(judge_scores, human):
            why = correlation_undefined(judge_scores, human) or "too_few_pairs"
            undefined.update(dict.fromkeys(("pearson", "spearman", "kendall_tau_b"), why))
        if not judged:
            undefined.update(dict.fromkeys(("mae", "fuzzy_accuracy", "strict_accuracy"), "no_rating" if not rows else "no_judge"))
        alpha = metrics.krippendorff_alpha(units, check_of(mode).level)
    elif rated == "choice":
        readings: dict = {"rule": {}, "extractor": {}}
        for row in rows:
            by_rater[row["rater"]][_unit(row)] = row["choice"]
            units[_unit(row)].append(row["choice"])
            if row.get("reader") in readings and row.get("reader_choice"):
                readings[row["reader"]][_unit(row)] = row["reader_choice"]
        raters = {rater: dict(v) for rater, v in by_rater.items()}
        judge_human = {reader: metrics.reader_accuracy(read, raters) for reader, read in readings.items()}
        for reader, found in judge_human.items():
            if found["accuracy"] is None:
                undefined[f"{reader}_accuracy"] = "ties" if found["ties"] else "not_read"
        alpha = metrics.krippendorff_alpha(units, check_of(mode).level)
    else:
        outcome = {}
        for row in rows:
            by_rater[row["rater"]][_unit(row)] = _side(row["vote"])
            units[_unit(row)].append(_side(row["vote"]))
            outcome[_unit(row)] = row.get("judge_outcome")
        judge_human = metrics.vote_agreement(
            {u: o for u, o in outcome.items() if o}, {rater: dict(v) for rater, v in by_rater.items()}
        )
        judge_human.pop("per_rater")
        if judge_human["majority"] is None:
            undefined["majority"] = undefined["individual"] = "no_rating" if not rows else "no_judge"
        alpha = metrics.krippendorff_alpha(units, check_of(mode).level)
    if alpha is None:
        undefined["alpha"] = alpha_undefined(units)
    pairs = metrics.rater_pair_matching(by_rater)
    return {
        "ratings": len(rows),
        "answers": len(units),
        "raters": len(by_rater),
        "alpha": alpha,
        # pairs of raters who rated a common answer (with many raters most pairs share none)
        "rater_pairs": [{"raters": [a, b], **v} for (a, b), v in pairs.items() if v["n"]],
        "judge": judge_human,
        "undefined": undefined,
    }


# Why a figure is undefined, stored as a code with the figures and said in the reader's language.
UNDEFINED = {
    "no_rating": gettext_lazy("no saved rating yet"),
    "one_rater": gettext_lazy("one rater per answer so far: agreement needs two ratings of an answer"),
    "constant": gettext_lazy("constant ratings: every rating is the same, so there is no variation to measure"),
    "constant_judge": gettext_lazy("the judge gave every answer the same verdict: a constant has no correlation"),
    "too_few_pairs": gettext_lazy("too few pairs: a correlation needs at least two rated answers with a judge verdict"),
    "no_judge": gettext_lazy("no rated answer has a judge verdict"),
    "ties": gettext_lazy("the raters tied on every answer: no majority reading"),
    "not_read": gettext_lazy("no rated answer was read by this reader"),
}


def why_undefined(code: str) -> str:
    return str(UNDEFINED.get(code, code))


def with_reasons(figures: dict) -> dict:
    """The figures with each group's "why": {figure: why it is undefined, in the reader's language}."""

    def said(group):
        return group | {"why": {name: why_undefined(code) for name, code in (group.get("undefined") or {}).items()}}

    return {
        "overall": said(figures["overall"]),
        "by_task": {name: said(g) for name, g in figures["by_task"].items()},
        "by_model": {name: said(g) for name, g in figures["by_model"].items()},
    }


def alpha_undefined(units: dict) -> str:
    """Why Krippendorff's alpha is undefined over these answers (it is when this is asked)."""
    pairable = [values for values in units.values() if len(values) >= 2]
    if not pairable:
        return "one_rater" if units else "no_rating"
    if len({v for unit in pairable for v in unit}) == 1:
        return "constant"
    return "too_few_pairs"


def correlation_undefined(judge: list, human: list) -> str | None:
    """Why the judge-human correlations are undefined (metrics.why_no_correlation's cases), as a code."""
    if len(judge) < 2:
        return "too_few_pairs" if judge or not human else "no_judge"
    if len(set(human)) == 1:
        return "constant"
    if len(set(judge)) == 1:
        return "constant_judge"
    return None


def _side(vote: str) -> str:
    """Votes compared at MLLM-Bench's outcome level: the model, the anchor, or unable to decide."""
    return vote if vote in ("model", "anchor") else "unable"


def compute_figures(study) -> dict:
    """The study's figures from its compact rows (heavy at scale: run by services.refresh_figures)."""
    return metrics.finite(agreement_from_rows(study.mode, figure_rows(study)))


def cached_figures(study) -> tuple[dict | None, bool]:
    """(the stored figures, whether ratings were saved since they were computed): one query."""
    found = (
        StudyFigures.objects.filter(study_id=study.pk)
        .annotate(current=F("study__ratings_version"))
        .values_list("figures", "version", "current")
        .first()
    )
    if found is None:
        return None, True
    figures, version, current = found
    return figures, version != current


def figures_out_of_date(study) -> bool:
    """Whether ratings were saved since the stored figures were computed (without reading them)."""
    return not StudyFigures.objects.filter(study_id=study.pk, version=F("study__ratings_version")).exists()


def study_agreement(study) -> dict:
    """The figures as stored; computed here only when none were ever stored (pages use
    services.current_figures, which stores them)."""
    figures, stale = cached_figures(study)
    return compute_figures(study) if figures is None or stale else figures


def headline(study, figures: dict) -> str:
    """The one line the leaderboard shows: the judge-human figure people quote for this mode."""
    judge = figures["overall"]["judge"]
    rated = rates(study.mode)
    if rated == "score":
        r, f = judge.get("pearson"), judge.get("fuzzy_accuracy")
        return _("r %(r)s, fuzzy f %(f)s") % {"r": _num(r), "f": _num(f)}
    if rated == "choice":
        return _("rule reader %(rule)s, LLM extractor %(extractor)s as people read") % {
            "rule": _pct(judge["rule"]["accuracy"]),
            "extractor": _pct(judge["extractor"]["accuracy"]),
        }
    return _("majority agrees %(majority)s, raters %(raters)s") % {
        "majority": _pct(judge.get("majority")),
        "raters": _pct(judge.get("individual")),
    }


def chart_rows(study, figures: dict, by: str) -> tuple[list, str]:
    """([(task or model, the headline judge-human figure, ratings)], its name) for the study page's
    charts: fuzzy-range accuracy f for scores, the majority's agreement for votes (both 0-1)."""
    rated = rates(study.mode)
    if rated == "choice":
        return [(group, a["judge"]["rule"]["accuracy"], a["ratings"]) for group, a in figures[by].items()], _(
            "rule reader accuracy"
        )
    if rated == "score":
        field, name = "fuzzy_accuracy", _("fuzzy f")
    else:
        field, name = "majority", _("majority agreement")
    return [(group, a["judge"].get(field), a["ratings"]) for group, a in figures[by].items()], name


def _num(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def _pct(value) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def study_progress(study) -> dict:
    """Ratings saved of those owed, overall and per rater, from the tallies (never counting ratings)."""
    per_rater = list(
        study.raters.annotate(total=Coalesce(Sum("tallies__owed"), 0), done=Coalesce(Sum("tallies__saved"), 0)).values(
            "pseudonym", "user__username", "total", "done"
        )
    )
    return {
        "done": sum(r["done"] for r in per_rater),
        "total": sum(r["total"] for r in per_rater),
        "raters": per_rater,
    }


def validations_for_release(release, figures_of=None) -> dict[int, dict]:
    """{score pk: what the leaderboard says of people's validation of the score's judge}: the
    study a researcher marked as its validation, else the latest closed study with ratings of it
    ({"study", "number", "ratings", "headline", "url"}); else, while only open studies rate it,
    {"in_progress": True, "number", "saved", "total", "url"}. Never recomputes a figure:
    `figures_of(study)` gives the stored ones (services.current_figures)."""
    from django.urls import reverse

    figures_of = figures_of or study_agreement
    studies = list(Study.objects.filter(release=release).order_by("-number"))
    rated = defaultdict(list)  # the scores each study rates, by label only (never their answer sets)
    for study_id, score_id, label in Study.scores.through.objects.filter(study__release=release).values_list(
        "study_id", "score_id", "score__label"
    ):
        rated[study_id].append((score_id, label))
    counts = {
        (row["study_id"], row["score_id"]): row
        for row in RatingTally.objects.filter(study__release=release)
        .values("study_id", "score_id")
        .annotate(total=Sum("owed"), saved=Sum("saved"))
        .order_by()
    }
    raters = defaultdict(set)  # who besides researchers may open each study: one query for the release
    for study_id, user_id in (
        StudyRater.objects.filter(study__release=release).exclude(user=None).values_list("study_id", "user_id")
    ):
        raters[study_id].add(user_id)
    ranked = sorted(studies, key=lambda s: (s.validates, s.status == Study.Status.CLOSED, s.number), reverse=True)
    found: dict[int, dict] = {}
    for study in ranked:
        url = reverse("humaneval-study", args=[release.benchmark.slug, study.number])
        for score_pk, label in rated[study.pk]:
            count = counts.get((study.pk, score_pk), {"total": 0, "saved": 0})
            if score_pk in found or not count["total"]:
                continue
            if not study.validates and study.status != Study.Status.CLOSED:
                found[score_pk] = {"in_progress": True, "number": study.number, "study": study.title, "url": url,
                                   "saved": count["saved"], "total": count["total"], "rater_ids": raters[study.pk]}  # fmt: skip
                continue
            if not count["saved"]:
                continue
            group = (figures_of(study).get("by_model") or {}).get(label)
            found[score_pk] = {
                "study": study.title,
                "number": study.number,
                "ratings": count["saved"],
                "validates": study.validates,
                "in_progress": False,
                "headline": headline(study, {"overall": group}) if group else "",
                "url": url,
                "rater_ids": raters[study.pk],
            }
    return found


def rater_ids(study) -> set[int]:
    return set(study.raters.exclude(user=None).values_list("user_id", flat=True))


def card_citations(release, figures_of=None) -> list[dict]:
    """The closed studies a researcher cited on the release's card: what was rated, by how many
    people, and the headline agreement, for the card page."""
    from django.urls import reverse

    cited = []
    for study in Study.objects.filter(release=release, cited_on_card=True, status=Study.Status.CLOSED).order_by("number"):
        figures = (figures_of or study_agreement)(study)
        overall = figures["overall"]
        cited.append(
            {
                "number": study.number,
                "title": study.title,
                "mode": study.get_mode_display(),
                "ratings": overall["ratings"],
                "answers": overall["answers"],
                "raters": overall["raters"],
                "alpha": overall["alpha"],
                "headline": headline(study, figures),
                "url": reverse("humaneval-study", args=[release.benchmark.slug, study.number]),
                "rater_ids": rater_ids(study),
            }
        )
    return cited


def items_of(study):
    return StudyItem.objects.filter(study=study)


def study_images(study, names: list) -> list[str]:
    """URLs of the study's copies of a release row's images, in the row's order."""
    from django.urls import reverse

    by_name = dict(study.release.images.filter(name__in=names).values_list("name", "pk"))
    return [reverse("humaneval-image", args=[study.benchmark.slug, study.number, by_name[n]]) for n in names if n in by_name]


def study_image(study, pk: int):
    found = study.release.images.filter(pk=pk).first()
    if found is None:
        raise Http404(f"No image #{pk} in release {study.release.version}.")
    return found


# ---- per item, for item analysis ------------------------------------------------------------------

POINTWISE_GAP = 3  # a rater's score this far from the judge's (1-10) disagrees with it


def disagreement_by_item(release) -> dict[str, dict]:
    """{release item id: {"ratings": n, "disagree": n}} over every saved rating of every study of the
    release: a pointwise rating disagrees when it is POINTWISE_GAP or more from the judge's grade, a
    pairwise vote when it picks another side (model, anchor, unable) than the judge's outcome, an
    extraction check when it reads another choice. One query; the judge's verdicts are stored with
    the study's items."""
    found: dict[str, dict] = defaultdict(lambda: {"ratings": 0, "disagree": 0})
    rows = (
        Rating.objects.filter(study__release=release)
        .exclude(saved_at=None)
        .values_list("item__key", "study__mode", "score", "vote", "choice", "item__judge")
    )
    for key, mode, score, vote, choice, judge in rows.iterator(2000):
        judge = judge or {}
        rated = rates(mode)
        if rated == "score":
            if score is None or judge.get("rating") is None:
                continue
            differs = abs(score - judge["rating"]) >= POINTWISE_GAP
        elif rated == "vote":
            if not vote or not judge.get("outcome"):
                continue
            differs = _side(vote) != _side(judge["outcome"])
        else:
            if "choice" not in judge:
                continue
            differs = (choice or "") != (judge.get("choice") or "")
        found[key]["ratings"] += 1
        found[key]["disagree"] += differs
    return dict(found)

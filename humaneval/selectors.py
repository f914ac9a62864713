"""Reads of the human-evaluation stage: studies as a user may see them, a rater's queue, the
judge's stored verdicts, the agreement figures (every number from harness.metrics), the rows of
an export, and what the leaderboard shows beside a judged score."""

import random
from collections import defaultdict
from functools import cache

from django.db.models import Count, Q
from django.http import Http404
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from annotation.models import Item
from benchforge import permissions
from exports import selectors as exports
from harness import Prompts, judge_rules, metrics
from harness.scoring import NONE_OF_THEM, combine_votes, recorded_passes
from jobs.selectors import recorded_rows

from .models import Rating, Study, StudyItem, StudyRater

# ---- the judge's side (stored with the leaderboard score) ---------------------------------------


def judge_verdicts(score) -> dict[str, dict]:
    """{release item id: the judge's verdict} for every answer of `score` the judge read: pointwise
    {"rating"}, pairwise {"outcome", "votes"} (the two answer orders combined as MLLM-Bench's code
    does). The verdicts are the score job's recorded judge calls."""
    if score.job_id is None:
        return {}
    prefix = f"judge:{score.label}\t"
    found: dict = {}
    for key, data in recorded_rows(score.job_id, prefix=prefix):
        if data.get("status") != "ok":
            continue
        parts = key[len(prefix) :].split("\t")
        if score.method == "pointwise" and len(parts) == 1 and parts[0] in score.answers:
            found[parts[0]] = {"rating": data["rating"]}
        elif score.method == "pairwise" and len(parts) == 2:
            found.setdefault(parts[0], {})[parts[1]] = data["vote"]
    if score.method == "pairwise":
        return {
            key: {"outcome": combine_votes(v["1"], v["2"]), "votes": [v["1"], v["2"]]}
            for key, v in found.items()
            if "1" in v and "2" in v and key in score.answers
        }
    return found


RULE_METHODS = {"heuristic": "rule", "heuristic_none": "rule", "extractor": "extractor", "extractor_none": "extractor"}


def mcq_passes(score) -> list[dict]:
    """Every pass the multiple-choice scoring of `score` asked, as it read them: [{"key" (release
    item id), "task", "pass", "options" (as that pass showed them), "output" (the model's reply),
    "choice" (the letter read, "none", or None when nothing was settled), "reader" ("rule",
    "extractor" or "" when unsettled), "method"}], passes whose call failed left out.

    The ONE place that knows how the score job stores its CircularEval rows: the job's unit
    records under the sink's step prefix ("mcq:"), keyed as the harness wrote them; the harness's
    own reading (recorded_passes) decides the letter and method."""
    if score.job_id is None or score.method != "mcq":
        return []
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


def scores_to_study(release):
    """Leaderboard scores a study can rate: judged or multiple choice, finished."""
    return exports.scores_of(release).filter(method__in=SCORE_METHODS.values(), status="done")


# The leaderboard method each study mode rates.
SCORE_METHODS = {Study.Mode.POINTWISE: "pointwise", Study.Mode.PAIRWISE: "pairwise", Study.Mode.EXTRACTION: "mcq"}


# ---- studies and queues --------------------------------------------------------------------------


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
    counts = Rating.objects.filter(rater=rater).aggregate(total=Count("pk"), done=Count("pk", filter=~Q(saved_at=None)))
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
    found = Rating.objects.filter(pk=pk, study=study, rater__user=user).select_related("item", "rater", "study").first()
    if found is None:
        raise Http404(f"No rating #{pk} of yours in study {study.number}.")
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
    row = rating.study.release.items.filter(key=item.key).values_list("row", flat=True).first() or {}
    if study.mode == Study.Mode.EXTRACTION:
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
    if study.mode == Study.Mode.POINTWISE:
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


def saved_ratings(study):
    return (
        Rating.objects.filter(study=study)
        .exclude(saved_at=None)
        .select_related("item__score", "rater")
        .order_by("item__position", "rater__pseudonym")
    )


def export_rows(study, *, split: bool = False) -> list[dict]:
    """One row per saved rating: the item, the model (revealed here), the rater's pseudonym, score
    or vote, reason, time, and the judge's verdict on the same answer. split: a 90/10 train/test
    split per category of the answers (AlignMMBench's), reproducible from the study's seed."""
    ratings = list(saved_ratings(study))
    splits = {}
    if split:
        by_category = defaultdict(list)
        for item in study.items.order_by("position"):
            by_category[item.category].append(item.pk)
        rng = random.Random(f"split:{study.seed}")
        for category in sorted(by_category):
            ids = sorted(by_category[category])
            rng.shuffle(ids)
            test = max(1, round(len(ids) / 10)) if len(ids) >= 2 else 0
            for n, pk in enumerate(ids):
                splits[pk] = "test" if n < test else "train"
    rows = []
    for r in ratings:
        item = r.item
        row = {
            "study": study.number,
            "item": item.key,
            "model": item.score.label,
            "task": item.task,
            "category": item.category,
            "rater": r.rater.pseudonym,
        }
        if study.mode == Study.Mode.POINTWISE:
            row |= {"score": r.score, "judge_score": item.judge.get("rating")}
        elif study.mode == Study.Mode.PAIRWISE:
            row |= {"vote": r.vote, "judge_outcome": item.judge.get("outcome")}
        else:
            row |= {
                "pass": item.pass_index,
                "choice": r.choice,
                "reader_choice": item.judge.get("choice"),
                "reader": item.judge.get("reader", ""),
            }
        row |= {"reason": r.reason, "time": r.saved_at.isoformat(), "source": r.source}
        if split:
            row["split"] = splits.get(item.pk, "train")
        rows.append(row)
    return rows


def agreement_from_rows(mode: str, rows: list[dict]) -> dict:
    """Every agreement figure of a study from its exported rows, by harness.metrics: overall, per
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
    if mode == Study.Mode.POINTWISE:
        for row in rows:
            by_rater[row["rater"]][_unit(row)] = row["score"]
            units[_unit(row)].append(row["score"])
        judged = [r for r in rows if r.get("judge_score") is not None]
        judge_human = metrics.agreement([r["judge_score"] for r in judged], [r["score"] for r in judged])
        alpha = metrics.krippendorff_alpha(units, "interval")
    elif mode == Study.Mode.EXTRACTION:
        readings: dict = {"rule": {}, "extractor": {}}
        for row in rows:
            by_rater[row["rater"]][_unit(row)] = row["choice"]
            units[_unit(row)].append(row["choice"])
            if row.get("reader") in readings and row.get("reader_choice"):
                readings[row["reader"]][_unit(row)] = row["reader_choice"]
        raters = {rater: dict(v) for rater, v in by_rater.items()}
        judge_human = {reader: metrics.reader_accuracy(read, raters) for reader, read in readings.items()}
        alpha = metrics.krippendorff_alpha(units, "nominal")
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
        alpha = metrics.krippendorff_alpha(units, "nominal")
    pairs = metrics.rater_pair_matching(by_rater)
    return {
        "ratings": len(rows),
        "answers": len(units),
        "raters": len(by_rater),
        "alpha": alpha,
        "rater_pairs": [{"raters": [a, b], **v} for (a, b), v in pairs.items()],
        "judge": judge_human,
    }


def _side(vote: str) -> str:
    """Votes compared at MLLM-Bench's outcome level: the model, the anchor, or unable to decide."""
    return vote if vote in ("model", "anchor") else "unable"


def study_agreement(study) -> dict:
    return agreement_from_rows(study.mode, export_rows(study))


def headline(study, figures: dict) -> str:
    """The one line the leaderboard shows: the judge-human figure people quote for this mode."""
    judge = figures["overall"]["judge"]
    if study.mode == Study.Mode.POINTWISE:
        r, f = judge.get("pearson"), judge.get("fuzzy_accuracy")
        return _("r %(r)s, fuzzy f %(f)s") % {"r": _num(r), "f": _num(f)}
    if study.mode == Study.Mode.EXTRACTION:
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
    if study.mode == Study.Mode.EXTRACTION:
        return [(group, a["judge"]["rule"]["accuracy"], a["ratings"]) for group, a in figures[by].items()], _(
            "rule reader accuracy"
        )
    if study.mode == Study.Mode.POINTWISE:
        field, name = "fuzzy_accuracy", _("fuzzy f")
    else:
        field, name = "majority", _("majority agreement")
    return [(group, a["judge"].get(field), a["ratings"]) for group, a in figures[by].items()], name


def _num(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def _pct(value) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def study_progress(study) -> dict:
    counts = study.ratings.aggregate(total=Count("pk"), done=Count("pk", filter=~Q(saved_at=None)))
    per_rater = list(
        study.raters.annotate(total=Count("ratings"), done=Count("ratings", filter=~Q(ratings__saved_at=None))).values(
            "pseudonym", "user__username", "total", "done"
        )
    )
    return {"done": counts["done"], "total": counts["total"], "raters": per_rater}


def validations_for_release(release) -> dict[int, dict]:
    """{score pk: {"study", "number", "ratings", "headline", "url"}} for the release's scores rated
    in a study (the latest one with saved ratings), for the leaderboard."""
    from django.urls import reverse

    found: dict[int, dict] = {}
    studies = Study.objects.filter(release=release).order_by("-number").prefetch_related("scores")
    for study in studies:
        rows = export_rows(study)
        if not rows:
            continue
        for score in study.scores.all():
            if score.pk in found:
                continue
            mine = [r for r in rows if r["model"] == score.label]
            if not mine:
                continue
            figures = agreement_from_rows(study.mode, mine)
            found[score.pk] = {
                "study": study.title,
                "number": study.number,
                "ratings": len(mine),
                "headline": headline(study, figures),
                "url": reverse("humaneval-study", args=[release.benchmark.slug, study.number]),
            }
    return found


def card_citations(release) -> list[dict]:
    """The closed studies a researcher cited on the release's card: what was rated, by how many
    people, and the headline agreement, for the card page."""
    from django.urls import reverse

    cited = []
    for study in Study.objects.filter(release=release, cited_on_card=True, status=Study.Status.CLOSED).order_by("number"):
        figures = study_agreement(study)
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
